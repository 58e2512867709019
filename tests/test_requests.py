"""Permission requests (issue 30): a request is a record; the hook waits for a human, woken by
the store's change signal, and answers the agent in its own format; the first decision wins; no
answer expires it; the agent going away withdraws it. Both engines, real hook processes."""

from __future__ import annotations

import json
import signal
import time
from dataclasses import replace
from pathlib import Path

import pytest

from roundtable_console.store.db.database import open_store
from roundtable_console.store.errors import (
    InvalidDecision,
    NotDeliverable,
    RequestAlreadySettled,
    RequestNotFound,
)
from roundtable_console.store.reads.audit import AuditFilter, audit_page
from roundtable_console.store.requests import asking
from roundtable_console.store.requests.deciding import decide_request
from roundtable_console.store.requests.reads import list_requests
from tests.hook_support import (
    CLAUDE_ID,
    CODEX_ID,
    claude,
    codex,
    gemini,
    history,
    hook,
    hook_started,
    pending_requests,
    session,
)

SID = f"claude-{CLAUDE_ID}"
SUGGESTIONS = [
    {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "make:*"}],
     "behavior": "allow", "destination": "localSettings"},
    {"type": "setMode", "mode": "acceptEdits", "destination": "session"},
]  # fmt: skip


def ask(url: str, tmp_path: Path, command: str = "make deploy", wait: str = "20", **fields):  # noqa: ANN001, ANN003, ANN201
    options = ("--db", url, "--spool", str(tmp_path / "spool.jsonl"), "--permission-wait", wait)
    hook("claude-code", claude("SessionStart", source="startup"), *options[:4])
    payload = claude(
        "PermissionRequest", tool_name="Bash", tool_input={"command": command}, **fields
    )
    return hook_started("claude-code", payload, *options)


def answer_of(process) -> dict | None:  # noqa: ANN001
    out, err = process.communicate(timeout=30)
    assert process.returncode == 0 and err == b"", err
    return json.loads(out) if out else None


def test_an_allow_reaches_the_agent_in_its_own_format(
    store: object, store_url: str, tmp_path: Path
) -> None:
    process = ask(store_url, tmp_path, permission_suggestions=SUGGESTIONS)
    [request] = pending_requests(store)
    assert request.session_id == SID and request.tool_name == "Bash"
    assert request.tool_input == {"command": "make deploy"}
    assert request.suggestions == SUGGESTIONS and request.answers == ("allow", "deny")
    waiting = session(store_url, SID)
    assert waiting.waiting_reason == "asks to run Bash: make deploy"
    assert waiting.waiting_since is not None  # waiting: first in the attention order

    store = open_store(store_url)
    try:
        decided = decide_request(
            store=store, request_id=request.id, decision="allow", actor="alice", suggestion=0
        )
        assert decided.state == "allowed" and decided.decided_by == "alice"
        assert answer_of(process) == {
            "hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "allow", "updatedPermissions": [SUGGESTIONS[0]]},
            }
        }
        delivered = asking.read_request(store, request.id)
        assert delivered.delivered_at is not None
        # The session no longer waits on it.
        assert session(store_url, SID).waiting_reason is None
        # A second decision, by anyone, is told who decided: the first wins.
        with pytest.raises(RequestAlreadySettled, match="allowed by alice"):
            decide_request(store=store, request_id=request.id, decision="deny", actor="bob")
        with store.read() as db:
            entries = audit_page(db=db, filters=AuditFilter(action="decide")).items
        assert [(e.actor, e.session_id, e.status) for e in entries] == [("alice", SID, "allowed")]
    finally:
        store.dispose()
    kinds = [kind for kind, _ in history(store_url, SID)]
    assert "permission_requested" in kinds and "permission_decided" in kinds


def test_a_deny_carries_the_message_and_nothing_else(
    store: object, store_url: str, tmp_path: Path
) -> None:
    process = ask(store_url, tmp_path, "rm -rf /")
    [request] = pending_requests(store)
    store = open_store(store_url)
    try:
        decide_request(
            store=store,
            request_id=request.id,
            decision="deny",
            actor="alice",
            message="Not the root, use build/ instead.",
        )
    finally:
        store.dispose()
    assert answer_of(process) == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny", "message": "Not the root, use build/ instead."},
        }
    }


def test_refusals_of_a_decision(store: object, store_url: str, tmp_path: Path) -> None:
    process = ask(store_url, tmp_path, permission_suggestions=SUGGESTIONS)
    [request] = pending_requests(store)
    store = open_store(store_url)
    try:
        for decision, options, refused in (
            ("maybe", {}, InvalidDecision),
            ("allow", {"message": "why not"}, InvalidDecision),
            ("deny", {"suggestion": 0}, InvalidDecision),
            ("allow", {"suggestion": 2}, InvalidDecision),
            ("deny", {"message": "x" * 2001}, InvalidDecision),
            ("deny", {"message": "a\x1b[31mred"}, InvalidDecision),
        ):
            with pytest.raises(refused):
                decide_request(
                    store=store, request_id=request.id, decision=decision, actor="a", **options
                )
        with pytest.raises(RequestNotFound):
            decide_request(store=store, request_id="req-nope", decision="allow", actor="a")
        with pytest.raises(RequestNotFound):  # another session's path: as missing
            decide_request(
                store=store, request_id=request.id, decision="allow", actor="a", session_id="x"
            )
        assert asking.read_request(store, request.id).state == "pending"
    finally:
        store.dispose()
    process.send_signal(signal.SIGTERM)
    assert answer_of(process) is None


def test_no_answer_expires_and_the_agent_asks_in_its_terminal(
    store: object, store_url: str, tmp_path: Path
) -> None:
    started = time.monotonic()
    process = ask(store_url, tmp_path, wait="1")
    assert answer_of(process) is None
    assert time.monotonic() - started < 15
    store = open_store(store_url)
    try:
        [request] = list_requests(store=store, everything=True)
        assert request.state == "expired"
        with pytest.raises(RequestAlreadySettled, match="expired"):
            decide_request(store=store, request_id=request.id, decision="allow", actor="a")
    finally:
        store.dispose()
    # The agent now asks in its own terminal: the session still waits on a human.
    assert session(store_url, SID).waiting_reason == "asks to run Bash: make deploy"


def test_the_agent_going_away_withdraws_its_request(
    store: object, store_url: str, tmp_path: Path
) -> None:
    process = ask(store_url, tmp_path)
    [request] = pending_requests(store)
    process.send_signal(signal.SIGTERM)  # the agent stops its hook (it was interrupted)
    assert answer_of(process) is None
    store = open_store(store_url)
    try:
        assert asking.read_request(store, request.id).state == "withdrawn"
        assert session(store_url, SID).waiting_reason is None
        # A pending request of a turn that ended is withdrawn by the agent's next events.
        again = asking.open_request(
            store, session_id=SID, agent="claude-code", tool_name="Bash",
            tool_input={"command": "ls"}, suggestions=None, reason="asks to run Bash: ls",
            wait_seconds=60,
        )  # fmt: skip
        hook("claude-code", claude("Stop", last_assistant_message="ok"), "--db", store_url)
        assert asking.read_request(store, again.id).state == "withdrawn"
    finally:
        store.dispose()


def test_gemini_requests_are_shown_with_what_cannot_be_done(
    store: object, store_url: str, tmp_path: Path
) -> None:
    options = ("--db", store_url, "--permission-wait", "60")
    hook("gemini", gemini("SessionStart", source="startup"), *options)
    started = time.monotonic()
    hook(
        "gemini",
        gemini(
            "Notification",
            notification_type="ToolPermission",
            message="Allow?",
            details={"command": "npm publish", "rootCommand": "npm"},
        ),
        *options,
    )
    assert time.monotonic() - started < 10  # not waited for: nothing could be delivered
    [request] = pending_requests(store)
    assert request.answers == () and request.reason == "asks to run run_shell_command: npm publish"
    store = open_store(store_url)
    try:
        with pytest.raises(NotDeliverable, match="Gemini CLI's hooks cannot allow"):
            decide_request(store=store, request_id=request.id, decision="allow", actor="a")
        with pytest.raises(NotDeliverable):
            decide_request(store=store, request_id=request.id, decision="deny", actor="a")
    finally:
        store.dispose()


def test_input_is_kept_redacted_and_bounded(store: object, store_url: str) -> None:
    store = open_store(store_url)
    try:
        hook("claude-code", claude("SessionStart", source="startup"), "--db", store_url)
        secret = "sk-ant-api03-" + "A" * 40
        huge = "x" * 100_000
        record = asking.open_request(
            store, session_id=SID, agent="claude-code", tool_name="Write",
            tool_input={"file_path": "/a", "content": huge, "env": f"TOKEN={secret}"},
            suggestions=[{"type": "setMode", "mode": "x"}] * 50, reason="asks to run Write: /a",
            wait_seconds=60,
        )  # fmt: skip
        assert record.input_cut and secret not in record.tool_input_json
        assert record.input_hidden  # what is shown is not all the agent would run
        assert isinstance(record.tool_input, str) and len(record.tool_input) == 64 * 1024
        assert record.suggestions == []  # over the bound: not offered
        small = asking.open_request(
            store, session_id=SID, agent="claude-code", tool_name="Bash",
            tool_input={"command": f"curl -H 'x-api-key: {secret}' http://x"}, suggestions=None,
            reason=f"asks to run Bash: curl {secret}", wait_seconds=60,
        )  # fmt: skip
        assert secret not in small.tool_input_json and secret not in small.reason
        assert not small.input_cut and small.input_hidden
        with pytest.raises(InvalidDecision, match="look like secrets"):
            decide_request(store=store, request_id=small.id, decision="allow", actor="a")
        decide_request(
            store=store, request_id=small.id, decision="allow", actor="a", hidden_seen=True
        )
        plain = asking.open_request(
            store, session_id=SID, agent="claude-code", tool_name="Bash",
            tool_input={"command": "ls"}, suggestions=[{"type": "setMode",
            "mode": "bypassPermissions", "destination": "session"}],
            reason="asks to run Bash: ls", wait_seconds=60,
        )  # fmt: skip
        assert not plain.input_hidden and plain.suggestions == []  # never offered from here
        denied = decide_request(store=store, request_id=plain.id, decision="deny", actor="a",
                                message=f"no, and {secret}")  # fmt: skip
        assert secret not in (denied.message or "")
    finally:
        store.dispose()


def test_many_agents_asking_at_once_each_get_their_own_decision(
    store: object, store_url: str, tmp_path: Path
) -> None:
    agents = 12
    processes = []
    for index in range(agents):
        external = f"00000000-0000-4000-8000-{index:012d}"
        options = ("--db", store_url, "--spool", str(tmp_path / "s.jsonl"))
        payload = {**claude("SessionStart"), "session_id": external}
        hook("claude-code", payload, *options)
        ask_payload = {
            **claude("PermissionRequest", tool_name="Bash", tool_input={"command": f"job {index}"}),
            "session_id": external,
        }
        processes.append(
            hook_started("claude-code", ask_payload, *options, "--permission-wait", "60")
        )
    found = pending_requests(store, count=agents, seconds=60)
    assert len(found) == agents
    store = open_store(store_url)
    try:
        for request in found:
            index = int(request.tool_input["command"].split()[1])
            if index % 2:
                decide_request(store=store, request_id=request.id, decision="deny",
                               actor="ops", message=f"not job {index}")  # fmt: skip
            else:
                decide_request(store=store, request_id=request.id, decision="allow", actor="ops")
    finally:
        store.dispose()
    for index, process in enumerate(processes):
        decision = answer_of(process)["hookSpecificOutput"]["decision"]
        if index % 2:
            assert decision == {"behavior": "deny", "message": f"not job {index}"}
        else:
            assert decision == {"behavior": "allow"}


def test_codex_takes_an_allow_and_a_deny_in_its_own_format(
    store: object, store_url: str, tmp_path: Path
) -> None:
    options = ("--db", store_url, "--spool", str(tmp_path / "spool.jsonl"))
    hook("codex", codex("SessionStart", source="startup"), *options)
    for decision, message in (("allow", None), ("deny", "Not on main.")):
        command = {"command": "git push", "description": "Push the branch"}
        asked = codex("PermissionRequest", tool_name="Bash", tool_input=command)
        process = hook_started("codex", asked, *options, "--permission-wait", "30")
        found = pending_requests(store)
        assert len(found) == 1, (decision, process.poll() is None or process.communicate())
        [request] = found
        assert request.session_id == f"codex-{CODEX_ID}" and request.answers == ("allow", "deny")
        decide_request(store=store, request_id=request.id, decision=decision,
                       actor="ops", message=message)  # fmt: skip
        expected = {"behavior": "allow"} if message is None else {
            "behavior": "deny", "message": message}  # fmt: skip
        assert answer_of(process) == {
            "hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": expected}
        }


def test_a_hook_never_hands_back_a_rule_that_switches_asking_off() -> None:
    """Whatever the store or a server says was accepted, the hook answers with a suggestion
    only if the agent offered it, as offered, and never one that turns every question off."""
    from roundtable_console.agents.asking import _as_offered
    from roundtable_console.agents.events import Ask
    from roundtable_console.store.requests.records import PermissionRequestRecord

    bypass = {"type": "setMode", "mode": "bypassPermissions", "destination": "session"}
    offered = [*SUGGESTIONS, bypass]
    record = PermissionRequestRecord.from_json({
        "id": "req-1", "session_id": SID, "agent": "claude-code", "tool_name": "Bash",
        "tool_input": {}, "suggestions": offered, "answers": ["allow", "deny"],
        "asked_at": "2026-12-06T00:00:00Z", "expires_at": "2026-12-06T00:02:00Z",
        "state": "allowed", "accepted_suggestion": 0,
    })  # fmt: skip
    ask = Ask(tool_name="Bash", tool_input={}, suggestions=offered)
    assert _as_offered(record, ask).accepted_suggestion == 0
    for index in (2, 3, -1, True, "0", 1.5):
        changed = replace(record, accepted_suggestion=index)
        assert _as_offered(changed, ask).accepted_suggestion is None, index
    other = Ask(tool_name="Bash", tool_input={}, suggestions=SUGGESTIONS[1:])
    assert _as_offered(record, other).accepted_suggestion is None


def test_an_input_with_nan_is_kept_as_json_every_surface_can_show() -> None:
    input_json, cut, hidden = asking.kept_input({"x": float("nan"), "y": [float("inf"), 1.5]})
    assert json.loads(input_json) == {"x": "nan", "y": ["inf", 1.5]} and not cut and not hidden
    assert asking.kept_suggestions([{"type": "x", "n": float("nan")}]) is None
