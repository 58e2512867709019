"""Import and export: JSON Lines round trips, idempotent re-import, upserts, history appends and
every refusal naming its line with nothing written — on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import func, insert, select, text

from roundtable_console.store.db.database import Store
from roundtable_console.store.db.models import (
    AgentSession,
    AgentSessionEvent,
    Event,
    Task,
    Workspace,
)
from roundtable_console.store.errors import InvalidImport
from roundtable_console.store.writes import agent_writes, lifecycle
from roundtable_console.store.writes.demo import seed_demo
from roundtable_console.store.writes.transfer import KINDS, TABLES, export_records, import_records
from tests.conftest import FakeClock
from tests.helpers import count, session_row

SESSIONS = AgentSession.__table__  # type: ignore[attr-defined]
SESSION_EVENTS = AgentSessionEvent.__table__  # type: ignore[attr-defined]
EVENTS = Event.__table__  # type: ignore[attr-defined]
TASKS = Task.__table__  # type: ignore[attr-defined]
WORKSPACES = Workspace.__table__  # type: ignore[attr-defined]


def export_lines(store: Store) -> list[str]:
    lines: list[str] = []
    with store.read() as db:
        export_records(db=db, write=lines.append)
    return lines


def run_import(store: Store, lines: list[str]) -> dict[str, int]:
    with store.write() as db:
        return import_records(db=db, lines=lines)


def line(kind: str, **values: Any) -> str:
    return json.dumps({"kind": kind, **values}) + "\n"


def populate(store: Store, clock: FakeClock) -> None:
    """Every kind, unicode, markup-like text, metadata and each reference timestamp form."""
    with store.write() as db:
        seed_demo(db=db, clock=clock, sessions=30)
        agent_writes.register(
            db=db,
            session_id="sess-zoë",
            agent_id="ada",
            run_id="run-atlas-store",
            adapter="claude",
            working_directory="/tmp/Zoë's “project” 🚀",
            provider="anthropic",
            model="[bold]x[/]",
            status="running",
            metadata={"branch": "main", "title": "[bold]x[/] ünïcödé", "sep": "a\u2028b\x85c"},
            clock=clock,
            host="zoë's-laptop",
        )
        db.execute(
            insert(SESSIONS),
            [
                {
                    "id": "sess-ref-plain",
                    "agent_id": "grace",
                    "run_id": "run-harbor-api",
                    "adapter": "codex",
                    "working_directory": "/w",
                    "status": "active",
                    "started_at": "2026-09-17 17:26:35",
                    "version": 0,
                },
                {
                    "id": "sess-ref-nanos",
                    "agent_id": "grace",
                    "run_id": "run-harbor-api",
                    "adapter": "codex",
                    "working_directory": "/w",
                    "status": "ended",
                    "started_at": "2026-09-17T17:26:35.123456789Z",
                    "last_seen_at": "2026-09-17T17:26:35Z",
                    "ended_at": "2026-09-17T19:26:35+02:00",
                    "version": 0,
                },
            ],
        )
    clock.advance(seconds=5)
    with store.write() as db:
        lifecycle.pause(db=db, session_id="sess-zoë", actor="operator «ö»", clock=clock)
        # The role that wrote the row, as a PostgreSQL store records it (its trigger keeps its
        # own; SQLite keeps what it is given, as when a PostgreSQL export is restored there).
        db.execute(
            text("UPDATE agent_session_events SET db_user = 'rt_ops' WHERE actor IS NOT NULL")
        )


# ------------------------------------------------------------------------------------ round trip


def test_export_import_export_is_identical(
    store: Store, empty_store: Store, clock: FakeClock
) -> None:
    populate(store, clock)
    first = export_lines(store)
    counts = run_import(empty_store, first)
    second = export_lines(empty_store)
    assert second == first
    assert counts == {
        kind: sum(1 for x in first if json.loads(x)["kind"] == kind) for kind in KINDS
    }
    assert all(counts[kind] > 0 for kind in KINDS)
    # One record a line, even with U+2028 / NEL in the data.
    assert "".join(first).splitlines(keepends=True) == first
    assert all(x.endswith("\n") and x.count("\n") == 1 for x in first)
    # Nothing raw that a terminal would act on: no ESC, C1 controls or bidi overrides.
    assert all(x.isascii() and "\x1b" not in x for x in first)
    zoe = session_row(empty_store, "sess-zoë")
    assert json.loads(zoe["metadata_json"])["sep"] == "a\u2028b\x85c"
    assert zoe["model"] == "[bold]x[/]" and zoe["version"] == 1
    assert session_row(empty_store, "sess-ref-nanos")["started_at"] == (
        "2026-09-17T17:26:35.123456789Z"
    )


def test_export_record_shape_and_counts(store: Store, clock: FakeClock) -> None:
    populate(store, clock)
    lines: list[str] = []
    with store.read() as db:
        counts = export_records(db=db, write=lines.append)
    records = [json.loads(x) for x in lines]
    assert list(counts) == list(KINDS)
    assert sum(counts.values()) == len(records)
    assert [r["kind"] for r in records] == sorted(
        (r["kind"] for r in records), key=list(KINDS).index
    )
    for record in records:
        assert list(record) == ["kind", *TABLES[record["kind"]].columns.keys()]
    session = next(r for r in records if r["kind"] == "session")
    assert "version" in session
    events = [r["id"] for r in records if r["kind"] == "session_event"]
    assert events == sorted(events)
    assert count(store, SESSIONS) == counts["session"]


def test_imported_history_ids_leave_room_for_new_rows(
    store: Store, empty_store: Store, clock: FakeClock
) -> None:
    """After explicit ids, new rows get the next free id (PostgreSQL sequences are advanced)."""
    populate(store, clock)
    run_import(empty_store, export_lines(store))
    with empty_store.read() as db:
        before = db.execute(select(func.max(SESSION_EVENTS.c.id))).scalar_one()
        run_before = db.execute(select(func.max(EVENTS.c.id))).scalar_one()
    with empty_store.write() as db:
        lifecycle.stop(db=db, session_id="sess-00001", actor="maria", clock=clock)
    with empty_store.read() as db:
        assert db.execute(select(func.max(SESSION_EVENTS.c.id))).scalar_one() == before + 1
        assert db.execute(select(func.max(EVENTS.c.id))).scalar_one() == run_before + 1


def test_reimport_is_idempotent(store: Store, clock: FakeClock) -> None:
    populate(store, clock)
    first = export_lines(store)
    run_import(store, first)
    run_import(store, first)
    assert export_lines(store) == first


# ---------------------------------------------------------------------------------- upserts


def test_upsert_replaces_the_row_and_omitted_columns_take_defaults(
    store: Store, clock: FakeClock
) -> None:
    populate(store, clock)
    before = session_row(store, "sess-zoë")
    assert before["provider"] == "anthropic" and before["metadata_json"]
    run_import(
        store,
        [
            line(
                "session",
                id="sess-zoë",
                agent_id="grace",
                run_id="r9",
                adapter="codex",
                working_directory="/new",
                started_at="2026-01-01T00:00:00Z",
            )
        ],
    )
    after = session_row(store, "sess-zoë")
    assert after["agent_id"] == "grace" and after["working_directory"] == "/new"
    assert after["provider"] is None and after["model"] is None
    assert after["metadata_json"] is None and after["last_seen_at"] is None
    assert after["status"] == "active"  # the column default
    assert after["started_at"] == "2026-01-01T00:00:00Z"
    # No version given: a replaced row moves on, so stale readers learn it changed.
    assert after["version"] == before["version"] + 1

    run_import(store, [line("task", id="task-101", title="Only a title", body_md="")])
    with store.read() as db:
        task = db.execute(select(TASKS).where(TASKS.c.id == "task-101")).one()
    assert (task.status, task.priority, task.risk, task.assigned_agent_id) == (
        "open",
        100,
        "normal",
        None,
    )


def test_upsert_with_version_sets_it_and_new_rows_get_defaults(
    store: Store, clock: FakeClock
) -> None:
    base = {"agent_id": "a", "run_id": "r", "adapter": "codex", "working_directory": "/w"}
    run_import(store, [line("session", id="s-new", **base)])
    created = session_row(store, "s-new")
    assert created["version"] == 0 and created["status"] == "active"
    assert created["started_at"]  # CURRENT_TIMESTAMP default, filled at import
    run_import(store, [line("session", id="s-new", version=7, status="paused", **base)])
    assert (session_row(store, "s-new")["version"], session_row(store, "s-new")["status"]) == (
        7,
        "paused",
    )


def test_later_lines_win_within_one_import(store: Store) -> None:
    lines = [
        line("workspace", id="w1", name="one", root_path="/one", created_at="x", updated_at="x"),
        line("workspace", id="w1", name="uno", root_path="/uno", created_at="y", updated_at="y"),
    ]
    assert run_import(store, lines)["workspace"] == 2
    with store.read() as db:
        rows = db.execute(select(WORKSPACES.c.name, WORKSPACES.c.root_path)).all()
    assert [tuple(row) for row in rows] == [("uno", "/uno")]


# --------------------------------------------------------------------------------- history


def test_history_append_keeps_free_ids_skips_identical_and_renumbers_clashes(
    store: Store,
) -> None:
    event = {"session_id": "s1", "event_type": "heartbeat", "payload_json": "{}"}
    run_import(store, [line("session_event", id=5, created_at="2026-09-17T00:00:00Z", **event)])
    run_import(
        store,
        [
            line("session_event", id=5, created_at="2026-09-17T00:00:00Z", **event),  # same
            line("session_event", id=5, created_at="2026-09-18T00:00:00Z", **event),  # clash
            line("session_event", created_at="2026-09-19T00:00:00Z", **event),  # no id
            line("session_event", id=None, created_at="2026-09-20T00:00:00Z", **event),
        ],
    )
    with store.read() as db:
        rows = db.execute(
            select(SESSION_EVENTS.c.id, SESSION_EVENTS.c.created_at).order_by(SESSION_EVENTS.c.id)
        ).all()
    assert [row.created_at[:10] for row in rows] == [
        "2026-09-17",
        "2026-09-18",
        "2026-09-19",
        "2026-09-20",
    ]
    assert rows[0].id == 5 and all(row.id > 5 for row in rows[1:])
    assert len({row.id for row in rows}) == 4


def test_general_events_append_the_same_way(store: Store) -> None:
    event = {"run_id": "r1", "type": "tool.shell", "payload_json": '{"tool":"shell"}'}
    first = [line("event", id=3, created_at="2026-09-17T00:00:00Z", **event)]
    run_import(store, first)
    run_import(store, first)
    assert count(store, EVENTS) == 1
    run_import(store, [line("event", id=3, created_at="2026-09-17T00:00:01Z", **event)])
    assert count(store, EVENTS) == 2


def test_blank_lines_bom_and_crlf_are_accepted(store: Store) -> None:
    base = {"agent_id": "a", "run_id": "r", "adapter": "codex", "working_directory": "/w"}
    lines = ["\ufeff" + line("session", id="s1", **base), "\n", "   \r\n"]
    lines.append(line("session", id="s2", **base).replace("\n", "\r\n"))
    assert run_import(store, lines)["session"] == 2
    assert count(store, SESSIONS) == 2


# ------------------------------------------------------------------------------- refusals

GOOD = line("task", id="t-good", title="good", body_md="")
SESSION = {"kind": "session", "id": "s", "agent_id": "a", "run_id": "r", "adapter": "codex"}
SESSION["working_directory"] = "/w"


def session_with(**changes: Any) -> str:
    record = {**SESSION, **changes}
    return json.dumps({name: value for name, value in record.items() if value is not ...})


REFUSALS = [
    ("{not json", "not JSON"),
    ("[1, 2]", "must be a JSON object, not array"),
    ('"text"', "must be a JSON object, not string"),
    ('{"id": "x"}', 'has no "kind"'),
    ('{"kind": "widget", "id": "x"}', "unknown kind 'widget'"),
    ('{"kind": 3, "id": "x"}', "unknown kind 3"),
    (session_with(metadata={}), "unknown column 'metadata'"),
    (session_with(agent_id=...), "missing required column 'agent_id'"),
    (session_with(id=...), "missing required column 'id'"),
    (session_with(version=True), "column 'version' must be an integer, not boolean"),
    (session_with(version="3"), "column 'version' must be an integer, not string"),
    (session_with(version=1.5), "column 'version' must be an integer, not number"),
    (session_with(version=2**70), "column 'version' must be an integer from"),
    (session_with(model=5), "column 'model' must be a string or null, not integer"),
    (session_with(provider=["x"]), "column 'provider' must be a string or null, not array"),
    (session_with(status=None), "column 'status' of kind session must not be null"),
    (session_with(metadata_json="[1]"), "metadata_json must be a JSON object, not array"),
    (session_with(metadata_json="{"), "metadata_json is not JSON"),
    (session_with(status="bad\x1b[31m"), "status: A status must not contain control characters"),
    (session_with(status="  "), "status: A status must not be blank"),
    (session_with(status="x" * 65), "status: A status is at most 64 characters"),
    (json.dumps({"kind": "task", "id": "t2", "title": "t", "body_md": "", "priority": False}),
     "column 'priority' must be an integer, not boolean"),
    (json.dumps({"kind": "event", "id": "7", "run_id": "r", "type": "x", "payload_json": "{}"}),
     "column 'id' must be an integer, not string"),
    (json.dumps({"kind": "workspace", "id": "w", "name": "n", "root_path": "/p"}),
     "missing required column 'created_at'"),
]  # fmt: skip


@pytest.mark.parametrize(("bad", "reason"), REFUSALS)
def test_a_bad_line_is_named_and_nothing_is_written(store: Store, bad: str, reason: str) -> None:
    with pytest.raises(InvalidImport) as refused, store.write() as db:
        import_records(db=db, lines=[GOOD, "\n", bad + "\n", GOOD])
    assert refused.value.code == "invalid_import"
    assert refused.value.message.startswith("line 3: ")
    assert reason in refused.value.message
    assert refused.value.details == {"line": 3}
    assert count(store, TASKS) == 0
    assert count(store, SESSIONS) == 0


def test_a_row_the_database_refuses_is_named_and_nothing_is_written(store: Store) -> None:
    stamps = {"created_at": "x", "updated_at": "x"}
    lines = [
        GOOD,
        line("workspace", id="w1", name="one", root_path="/same", **stamps),
        line("workspace", id="w2", name="two", root_path="/same", **stamps),
    ]
    with pytest.raises(InvalidImport) as refused, store.write() as db:
        import_records(db=db, lines=lines)
    assert refused.value.message.startswith("line 3: the database refused the record")
    assert count(store, TASKS) == 0 and count(store, WORKSPACES) == 0


def test_a_bad_line_after_many_batches_rolls_everything_back(store: Store) -> None:
    base = {"agent_id": "a", "run_id": "r", "adapter": "codex", "working_directory": "/w"}
    lines = [line("session", id=f"s{n}", **base) for n in range(1200)]
    lines.append(line("session", id="bad", **{**base, "status": "\x07"}))
    with pytest.raises(InvalidImport, match=r"^line 1201: "), store.write() as db:
        import_records(db=db, lines=lines)
    assert count(store, SESSIONS) == 0


def test_nul_characters_are_refused_or_kept_per_backend(store: Store) -> None:
    record = line("task", id="t-nul", title="a\x00b", body_md="")
    if store.dialect == "postgresql":
        with pytest.raises(InvalidImport, match="line 1: column 'title' contains a NUL"):
            run_import(store, [record])
        assert count(store, TASKS) == 0
    else:
        run_import(store, [record])
        with store.read() as db:
            assert db.execute(text("SELECT title FROM tasks")).scalar_one() == "a\x00b"
