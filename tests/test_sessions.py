"""Agent-facing session operations (``docs/reference/roundtable.md#the-references-own-commands``):
register, heartbeat, end, list, lookup, history.

Every test runs on SQLite and on PostgreSQL through the ``store`` fixture.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event, insert, select, text

from roundtable_console.store.clock import format_ts
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.models import AgentSession
from roundtable_console.store.db.session_rows import SESSIONS
from roundtable_console.store.errors import (
    InvalidCursor,
    InvalidLimit,
    InvalidSession,
    InvalidSessionStatus,
    SessionNotFound,
    StoreError,
)
from roundtable_console.store.reads import keyset, sessions
from roundtable_console.store.reads.listing import SessionFilter
from roundtable_console.store.reads.paging import encode_cursor
from roundtable_console.store.resume.adapters import AdapterConfig
from roundtable_console.store.writes import agent_writes
from tests.conftest import FakeClock
from tests.helpers import count

BASE = {"agent_id": "agent-1", "run_id": "run-1", "adapter": "codex", "working_directory": "/w"}


def register(store: Store, clock: FakeClock, session_id: str = "s1", **values: Any) -> AgentSession:
    arguments = {**BASE, **values}
    with store.write() as db:
        return agent_writes.register(db=db, session_id=session_id, clock=clock, **arguments)


def row(store: Store, session_id: str) -> dict[str, Any] | None:
    with store.read() as db:
        found = db.execute(select(SESSIONS).where(SESSIONS.c.id == session_id)).one_or_none()
    return dict(found._mapping) if found is not None else None


def history(store: Store, session_id: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    query = "SELECT session_id, event_type, payload_json FROM agent_session_events ORDER BY id"
    with store.read() as db:
        rows = db.execute(text(query)).all()
    return [
        (event_type, json.loads(payload))
        for owner, event_type, payload in rows
        if session_id is None or owner == session_id
    ]


def insert_raw(store: Store, session_id: str, **columns: Any) -> None:
    """A row as another writer (the reference, an import) may have left it."""
    values = {**BASE, "id": session_id, "status": "active", "started_at": "2026-01-01 00:00:00"}
    values.update(columns)
    with store.write() as db:
        db.execute(insert(SESSIONS).values(**values))


def page_ids(store: Store, **arguments: Any) -> tuple[list[str], str | None]:
    with store.read() as db:
        page = sessions.list_sessions(db=db, **arguments)
    return [item.id for item in page.items], page.next_cursor


def all_pages(store: Store, limit: int, filters: SessionFilter | None = None) -> list[str]:
    seen: list[str] = []
    cursor: str | None = None
    for _ in range(100):
        ids, cursor = page_ids(store, filters=filters, limit=limit, cursor=cursor)
        seen.extend(ids)
        if cursor is None:
            return seen
    raise AssertionError("paging never ended")


# --- Register ---------------------------------------------------------------------------------


def test_register_creates_an_active_session_with_its_history(store: Store, clock: FakeClock):
    session = register(store, clock)
    now = format_ts(clock())
    stored = row(store, "s1")
    assert stored is not None
    assert stored["agent_id"] == "agent-1" and stored["run_id"] == "run-1"
    assert stored["adapter"] == "codex" and stored["working_directory"] == "/w"
    assert stored["status"] == "active"
    assert stored["started_at"] == now and stored["last_seen_at"] == now
    assert stored["ended_at"] is None and stored["metadata_json"] is None
    assert stored["version"] == 0
    assert session.id == "s1" and session.status == "active"
    assert history(store, "s1") == [("registered", {"status": "active", "adapter": "codex"})]


def test_register_writes_timestamps_as_utc_rfc3339(store: Store, clock: FakeClock):
    register(store, clock)
    stored = row(store, "s1")
    assert stored is not None
    assert stored["started_at"] == "2026-09-17T17:26:35.000000Z"


def test_register_trims_required_values(store: Store, clock: FakeClock):
    register(store, clock, "  s1  ", agent_id=" agent-1 ", adapter=" codex\t")
    stored = row(store, "s1")
    assert stored is not None
    assert stored["agent_id"] == "agent-1" and stored["adapter"] == "codex"


def test_register_refuses_a_blank_required_value_and_writes_nothing(store: Store, clock: FakeClock):
    for field in ("session_id", "agent_id", "run_id", "adapter", "working_directory"):
        for blank in ("", "   ", "\t\n", None):
            arguments: dict[str, Any] = {**BASE, "session_id": "s1", field: blank}
            with pytest.raises(InvalidSession) as raised, store.write() as db:
                agent_writes.register(db=db, clock=clock, **arguments)
            assert raised.value.code == "invalid_session"
            assert "required" in raised.value.message
    assert count(store, "agent_sessions") == 0
    assert count(store, "agent_session_events") == 0


def test_register_replaces_an_existing_session_and_keeps_the_first_start(
    store: Store, clock: FakeClock
):
    adapters = {"codex": AdapterConfig(name="codex", resume_pattern="codex resume X")}
    register(
        store,
        clock,
        provider="openai",
        model="gpt",
        external_session_id="ext-1",
        resume_command="codex resume ext-1",
        mcp_socket="/tmp/mcp.sock",
        status="running",
        metadata={"branch": "main"},
        adapters=adapters,
    )
    started = format_ts(clock())
    clock.advance(seconds=10)
    with store.write() as db:
        agent_writes.end(db=db, session_id="s1", clock=clock)
    clock.advance(seconds=10)
    register(
        store, clock, agent_id="agent-2", run_id="run-2", adapter="claude", working_directory="/x"
    )
    stored = row(store, "s1")
    assert stored is not None
    assert stored["agent_id"] == "agent-2" and stored["run_id"] == "run-2"
    assert stored["adapter"] == "claude" and stored["working_directory"] == "/x"
    # Omitted optional values are cleared, not merged.
    for column in (
        "provider",
        "model",
        "external_session_id",
        "external_resume_command",
        "mcp_socket",
        "metadata_json",
        "ended_at",
    ):
        assert stored[column] is None, column
    assert stored["status"] == "active"
    assert stored["started_at"] == started
    assert stored["last_seen_at"] == format_ts(clock())
    assert stored["version"] == 2
    assert [event for event, _ in history(store, "s1")] == ["registered", "ended", "registered"]
    assert count(store, "agent_sessions") == 1


def test_register_stores_every_optional_value(store: Store, clock: FakeClock):
    register(
        store,
        clock,
        provider=" openai ",
        model="gpt-5",
        external_session_id="ext-1",
        resume_command="codex resume ext-1",
        mcp_socket="/tmp/mcp.sock",
        status="waiting for review",
        metadata='{"branch": "main", "usage": {"tokens": 3}}',
    )
    stored = row(store, "s1")
    assert stored is not None
    assert stored["provider"] == "openai" and stored["model"] == "gpt-5"
    assert stored["external_session_id"] == "ext-1"
    assert stored["external_resume_command"] == "codex resume ext-1"
    assert stored["mcp_socket"] == "/tmp/mcp.sock"
    assert stored["status"] == "waiting for review"
    assert json.loads(stored["metadata_json"]) == {"branch": "main", "usage": {"tokens": 3}}
    assert history(store, "s1") == [
        ("registered", {"status": "waiting for review", "adapter": "codex"})
    ]


def test_register_stores_empty_metadata_as_null(store: Store, clock: FakeClock):
    for empty in ({}, "{}", " { } ", " ", "", None):
        register(store, clock, metadata={"before": 1})
        register(store, clock, metadata=empty)
        stored = row(store, "s1")
        assert stored is not None and stored["metadata_json"] is None, empty


def test_register_refuses_metadata_that_is_not_a_json_object_before_writing(
    store: Store, clock: FakeClock
):
    register(store, clock, metadata={"keep": True})
    before = row(store, "s1")
    clock.advance(seconds=5)
    bad_values: list[Any] = [
        "[1, 2]",
        "3",
        '"text"',
        "null",
        "{not json",
        '{"a": NaN}',
        {"a": {1, 2}},
        {"a": float("inf")},
        ["a"],
    ]
    for bad in bad_values:
        with pytest.raises(InvalidSession) as raised:
            register(store, clock, metadata=bad, agent_id="agent-2")
        assert raised.value.code == "invalid_session", bad
        assert "Metadata" in raised.value.message
    assert row(store, "s1") == before
    assert len(history(store, "s1")) == 1


def test_register_status_defaults_to_active(store: Store, clock: FakeClock):
    for blank in (None, "", "   "):
        register(store, clock, status="paused")
        register(store, clock, status=blank)
        stored = row(store, "s1")
        assert stored is not None and stored["status"] == "active", blank


def test_register_accepts_any_printable_status_up_to_64_characters(store: Store, clock: FakeClock):
    status = "é" * 64
    register(store, clock, status=status)
    stored = row(store, "s1")
    assert stored is not None and stored["status"] == status


BAD_STATUSES = ("x" * 65, "bad\x1b[31m", "line\nbreak", "nul\x00", "bidi\u202e", "tab\there")


def test_register_refuses_a_bad_status_and_writes_nothing(store: Store, clock: FakeClock):
    for bad in BAD_STATUSES:
        with pytest.raises(InvalidSessionStatus) as raised:
            register(store, clock, status=bad)
        assert raised.value.code == "invalid_session_status", bad
    assert count(store, "agent_sessions") == 0
    assert count(store, "agent_session_events") == 0


def test_register_expands_a_configured_resume_pattern(store: Store, clock: FakeClock):
    adapters = {
        "codex": AdapterConfig(
            name="codex", resume_pattern="codex resume {{external_session_id}} --yes"
        )
    }
    register(store, clock, external_session_id="abc-123", adapters=adapters)
    stored = row(store, "s1")
    assert stored is not None
    assert stored["external_resume_command"] == "codex resume abc-123 --yes"


def test_register_keeps_a_given_resume_command_over_the_pattern(store: Store, clock: FakeClock):
    adapters = {"codex": AdapterConfig(name="codex", resume_pattern="p {{external_session_id}}")}
    register(store, clock, external_session_id="abc", resume_command="my own", adapters=adapters)
    stored = row(store, "s1")
    assert stored is not None and stored["external_resume_command"] == "my own"


def test_register_has_no_resume_command_without_pattern_and_external_id(
    store: Store, clock: FakeClock
):
    pattern = "c {{external_session_id}}"
    cases: list[tuple[dict[str, AdapterConfig] | None, str | None]] = [
        (None, "abc"),  # built-in codex: disposable, no pattern
        ({"codex": AdapterConfig(name="codex")}, "abc"),  # configured without a pattern
        ({"other": AdapterConfig(name="other", resume_pattern=pattern)}, "abc"),
        ({"codex": AdapterConfig(name="codex", resume_pattern=pattern)}, None),
        ({"codex": AdapterConfig(name="codex", resume_pattern=pattern)}, " "),
    ]
    for adapters, external in cases:
        register(store, clock, external_session_id=external, adapters=adapters)
        stored = row(store, "s1")
        assert stored is not None and stored["external_resume_command"] is None, adapters


def test_register_does_not_check_agent_or_run(store: Store, clock: FakeClock):
    register(store, clock, agent_id="nobody-knows", run_id="no-such-run")
    assert count(store, "agents") == 0 and count(store, "runs") == 0
    assert row(store, "s1") is not None


def test_register_replacing_a_row_keeps_its_workspace_column(store: Store, clock: FakeClock):
    insert_raw(store, "s1", workspace_id="ws-1")
    register(store, clock)
    stored = row(store, "s1")
    assert stored is not None and stored["workspace_id"] == "ws-1"
    assert stored["started_at"] == "2026-01-01 00:00:00"


# --- Heartbeat from an agent ------------------------------------------------------------------


def test_heartbeat_refreshes_last_seen_and_keeps_the_rest(store: Store, clock: FakeClock):
    register(store, clock, status="running", external_session_id="ext-1")
    before = row(store, "s1")
    clock.advance(seconds=30)
    with store.write() as db:
        session = agent_writes.heartbeat(db=db, session_id="s1", clock=clock)
    after = row(store, "s1")
    assert before is not None and after is not None
    now = format_ts(clock())
    assert after["last_seen_at"] == now and session.last_seen_at == now
    assert after["version"] == before["version"] + 1
    unchanged = {
        key: value for key, value in before.items() if key not in ("last_seen_at", "version")
    }
    assert {key: after[key] for key in unchanged} == unchanged
    assert history(store, "s1")[-1] == ("heartbeat", {"status": "running", "last_seen_at": now})


def test_heartbeat_blank_values_never_clear(store: Store, clock: FakeClock):
    register(store, clock, status="running", external_session_id="ext-1")
    for blank in ("", "   ", None):
        with store.write() as db:
            agent_writes.heartbeat(
                db=db, session_id="s1", status=blank, external_session_id=blank, clock=clock
            )
        stored = row(store, "s1")
        assert stored is not None
        assert stored["status"] == "running" and stored["external_session_id"] == "ext-1"


def test_heartbeat_replaces_status_and_external_id_when_given(store: Store, clock: FakeClock):
    register(store, clock, external_session_id="ext-1")
    with store.write() as db:
        agent_writes.heartbeat(
            db=db, session_id="s1", status=" busy ", external_session_id=" ext-2 ", clock=clock
        )
    stored = row(store, "s1")
    assert stored is not None
    assert stored["status"] == "busy" and stored["external_session_id"] == "ext-2"
    assert history(store, "s1")[-1][1]["status"] == "busy"


def test_heartbeat_never_clears_ended_at(store: Store, clock: FakeClock):
    register(store, clock)
    clock.advance(seconds=1)
    with store.write() as db:
        agent_writes.end(db=db, session_id="s1", clock=clock)
    ended = format_ts(clock())
    clock.advance(seconds=1)
    with store.write() as db:
        agent_writes.heartbeat(db=db, session_id="s1", status="active", clock=clock)
    stored = row(store, "s1")
    assert stored is not None
    assert stored["status"] == "active"
    assert stored["ended_at"] == ended
    assert stored["last_seen_at"] == format_ts(clock())


def test_heartbeat_of_an_unknown_session_is_not_found_and_writes_nothing(
    store: Store, clock: FakeClock
):
    register(store, clock)
    with pytest.raises(SessionNotFound) as raised, store.write() as db:
        agent_writes.heartbeat(db=db, session_id="nope", clock=clock)
    assert raised.value.code == "session_not_found"
    assert "nope" in raised.value.message
    assert history(store) == [("registered", {"status": "active", "adapter": "codex"})]


def test_heartbeat_refuses_a_bad_status_and_writes_nothing(store: Store, clock: FakeClock):
    register(store, clock)
    before = row(store, "s1")
    clock.advance(seconds=1)
    for bad in BAD_STATUSES:
        with pytest.raises(InvalidSessionStatus), store.write() as db:
            agent_writes.heartbeat(db=db, session_id="s1", status=bad, clock=clock)
    assert row(store, "s1") == before
    assert len(history(store, "s1")) == 1


# --- End --------------------------------------------------------------------------------------


def test_end_defaults_to_ended_and_keeps_other_fields(store: Store, clock: FakeClock):
    register(store, clock, provider="p", model="m", external_session_id="e", metadata={"k": 1})
    before = row(store, "s1")
    clock.advance(seconds=60)
    with store.write() as db:
        session = agent_writes.end(db=db, session_id="s1", clock=clock)
    after = row(store, "s1")
    assert before is not None and after is not None
    now = format_ts(clock())
    assert after["status"] == "ended" and session.status == "ended"
    assert after["ended_at"] == now and after["last_seen_at"] == now
    changed = ("status", "ended_at", "last_seen_at", "version")
    assert {k: v for k, v in after.items() if k not in changed} == {
        k: v for k, v in before.items() if k not in changed
    }
    assert history(store, "s1")[-1] == ("ended", {"status": "ended", "ended_at": now})


def test_end_uses_the_given_status(store: Store, clock: FakeClock):
    for given, expected in (("failed", "failed"), ("  ", "ended"), ("", "ended"), (None, "ended")):
        register(store, clock)
        with store.write() as db:
            agent_writes.end(db=db, session_id="s1", status=given, clock=clock)
        stored = row(store, "s1")
        assert stored is not None and stored["status"] == expected, given


def test_a_repeated_end_replaces_the_end_time(store: Store, clock: FakeClock):
    register(store, clock)
    clock.advance(seconds=1)
    with store.write() as db:
        agent_writes.end(db=db, session_id="s1", clock=clock)
    clock.advance(seconds=1)
    with store.write() as db:
        agent_writes.end(db=db, session_id="s1", status="done", clock=clock)
    stored = row(store, "s1")
    assert stored is not None
    assert stored["ended_at"] == format_ts(clock()) and stored["status"] == "done"
    assert [event for event, _ in history(store, "s1")] == ["registered", "ended", "ended"]


def test_end_of_an_unknown_session_is_not_found(store: Store, clock: FakeClock):
    with pytest.raises(SessionNotFound), store.write() as db:
        agent_writes.end(db=db, session_id="ghost", clock=clock)
    assert count(store, "agent_session_events") == 0


def test_end_refuses_a_bad_status_and_writes_nothing(store: Store, clock: FakeClock):
    register(store, clock)
    before = row(store, "s1")
    with pytest.raises(InvalidSessionStatus), store.write() as db:
        agent_writes.end(db=db, session_id="s1", status="x" * 100, clock=clock)
    assert row(store, "s1") == before


# --- History is written in the same transaction -----------------------------------------------


def _failing_history(*_args: Any, **_kwargs: Any) -> None:
    raise RuntimeError("history write failed")


def test_register_without_its_history_leaves_no_row(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(agent_writes, "append_session_event", _failing_history)
    with pytest.raises(RuntimeError):
        register(store, clock)
    assert count(store, "agent_sessions") == 0


@pytest.mark.parametrize("operation", ["heartbeat", "end", "register"])
def test_a_failed_history_write_leaves_the_row_unchanged(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, operation: str
):
    register(store, clock)
    before = row(store, "s1")
    clock.advance(seconds=5)
    monkeypatch.setattr(agent_writes, "append_session_event", _failing_history)
    with pytest.raises(RuntimeError):
        if operation == "register":
            register(store, clock, status="running")
        else:
            with store.write() as db:
                getattr(agent_writes, operation)(db=db, session_id="s1", clock=clock)
    assert row(store, "s1") == before
    assert len(history(store, "s1")) == 1


# --- Get --------------------------------------------------------------------------------------


def test_get_session_reads_a_session_or_refuses(store: Store, clock: FakeClock):
    register(store, clock, metadata={"workspace_id": "ws"})
    with store.read() as db:
        session = sessions.get_session(db=db, session_id="s1")
        assert session.metadata_dict == {"workspace_id": "ws"}
        assert session.effective_workspace_id == "ws"
        with pytest.raises(SessionNotFound):
            sessions.get_session(db=db, session_id="s2")


# --- List -------------------------------------------------------------------------------------


def test_list_orders_by_started_at_then_id(store: Store, clock: FakeClock):
    register(store, clock, "b")
    register(store, clock, "a")  # same start: id decides
    clock.advance(seconds=-60)
    register(store, clock, "z")  # earliest
    clock.advance(seconds=120)
    register(store, clock, "c")
    assert page_ids(store) == (["z", "a", "b", "c"], None)


def test_list_sorts_chronologically_across_timestamp_forms(store: Store, clock: FakeClock):
    # As text these sort differently (' ' < '.' < 'T' < 'Z'), and the ids run against time.
    insert_raw(store, "a-late-plain", started_at="2026-09-17 18:00:00")
    insert_raw(store, "b-plain-mid", started_at="2026-09-17 17:30:00")
    insert_raw(store, "d-offset", started_at="2026-09-17T19:15:00+02:00")  # 17:15 UTC
    insert_raw(store, "e-mid-nanos", started_at="2026-09-17T17:00:00.123456789Z")
    insert_raw(store, "f-mid-z", started_at="2026-09-17T17:00:00Z")
    insert_raw(store, "g-early-nanos", started_at="2026-09-17T16:59:59.998000001Z")
    register(store, clock, "c-ours")  # 17:26:35.000000Z
    expected = [
        "g-early-nanos",
        "f-mid-z",
        "e-mid-nanos",
        "d-offset",
        "c-ours",
        "b-plain-mid",
        "a-late-plain",
    ]
    assert page_ids(store)[0] == expected
    for size in (1, 2, 3):
        assert all_pages(store, size) == expected


def test_list_pages_walk_every_session_once(store: Store, clock: FakeClock):
    names = [f"s{n:02d}" for n in range(7)]
    for name in names:
        register(store, clock, name)
        clock.advance(seconds=1)
    first, cursor = page_ids(store, limit=3)
    assert first == names[:3] and cursor is not None
    # A session added after the first page appears once, at the end.
    register(store, clock, "s-new")
    rest = []
    while cursor is not None:
        ids, cursor = page_ids(store, limit=3, cursor=cursor)
        rest.extend(ids)
    assert first + rest == [*names, "s-new"]


def test_list_last_page_has_no_cursor(store: Store, clock: FakeClock):
    for name in ("a", "b"):
        register(store, clock, name)
    assert page_ids(store, limit=2) == (["a", "b"], None)
    ids, cursor = page_ids(store, limit=1)
    assert ids == ["a"] and cursor is not None
    assert page_ids(store, limit=1, cursor=cursor) == (["b"], None)


def test_list_default_limit_is_50(store: Store, clock: FakeClock):
    with store.write() as db:
        for n in range(51):
            agent_writes.register(db=db, session_id=f"s{n:03d}", clock=clock, **BASE)
    ids, cursor = page_ids(store)
    assert len(ids) == 50 and cursor is not None
    assert page_ids(store, cursor=cursor) == (["s050"], None)
    assert len(page_ids(store, limit=200)[0]) == 51


def test_list_refuses_a_bad_limit(store: Store):
    for bad in (0, -1, 201, 10_000, True, "5", 2.5):
        with pytest.raises(InvalidLimit) as raised, store.read() as db:
            sessions.list_sessions(db=db, limit=bad)
        assert raised.value.code == "invalid_limit", bad
        assert "200" in raised.value.message


def test_list_refuses_a_cursor_it_did_not_issue(store: Store, clock: FakeClock):
    register(store, clock)
    bad_cursors = [
        "garbage!!",
        "e30",  # base64 of {}
        "",  # treated as no cursor: the first page
        encode_cursor("logs", "2026-01-01", "x"),
        encode_cursor("sessions", "2026-01-01"),
        encode_cursor("sessions", 5, "x"),
        encode_cursor("sessions", "2026-01-01", None),
    ]
    for bad in bad_cursors:
        if not bad:
            assert page_ids(store, cursor=bad) == (["s1"], None)
            continue
        with pytest.raises(InvalidCursor) as raised, store.read() as db:
            sessions.list_sessions(db=db, cursor=bad)
        assert raised.value.code == "invalid_cursor", bad


def _seed_for_filters(store: Store, clock: FakeClock) -> None:
    register(store, clock, "a1", status="active", metadata={"workspace_id": "ws-meta"})
    clock.advance(seconds=1)
    register(store, clock, "p1", status="paused", agent_id="agent-2", run_id="run-2")
    clock.advance(seconds=1)
    register(store, clock, "e1", status="ended")
    clock.advance(seconds=1)
    register(store, clock, "r1", status="running", adapter="claude", model="Sonnet_100%")
    clock.advance(seconds=1)
    insert_raw(store, "w1", workspace_id="ws-col", started_at=format_ts(clock()))
    clock.advance(seconds=1)


FILTER_CASES: list[tuple[SessionFilter, list[str]]] = [
    (SessionFilter(), ["a1", "p1", "e1", "r1", "w1"]),
    (SessionFilter(statuses=("paused", "ended")), ["p1", "e1"]),
    (SessionFilter(agent_id="agent-2"), ["p1"]),
    (SessionFilter(run_id="run-1"), ["a1", "e1", "r1", "w1"]),
    (SessionFilter(workspace_id="ws-meta"), ["a1"]),
    (SessionFilter(workspace_id="ws-col"), ["w1"]),
    (SessionFilter(active_only=True), ["a1", "p1", "r1", "w1"]),
    (SessionFilter(text="SONNET"), ["r1"]),
    (SessionFilter(text="_100%"), ["r1"]),
    (SessionFilter(text="%"), ["r1"]),
    (SessionFilter(text="claude"), ["r1"]),
    (SessionFilter(text="ws-"), ["w1"]),
    (SessionFilter(text="   "), ["a1", "p1", "e1", "r1", "w1"]),
    (SessionFilter(statuses=("active",), agent_id="agent-2"), []),
]


def test_list_filters(store: Store, clock: FakeClock):
    _seed_for_filters(store, clock)
    for filters, expected in FILTER_CASES:
        assert page_ids(store, filters=filters)[0] == expected, filters
        assert all_pages(store, 1, filters) == expected, filters


def test_list_stale_filter_keeps_active_sessions_not_seen_since(store: Store, clock: FakeClock):
    register(store, clock, "old-active")
    register(store, clock, "old-ended", status="ended")
    register(store, clock, "old-paused", status="paused")
    clock.advance(seconds=600)
    register(store, clock, "fresh")
    insert_raw(store, "ref-never-seen", started_at="2026-09-17 17:00:00", last_seen_at=None)
    cutoff = clock.now.replace(second=0)  # a little before "fresh"
    filters = SessionFilter(stale_before=cutoff)
    assert page_ids(store, filters=filters)[0] == ["ref-never-seen", "old-active", "old-paused"]


def test_count_by_status(store: Store, clock: FakeClock):
    register(store, clock, "a")
    register(store, clock, "b")
    register(store, clock, "c", status="paused")
    with store.read() as db:
        assert keyset.count_by_status(db=db) == {"active": 2, "paused": 1}


# --- Lookup by agent --------------------------------------------------------------------------


def test_find_by_agent_prefers_exact_active(store: Store, clock: FakeClock):
    register(store, clock, "old-active")
    clock.advance(seconds=100)
    register(store, clock, "newer-running", status="running")
    register(store, clock, "newer-Active", status="Active")
    register(store, clock, "other-agent", agent_id="agent-9")
    with store.read() as db:
        assert sessions.find_by_agent(db=db, agent_id="agent-1").id == "old-active"


def test_find_by_agent_then_newer_last_seen(store: Store, clock: FakeClock):
    register(store, clock, "a")
    register(store, clock, "b")
    clock.advance(seconds=10)
    with store.write() as db:
        agent_writes.heartbeat(db=db, session_id="a", clock=clock)
    with store.read() as db:
        assert sessions.find_by_agent(db=db, agent_id="agent-1").id == "a"


def test_find_by_agent_then_newer_start_then_id(store: Store, clock: FakeClock):
    insert_raw(store, "x-old", started_at="2026-01-01 00:00:00", last_seen_at="2026-03-01 00:00:00")
    insert_raw(
        store, "y-new", started_at="2026-02-01T00:00:00Z", last_seen_at="2026-03-01T00:00:00Z"
    )
    with store.read() as db:
        assert sessions.find_by_agent(db=db, agent_id="agent-1").id == "y-new"
    with store.write() as db:
        db.execute(text("UPDATE agent_sessions SET started_at = '2026-02-01 00:00:00'"))
    with store.read() as db:
        assert sessions.find_by_agent(db=db, agent_id="agent-1").id == "x-old"


def test_find_by_agent_reads_last_seen_across_forms(store: Store):
    insert_raw(store, "plain", status="stopped", last_seen_at="2026-09-17 18:00:00")
    insert_raw(store, "nanos", status="stopped", last_seen_at="2026-09-17T17:59:59.998000001Z")
    insert_raw(store, "never", status="stopped", last_seen_at=None)
    with store.read() as db:
        assert sessions.find_by_agent(db=db, agent_id="agent-1").id == "plain"


def test_find_by_agent_with_no_session_is_not_found(store: Store, clock: FakeClock):
    register(store, clock, agent_id="someone-else")
    with pytest.raises(SessionNotFound) as raised, store.read() as db:
        sessions.find_by_agent(db=db, agent_id="agent-1")
    assert raised.value.code == "session_not_found"
    assert isinstance(raised.value, StoreError)


def _list_statement(store: Store, **arguments: Any) -> tuple[str, Any]:
    captured: list[tuple[str, Any]] = []

    def capture(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_rest: Any) -> None:
        if "agent_sessions" in statement:
            captured.append((statement, parameters))

    event.listen(store.engine, "before_cursor_execute", capture)
    try:
        with store.read() as db:
            sessions.list_sessions(db=db, **arguments)
    finally:
        event.remove(store.engine, "before_cursor_execute", capture)
    [found] = captured
    return found


INDEXED_PAGES: list[tuple[SessionFilter | None, str]] = [
    (None, "ix_agent_sessions_started"),
    (SessionFilter(statuses=("active",)), "ix_agent_sessions_status"),
    (SessionFilter(agent_id="agent-1"), "ix_agent_sessions_agent"),
    (SessionFilter(run_id="run-1"), "ix_agent_sessions_run"),
    (SessionFilter(workspace_id="ws-1"), "ix_agent_sessions_workspace"),
]


def _plan(store: Store, statement: str, parameters: Any) -> str:
    with store.read() as db:
        if store.dialect == "sqlite":
            rows = db.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
            return " | ".join(str(r[-1]) for r in rows)
        # Tiny tables make a scan cheapest; forbid it to learn whether the index can serve.
        db.exec_driver_sql("SET LOCAL enable_seqscan = off")
        db.exec_driver_sql("SET LOCAL enable_sort = off")
        return " | ".join(r[0] for r in db.exec_driver_sql(f"EXPLAIN {statement}", parameters))


def test_a_list_page_is_cut_in_sql_along_an_index(store: Store, clock: FakeClock):
    """A page costs the page: an index gives the order (no sort of the whole table), filtered
    or not, first page or later, and LIMIT cuts it."""
    for name in ("a", "b", "c"):
        register(store, clock, name, metadata={"workspace_id": "ws-1"})
        clock.advance(seconds=1)
    for filters, index in INDEXED_PAGES:
        _, cursor = page_ids(store, filters=filters, limit=1)
        assert cursor is not None
        for arguments in ({"limit": 2}, {"limit": 2, "cursor": cursor}):
            statement, parameters = _list_statement(store, filters=filters, **arguments)
            assert "LIMIT" in statement.upper()
            plan = _plan(store, statement, parameters)
            assert index in plan, (filters, plan)
            assert "TEMP B-TREE" not in plan and "Sort" not in plan, (filters, plan)


def test_stale_is_shown_and_filtered_but_never_written(store: Store, clock: FakeClock):
    register(store, clock, "quiet")
    register(store, clock, "done", status="ended")
    clock.advance(seconds=301)
    before = [row(store, "quiet"), row(store, "done")]
    with store.read() as db:
        quiet = sessions.get_session(db=db, session_id="quiet")
        done = sessions.get_session(db=db, session_id="done")
        stale_page = sessions.list_sessions(
            db=db, filters=SessionFilter(stale_before=clock.now - timedelta(seconds=300))
        )
    assert quiet.is_stale(clock.now, timedelta(seconds=300))
    assert not quiet.is_stale(clock.now, timedelta(seconds=302))
    assert not done.is_stale(clock.now, timedelta(seconds=300))
    assert [s.id for s in stale_page.items] == ["quiet"]
    assert [row(store, "quiet"), row(store, "done")] == before
    assert count(store, "agent_session_events") == 2
