"""Hooks through the server answer too (issue 41 point 1): real hook processes with ``--server``
and an agent token, a real ``roundtable serve``, each engine. A permission request waits for its
decision through the server and the agent gets it in its own format; a finished turn's hook hears
a reply; the same bounds as against a store (expiry, withdrawal by a signal or a new turn); a
server that goes away mid-wait leaves the agent to ask in its own terminal, nothing said to it."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from roundtable_console.store.access.tokens import create_token
from roundtable_console.store.db.database import Store
from roundtable_console.store.requests import asking
from roundtable_console.store.requests.reads import list_requests
from tests import http_calls
from tests.api_support import seed_workspace
from tests.hook_support import CLAUDE_ID, CODEX_ID, claude, codex, hook_started, session
from tests.serve_support import Served, serving

WORKSPACE = "ws-h"
SID = f"claude-{CLAUDE_ID}"
SUGGESTIONS = [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]


@dataclass
class Team:
    served: Served
    store: Store
    url: str
    token: str  # the agent token the hooks carry
    operator: dict[str, str]
    spool: Path

    def options(self, *extra: str) -> tuple[str, ...]:
        return ("--server", self.served.url, "--workspace", WORKSPACE, "--token-env", "RT_TOKEN",
                "--spool", str(self.spool), *extra)  # fmt: skip

    def hook(self, agent: str, payload: dict[str, Any], *extra: str) -> subprocess.Popen[bytes]:
        return hook_started(agent, payload, *self.options(*extra), env={"RT_TOKEN": self.token})

    def api(self, session_id: str, suffix: str) -> str:
        return f"{self.served.url}/api/v1/workspaces/{WORKSPACE}/sessions/{session_id}{suffix}"

    def pending(self, session_id: str = SID, count: int = 1) -> list[dict[str, Any]]:
        """The session's pending requests as an operator reads them, once there are ``count``."""
        deadline = time.monotonic() + 30
        while True:
            found = http_calls.get(self.api(session_id, "/requests"), headers=self.operator).json()
            if len(found["items"]) >= count or time.monotonic() > deadline:
                return found["items"]  # type: ignore[no-any-return]
            time.sleep(0.05)

    def decide(self, session_id: str, request_id: str, **body: Any) -> httpx.Response:
        headers = {**self.operator, "Idempotency-Key": f"decide-{request_id}"}
        path = self.api(session_id, f"/requests/{request_id}/decision")
        return http_calls.post(path, json=body, headers=headers)


@pytest.fixture
def team(store: Store, store_url: str, tmp_path: Path) -> Iterator[Team]:
    seed_workspace(store, WORKSPACE)
    token = create_token(store=store, name="hooks", role="agent", agent_id="claude-code").token
    operator = create_token(store=store, name="ops", role="operator").token
    with serving(store_url, tmp_path / "home") as served:
        team = Team(served, store, store_url, token, {"Authorization": f"Bearer {operator}"},
                    tmp_path / "spool.jsonl")  # fmt: skip
        done = team.hook("claude-code", claude("SessionStart", source="startup"))
        assert done.wait(30) == 0 and done.stderr is not None and done.stderr.read() == b""
        yield team
        assert token not in served.log.read_text() and operator not in served.log.read_text()


def answer_of(process: subprocess.Popen[bytes], timeout: float = 30) -> dict[str, Any] | None:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0 and err == b"", err
    return json.loads(out) if out else None


def asked(team: Team, command: str, wait: str = "30") -> subprocess.Popen[bytes]:
    payload = claude("PermissionRequest", tool_name="Bash", tool_input={"command": command},
                     permission_suggestions=SUGGESTIONS)  # fmt: skip
    return team.hook("claude-code", payload, "--permission-wait", wait)


def test_an_allow_and_a_deny_reach_the_agent_through_the_server(team: Team) -> None:
    process = asked(team, "make deploy")
    [request] = team.pending()
    assert request["tool_input"] == {"command": "make deploy"}
    assert request["suggestions"] == SUGGESTIONS and request["answers"] == ["allow", "deny"]
    stored = asking.read_request(team.store, request["id"])
    assert stored.hook_pid == process.pid and stored.unheard is None  # this hook hears it
    assert session(team.url, SID).waiting_reason == "asks to run Bash: make deploy"
    assert session(team.url, SID).host == socket.gethostname()  # its machine, said over HTTP

    decided = team.decide(SID, request["id"], decision="allow", suggestion=0)
    assert decided.status_code == 200, decided.text
    started = time.monotonic()
    assert answer_of(process) == {"hookSpecificOutput": {
        "hookEventName": "PermissionRequest",
        "decision": {"behavior": "allow", "updatedPermissions": SUGGESTIONS},
    }}  # fmt: skip
    assert time.monotonic() - started < 5  # woken by the decision, not by a timer
    assert asking.read_request(team.store, request["id"]).delivered_at is not None

    process = asked(team, "rm -rf build")
    [request] = team.pending()
    team.decide(SID, request["id"], decision="deny", message="Not on Fridays.")
    assert answer_of(process) == {"hookSpecificOutput": {
        "hookEventName": "PermissionRequest",
        "decision": {"behavior": "deny", "message": "Not on Fridays."},
    }}  # fmt: skip


def test_no_answer_expires_and_a_signal_withdraws(team: Team) -> None:
    started = time.monotonic()
    process = asked(team, "make a", wait="2")
    assert answer_of(process) is None  # the agent asks in its own terminal
    assert 1.5 < time.monotonic() - started < 15
    [expired] = list_requests(store=team.store, session_id=SID, everything=True)
    assert expired.state == "expired"

    process = asked(team, "make b")
    [request] = team.pending()
    process.send_signal(signal.SIGTERM)  # the agent stops its hook (its user pressed Escape)
    assert answer_of(process) is None
    assert asking.read_request(team.store, request["id"]).state == "withdrawn"
    assert session(team.url, SID).waiting_reason is None


def test_a_new_turn_withdraws_the_waiting_request(team: Team) -> None:
    process = asked(team, "make c")
    [request] = team.pending()
    # The user answered in Claude's own terminal and the turn went on to its end: the hook of
    # that turn's end withdraws the request, whose hook then answers nothing.
    done = team.hook(
        "claude-code", claude("Stop", stop_hook_active=False), "--permission-wait", "30"
    )
    assert answer_of(done) is None
    assert answer_of(process) is None
    assert asking.read_request(team.store, request["id"]).state == "withdrawn"


# The hook's side alone (the store is not reached once the server is gone): one engine.
@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_a_server_gone_mid_wait_leaves_the_agent_to_ask(team: Team) -> None:
    process = asked(team, "make d", wait="120")
    team.pending()
    team.served.stop()
    started = time.monotonic()
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0 and out == b""  # nothing to the agent: it asks itself
    assert time.monotonic() - started < 25  # given up, not held to its 120 s
    assert err.decode().count("\n") <= 1


def test_a_reply_reaches_the_stop_hook_through_the_server(team: Team) -> None:
    stop = claude("Stop", stop_hook_active=False, last_assistant_message="Shall I deploy?")
    process = team.hook("claude-code", stop, "--reply-wait", "30")
    deadline = time.monotonic() + 30
    while True:
        route = http_calls.get(team.api(SID, "/reply"), headers=team.operator).json()
        if route["via"] == "hook" or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert route["via"] == "hook", route
    sent = http_calls.post(
        team.api(SID, "/reply"),
        json={"message": "Yes, deploy to staging.", "via": "hook"},
        headers={**team.operator, "Idempotency-Key": "reply-1"},
    )
    assert sent.status_code == 200, sent.text
    assert answer_of(process) == {"decision": "block", "reason": "Yes, deploy to staging."}


def test_codex_is_answered_through_the_server(store: Store, team: Team) -> None:
    token = create_token(store=store, name="codex-hooks", role="agent", agent_id="codex").token
    env = {"RT_TOKEN": token}
    started = hook_started("codex", codex("SessionStart", source="startup"), *team.options(),
                           env=env)  # fmt: skip
    assert answer_of(started) is None
    asked = codex("PermissionRequest", tool_name="Bash", tool_input={"command": "git push"})
    process = hook_started("codex", asked, *team.options("--permission-wait", "30"), env=env)
    [request] = team.pending(f"codex-{CODEX_ID}")
    team.decide(f"codex-{CODEX_ID}", request["id"], decision="allow")
    assert answer_of(process) == {"hookSpecificOutput": {
        "hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}  # fmt: skip
    # Claude's token does not await Codex's requests, nor Codex's Claude's.
    other = {"Authorization": f"Bearer {team.token}"}
    refused = http_calls.get(team.api(f"codex-{CODEX_ID}", f"/requests/{request['id']}?wait=1"),
                        headers=other)  # fmt: skip
    assert refused.status_code == 403 and refused.json()["code"] == "forbidden"


def test_waits_whose_client_went_away_are_given_back(team: Team) -> None:
    """A hook killed mid-wait leaves a connection closed: the server ends its wait at once, so
    a caller's bound of long waits (256) is never held by hooks that are gone."""
    import socket

    process = asked(team, "make e")
    [request] = team.pending()
    host, port = team.served.url.removeprefix("http://").split(":")
    path = f"/api/v1/workspaces/{WORKSPACE}/sessions/{SID}/requests/{request['id']}?wait=30"
    head = (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Authorization: Bearer {team.token}\r\n\r\n").encode()  # fmt: skip
    for _ in range(300):
        with socket.create_connection((host, int(port))) as gone:
            gone.sendall(head)
    time.sleep(1.0)
    answer = http_calls.get(team.api(SID, f"/requests/{request['id']}?wait=0.5"),
                       headers={"Authorization": f"Bearer {team.token}"}, timeout=10)  # fmt: skip
    assert answer.status_code == 200, answer.text
    assert answer.json()["state"] == "pending"
    team.decide(SID, request["id"], decision="allow")
    assert answer_of(process) is not None  # the hook's own wait was never disturbed
