"""Permission requests with the real Claude Code CLI (issue 30): `claude -p` against the loopback
model stand-in (tests/fake_models.py), whose model asks to run a Bash command that makes a marker
file, with the hooks installed by `roundtable hooks install claude-code --permission-wait N`. The
hook records the request and waits; a human allows it (`roundtable requests allow`, or an operator
through a real `roundtable serve`), denies it with a message the model reads, or no one answers
and it expires. SQLite; every wait bounded, loopback only."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from roundtable_console.store.access.tokens import create_token
from roundtable_console.store.db.database import open_store
from roundtable_console.store.requests import asking
from roundtable_console.store.requests.reads import list_requests
from tests import http_calls
from tests import test_agents_real as real
from tests.api_support import assert_problem, seed_workspace
from tests.fake_models import SHELL_COMMAND
from tests.hook_support import history, session
from tests.serve_support import serve_env, serving
from tests.test_agents_real import (
    CLAUDE,
    RUN_SECONDS,
    _claude_env,
    _install,
    _need,
    _only_session,
    _url,
)

# The fixtures of test_agents_real.py, shared: the model stand-in (``api``, which stands in
# here for conftest's in-process server of that name) and the run's home, project and store.
api = real.api
place = real.place

MARKER = SHELL_COMMAND.split()[-1]  # made in the project, where claude runs the command
ROUNDTABLE = str(Path(sys.executable).parent / "roundtable")
ASK_SECONDS = 60  # the request is seen by then, or the test fails


@pytest.fixture
def asking_claude(
    place: dict[str, Path], api: Any
) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Starts ``claude -p`` once the hooks are installed with ``--permission-wait WAIT``: its
    model asks to run the command, and its hook waits for a human. A run a failed test left
    behind is stopped."""
    started: list[subprocess.Popen[str]] = []

    def start(wait: int, *more: str) -> subprocess.Popen[str]:
        env = _claude_env(place, api)
        project = str(place["project"])
        _install(
            "claude-code", place, env, "--project", project, "--permission-wait", str(wait), *more
        )
        settings = json.loads((place["project"] / ".claude" / "settings.json").read_text())
        [entry] = settings["hooks"]["PermissionRequest"]
        [command] = entry["hooks"]
        assert command["command"].endswith(f"--permission-wait {wait}")
        assert command["timeout"] == wait + 15  # the hook, not the agent, ends the wait
        process = subprocess.Popen(
            [str(_need(CLAUDE)), "-p", "make the marker file", "--output-format", "json"],
            cwd=place["project"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        _stop(process)


def _stop(claude: subprocess.Popen[str]) -> str:
    """A run still going stopped as a user stops it (SIGTERM: Claude Code stops its hooks, which
    withdraw their requests; a SIGKILL would leave the hook waiting out its time), killed if it
    does not stop; what it said on stderr."""
    if claude.poll() is None:
        claude.terminate()
        try:
            return claude.communicate(timeout=15)[1]
        except subprocess.TimeoutExpired:
            claude.kill()
    return claude.communicate(timeout=10)[1]


def _finished(claude: subprocess.Popen[str]) -> dict[str, Any]:
    """The run's JSON result, once it exited 0 with no word of the hooks on stderr."""
    try:
        out, err = claude.communicate(timeout=RUN_SECONDS)
    except subprocess.TimeoutExpired:
        said = _stop(claude)[-3000:]
        raise AssertionError(f"claude -p still ran after {RUN_SECONDS} s: {said}") from None
    assert claude.returncode == 0, f"claude exited {claude.returncode}: {err[-3000:]}"
    assert "roundtable hooks:" not in err, err[-2000:]
    result = json.loads(out)
    assert result["is_error"] is False and result["subtype"] == "success", result
    return result


def _asked(place: dict[str, Path], claude: subprocess.Popen[str], *, pending: bool = True) -> Any:
    """The one request the run's hook recorded (bounded): pending, or in whatever state it is
    by then (a short wait may be over before a loaded machine looks)."""
    store = open_store(_url(place))
    deadline = time.monotonic() + ASK_SECONDS
    try:
        while True:
            gone = claude.poll() is not None  # before the read: what it recorded is seen
            found = list_requests(store=store, everything=not pending)
            if found or gone or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    finally:
        store.dispose()
    if not found:
        raise AssertionError(f"no request within {ASK_SECONDS} s: {_stop(claude)[-3000:]}")
    [request] = found
    assert request.tool_name == "Bash" and request.tool_input["command"] == SHELL_COMMAND
    assert request.reason == f"asks to run Bash: {SHELL_COMMAND}"
    assert request.answers == ("allow", "deny")
    if pending:
        assert request.state == "pending" and request.delivered_at is None
    return request


def _settled(place: dict[str, Path], request_id: str) -> Any:
    store = open_store(_url(place))
    try:
        return asking.read_request(store, request_id)
    finally:
        store.dispose()


def _requests_cli(place: dict[str, Path], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ROUNDTABLE, "requests", *argv, "--db", _url(place)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**serve_env(place["home"]), "HOME": str(place["home"])},
    )


def _told_after(record: Any) -> float:
    """Seconds from the decision to the hook's answer (it marks the decision delivered as it
    answers)."""
    decided = datetime.fromisoformat(record.decided_at.replace("Z", "+00:00"))
    delivered = datetime.fromisoformat(record.delivered_at.replace("Z", "+00:00"))
    return (delivered - decided).total_seconds()


def _tool_results(api: Any) -> list[dict[str, Any]]:
    """The tool results the agent sent its model, each once (a request holds the conversation
    so far), in order."""
    found: dict[str, dict[str, Any]] = {}
    for _path, body in api.requests:
        for message in body.get("messages") or []:
            if message.get("role") != "user" or not isinstance(message.get("content"), list):
                continue
            for block in message["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    found.setdefault(block["tool_use_id"], block)
    return list(found.values())


def test_an_allow_from_the_command_line_runs_the_command(
    place: dict[str, Path], api: Any, asking_claude: Any
) -> None:
    # What each of the model's two answers used, as the test chooses (issue 46).
    api.usage = {"input_tokens": 1200, "output_tokens": 34, "cache_read_input_tokens": 5000,
                 "cache_creation_input_tokens": 70}  # fmt: skip
    claude = asking_claude(60)
    request = _asked(place, claude)
    sid = _only_session(place)
    assert request.session_id == sid
    assert session(_url(place), sid).waiting_reason == request.reason
    assert not (place["project"] / MARKER).exists()  # it waits: nothing ran

    done = _requests_cli(place, "allow", request.id, "--operator", "alice")
    assert done.returncode == 0, done.stderr
    result = _finished(claude)

    assert (place["project"] / MARKER).is_file()
    assert result["permission_denials"] == []
    [ran] = _tool_results(api)
    assert ran["is_error"] is False
    allowed = _settled(place, request.id)
    assert (allowed.state, allowed.decided_by, allowed.message) == ("allowed", "alice", None)
    assert allowed.delivered_at is not None and 0 <= _told_after(allowed) < 10
    events = history(_url(place), sid)
    decided = [payload for kind, payload in events if kind == "permission_decided"]
    assert decided == [{"request_id": request.id, "tool_name": "Bash", "decision": "allow",
                        "waiting_after": None}]  # the decision says the session waits no more
    assert session(_url(place), sid).status == "ended"
    # The command it ran is the session's tool call (issue 46), with the time Claude Code gave.
    [(tool, action, outcome, took)] = _tool_calls(place, sid)
    assert (tool, action, outcome) == ("Bash", SHELL_COMMAND, "ok") and isinstance(took, int)
    # What it spent, summed from its transcript: both answers, and Claude Code's own cost.
    ended = session(_url(place), sid)
    usage = json.loads(ended.metadata_json)["usage"]
    assert [usage[key] for key in ("input_tokens", "output_tokens", "cache_read_input_tokens",
                                   "cache_creation_input_tokens")] == [2400, 68, 10000, 140]
    assert usage["cost_basis"] == "stated" and usage["cost_usd"] > 0
    # Decided once: a second decision is refused in words, and changes nothing.
    again = _requests_cli(place, "deny", request.id, "--operator", "bob")
    assert again.returncode != 0 and "allowed by alice" in again.stderr, again.stderr
    assert _settled(place, request.id).state == "allowed"


def test_a_deny_with_a_message_is_what_the_model_reads(
    place: dict[str, Path], api: Any, asking_claude: Any
) -> None:
    claude = asking_claude(60)
    request = _asked(place, claude)
    message = "Not in the project root: use build/ instead."

    done = _requests_cli(place, "deny", request.id, "--message", message, "--operator", "alice")
    assert done.returncode == 0, done.stderr
    result = _finished(claude)

    assert not (place["project"] / MARKER).exists()
    [denied_result] = _tool_results(api)
    assert denied_result["is_error"] is True and denied_result["content"] == message
    [denial] = result["permission_denials"]
    assert denial["tool_name"] == "Bash" and denial["tool_use_id"] == denied_result["tool_use_id"]
    assert denial["tool_input"]["command"] == SHELL_COMMAND
    denied = _settled(place, request.id)
    assert (denied.state, denied.decided_by, denied.message) == ("denied", "alice", message)
    assert denied.delivered_at is not None and 0 <= _told_after(denied) < 10
    assert _tool_calls(place, request.session_id) == [("Bash", SHELL_COMMAND, "denied", None)]


def _tool_calls(place: dict[str, Path], session_id: str) -> list[tuple[Any, ...]]:
    from roundtable_console.store.reads.projections import tool_calls

    store = open_store(_url(place))
    try:
        with store.read() as db:
            items = tool_calls(db=db, session_id=session_id).items
    finally:
        store.dispose()
    return [(i["tool"], i["action"], i["status"], i["duration_ms"]) for i in items]


def test_no_answer_expires_and_claude_p_denies_by_itself(
    place: dict[str, Path], api: Any, asking_claude: Any
) -> None:
    claude = asking_claude(2)
    request = _asked(place, claude, pending=False)
    result = _finished(claude)  # exit 0: -p answers a question no one answered with a deny

    assert not (place["project"] / MARKER).exists()
    [denial] = result["permission_denials"]
    assert denial["tool_name"] == "Bash" and denial["tool_input"]["command"] == SHELL_COMMAND
    [refused] = _tool_results(api)
    assert refused["is_error"] is True
    expired = _settled(place, request.id)
    assert expired.state == "expired"
    assert (expired.decided_by, expired.delivered_at) == (None, None)
    assert expired.decided_at is not None and expired.decided_at >= expired.expires_at
    events = history(_url(place), request.session_id)
    decided = [payload for kind, payload in events if kind == "permission_decided"]
    assert decided == [{"request_id": request.id, "state": "expired"}]
    # Too late: a decision now is refused, and says why.
    late = _requests_cli(place, "allow", request.id, "--operator", "alice")
    assert late.returncode != 0 and "expired" in late.stderr, late.stderr
    assert _settled(place, request.id).state == "expired"


def test_an_operator_allows_through_the_server_a_viewer_and_the_agent_cannot(
    place: dict[str, Path], asking_claude: Any, tmp_path: Path
) -> None:
    url = _url(place)
    store = open_store(url)
    try:
        seed_workspace(store, "ws-real")
        tokens = {
            name: create_token(store=store, name=name, role=role, agent_id=agent).token
            for name, role, agent in (
                ("ops", "operator", None),
                ("watcher", "viewer", None),
                ("coder-bot", "agent", "coder"),  # the asking agent's own token
            )
        }
    finally:
        store.dispose()
    with serving(url, tmp_path / "serve-home") as served:
        claude = asking_claude(60, "--workspace", "ws-real", "--agent", "coder")
        request = _asked(place, claude)
        found = session(url, request.session_id)
        assert (found.agent_id, found.effective_workspace_id) == ("coder", "ws-real")
        base = f"{served.url}/api/v1/workspaces/ws-real/sessions/{request.session_id}/requests"

        def decide(token: str, key: str) -> httpx.Response:
            return http_calls.post(
                f"{base}/{request.id}/decision",
                json={"decision": "allow"},
                headers={"Authorization": f"Bearer {token}", "Idempotency-Key": key},
                timeout=30,
            )

        listed = http_calls.get(
            base, headers={"Authorization": f"Bearer {tokens['watcher']}"}, timeout=30
        )
        assert listed.status_code == 200, listed.text
        assert [item["id"] for item in listed.json()["items"]] == [request.id]
        assert_problem(decide(tokens["watcher"], "viewer-1"), 403, "forbidden")
        assert_problem(decide(tokens["coder-bot"], "agent-1"), 403, "forbidden")
        assert _settled(place, request.id).state == "pending"
        assert claude.poll() is None  # still waiting for a human
        assert not (place["project"] / MARKER).exists()

        allowed = decide(tokens["ops"], "ops-1")
        assert allowed.status_code == 200, allowed.text
        assert (allowed.json()["state"], allowed.json()["decided_by"]) == ("allowed", "ops")
        result = _finished(claude)

        assert (place["project"] / MARKER).is_file()
        assert result["permission_denials"] == []
        record = _settled(place, request.id)
        assert (record.state, record.decided_by) == ("allowed", "ops")
        assert record.delivered_at is not None and 0 <= _told_after(record) < 10
        # A retry under the same key is answered as the first time.
        again = decide(tokens["ops"], "ops-1")
        assert again.status_code == 200 and again.headers.get("idempotent-replayed") == "true"
        for token in tokens.values():
            assert token not in served.log.read_text()
