"""Issue 28 points 3 and 4, against a real ``roundtable serve`` on each engine: a token's
workspaces are a wall everywhere, and "not yours" answers exactly as "missing".

ws-a holds an agent's claim, proposal, task, decision and tool call. An operator bound to ws-b
registers a session in ws-b under ws-a's agent and run, then reads it through every route,
projection, count, text (terminate impact, bulk preview, briefing) and stream: nothing of ws-a
shows. The same reads by an unbound operator do show them (the test can fail). A session with no
workspace is out of a bound caller's reach, read and write."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from roundtable_console.store.reads.sessions import get_session
from roundtable_console.store.writes import agent_writes
from tests.api_support import assert_problem
from tests.security_support import (
    AGENT_A,
    AGENT_B,
    RUN_A,
    SECRET_CLAIM,
    SECRET_DECISION,
    SECRET_PROPOSAL,
    SECRET_RESOURCE,
    SECRET_TASK,
    SECRET_TOOL,
    WS_A,
    WS_B,
    Browser,
    bearer,
    make_token,
    seed_two_workspaces,
    websocket,
    with_store,
)
from tests.serve_support import serving

B = f"/api/v1/workspaces/{WS_B}/sessions"
SECRETS = (SECRET_CLAIM, SECRET_RESOURCE, SECRET_PROPOSAL, "secret proposal", SECRET_TASK,
           "the secret plan", SECRET_DECISION, "the secret reason", "secret_of_a")  # fmt: skip
PAGES = ("/sessions?workspace=ws-b", "/sessions/sess-x", "/sessions/sess-x/briefing",
         "/sessions/sess-x/briefing.md", "/fragments/sessions/sess-x",
         "/fragments/rows?id=sess-x", "/fragments/sessions/sess-x/terminate")  # fmt: skip


def _leaked(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


def _register_across(served_url: str, token: str) -> None:
    body = {"agent_id": AGENT_A, "run_id": RUN_A, "adapter": "codex", "working_directory": "/b"}
    made = httpx.put(f"{served_url}{B}/sess-x", json=body, headers=bearer(token))
    assert made.status_code == 201, made.text


def test_a_bound_caller_reads_nothing_of_another_workspace(store_url: str, tmp_path: Path) -> None:
    seed_two_workspaces(store_url)
    bound = make_token(store_url, "ops-b", "operator", workspaces=(WS_B,))
    everyone = make_token(store_url, "ops", "operator")
    with serving(store_url, tmp_path) as served:
        _register_across(served.url, bound)
        for name in ("claims", "proposals", "tool-calls", "logs", "metrics", "environment"):
            seen = httpx.get(f"{served.url}{B}/sess-x/{name}", headers=bearer(bound))
            assert seen.status_code == 200 and not _leaked(seen.text), (name, seen.text)
        # An unbound operator reads the agent's rows there: the wall is the token's.
        for name, secret in (("claims", SECRET_CLAIM), ("tool-calls", "secret_of_a")):
            seen = httpx.get(f"{served.url}{B}/sess-x/{name}", headers=bearer(everyone))
            assert secret in seen.text, (name, seen.text)

        walled, open_ = Browser(served, bound), Browser(served, everyone)
        try:
            for page in PAGES:
                shown = walled.get(page)
                assert shown.status_code == 200, (page, shown.text)
                assert not _leaked(shown.text), (page, _leaked(shown.text))
            assert (
                walled.get("/fragments/sessions/sess-x/terminate").json()["requires_details"]
                is False
            )
            assert _leaked(open_.get("/sessions/sess-x").text)
            assert _leaked(open_.get("/sessions/sess-x/briefing.md").text)
            impact = open_.get("/fragments/sessions/sess-x/terminate").json()
            assert impact["requires_details"] is True and SECRET_RESOURCE in impact["impact"]
            rows = json.dumps(walled.get("/fragments/rows?id=sess-x").json())
            assert "1 claim" not in rows and "proposal" not in rows
            # The bulk preview of terminating it names no claim of ws-a either.
            preview = walled.post("/fragments/bulk/terminate", json={"ids": ["sess-x"]},
                                  headers={"Idempotency-Key": "p-1"})  # fmt: skip
            assert preview.status_code == 200 and not _leaked(preview.text), preview.text
            assert preview.json()["requires_details"] is False
            # Terminating it asks no impact of claims the caller cannot see, and says none.
            ended = httpx.post(
                f"{served.url}{B}/sess-x/terminate",
                headers={**bearer(bound), "Idempotency-Key": "t-1"},
            )
            assert ended.status_code == 200 and not _leaked(ended.text), ended.text
            logs = httpx.get(f"{served.url}{B}/sess-x/logs", headers=bearer(bound)).text
            assert not _leaked(logs)
        finally:
            walled.close()
            open_.close()


def test_a_workspace_stream_carries_only_its_own_runs_events(
    store_url: str, tmp_path: Path
) -> None:
    """The reference's WebSocket: events belong to the workspace of their run. A ws-b session
    naming ws-a's run does not draw that run's events into ws-b, replayed or live."""
    seed_two_workspaces(store_url)
    bound = make_token(store_url, "ops-b", "operator", workspaces=(WS_B,))
    everyone = make_token(store_url, "ops", "operator")
    with serving(store_url, tmp_path) as served:
        _register_across(served.url, bound)
        body = {
            "agent_id": AGENT_B,
            "run_id": "run-b",
            "adapter": "codex",
            "working_directory": "/b",
        }
        assert (
            httpx.put(f"{served.url}{B}/sess-y", json=body, headers=bearer(bound)).status_code
            == 201
        )
        path = f"/api/v1/workspaces/{WS_B}/events/ws?last_event_id=0"
        with websocket(served, path, headers=bearer(bound)) as socket:
            assert json.loads(socket.recv(timeout=5))["kind"] == "hello"
            for session in (f"/api/v1/workspaces/{WS_A}/sessions/sess-a", f"{B}/sess-x",
                            f"{B}/sess-y"):  # fmt: skip
                done = httpx.post(f"{served.url}{session}/pause", headers=bearer(everyone))
                assert done.status_code == 200, done.text
            seen = []
            while True:
                event = json.loads(socket.recv(timeout=5))
                seen.append(event)
                if event.get("entity_id") == "sess-y":
                    break
        assert not _leaked(json.dumps(seen)), seen
        assert {event.get("entity_id") for event in seen} == {"sess-y"}
        # ws-a's own stream carries its run's events, the tool call among them.
        path_a = f"/api/v1/workspaces/{WS_A}/events/ws?last_event_id=0"
        with websocket(served, path_a, headers=bearer(everyone)) as socket:
            assert json.loads(socket.recv(timeout=5))["kind"] == "hello"
            assert json.loads(socket.recv(timeout=5))["type"] == SECRET_TOOL


def test_a_session_of_no_workspace_is_out_of_a_bound_callers_reach(
    store_url: str, tmp_path: Path
) -> None:
    seed_two_workspaces(store_url)

    def register_nowhere(store):  # type: ignore[no-untyped-def]
        with store.write() as db:
            agent_writes.register(
                db=db, session_id="sess-none", agent_id=AGENT_B, run_id="r", adapter="codex",
                working_directory="/keep/me", resume_command="codex resume keep",
            )  # fmt: skip

    def row(store):  # type: ignore[no-untyped-def]
        with store.read() as db:
            found = get_session(db=db, session_id="sess-none")
            return found.working_directory, found.external_resume_command, found.workspace_id

    with_store(store_url, register_nowhere)
    before = with_store(store_url, row)
    bound = make_token(store_url, "ops-b", "operator", workspaces=(WS_B,))
    agent = make_token(store_url, "bot-b", "agent", agent_id=AGENT_B, workspaces=(WS_B,))
    with serving(store_url, tmp_path) as served:
        missing = assert_problem(
            httpx.get(f"{served.url}{B}/sess-nope", headers=bearer(bound)), 404, "session_not_found"
        )
        body = {
            "agent_id": AGENT_B,
            "run_id": "r",
            "adapter": "codex",
            "working_directory": "/evil",
        }
        for token in (bound, agent):
            read = httpx.get(f"{served.url}{B}/sess-none", headers=bearer(token))
            replaced = httpx.put(f"{served.url}{B}/sess-none", json=body, headers=bearer(token))
            for refused in (read, replaced):
                got = assert_problem(refused, 404, "session_not_found")
                assert got["detail"] == missing["detail"].replace("sess-nope", "sess-none")
        walled = Browser(served, bound)
        try:
            assert walled.get("/sessions/sess-none").status_code == 404
            assert (
                walled.get(
                    "/fragments/sessions/sess-none/reveal/external_resume_command"
                ).status_code
                == 404
            )
        finally:
            walled.close()
    assert with_store(store_url, row) == before


def test_not_yours_answers_exactly_as_missing(store_url: str, tmp_path: Path) -> None:
    """Another workspace's session and no session at all: the same status, code and words,
    for reads, actions and an agent's writes; the workspace is checked before the agent (an
    agent token of ws-b registering ws-a's session is not told whose it is)."""
    seed_two_workspaces(store_url)
    bound = make_token(store_url, "ops-b", "operator", workspaces=(WS_B,))
    agent = make_token(store_url, "bot-b", "agent", agent_id=AGENT_B, workspaces=(WS_B,))
    with serving(store_url, tmp_path) as served:

        def both(method: str, tail: str, token: str, **options: object) -> list[dict[str, object]]:
            answers = []
            for session in ("sess-a", "sess-nope"):
                sent = httpx.request(
                    method, f"{served.url}{B}/{session}{tail}", headers=bearer(token), **options
                )  # type: ignore[arg-type]
                body = assert_problem(sent, 404, "session_not_found")
                answers.append({**body, "detail": body["detail"].replace(session, "ID"),
                                "request_id": None, "instance": None})  # fmt: skip
            return answers

        for method, tail, token in (("GET", "", bound), ("GET", "/claims", bound),
                                    ("POST", "/pause", bound), ("POST", "/heartbeat", agent),
                                    ("POST", "/end", agent)):  # fmt: skip
            other, missing = both(method, tail, token)
            assert other == missing, (method, tail)
        # Registering ws-a's session from ws-b: not found, never "acts for agent-a".
        body = {"agent_id": AGENT_B, "run_id": "r", "adapter": "codex", "working_directory": "/w"}
        refused = httpx.put(f"{served.url}{B}/sess-a", json=body, headers=bearer(agent))
        got = assert_problem(refused, 404, "session_not_found")
        assert AGENT_A not in got["detail"]
        # A workspace the token does not reach answers as one that does not exist.
        for workspace in (WS_A, "ws-nowhere"):
            listed = httpx.get(
                f"{served.url}/api/v1/workspaces/{workspace}/sessions", headers=bearer(bound)
            )
            assert_problem(listed, 404, "workspace_not_found")
