"""Opening a database the reference Roundtable system wrote, and keeping it compatible.

The database is built with the reference's own DDL (tests/reference_ddl.sql, from
docs/reference/roundtable.md#the-store) through plain sqlite3, as the Go system would, with
timestamps in all three forms it writes mixed in one table. Then the console opens it and works
on it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, text

from roundtable_console.store.clock import format_ts, parse_ts
from roundtable_console.store.db.database import Store, create_store_engine, open_store, sqlite_url
from roundtable_console.store.db.revision import HEAD_REVISION
from roundtable_console.store.db.schema import current_revision, ensure_schema
from roundtable_console.store.errors import (
    AgentUnavailable,
    SessionTransitionConflict,
    TerminationImpactRequired,
)
from roundtable_console.store.reads import sessions
from roundtable_console.store.reads.listing import SessionFilter
from roundtable_console.store.writes import agent_writes, lifecycle
from tests.conftest import FakeClock
from tests.helpers import register_session

DDL = Path(__file__).with_name("reference_ddl.sql")
REFERENCE_TABLES = (
    "workspaces",
    "agents",
    "runs",
    "tasks",
    "claims",
    "proposals",
    "decisions",
    "events",
    "agent_sessions",
    "agent_session_events",
)
SESSION_COLUMNS = (
    "id, agent_id, run_id, adapter, provider, model, external_session_id, "
    "external_resume_command, working_directory, mcp_socket, status, started_at, last_seen_at, "
    "ended_at, metadata_json, workspace_id"
)
# id, started_at, last_seen_at, status, agent, workspace column, metadata; the ids run against
# time, and the text order of the three forms differs from their chronological order.
REFERENCE_SESSIONS = (
    (
        "a-plain-late",
        "2026-09-17 18:00:00",
        "2026-09-17 18:05:00",
        "active",
        "agent-a",
        "ws-1",
        None,
    ),
    (
        "b-rfc",
        "2026-09-17T17:00:00Z",
        "2026-09-17T17:10:00Z",
        "paused",
        "agent-a",
        None,
        '{"workspace_id": "ws-1", "branch": "main"}',
    ),
    (
        "c-nanos",
        "2026-09-17T17:00:00.123456789Z",
        "2026-09-17T17:20:00.987654321Z",
        "running",
        "agent-b",
        None,
        '{"usage": {"tokens": 12}}',
    ),
    ("d-nanos-early", "2026-09-17T16:59:59.250000000Z", None, "stopped", "agent-off", None, None),
    ("e-plain-early", "2026-09-17 16:00:00", "2026-09-17 16:30:00", "ended", "agent-a", None, None),
    ("f-plain-mid", "2026-09-17 17:00:00", "2026-09-17 17:00:00", "paused", "agent-b", None, None),
)
# b-rfc and f-plain-mid start at the same instant in two forms: a tie, so the id decides.
CHRONOLOGICAL = [
    "e-plain-early",
    "d-nanos-early",
    "b-rfc",
    "f-plain-mid",
    "c-nanos",
    "a-plain-late",
]


def build_reference_db(path: Path, workspace_root: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.executescript(DDL.read_text())
        conn.execute(
            "INSERT INTO workspaces (id, name, root_path, created_at, updated_at, default_branch)"
            " VALUES ('ws-1', 'Workspace', ?, '2026-09-01 10:00:00', '2026-09-01T10:00:00Z',"
            " 'main')",
            (str(workspace_root),),
        )
        conn.executemany(
            "INSERT INTO agents (id, role, name, adapter, is_enabled, created_at)"
            " VALUES (?, 'coder', ?, 'codex', ?, '2026-09-01 10:00:00')",
            [("agent-a", "A", 1), ("agent-b", "B", 1), ("agent-off", "Off", 0)],
        )
        conn.execute("INSERT INTO runs (id, goal, workspace_id) VALUES ('run-1', 'ship', 'ws-1')")
        conn.execute(
            "INSERT INTO tasks (id, title, body_md, assigned_agent_id, created_at)"
            " VALUES ('task-1', 'Fix it', 'Body', 'agent-b', '2026-09-17T17:00:00Z')"
        )
        conn.execute(
            "INSERT INTO claims (id, resource_id, agent_id, task_id, claim_type, expires_at)"
            " VALUES ('claim-1', 'src/app.py', 'agent-b', 'task-1', 'edit',"
            " '2099-01-01T00:00:00.000000001Z')"
        )
        conn.execute(
            "INSERT INTO proposals (id, task_id, agent_id, title, summary_md, patch_path)"
            " VALUES ('prop-1', 'task-1', 'agent-b', 'Patch', 'Summary', '/p.diff')"
        )
        conn.execute(
            "INSERT INTO decisions (id, decision, rationale_md, decided_by, created_at)"
            " VALUES ('dec-1', 'accept', 'Good', 'human', '2026-09-17 17:00:00')"
        )
        conn.executemany(
            "INSERT INTO agent_sessions (id, agent_id, run_id, adapter, working_directory,"
            " started_at, last_seen_at, status, ended_at, workspace_id, metadata_json)"
            " VALUES (?, ?, 'run-1', 'codex', '/w', ?, ?, ?, NULL, ?, ?)",
            [(s[0], s[4], s[1], s[2], s[3], s[5], s[6]) for s in REFERENCE_SESSIONS],
        )
        # A row that takes the database's own CURRENT_TIMESTAMP default.
        conn.execute(
            "INSERT INTO agent_sessions (id, agent_id, run_id, adapter, working_directory)"
            " VALUES ('g-default', 'agent-c', 'run-0', 'claude', '/w')"
        )
        conn.executemany(
            "INSERT INTO agent_session_events (session_id, event_type, payload_json, created_at)"
            " VALUES (?, ?, ?, ?)",
            [
                (
                    "b-rfc",
                    "registered",
                    '{"status":"active","adapter":"codex"}',
                    "2026-09-17T17:00:00Z",
                ),
                ("c-nanos", "heartbeat", "{}", "2026-09-17T17:20:00.987654321Z"),
            ],
        )
        conn.execute(
            "INSERT INTO agent_session_events (session_id, event_type, payload_json)"
            " VALUES ('a-plain-late', 'registered', '{}')"
        )
        conn.execute(
            "INSERT INTO events (run_id, type, actor_id, payload_json)"
            " VALUES ('run-1', 'tool.call', 'agent-a', '{\"tool\":\"edit\"}')"
        )


@pytest.fixture
def reference_path(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    path = tmp_path / ".roundtable" / "roundtable.db"
    path.parent.mkdir()
    build_reference_db(path, root)
    return path


@pytest.fixture
def opened(reference_path: Path) -> Iterator[Store]:
    store = open_store(sqlite_url(reference_path))
    try:
        yield store
    finally:
        store.dispose()


def raw(path: Path, query: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(query).fetchall()


def table_info(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    return {table: raw(path, f"PRAGMA table_info({table})") for table in REFERENCE_TABLES}


# The columns our migrations add to agent_sessions.
OUR_SESSION_COLUMNS = ("version", "waiting_reason", "waiting_since", "host")
# Migration 0009's on agent_session_events.
OUR_HISTORY_COLUMNS = ("actor", "db_user")


def reference_columns(path: Path, table: str) -> list[str]:
    return [
        column[1]
        for column in raw(path, f"PRAGMA table_info({table})")
        if column[1] not in OUR_SESSION_COLUMNS + OUR_HISTORY_COLUMNS
    ]


def row_bytes(path: Path) -> dict[str, dict[Any, tuple[Any, ...]]]:
    """Every reference column of every row, with its storage class and its exact value."""
    found: dict[str, dict[Any, tuple[Any, ...]]] = {}
    for table in REFERENCE_TABLES:
        columns = reference_columns(path, table)
        exact = ", ".join(f"typeof({c}), quote({c})" for c in columns)
        rows = raw(path, f"SELECT id, {exact} FROM {table} ORDER BY id")
        found[table] = {r[0]: r[1:] for r in rows}
    return found


def reference_indexes(path: Path) -> list[tuple[Any, ...]]:
    return raw(
        path,
        "SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND name LIKE 'idx_%'"
        " ORDER BY name",
    )


def listed(store: Store, **arguments: Any) -> list[str]:
    with store.read() as db:
        return [s.id for s in sessions.list_sessions(db=db, **arguments).items]


def walk(store: Store, limit: int, filters: SessionFilter | None = None) -> list[str]:
    ids: list[str] = []
    cursor: str | None = None
    while True:
        with store.read() as db:
            page = sessions.list_sessions(db=db, filters=filters, limit=limit, cursor=cursor)
        ids.extend(s.id for s in page.items)
        cursor = page.next_cursor
        if cursor is None:
            return ids


# --- the schema -------------------------------------------------------------------------------


def test_the_ddl_is_the_reference_schema(reference_path: Path):
    assert "version" not in reference_columns(reference_path, "agent_sessions")
    tables = {
        name for (name,) in raw(reference_path, "SELECT name FROM sqlite_master WHERE type='table'")
    }
    assert tables == {*REFERENCE_TABLES, "sqlite_sequence"}
    assert [name for name, _, _ in reference_indexes(reference_path)] == [
        "idx_agent_sessions_workspace_status",
        "idx_claims_workspace_status",
        "idx_proposals_workspace_status",
    ]
    [(started,)] = raw(reference_path, "SELECT started_at FROM agent_sessions WHERE id='g-default'")
    assert parse_ts(started) is not None and started[10] == " " and len(started) == 19


def test_opening_keeps_every_reference_column_and_index(reference_path: Path):
    before = table_info(reference_path)
    indexes = reference_indexes(reference_path)
    open_store(sqlite_url(reference_path)).dispose()
    after = table_info(reference_path)
    for table in REFERENCE_TABLES:
        if table == "agent_sessions":
            assert after[table][: len(before[table])] == before[table]
            version, reason, since, host = after[table][len(before[table]) :]
            assert version[1:] == ("version", "INTEGER", 1, "0", 0)
            assert reason[1:] == ("waiting_reason", "TEXT", 0, None, 0)
            assert since[1:] == ("waiting_since", "TEXT", 0, None, 0)
            assert host[1:] == ("host", "TEXT", 0, None, 0)  # migration 0018: nullable
        elif table == "agent_session_events":
            # Migration 0009: who acted, nullable, so the reference keeps writing its rows.
            assert after[table][: len(before[table])] == before[table]
            actor, db_user = after[table][len(before[table]) :]
            assert actor[1:] == ("actor", "TEXT", 0, None, 0)
            assert db_user[1:] == ("db_user", "TEXT", 0, None, 0)
        else:
            assert after[table] == before[table], table
    assert reference_indexes(reference_path) == indexes
    tables = {
        name for (name,) in raw(reference_path, "SELECT name FROM sqlite_master WHERE type='table'")
    }
    ours = {
        "idempotency_keys",
        "session_status_counts",
        "session_group_counts",
        "session_usage_totals",
        "api_tokens",
        "api_web_sessions",
        "permission_requests",
        "reply_listeners",
        "push_keys",
        "push_subscriptions",
        "push_presence",
        "push_sends",
        "push_told",
        "hosts",
        "host_calls",
        "usage_days",
        "budget_crossings",
        "alembic_version",
    }
    assert tables == {*REFERENCE_TABLES, "sqlite_sequence", *ours}
    assert raw(reference_path, "SELECT version_num FROM alembic_version") == [(HEAD_REVISION,)]


def test_opening_twice_does_no_schema_work_the_second_time(reference_path: Path):
    url = sqlite_url(reference_path)
    engine = create_store_engine(url)
    try:
        assert ensure_schema(engine) is True
    finally:
        engine.dispose()
    schema = raw(reference_path, "SELECT type, name, sql FROM sqlite_master ORDER BY name")
    engine = create_store_engine(url)
    statements: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    try:
        assert ensure_schema(engine) is False
        with engine.connect() as conn:
            assert current_revision(conn) == HEAD_REVISION
    finally:
        engine.dispose()
    ddl = [s for s in statements if s.split()[0].upper() in ("CREATE", "ALTER", "DROP", "INSERT")]
    assert ddl == []
    assert raw(reference_path, "SELECT type, name, sql FROM sqlite_master ORDER BY name") == schema
    open_store(url).dispose()
    assert raw(reference_path, "SELECT type, name, sql FROM sqlite_master ORDER BY name") == schema


def test_reference_rows_are_byte_identical_after_opening(reference_path: Path):
    before = row_bytes(reference_path)
    open_store(sqlite_url(reference_path)).dispose()
    assert row_bytes(reference_path) == before
    assert raw(reference_path, "SELECT DISTINCT version FROM agent_sessions") == [(0,)]


def test_rows_not_operated_on_stay_byte_identical(
    reference_path: Path, opened: Store, clock: FakeClock
):
    before = row_bytes(reference_path)
    with opened.write() as db:
        agent_writes.heartbeat(db=db, session_id="c-nanos", status="busy", clock=clock)
    with opened.write() as db:
        lifecycle.pause(db=db, session_id="a-plain-late", actor="ann", clock=clock)
    after = row_bytes(reference_path)
    for table in REFERENCE_TABLES:
        changed = {"c-nanos", "a-plain-late"} if table == "agent_sessions" else set()
        untouched = {key: value for key, value in before[table].items() if key not in changed}
        assert {key: after[table][key] for key in untouched} == untouched, table
    added = set(after["agent_session_events"]) - set(before["agent_session_events"])
    assert len(added) == 2
    assert len(after["events"]) == len(before["events"]) + 1


# --- reading and working on reference rows ----------------------------------------------------


def test_list_sorts_reference_rows_chronologically_across_forms(opened: Store):
    with opened.read() as db:
        [default_started] = db.execute(
            text("SELECT started_at FROM agent_sessions WHERE id = 'g-default'")
        ).one()
    everything = [*CHRONOLOGICAL, "g-default"]
    starts = {s[0]: s[1] for s in REFERENCE_SESSIONS} | {"g-default": default_started}
    expected = sorted(everything, key=lambda i: (parse_ts(starts[i]), i))
    assert listed(opened) == expected
    assert listed(opened, filters=SessionFilter(agent_id="agent-a")) == [
        "e-plain-early",
        "b-rfc",
        "a-plain-late",
    ]
    for size in (1, 2, 4):
        assert walk(opened, size) == expected
    reference_only = SessionFilter(run_id="run-1")
    assert walk(opened, 1, reference_only) == CHRONOLOGICAL
    assert walk(opened, 2, reference_only) == CHRONOLOGICAL


def test_pages_continue_across_forms_as_our_rows_arrive(opened: Store, clock: FakeClock):
    reference_only = SessionFilter(run_id="run-1")
    with opened.read() as db:
        first = sessions.list_sessions(db=db, filters=reference_only, limit=3)
    assert [s.id for s in first.items] == CHRONOLOGICAL[:3]
    clock.now = parse_ts("2026-09-17T17:00:00.05Z")  # between f-plain-mid and c-nanos  # type: ignore[assignment]
    with opened.write() as db:
        register_session(db, "0-ours", agent_id="x", run_id="run-1", clock=clock)
    with opened.read() as db:
        rest = sessions.list_sessions(db=db, filters=reference_only, cursor=first.next_cursor)
    assert [s.id for s in rest.items] == ["f-plain-mid", "0-ours", "c-nanos", "a-plain-late"]


def test_workspace_and_stale_filters_read_reference_rows(opened: Store):
    assert listed(opened, filters=SessionFilter(workspace_id="ws-1")) == ["b-rfc", "a-plain-late"]
    stale = SessionFilter(stale_before=parse_ts("2026-09-17 17:15:00"))
    assert listed(opened, filters=stale) == ["b-rfc", "f-plain-mid"]


def test_find_by_agent_across_forms(opened: Store):
    with opened.read() as db:
        assert sessions.find_by_agent(db=db, agent_id="agent-a").id == "a-plain-late"
        # No exact 'active': newest last-seen wins, comparing across forms.
        assert sessions.find_by_agent(db=db, agent_id="agent-b").id == "c-nanos"


def test_agent_operations_on_reference_rows(reference_path: Path, opened: Store, clock: FakeClock):
    with opened.write() as db:
        beat = agent_writes.heartbeat(db=db, session_id="c-nanos", clock=clock)
    assert beat.started_at == "2026-09-17T17:00:00.123456789Z"
    assert beat.metadata_dict == {"usage": {"tokens": 12}}
    with opened.write() as db:
        ended = agent_writes.end(db=db, session_id="f-plain-mid", clock=clock)
    assert ended.ended_at == format_ts(clock())
    with opened.write() as db:
        replaced = register_session(
            db,
            "e-plain-early",
            agent_id="agent-a",
            run_id="run-2",
            working_directory="/w2",
            clock=clock,
        )
    # The first start is kept exactly as the reference wrote it.
    assert replaced.started_at == "2026-09-17 16:00:00"
    assert replaced.status == "active" and replaced.ended_at is None
    assert raw(
        reference_path, "SELECT started_at FROM agent_sessions WHERE id='e-plain-early'"
    ) == [("2026-09-17 16:00:00",)]


def test_lifecycle_actions_on_reference_rows(opened: Store, clock: FakeClock):
    with opened.write() as db:
        beat = lifecycle.operator_heartbeat(
            db=db, session_id="a-plain-late", actor="ann", expected_version=0, clock=clock
        )
    assert beat.session.last_seen_at == format_ts(clock()) and beat.session.version == 1
    with opened.write() as db:
        paused = lifecycle.pause(db=db, session_id="c-nanos", actor="ann", clock=clock)
    assert paused.session.status == "paused"
    with opened.write() as db:
        resumed = lifecycle.resume(
            db=db, session_id="b-rfc", actor="ann", idempotency_key="k1", clock=clock
        )
    # ws-1's root is a plain directory: the saved branch is reported as not checked.
    assert resumed.session.status == "resuming"
    assert len(resumed.notes) == 1 and "not checked" in resumed.notes[0]
    with pytest.raises(AgentUnavailable), opened.write() as db:
        lifecycle.resume(
            db=db, session_id="d-nanos-early", actor="ann", idempotency_key="k2", clock=clock
        )
    with pytest.raises(TerminationImpactRequired), opened.write() as db:
        lifecycle.terminate(
            db=db, session_id="c-nanos", actor="ann", idempotency_key="k3", clock=clock
        )
    with opened.write() as db:
        done = lifecycle.terminate(
            db=db,
            session_id="c-nanos",
            actor="ann",
            idempotency_key="k3",
            impact_details="claim-1 goes back to the pool",
            clock=clock,
        )
    assert done.session.status == "terminated"
    assert [c["resource_id"] for c in done.claims] == ["src/app.py"]
    with opened.write() as db:
        stopped = lifecycle.stop(db=db, session_id="b-rfc", actor="ann", clock=clock)
    assert stopped.session.ended_at == format_ts(clock())
    with opened.read() as db:
        kinds = [r[0] for r in db.execute(text("SELECT type FROM events ORDER BY id")).all()]
        claim = db.execute(text("SELECT status FROM claims WHERE id = 'claim-1'")).scalar_one()
    assert kinds == [
        "tool.call",
        "session.heartbeat",
        "session.paused",
        "session.resuming",
        "session.terminated",
        "session.stopped",
    ]
    assert claim == "active"


def test_the_reference_can_still_write_after_opening(reference_path: Path, opened: Store):
    """Its own inserts (which know nothing of ``version``) still work, and we read them."""
    with sqlite3.connect(reference_path) as conn:
        conn.execute(
            "INSERT INTO agent_sessions (id, agent_id, run_id, adapter, working_directory,"
            " started_at) VALUES ('h-go', 'agent-a', 'run-1', 'codex', '/w',"
            " '2026-09-17T16:00:00.5Z')"
        )
        conn.execute(
            "INSERT INTO agent_session_events (session_id, event_type, payload_json)"
            " VALUES ('h-go', 'registered', '{}')"
        )
        conn.execute(
            "INSERT INTO agent_sessions (id, agent_id, run_id, adapter, working_directory)"
            " VALUES ('h-go-2', 'agent-a', 'run-1', 'codex', '/w')"
            " ON CONFLICT(id) DO UPDATE SET status = excluded.status"
        )
    ids = listed(opened)
    assert ids.index("e-plain-early") < ids.index("h-go") < ids.index("d-nanos-early")
    with opened.read() as db:
        session = sessions.get_session(db=db, session_id="h-go")
    assert session.version == 0 and session.to_json()["metadata"] is None
    assert json.loads(json.dumps(session.to_json()))["id"] == "h-go"


def test_a_reference_write_is_seen_by_the_operators_compare_and_swap(
    reference_path: Path, opened: Store, clock: FakeClock
):
    with opened.read() as db:
        seen = sessions.get_session(db=db, session_id="a-plain-late").version
    with sqlite3.connect(reference_path) as conn:  # the reference's heartbeat, as it writes it
        conn.execute(
            "UPDATE agent_sessions SET last_seen_at = ?, status = ? WHERE id = ?",
            ("2026-09-17T18:10:00.123456789Z", "running", "a-plain-late"),
        )
    with pytest.raises(SessionTransitionConflict), opened.write() as db:
        lifecycle.pause(
            db=db, session_id="a-plain-late", actor="ann", expected_version=seen, clock=clock
        )
    with opened.read() as db:
        current = sessions.get_session(db=db, session_id="a-plain-late")
    assert (current.status, current.version) == ("running", seen + 1)
