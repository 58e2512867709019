"""The change feed (store/reads/changes.py) on SQLite and on PostgreSQL: history rows after a
position become changes (registered, status from → to with its actor, waiting started and
stopped, ended, heartbeats), filtered; going stale comes from the clock; nothing before the start
is told."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event, text

from roundtable_console.store.clock import format_ts
from roundtable_console.store.db import session_rows
from roundtable_console.store.db.database import Store
from roundtable_console.store.reads import changes
from roundtable_console.store.reads.changes import Change, ChangeFeed, ChangeFilter, changes_of_row
from roundtable_console.store.service import perform_action
from roundtable_console.store.writes import agent_writes
from tests.conftest import FakeClock
from tests.helpers import register_session

STALE = 300.0


def feed_on(store: Store, clock: FakeClock, **filters: Any) -> ChangeFeed:
    feed = ChangeFeed(filters=ChangeFilter(**filters), stale_after_seconds=STALE, clock=clock)
    with store.read() as db:
        feed.start(db=db)
    return feed


def read(store: Store, feed: ChangeFeed) -> list[Change]:
    with store.read() as db:
        return feed.read(db=db)


def kinds(changes: list[Change]) -> list[tuple[str, str, str | None, str | None, str | None]]:
    return [(c.session_id, c.change, c.previous_status, c.status, c.actor) for c in changes]


def beat(store: Store, clock: FakeClock, session_id: str = "s1", **values: Any) -> None:
    with store.write() as db:
        agent_writes.heartbeat(db=db, session_id=session_id, clock=clock, **values)


def test_each_kind_of_change_with_its_statuses_and_actor(store: Store, clock: FakeClock) -> None:
    with store.write() as db:
        register_session(db, "old", clock=clock)
    feed = feed_on(store, clock)
    assert read(store, feed) == []  # what happened before the start is not told
    with store.write() as db:
        register_session(db, "s1", clock=clock, agent_id="agent-1")
    beat(store, clock, waiting="Approve the migration?")
    beat(store, clock)
    beat(store, clock, status="running")
    perform_action(store=store, action="pause", session_id="s1", actor="alice", clock=clock)
    perform_action(
        store=store,
        action="terminate",
        session_id="s1",
        actor="bob",
        clock=clock,
        idempotency_key="k1",
        impact_details="gone",
    )
    with store.write() as db:
        agent_writes.end(db=db, session_id="old", status="failed", clock=clock)
    changes = read(store, feed)
    assert kinds(changes) == [
        ("s1", "registered", None, "active", "agent-1"),
        ("s1", "waiting_started", "active", "active", "agent-1"),
        ("s1", "waiting_stopped", "active", "active", "agent-1"),
        ("s1", "status", "active", "running", "agent-1"),
        ("s1", "status", "running", "paused", "alice"),
        ("s1", "status", "paused", "terminated", "bob"),
        ("old", "ended", "active", "failed", "a"),
    ]
    assert changes[1].reason == "Approve the migration?"
    assert changes[5].reason == "gone"
    assert changes[0].at == changes[0].to_json()["at"]
    assert set(changes[0].to_json()) == {
        "at", "session_id", "change", "status", "previous_status", "actor", "reason",
    }  # fmt: skip
    assert read(store, feed) == []  # the position moved past them


def test_heartbeats_only_when_asked(store: Store, clock: FakeClock) -> None:
    with store.write() as db:
        register_session(db, "s1", clock=clock)
    quiet, loud = feed_on(store, clock), feed_on(store, clock, heartbeats=True)
    beat(store, clock)
    beat(store, clock)
    assert read(store, quiet) == []
    assert kinds(read(store, loud)) == [("s1", "heartbeat", "active", "active", "a")] * 2


def test_a_new_waiting_reason_is_a_new_wait_and_the_same_one_is_not(
    store: Store, clock: FakeClock
) -> None:
    with store.write() as db:
        register_session(db, "s1", clock=clock)
    feed = feed_on(store, clock)
    beat(store, clock, waiting="one")
    beat(store, clock, waiting="one")
    beat(store, clock, waiting="two")
    perform_action(store=store, action="pause", session_id="s1", actor="alice", clock=clock)
    assert [(c.change, c.reason) for c in read(store, feed)] == [
        ("waiting_started", "one"),
        ("waiting_started", "two"),
        ("waiting_stopped", None),
        ("status", None),
    ]


def test_filters_by_agent_run_workspace_and_status(store: Store, clock: FakeClock) -> None:
    with store.write() as db:
        register_session(db, "s1", clock=clock, agent_id="x")
        register_session(db, "s2", clock=clock, agent_id="y", metadata={"workspace_id": "w"})
    by_agent = feed_on(store, clock, agent_id="x")
    by_workspace = feed_on(store, clock, workspace_id="w")
    by_status = feed_on(store, clock, statuses=("paused",))
    beat(store, clock, "s1", status="running")
    beat(store, clock, "s2", status="running")
    perform_action(store=store, action="pause", session_id="s2", actor="alice", clock=clock)
    assert [(c.session_id, c.status) for c in read(store, by_agent)] == [("s1", "running")]
    assert [(c.session_id, c.status) for c in read(store, by_workspace)] == [
        ("s2", "running"),
        ("s2", "paused"),
    ]
    assert [(c.session_id, c.status) for c in read(store, by_status)] == [("s2", "paused")]


def test_going_stale_comes_from_the_clock_once(store: Store, clock: FakeClock) -> None:
    with store.write() as db:
        register_session(db, "s1", clock=clock)
        clock.advance(seconds=10)
        register_session(db, "s2", clock=clock)
        register_session(db, "s3", clock=clock, status="paused")  # held, never stale
    feed = feed_on(store, clock)
    assert feed.seconds_to_deadline() == pytest.approx(STALE - 10)
    clock.advance(seconds=STALE - 10)
    assert 0 < feed.seconds_to_deadline() <= 0.001  # stale strictly after stale_after
    assert read(store, feed) == []
    clock.advance(seconds=1)
    assert feed.seconds_to_deadline() == 0
    changes = read(store, feed)
    assert kinds(changes) == [("s1", "stale", "active", "active", None)]
    assert changes[0].reason == "not seen for 5m"
    assert feed.seconds_to_deadline() == pytest.approx(9)
    assert read(store, feed) == []
    beat(store, clock, "s1")  # fresh again: it may go stale again later
    clock.advance(seconds=STALE + 1)
    assert [c.session_id for c in read(store, feed)] == ["s2", "s1"]
    assert feed.seconds_to_deadline() is None


def test_a_time_the_store_reads_otherwise_does_not_make_the_deadline_now(
    store: Store, clock: FakeClock
) -> None:
    """A last-seen time SQLite cannot parse (+0000): the store falls back to the start, 30 s
    ago, and holds the session fresh while Python reads the text as an hour old. The deadline
    must not stay "now" (the watcher would read the feed over and over, 100 times a second)."""
    with store.write() as db:
        db.execute(
            session_rows.SESSIONS.insert().values(
                id="odd",
                agent_id="a",
                run_id="r",
                adapter="codex",
                working_directory="/w",
                status="active",
                started_at=format_ts(clock() - timedelta(seconds=30)),
                last_seen_at=format_ts(clock() - timedelta(hours=1)).replace("Z", "+0000"),
            )
        )
    feed = feed_on(store, clock)
    for _ in range(3):
        assert feed.seconds_to_deadline() != 0
        assert [c.change for c in read(store, feed)] == []


def test_reasons_are_redacted(store: Store, clock: FakeClock) -> None:
    with store.write() as db:
        register_session(db, "s1", clock=clock)
    feed = feed_on(store, clock)
    beat(store, clock, waiting="need password=hunter2 to go on")
    (change,) = read(store, feed)
    assert change.reason == "need password=[REDACTED] to go on"


def test_a_lower_id_committed_after_a_higher_one_is_still_read(
    store: Store, clock: FakeClock
) -> None:
    with store.write() as db:
        register_session(db, "s1", clock=clock)
    feed = feed_on(store, clock)
    start = feed.last_id
    payload = '{"status":"running","last_seen_at":"2026-09-17T17:26:35.000000Z"}'
    insert = text(
        "INSERT INTO agent_session_events (id, session_id, event_type, payload_json, created_at)"
        " VALUES (:id, 's1', 'heartbeat', :payload, '2026-09-17T17:26:35.000000Z')"
    )
    with store.write() as db:
        db.execute(insert, {"id": start + 2, "payload": payload})
    assert [c.status for c in read(store, feed)] == ["running"]
    with store.write() as db:
        db.execute(insert, {"id": start + 1, "payload": payload.replace("running", "starting")})
    assert [(c.change, c.status) for c in read(store, feed)] == [("status", "starting")]


def test_a_row_of_unreadable_payloads_is_a_heartbeat_not_a_crash() -> None:
    (change,) = changes_of_row(
        session_id="s", event_type="heartbeat", payload="not json", at="t", previous="[1]",
        agent_id=None,
    )  # fmt: skip
    assert (change.change, change.status, change.previous_status) == ("heartbeat", None, None)


def test_a_fleets_beats_are_each_decoded_once_and_read_as_apart(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each row's payload is also the next row's previous one: decoded once for both, across
    the read's statements too. What each row says is what its own previous row makes it (the
    waiting one in the middle of the beats)."""
    with store.write() as db:
        for session in ("s1", "s2"):
            register_session(db, session, clock=clock)
    feed = feed_on(store, clock, heartbeats=True)
    for round_number in range(5):
        for session in ("s1", "s2"):
            beat(store, clock, session, waiting="approve?" if round_number == 2 else None)
    decoded: list[str | None] = []
    real = changes._decode
    monkeypatch.setattr(changes, "_decode", lambda raw: decoded.append(raw) or real(raw))
    monkeypatch.setattr(changes, "BATCH", 3)  # four statements for the ten rows
    found = read(store, feed)
    assert [c.change for c in found if c.session_id == "s1"] == [
        "heartbeat", "heartbeat", "waiting_started", "waiting_stopped", "heartbeat", "heartbeat",
    ]  # fmt: skip
    # Ten rows, and the row before the first of each session's (its registration).
    assert len(decoded) == 10 + 2


def test_a_read_is_a_range_of_the_key_and_an_index_probe_per_row(
    sqlite_store: Store, clock: FakeClock
) -> None:
    """The history read never scans the history: the rows after the position by the primary
    key, each one's previous row of its session by (session_id, id)."""
    with sqlite_store.write() as db:
        register_session(db, "s1", clock=clock)
    feed = feed_on(sqlite_store, clock)
    beat(sqlite_store, clock)
    statements: list[tuple[str, Any]] = []

    def capture(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_rest: Any) -> None:
        if "agent_session_events" in statement and "payload_json" in statement:
            statements.append((statement, parameters))

    event.listen(sqlite_store.engine, "before_cursor_execute", capture)
    try:
        assert len(read(sqlite_store, feed)) == 0  # a heartbeat: read, not told
    finally:
        event.remove(sqlite_store.engine, "before_cursor_execute", capture)
    assert len(statements) == 1
    statement, parameters = statements[0]
    with sqlite_store.read() as db:
        plan = " | ".join(
            str(row[-1])
            for row in db.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
        )
    assert "SEARCH agent_session_events USING INTEGER PRIMARY KEY (rowid>?)" in plan, plan
    probe = "SEARCH agent_session_events_1 USING INDEX ix_agent_session_events_session"
    assert f"{probe} (session_id=? AND id<?)" in plan, plan
    assert "SEARCH agent_sessions USING INDEX sqlite_autoindex_agent_sessions_1 (id=?)" in plan
    assert "SCAN agent_session_events" not in plan, plan


def _ask(store: Store, clock: FakeClock, reason: str) -> str:
    from roundtable_console.store.requests import asking

    return asking.open_request(
        store, session_id="s1", agent="claude-code", tool_name="Bash",
        tool_input={"command": "make deploy"}, suggestions=None, reason=reason,
        wait_seconds=60, clock=clock,
    ).id  # fmt: skip


def test_a_wait_starts_once_and_stops_once_when_its_request_is_decided(
    store: Store, clock: FakeClock
) -> None:
    """A request asked or a reply sent says nothing of the session's wait (it is not a wait
    that ended); the decision that answers the last request ends it, the heartbeat after it
    does not end it again; a decision with another request pending moves the wait to it."""
    from roundtable_console.store.requests.deciding import decide_request

    with store.write() as db:
        register_session(db, "s1", clock=clock, agent_id="agent-1")
    feed = feed_on(store, clock)
    beat(store, clock, waiting="asks to run Bash: make deploy")
    first = _ask(store, clock, "asks to run Bash: make deploy")
    second = _ask(store, clock, "asks to run Bash: make test")
    assert [c.change for c in read(store, feed)] == ["waiting_started"]
    decide_request(store=store, request_id=first, decision="allow", actor="olivia", clock=clock)
    moved = read(store, feed)
    assert [(c.change, c.reason, c.actor) for c in moved] == [
        ("waiting_started", "asks to run Bash: make test", "olivia")
    ]
    decide_request(store=store, request_id=second, decision="deny", actor="olivia", clock=clock)
    assert [(c.change, c.actor) for c in read(store, feed)] == [("waiting_stopped", "olivia")]
    beat(store, clock)  # the agent goes on: its wait ended already
    assert read(store, feed) == []
    beat(store, clock, waiting="Approve the migration?")
    assert [c.change for c in read(store, feed)] == ["waiting_started"]
