"""The six detail projections, on SQLite and PostgreSQL: selection, redaction, keyset pages."""

from __future__ import annotations

import json
import platform
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import Connection, event, insert

from roundtable_console.store.db.database import Store
from roundtable_console.store.db.models import (
    AgentSession,
    AgentSessionEvent,
    Claim,
    Event,
    Proposal,
)
from roundtable_console.store.errors import InvalidCursor, InvalidLimit, SessionNotFound
from roundtable_console.store.reads import projections
from roundtable_console.store.reads.paging import Page, encode_cursor
from roundtable_console.store.safety.redaction import REDACTED
from roundtable_console.store.writes import agent_writes
from tests.conftest import FakeClock


def add(db: Connection, model: type, **values: Any) -> None:
    db.execute(insert(model.__table__).values(**values))  # type: ignore[attr-defined]


def register(db: Connection, clock: FakeClock, session_id: str = "S-1", **extra: Any) -> None:
    agent_writes.register(
        db=db,
        session_id=session_id,
        agent_id=extra.pop("agent_id", "agent-1"),
        run_id=extra.pop("run_id", "RUN-1"),
        adapter=extra.pop("adapter", "codex"),
        working_directory="/work",
        clock=clock,
        **extra,
    )


def run_event(
    db: Connection, event_type: str, payload: str, *, run: str = "RUN-1", actor: str | None = None
) -> None:
    add(
        db,
        Event,
        run_id=run,
        type=event_type,
        actor_id=actor,
        payload_json=payload,
        created_at="2026-09-17T10:00:00Z",
    )


def claim(db: Connection, claim_id: str, *, agent: str = "agent-1", **values: Any) -> None:
    row = {
        "resource_id": f"file:{claim_id}",
        "task_id": "T-1",
        "claim_type": "edit",
        "status": "active",
        "expires_at": "2026-09-18T00:00:00Z",
        "renewable": 1,
        "resume_policy": "hold",
        **values,
    }
    add(db, Claim, id=claim_id, agent_id=agent, **row)


def proposal(db: Connection, proposal_id: str, *, agent: str = "agent-1", **values: Any) -> None:
    row = {
        "task_id": "T-1",
        "title": f"title {proposal_id}",
        "summary_md": f"summary {proposal_id}",
        "patch_path": "/patches/SECRET-PATCH.diff",
        "status": "pending",
        "risk": "normal",
        "created_at": "2026-09-17T10:00:00Z",
        **values,
    }
    add(db, Proposal, id=proposal_id, agent_id=agent, **row)


def all_pages(fetch: Callable[..., Page[dict[str, Any]]], limit: int) -> list[list[Any]]:
    pages: list[list[Any]] = []
    cursor = None
    while True:
        page = fetch(limit=limit, cursor=cursor)
        pages.append([item["id"] for item in page.items])
        if page.next_cursor is None:
            return pages
        cursor = page.next_cursor


# --- logs -----------------------------------------------------------------------------------------


def test_logs_are_this_sessions_history_with_redacted_payloads(
    store: Store, clock: FakeClock
) -> None:
    with store.write() as db:
        register(db, clock)
        register(db, clock, "S-OTHER")
        agent_writes.heartbeat(db=db, session_id="S-1", clock=clock)
        add(
            db,
            AgentSessionEvent,
            session_id="S-1",
            event_type="note",
            payload_json='{"api_token": "tok-1", "deep": [{"note": "password=p1 password=p2"}]}',
            created_at="2026-09-17 17:30:00",
        )
        add(
            db,
            AgentSessionEvent,
            session_id="S-1",
            event_type="raw",
            payload_json="not json secret=s1",
            created_at="2026-09-17 17:31:00",
        )
    with store.read() as db:
        page = projections.session_logs(db=db, session_id="S-1")
    assert [item["event_type"] for item in page.items] == ["registered", "heartbeat", "note", "raw"]
    assert page.next_cursor is None
    assert set(page.items[0]) == {"id", "event_type", "payload", "created_at"}
    assert json.loads(page.items[0]["payload"]) == {"status": "active", "adapter": "codex"}
    assert page.items[2]["payload"] == (
        '{"api_token":"[REDACTED]","deep":[{"note":"password=[REDACTED] password=[REDACTED]"}]}'
    )
    assert page.items[3]["payload"] == "not json secret=[REDACTED]"
    assert page.items[2]["created_at"] == "2026-09-17 17:30:00"
    ids = [item["id"] for item in page.items]
    assert ids == sorted(ids)


def test_logs_page_through_every_row_once(store: Store, clock: FakeClock) -> None:
    with store.write() as db:
        register(db, clock)
        for _ in range(6):
            agent_writes.heartbeat(db=db, session_id="S-1", clock=clock)
    with store.read() as db:

        def fetch(**kw: Any) -> Page[dict[str, Any]]:
            return projections.session_logs(db=db, session_id="S-1", **kw)

        pages = all_pages(fetch, 3)
        everything = fetch(limit=200).items
    assert [len(page) for page in pages] == [3, 3, 1]
    assert [item for page in pages for item in page] == [item["id"] for item in everything]


def test_default_page_is_fifty(store: Store, clock: FakeClock) -> None:
    with store.write() as db:
        register(db, clock)
        for index in range(55):
            claim(db, f"C-{index:03d}")
    with store.read() as db:
        first = projections.session_claims(db=db, session_id="S-1")
        second = projections.session_claims(db=db, session_id="S-1", cursor=first.next_cursor)
    assert len(first.items) == 50
    assert first.next_cursor is not None
    assert [item["id"] for item in second.items] == [f"C-{index:03d}" for index in range(50, 55)]
    assert second.next_cursor is None


@pytest.mark.parametrize("name", projections.PAGED)
@pytest.mark.parametrize("bad", [0, 201, -1, True, "10"])
def test_limits_outside_one_to_two_hundred_are_refused(
    store: Store, clock: FakeClock, name: str, bad: Any
) -> None:
    with store.write() as db:
        register(db, clock)
    with store.read() as db, pytest.raises(InvalidLimit) as raised:
        projections.PROJECTIONS[name](db=db, session_id="S-1", limit=bad)
    assert raised.value.code == "invalid_limit"


def test_limit_bounds_are_accepted(store: Store, clock: FakeClock) -> None:
    with store.write() as db:
        register(db, clock)
        claim(db, "C-1")
        claim(db, "C-2")
    with store.read() as db:
        one = projections.session_claims(db=db, session_id="S-1", limit=1)
        most = projections.session_claims(db=db, session_id="S-1", limit=200)
    assert [item["id"] for item in one.items] == ["C-1"]
    assert one.next_cursor is not None
    assert [item["id"] for item in most.items] == ["C-1", "C-2"]


@pytest.mark.parametrize("name", projections.PAGED)
def test_foreign_and_garbage_cursors_are_refused(store: Store, clock: FakeClock, name: str) -> None:
    with store.write() as db:
        register(db, clock)
        register(db, clock, "S-2")
    other_kind = "claims" if name != "claims" else "logs"
    # Tool calls are keyed by where they come from (the run's events, the session's history).
    key: tuple[Any, ...] = {"logs": (1,), "tool-calls": (0, 1)}.get(name, ("C-1",))
    bad_cursors = [
        "not-a-cursor!",
        encode_cursor(other_kind, "S-1", *key),
        encode_cursor(name, "S-2", *key),  # another session's cursor
        encode_cursor(name, "S-1"),  # wrong arity
        encode_cursor(name, "S-1", *([part] for part in key)),  # wrong key type
    ]
    fetch = projections.PROJECTIONS[name]
    with store.read() as db:
        for cursor in bad_cursors:
            with pytest.raises(InvalidCursor):
                fetch(db=db, session_id="S-1", cursor=cursor)
        assert fetch(db=db, session_id="S-1", cursor=encode_cursor(name, "S-1", *key)).items == []


@pytest.mark.parametrize("name", list(projections.PROJECTIONS))
def test_unknown_session_is_not_found(store: Store, name: str) -> None:
    with store.read() as db, pytest.raises(SessionNotFound) as raised:
        projections.PROJECTIONS[name](db=db, session_id="missing")
    assert raised.value.code == "session_not_found"


# --- tool calls -----------------------------------------------------------------------------------


def test_tool_calls_select_decode_and_fall_back(store: Store, clock: FakeClock) -> None:
    with store.write() as db:
        register(db, clock)
        run_event(db, "tool.exec", '{"tool":"bash","action":"run","status":"ok"}', actor="agent-1")
        run_event(db, "tool.read_file", "{}", actor="agent-2")
        run_event(db, "message", '{"text":"Used a TOOL here"}')
        run_event(db, "TOOL.upper", "{}")  # the prefix is exact: not selected
        run_event(db, "message", '{"text":"nothing relevant"}')
        run_event(db, "tool.broken", "tool call {not json")
        run_event(db, "tool.num", '{"tool": 5, "action": ["x"], "status": null}')
        run_event(db, "tool.leak", '{"tool":"curl token=abc","action":"Bearer xyz"}')
        run_event(db, "tool.exec", '{"tool":"bash"}', run="RUN-OTHER")
        run_event(db, "tool.call", '{"duration_ms":12.7,"tool":"Bash"}')
        run_event(db, "tool.call", '{"duration_ms":-1,"tool":"Read"}')
    with store.read() as db:
        page = projections.tool_calls(db=db, session_id="S-1")
    items = page.items
    assert [(item["type"], item["tool"]) for item in items] == [
        ("tool.exec", "bash"),
        ("tool.read_file", "read_file"),
        ("message", "message"),
        ("tool.broken", "broken"),
        ("tool.num", "num"),
        ("tool.leak", f"curl token={REDACTED}"),
        ("tool.call", "Bash"),
        ("tool.call", "Read"),
    ]
    assert [item["duration_ms"] for item in items[-3:]] == [None, 12, None]
    fields = {"id", "type", "tool", "action", "status", "duration_ms", "actor", "created_at"}
    assert set(items[0]) == fields
    assert (items[0]["action"], items[0]["status"], items[0]["actor"]) == ("run", "ok", "agent-1")
    assert items[1]["actor"] == "agent-2"
    assert (items[1]["action"], items[1]["status"]) == (None, None)
    assert (items[3]["action"], items[3]["status"]) == (None, None)
    assert (items[4]["action"], items[4]["status"]) == (None, None)
    assert items[5]["action"] == f"Bearer {REDACTED}"
    assert "abc" not in json.dumps(items) and "xyz" not in json.dumps(items)


def test_a_sessions_own_tool_calls_follow_its_runs_and_are_paged_with_them(
    store: Store, clock: FakeClock
) -> None:
    """Ours: the tool calls a session's hooks told (its own history) after the reference's tool
    events of its run, one keyset across both; another session's own are not its."""
    with store.write() as db:
        register(db, clock)
        register(db, clock, "S-2")  # the same run
        for index in range(3):
            run_event(db, f"tool.t{index}", "{}")
        for session_id, tool in (("S-1", "Bash"), ("S-2", "Edit"), ("S-1", "Read")):
            agent_writes.heartbeat(db=db, session_id=session_id, clock=clock,
                                   tool_calls=[{"tool": tool, "outcome": "ok"}])  # fmt: skip
    with store.read() as db:

        def fetch(**kw: Any) -> Page[dict[str, Any]]:
            return projections.tool_calls(db=db, session_id="S-1", **kw)

        pages = all_pages(fetch, 2)
        items = fetch(limit=200).items
    assert [len(page) for page in pages] == [2, 2, 1]
    assert [item["tool"] for item in items] == ["t0", "t1", "t2", "Bash", "Read"]
    assert {item["actor"] for item in items[3:]} == {"agent-1"}  # the session's agent
    assert {item["type"] for item in items[3:]} == {"tool.call"}


def test_tool_calls_page_in_sql(store: Store, clock: FakeClock) -> None:
    with store.write() as db:
        register(db, clock)
        for index in range(5):
            run_event(db, f"tool.t{index}", "{}")
            run_event(db, "chatter", '{"text":"no match"}')
    with store.read() as db:

        def fetch(**kw: Any) -> Page[dict[str, Any]]:
            return projections.tool_calls(db=db, session_id="S-1", **kw)

        pages = all_pages(fetch, 2)
        tools = [item["tool"] for item in fetch(limit=200).items]
    assert [len(page) for page in pages] == [2, 2, 1]
    assert tools == [f"t{index}" for index in range(5)]


@contextmanager
def recorded_sql(store: Store) -> Iterator[list[str]]:
    statements: list[str] = []

    def record(*args: Any) -> None:
        statement = args[2]
        statements.append(statement)

    event.listen(store.engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(store.engine, "before_cursor_execute", record)


@pytest.mark.parametrize(
    ("name", "table"),
    [
        ("logs", "agent_session_events"),
        ("tool-calls", "events"),
        ("claims", "claims"),
        ("proposals", "proposals"),
    ],
)
def test_pages_are_cut_in_sql(store: Store, clock: FakeClock, name: str, table: str) -> None:
    with store.write() as db:
        register(db, clock)
    with recorded_sql(store) as statements, store.read() as db:
        projections.PROJECTIONS[name](db=db, session_id="S-1", limit=7)
    reads = [sql for sql in statements if f"FROM {table}" in sql]
    assert len(reads) == 1
    assert "LIMIT" in reads[0].upper()


# --- claims and proposals -------------------------------------------------------------------------


def test_claims_are_all_of_the_agents_with_redacted_rationale(
    store: Store, clock: FakeClock
) -> None:
    with store.write() as db:
        register(db, clock)
        claim(db, "C-1", rationale_md="holding it; api_key=k-123")
        claim(db, "C-2", status="released", heartbeat_at="2026-09-17T10:00:00Z")
        claim(db, "C-3", status="active", expires_at="2020-01-01T00:00:00Z")
        claim(db, "C-9", agent="agent-2")
    with store.read() as db:
        items = projections.session_claims(db=db, session_id="S-1").items
    assert [item["id"] for item in items] == ["C-1", "C-2", "C-3"]
    assert items[0]["rationale"] == f"holding it; api_key={REDACTED}"
    assert items[1]["rationale"] is None
    assert items[1]["status"] == "released"
    assert items[1]["heartbeat_at"] == "2026-09-17T10:00:00Z"
    assert set(items[0]) == {
        "id",
        "resource_id",
        "agent_id",
        "task_id",
        "claim_type",
        "base_hash",
        "status",
        "expires_at",
        "heartbeat_at",
        "renewable",
        "resume_policy",
        "created_at",
        "rationale",
    }
    assert (items[0]["agent_id"], items[0]["renewable"]) == ("agent-1", True)


def test_proposals_never_carry_the_patch(store: Store, clock: FakeClock) -> None:
    with store.write() as db:
        register(db, clock)
        proposal(db, "P-1", title="Rotate secret=s1", summary_md="uses Bearer b1\nmore")
        proposal(db, "P-2", status="accepted", risk="high")
        proposal(db, "P-9", agent="agent-2")
    with store.read() as db:
        items = projections.session_proposals(db=db, session_id="S-1").items
    assert [item["id"] for item in items] == ["P-1", "P-2"]
    assert set(items[0]) == {"id", "task_id", "title", "summary", "status", "risk", "created_at"}
    assert items[0]["title"] == f"Rotate secret={REDACTED}"
    assert items[0]["summary"] == f"uses Bearer {REDACTED}\nmore"
    assert (items[1]["status"], items[1]["risk"]) == ("accepted", "high")
    assert "SECRET-PATCH" not in json.dumps(items)


# --- metrics and environment ----------------------------------------------------------------------


def test_metrics_keep_numbers_and_token_counts_only(store: Store, clock: FakeClock) -> None:
    usage = {
        "input_tokens": 1200,
        "output_tokens": 35,
        "cost_usd": 0.25,
        "cached": True,
        "model": "m-1",
        "nested": {"x": 1},
        "list": [1, 2],
        "missing": None,
        "api_key_uses": 3,
        "Client_Secret_Len": 9,
        "PASSWORD_tries": 1,
        "authorization_count": 2,
    }
    with store.write() as db:
        register(db, clock, metadata={"usage": usage, "workspace_id": "W"})
    with store.read() as db:
        metrics = projections.session_metrics(db=db, session_id="S-1")
    assert metrics == {
        "session_id": "S-1",
        "usage": {"input_tokens": 1200, "output_tokens": 35, "cost_usd": 0.25},
        "source": "adapter_metadata",
    }


@pytest.mark.parametrize(
    "metadata_json", [None, "{not json", '"text"', '{"usage": [1, 2]}', '{"usage": 5}', "{}"]
)
def test_metrics_of_missing_or_malformed_metadata_are_empty(
    store: Store, metadata_json: str | None
) -> None:
    with store.write() as db:
        add(
            db,
            AgentSession,
            id="S-RAW",
            agent_id="agent-1",
            run_id="RUN-1",
            adapter="claude",
            working_directory="/w",
            status="active",
            started_at="2026-09-17 10:00:00",
            metadata_json=metadata_json,
            version=0,
        )
    with store.read() as db:
        metrics = projections.session_metrics(db=db, session_id="S-RAW")
    assert metrics == {"session_id": "S-RAW", "usage": {}, "source": "adapter_metadata"}


def test_environment_is_the_viewers_labelled_as_such(store: Store, clock: FakeClock) -> None:
    with store.write() as db:
        register(db, clock, adapter="gemini")
    with store.read() as db:
        environment = projections.session_environment(db=db, session_id="S-1")
    assert environment["session_id"] == "S-1"
    assert environment["fingerprint"] == {
        "python_version": platform.python_version(),
        "os": sys.platform,
        "arch": platform.machine(),
        "adapter": "gemini",
    }
    assert environment["scope"] == "viewer"
    assert "viewer" in environment["note"] and "not the agent" in environment["note"]


def test_projection_registry_names() -> None:
    assert projections.PAGED == ("logs", "tool-calls", "claims", "proposals")
    assert projections.UNPAGED == ("metrics", "environment")
    assert set(projections.PROJECTIONS) == {*projections.PAGED, *projections.UNPAGED}
    assert projections.PROJECTIONS["logs"] is projections.session_logs
    assert projections.PROJECTIONS["tool-calls"] is projections.tool_calls
    assert projections.PROJECTIONS["metrics"] is projections.session_metrics
    assert projections.PROJECTIONS["environment"] is projections.session_environment
