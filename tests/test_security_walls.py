"""Issue 28 points 3 and 4, against a real ``roundtable serve`` on each engine: a token's
workspaces are a wall everywhere, and "not yours" answers exactly as "missing".

ws-a holds an agent's claim, proposal, task, decision and tool call. An operator bound to ws-b
registers a session in ws-b under ws-a's agent and run, then reads it through every route,
projection, count, text (terminate impact, bulk preview, briefing) and stream: nothing of ws-a
shows. The same reads by an unbound operator do show them (the test can fail). A session with no
workspace is out of a bound caller's reach, read and write."""

from __future__ import annotations

import json
import time
from pathlib import Path

from sqlalchemy import insert, text

from roundtable_console.store.access.walls import Wall
from roundtable_console.store.db.models import Claim, Event
from roundtable_console.store.reads.audit import audit_page
from roundtable_console.store.reads.listing import Selection
from roundtable_console.store.reads.sessions import get_session
from roundtable_console.store.writes import agent_writes
from roundtable_console.store.writes.bulk_run import run_bulk
from tests import http_calls
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
    open_stream,
    read_all,
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
    made = http_calls.put(f"{served_url}{B}/sess-x", json=body, headers=bearer(token))
    assert made.status_code == 201, made.text


def test_a_bound_caller_reads_nothing_of_another_workspace(store_url: str, tmp_path: Path) -> None:
    seed_two_workspaces(store_url)
    bound = make_token(store_url, "ops-b", "operator", workspaces=(WS_B,))
    everyone = make_token(store_url, "ops", "operator")
    with serving(store_url, tmp_path) as served:
        _register_across(served.url, bound)
        for name in ("claims", "proposals", "tool-calls", "logs", "metrics", "environment"):
            seen = http_calls.get(f"{served.url}{B}/sess-x/{name}", headers=bearer(bound))
            assert seen.status_code == 200 and not _leaked(seen.text), (name, seen.text)
        # An unbound operator reads the agent's rows there: the wall is the token's.
        for name, secret in (("claims", SECRET_CLAIM), ("tool-calls", "secret_of_a")):
            seen = http_calls.get(f"{served.url}{B}/sess-x/{name}", headers=bearer(everyone))
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
            ended = http_calls.post(
                f"{served.url}{B}/sess-x/terminate",
                headers={**bearer(bound), "Idempotency-Key": "t-1"},
            )
            assert ended.status_code == 200 and not _leaked(ended.text), ended.text
            logs = http_calls.get(f"{served.url}{B}/sess-x/logs", headers=bearer(bound)).text
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
            http_calls.put(f"{served.url}{B}/sess-y", json=body, headers=bearer(bound)).status_code
            == 201
        )
        path = f"/api/v1/workspaces/{WS_B}/events/ws?last_event_id=0"
        with websocket(served, path, headers=bearer(bound)) as socket:
            assert json.loads(socket.recv(timeout=5))["kind"] == "hello"
            for session in (f"/api/v1/workspaces/{WS_A}/sessions/sess-a", f"{B}/sess-x",
                            f"{B}/sess-y"):  # fmt: skip
                done = http_calls.post(f"{served.url}{session}/pause", headers=bearer(everyone))
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
            http_calls.get(f"{served.url}{B}/sess-nope", headers=bearer(bound)),
            404,
            "session_not_found",
        )
        body = {
            "agent_id": AGENT_B,
            "run_id": "r",
            "adapter": "codex",
            "working_directory": "/evil",
        }
        for token in (bound, agent):
            read = http_calls.get(f"{served.url}{B}/sess-none", headers=bearer(token))
            replaced = http_calls.put(
                f"{served.url}{B}/sess-none", json=body, headers=bearer(token)
            )
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
                sent = http_calls.request(
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
        refused = http_calls.put(f"{served.url}{B}/sess-a", json=body, headers=bearer(agent))
        got = assert_problem(refused, 404, "session_not_found")
        assert AGENT_A not in got["detail"]
        # A workspace the token does not reach answers as one that does not exist.
        for workspace in (WS_A, "ws-nowhere"):
            listed = http_calls.get(
                f"{served.url}/api/v1/workspaces/{workspace}/sessions", headers=bearer(bound)
            )
            assert_problem(listed, 404, "workspace_not_found")


def test_a_bulk_run_checks_the_wall_where_it_acts(store_url: str) -> None:
    """The web console's bulk action read its selection's reach before the run: a session that
    joined another workspace meanwhile (or an id made to exist meanwhile) was acted on. The run
    now judges each session against the caller's wall in the transaction that acts on it."""
    seed_two_workspaces(store_url)
    wall = Wall.of([WS_B])

    def run(store, action: str) -> dict[str, object]:  # type: ignore[no-untyped-def]
        return run_bulk(
            store=store, action=action, selection=Selection(ids=frozenset({"sess-a"})),
            actor="ops-b", run_key=f"k-{action}", impact_details="gone", wall=wall,
        ).to_json()  # fmt: skip

    def status(store) -> str:  # type: ignore[no-untyped-def]
        with store.read() as db:
            return get_session(db=db, session_id="sess-a").status

    for action in ("heartbeat", "pause", "stop", "resume", "terminate"):
        done = with_store(store_url, lambda store, action=action: run(store, action))
        assert done["failed"] == 1 and done["done"] == 0, (action, done)
        assert done["items"][0]["code"] == "session_not_found"
        assert done["items"][0]["message"] == "No session has the id 'sess-a'."
    assert with_store(store_url, status) == "active"


def test_a_bulk_preview_tells_not_yours_from_missing_in_no_way(
    store_url: str, tmp_path: Path
) -> None:
    seed_two_workspaces(store_url)
    bound = make_token(store_url, "ops-b", "operator", workspaces=(WS_B,))
    with serving(store_url, tmp_path) as served:
        browser = Browser(served, bound)
        try:
            answers = []
            for ids in (["sess-a", "sess-nope"], ["sess-0", "sess-nope"]):
                for where in ("fragments", "actions"):
                    key = {"Idempotency-Key": f"k-{where}-{ids[0]}"}
                    sent = browser.post(f"/{where}/bulk/pause", json={"ids": ids}, headers=key)
                    assert sent.status_code == 200, sent.text
                    answers.append(json.dumps(sent.json()).replace(ids[0], "ID"))
            assert answers[0] == answers[2] and answers[1] == answers[3]
        finally:
            browser.close()


def test_viewers_and_agents_reveal_nothing(store_url: str, tmp_path: Path) -> None:
    seed_two_workspaces(store_url)

    def resume_command(store):  # type: ignore[no-untyped-def]
        with store.write() as db:
            agent_writes.register(
                db=db, session_id="sess-r", agent_id=AGENT_B, run_id="r", adapter="codex",
                working_directory="/w", resume_command="codex resume hidden-one",
                metadata={"workspace_id": WS_B},
            )  # fmt: skip

    with_store(store_url, resume_command)
    viewer = make_token(store_url, "vic", "viewer")
    agent = make_token(store_url, "bot", "agent", agent_id=AGENT_B)
    with serving(store_url, tmp_path) as served:
        for token in (viewer, agent):
            browser = Browser(served, token)
            try:
                page = browser.get("/sessions/sess-r").text
                assert "data-reveal" not in page and "hidden-one" not in page
                refused = browser.get("/fragments/sessions/sess-r/reveal/external_resume_command")
                assert_problem(refused, 403, "forbidden")
                assert "hidden-one" not in refused.text
            finally:
                browser.close()

    def entries(store):  # type: ignore[no-untyped-def]
        with store.read() as db:
            return audit_page(db=db).items

    assert with_store(store_url, entries) == []


def test_a_run_belongs_to_its_first_sessions_workspace(store_url: str, tmp_path: Path) -> None:
    """Events of a run whose row names no workspace: a session registered later naming that
    run (a ws-b agent's) neither reads them nor hides them from the run's own workspace; a run
    first used by a session of no workspace is no workspace's."""
    seed_two_workspaces(store_url)

    def seed(store):  # type: ignore[no-untyped-def]
        with store.write() as db:
            for session_id, run_id, metadata in (
                ("sess-a2", "run-a2", {"workspace_id": WS_A}),
                ("sess-none", "run-none", None),
            ):
                agent_writes.register(
                    db=db, session_id=session_id, agent_id=AGENT_A, run_id=run_id,
                    adapter="codex", working_directory="/w", metadata=metadata,
                )  # fmt: skip
            for run_id in ("run-a2", "run-none"):
                db.execute(
                    insert(Event.__table__).values(  # type: ignore[attr-defined]
                        run_id=run_id, type=f"tool.secret_of_{run_id}", actor_id=AGENT_A,
                        payload_json="{}", created_at="2026-12-01T00:00:01Z",
                    )
                )  # fmt: skip

    with_store(store_url, seed)
    bot = make_token(store_url, "bot-b", "agent", agent_id=AGENT_B, workspaces=(WS_B,))
    ops = make_token(store_url, "ops", "operator")
    with serving(store_url, tmp_path) as served:
        for session_id, run_id in (("sess-hijack", "run-a2"), ("sess-evil", "run-none")):
            body = {"agent_id": AGENT_B, "run_id": run_id, "adapter": "codex",
                    "working_directory": "/b"}  # fmt: skip
            made = http_calls.put(f"{served.url}{B}/{session_id}", json=body, headers=bearer(bot))
            assert made.status_code == 201, made.text
            calls = http_calls.get(f"{served.url}{B}/{session_id}/tool-calls", headers=bearer(bot))
            assert calls.json()["items"] == [], calls.text
        a = f"/api/v1/workspaces/{WS_A}/sessions/sess-a2/tool-calls"
        assert "secret_of_run-a2" in http_calls.get(served.url + a, headers=bearer(ops)).text

        def replayed(workspace: str, token: str) -> str:
            path = f"/api/v1/workspaces/{workspace}/events/ws?last_event_id=0"
            with websocket(served, path, headers=bearer(token)) as socket:
                seen = [socket.recv(timeout=5)]
                while True:
                    try:
                        seen.append(socket.recv(timeout=1))
                    except TimeoutError:
                        return "".join(str(one) for one in seen)

        assert "secret_of_run" not in replayed(WS_B, bot)
        in_a = replayed(WS_A, ops)
        assert "secret_of_run-a2" in in_a and "secret_of_run-none" not in in_a


def test_a_briefing_names_no_decision_on_another_workspaces_proposal(
    store_url: str, tmp_path: Path
) -> None:
    seed_two_workspaces(store_url)

    def shared_task(store):  # type: ignore[no-untyped-def]
        with store.write() as db:
            agent_writes.register(
                db=db, session_id="sess-b", agent_id=AGENT_B, run_id="run-b", adapter="codex",
                working_directory="/b", metadata={"workspace_id": WS_B},
            )  # fmt: skip
            db.execute(
                insert(Claim.__table__).values(  # type: ignore[attr-defined]
                    id="claim-of-b", resource_id="src/b.py", agent_id=AGENT_B,
                    task_id=SECRET_TASK, claim_type="write", status="active",
                    expires_at="2099-01-01T00:00:00Z", renewable=1, resume_policy="hold",
                    created_at="2026-12-01T00:00:00Z", workspace_id=WS_B,
                )
            )  # fmt: skip

    with_store(store_url, shared_task)
    bound = make_token(store_url, "ops-b", "operator", workspaces=(WS_B,))
    with serving(store_url, tmp_path) as served:
        browser = Browser(served, bound)
        try:
            briefing = browser.get("/sessions/sess-b/briefing.md").text
        finally:
            browser.close()
    assert "src/b.py" in briefing  # the workspace's own claim, and the task it names
    assert SECRET_DECISION not in briefing and "the secret reason" not in briefing


def test_other_workspaces_changes_are_not_heard_as_keepalives(
    store_url: str, tmp_path: Path
) -> None:
    """A stream of ws-b said ``: keepalive`` at each change anywhere: a bound reader could time
    another workspace's activity. Now nothing is sent but on the clock."""
    seed_two_workspaces(store_url)
    bound = make_token(store_url, "vic-b", "viewer", workspaces=(WS_B,))
    ops = make_token(store_url, "ops", "operator")
    with serving(store_url, tmp_path) as served:
        browser = Browser(served, bound)
        cookie = "; ".join(f"{k}={v}" for k, v in browser.client.cookies.items())
        streams = [open_stream(served, f"{B}/changes?heartbeats=true", bearer(bound)),
                   open_stream(served, "/live", {"Cookie": cookie})]  # fmt: skip
        try:
            for _ in range(6):
                beat = http_calls.post(
                    f"{served.url}/api/v1/workspaces/{WS_A}/sessions/sess-a/heartbeat",
                    headers=bearer(ops),
                )
                assert beat.status_code == 200
                time.sleep(0.3)
            for stream in streams:
                assert read_all(stream, 1.5) == b""
        finally:
            for stream in streams:
                stream.close()
            browser.close()


def test_a_sessions_workspace_is_read_alike_by_id_and_in_a_list(store_url: str) -> None:
    """The workspace of a session written by another program: a column set even to "" wins, as
    in SQL; metadata naming it twice, or not as text, is no workspace by id."""
    from roundtable_console.store.reads.listing import SessionFilter
    from roundtable_console.store.reads.sessions import list_sessions

    seed_two_workspaces(store_url)

    def odd_rows(store):  # type: ignore[no-untyped-def]
        with store.write() as db:
            for session_id, column, metadata in (
                ("empty-column", "", '{"workspace_id": "ws-a"}'),
                ("twice", None, '{"workspace_id": "ws-a", "workspace_id": "ws-b"}'),
                ("number", None, '{"workspace_id": 5}'),
                ("nested", None, '{"workspace_id": "ws-a", "more": {"workspace_id": "ws-b"}}'),
            ):
                db.execute(
                    text(
                        "INSERT INTO agent_sessions (id, agent_id, run_id, adapter,"
                        " working_directory, status, started_at, workspace_id, metadata_json)"
                        " VALUES (:id, 'agent-a', 'r', 'codex', '/w', 'active',"
                        " '2026-12-01T00:00:00Z', :ws, :md)"
                    ),
                    {"id": session_id, "ws": column, "md": metadata},
                )
        with store.read() as db:
            by_id = {
                one: get_session(db=db, session_id=one).effective_workspace_id
                for one in ("empty-column", "twice", "number", "nested")
            }
            listed = {
                row.id
                for row in list_sessions(
                    db=db, filters=SessionFilter(workspace_id=WS_A), limit=50
                ).items
            }
        return by_id, listed

    by_id, listed = with_store(store_url, odd_rows)
    assert by_id == {"empty-column": None, "twice": None, "number": None, "nested": WS_A}
    assert "empty-column" not in listed and "nested" in listed
