"""What needs a human first (issue 9 points 1 and 2): sessions that wait for a human, and the
attention order, keyset-paged in SQL. Every store test runs on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import InvalidCursor, InvalidSession
from roundtable_console.store.reads import places, sessions
from roundtable_console.store.reads.listing import SessionFilter, SessionOrder, session_cursor
from roundtable_console.store.writes import agent_writes, lifecycle
from tests.conftest import FakeClock
from tests.helpers import Cli
from tests.test_sessions import history, insert_raw, register, row
from tests.test_store_windows import _plan, _statements

STALE_AFTER = timedelta(minutes=5)


def beat(store: Store, clock: FakeClock, session_id: str = "s1", **values: Any) -> Any:
    with store.write() as db:
        return agent_writes.heartbeat(db=db, session_id=session_id, clock=clock, **values)


def attention_ids(
    store: Store, clock: FakeClock, *, limit: int = 200, descending: bool = False, **filters: Any
) -> list[str]:
    order = SessionOrder("attention", descending).at(clock() - STALE_AFTER)
    found: list[str] = []
    cursor = None
    while True:
        with store.read() as db:
            page = sessions.list_sessions(
                db=db, order=order, limit=limit, cursor=cursor, filters=SessionFilter(**filters)
            )
        found.extend(item.id for item in page.items)
        cursor = page.next_cursor
        if cursor is None:
            return found


# -- waiting ----------------------------------------------------------------------------------


def test_a_heartbeat_with_a_reason_makes_the_session_wait_until_the_next_one(
    store: Store, clock: FakeClock
) -> None:
    register(store, clock)
    clock.advance(seconds=10)
    waiting = beat(store, clock, waiting="approve deleting build/")
    assert waiting.waiting is not None
    assert waiting.waiting.reason == "approve deleting build/"
    since = waiting.waiting.since
    assert row(store, "s1")["waiting_since"] == since  # type: ignore[index]
    assert waiting.to_json()["waiting"] == {"reason": "approve deleting build/", "since": since}
    # The same reason again keeps the time it started waiting; another reason starts anew.
    clock.advance(seconds=10)
    assert beat(store, clock, waiting="approve deleting build/").waiting.since == since
    clock.advance(seconds=10)
    moved = beat(store, clock, waiting="approve the release")
    assert moved.waiting.since != since
    assert moved.waiting.reason == "approve the release"
    # A heartbeat without a reason ends the wait.
    clock.advance(seconds=10)
    done = beat(store, clock)
    assert done.waiting is None and done.to_json()["waiting"] is None
    assert row(store, "s1")["waiting_reason"] is None  # type: ignore[index]
    beats = [payload for kind, payload in history(store, "s1") if kind == "heartbeat"]
    assert [payload.get("waiting") for payload in beats] == [
        "approve deleting build/",
        "approve deleting build/",
        "approve the release",
        None,
    ]


@pytest.mark.parametrize(
    "reason",
    ["", "   ", "x" * 501, "line\nbreak", "bell\x07", "esc\x1b[31m"],
    ids=["empty", "blank", "too-long", "newline", "bell", "escape"],
)
def test_a_waiting_reason_that_is_blank_too_long_or_unprintable_writes_nothing(
    store: Store, clock: FakeClock, reason: str
) -> None:
    register(store, clock)
    before = (row(store, "s1"), history(store))
    clock.advance(seconds=5)
    with pytest.raises(InvalidSession) as raised:
        beat(store, clock, waiting=reason)
    assert raised.value.code == "invalid_session"
    assert (row(store, "s1"), history(store)) == before


def test_a_waiting_reason_of_500_characters_is_kept_and_secrets_in_it_are_redacted(
    store: Store, clock: FakeClock
) -> None:
    register(store, clock)
    assert beat(store, clock, waiting="y" * 500).waiting.reason == "y" * 500
    secret = beat(store, clock, waiting="paste token=abc123 into the vault, Bearer xyz")
    stored = row(store, "s1")["waiting_reason"]  # type: ignore[index]
    assert "abc123" not in stored and "xyz" not in stored
    assert secret.waiting.reason == stored


@pytest.mark.parametrize("action", ["heartbeat", "pause", "stop", "terminate"])
def test_any_lifecycle_action_answers_the_wait(store: Store, clock: FakeClock, action: str) -> None:
    register(store, clock)
    beat(store, clock, waiting="approve")
    with store.write() as db:
        lifecycle.ACTIONS[action](
            db=db, session_id="s1", actor="alice", idempotency_key="k1", clock=clock
        )
    assert row(store, "s1")["waiting_since"] is None  # type: ignore[index]


def test_an_end_and_a_register_end_the_wait(store: Store, clock: FakeClock) -> None:
    register(store, clock)
    beat(store, clock, waiting="approve")
    with store.write() as db:
        assert agent_writes.end(db=db, session_id="s1", clock=clock).waiting is None
    register(store, clock, "s2")
    beat(store, clock, "s2", waiting="approve")
    assert register(store, clock, "s2").waiting is None


def test_a_finished_session_does_not_wait_even_if_its_row_says_so(
    store: Store, clock: FakeClock
) -> None:
    """A writer that knows nothing of waiting (the reference) may end a waiting session."""
    insert_raw(store, "old", status="ended", waiting_reason="approve", waiting_since="2026-01-01")
    with store.read() as db:
        session = sessions.get_session(db=db, session_id="old")
    assert session.waiting is None


def test_the_waiting_filter_lists_only_waiting_sessions(store: Store, clock: FakeClock) -> None:
    for name in ("a", "b", "c"):
        register(store, clock, name)
    beat(store, clock, "b", waiting="approve")
    insert_raw(store, "d", status="ended", waiting_reason="x", waiting_since="2026-01-01")
    with store.read() as db:
        page = sessions.list_sessions(db=db, filters=SessionFilter(waiting=True))
        assert sessions.count_sessions(db=db, filters=SessionFilter(waiting=True)) == 1
    assert [item.id for item in page.items] == ["b"]


# -- the attention order ---------------------------------------------------------------------


def fleet(store: Store, clock: FakeClock) -> list[str]:
    """One session of each kind, registered in an order unrelated to their attention; the
    expected attention order is returned."""
    register(store, clock, "fresh-old")  # fresh, seen first of the fresh ones
    register(store, clock, "done", status="done")
    register(store, clock, "ended-1")
    with store.write() as db:
        agent_writes.end(db=db, session_id="ended-1", clock=clock)
    register(store, clock, "stale-2")
    register(store, clock, "failed", status="failed")
    register(store, clock, "paused", status="paused")
    register(store, clock, "wait-long")
    beat(store, clock, "wait-long", waiting="approve deleting build/")
    clock.advance(minutes=2)
    register(store, clock, "stale-1-never-seen", status="running")
    register(store, clock, "stopped", status="stopped")
    register(store, clock, "blocked", status="blocked")
    clock.advance(minutes=1)
    beat(store, clock, "wait-long")  # no: a heartbeat without a reason ends the wait
    beat(store, clock, "wait-long", waiting="approve deleting build/")
    register(store, clock, "wait-short")
    clock.advance(minutes=1)
    beat(store, clock, "wait-short", waiting="approve the release")
    clock.advance(minutes=4)
    beat(store, clock, "fresh-old")
    clock.advance(seconds=30)
    register(store, clock, "fresh-new", status="starting")
    return [
        "wait-long",  # waiting longest
        "wait-short",
        "failed",  # outside the vocabulary, by time last seen
        "blocked",
        "stale-2",  # stale live sessions, longest unseen first
        "stale-1-never-seen",
        "paused",  # paused and stopped
        "stopped",
        "fresh-old",  # fresh live sessions
        "fresh-new",
        "done",  # finished
        "ended-1",
    ]


def test_the_attention_order_puts_first_what_needs_a_human(store: Store, clock: FakeClock) -> None:
    expected = fleet(store, clock)
    assert attention_ids(store, clock) == expected
    assert attention_ids(store, clock, limit=1) == expected
    assert attention_ids(store, clock, limit=5) == expected
    assert attention_ids(store, clock, descending=True, limit=3) == expected[::-1]


def test_the_attention_order_pages_backwards_and_from_any_position(
    store: Store, clock: FakeClock
) -> None:
    expected = fleet(store, clock)
    order = SessionOrder("attention").at(clock() - STALE_AFTER)
    with store.read() as db:
        last = sessions.list_sessions_before(db=db, order=order, limit=4)
        assert [item.id for item in last.items] == expected[-4:]
        before = sessions.list_sessions_before(db=db, order=order, limit=4, cursor=last.next_cursor)
        assert [item.id for item in before.items] == expected[-8:-4]
        for offset in range(len(expected) + 1):
            found = places.sessions_at(db=db, offset=offset, limit=3, order=order)
            assert [item.id for item in found] == expected[offset : offset + 3]
            total = len(expected)
            found = places.sessions_at(db=db, offset=offset, limit=3, order=order, total=total)
            assert [item.id for item in found] == expected[offset : offset + 3]


def test_a_session_going_stale_moves_up_as_time_passes(store: Store, clock: FakeClock) -> None:
    register(store, clock, "quiet")
    register(store, clock, "paused", status="paused")
    clock.advance(minutes=1)
    assert attention_ids(store, clock) == ["paused", "quiet"]
    clock.advance(minutes=5)
    assert attention_ids(store, clock) == ["quiet", "paused"]


def test_the_attention_order_filters_and_needs_a_time(store: Store, clock: FakeClock) -> None:
    expected = fleet(store, clock)
    assert attention_ids(store, clock, waiting=True) == ["wait-long", "wait-short"]
    assert attention_ids(store, clock, statuses=("paused", "failed")) == ["failed", "paused"]
    assert attention_ids(store, clock, text="stale") == [i for i in expected if "stale" in i]
    with store.read() as db, pytest.raises(ValueError, match="at a time"):
        sessions.list_sessions(db=db, order=SessionOrder("attention"))


def test_an_attention_cursor_that_was_not_issued_is_refused(store: Store, clock: FakeClock) -> None:
    fleet(store, clock)
    order = SessionOrder("attention").at(clock() - STALE_AFTER)
    with store.read() as db:
        first = sessions.list_sessions(db=db, order=order, limit=2)
        started = session_cursor(first.items[0])  # a cursor of another order
        for cursor in (started, "nonsense", str(first.next_cursor)[:-3]):
            with pytest.raises(InvalidCursor):
                sessions.list_sessions(db=db, order=order, cursor=cursor)


def test_fresh_live_sessions_go_by_start_so_a_heartbeat_moves_no_row(
    store: Store, clock: FakeClock
) -> None:
    """Issue 19 point 3: the fresh tier by start, then id; a beat moves a row only when it
    changes segment (a stale session seen again joins the fresh ones at its start's place)."""
    for session_id in ("first", "second", "third"):
        register(store, clock, session_id)
        clock.advance(seconds=10)
    register(store, clock, "quiet")  # started last, seen never again: it goes stale
    for session_id in ("third", "first", "second"):  # seen in another order than started
        clock.advance(seconds=10)
        beat(store, clock, session_id)
    assert attention_ids(store, clock) == ["first", "second", "third", "quiet"]
    for session_id in ("first", "third", "second", "first"):
        clock.advance(seconds=30)
        beat(store, clock, session_id)
        assert attention_ids(store, clock) == ["first", "second", "third", "quiet"]
    clock.advance(minutes=5)
    for session_id in ("first", "second", "third"):
        beat(store, clock, session_id)
    assert attention_ids(store, clock) == ["quiet", "first", "second", "third"]  # stale first
    beat(store, clock, "quiet")
    assert attention_ids(store, clock) == ["first", "second", "third", "quiet"]
    assert attention_ids(store, clock, limit=1) == ["first", "second", "third", "quiet"]
    assert attention_ids(store, clock, limit=2, descending=True) == [
        "quiet", "third", "second", "first",
    ]  # fmt: skip


def test_unreadable_times_sort_as_the_oldest(store: Store, clock: FakeClock) -> None:
    register(store, clock, "known")
    insert_raw(store, "unreadable", status="running", started_at="not a time", last_seen_at="?")
    insert_raw(store, "no-seen", status="running", started_at="2026-01-01 00:00:00")
    clock.advance(minutes=10)
    assert attention_ids(store, clock) == ["unreadable", "no-seen", "known"]
    assert attention_ids(store, clock, limit=1) == ["unreadable", "no-seen", "known"]


STATUSES = ["active", "running", "paused", "stopped", "ended", "failed", "done", "starting"]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    plan=st.lists(
        st.tuples(
            st.sampled_from(STATUSES),
            st.integers(min_value=0, max_value=20),
            st.booleans(),
        ),
        min_size=1,
        max_size=25,
    ),
    limit=st.integers(min_value=1, max_value=7),
    seed=st.integers(min_value=0, max_value=1000),
    only=st.lists(st.sampled_from(STATUSES), max_size=3, unique=True),
    active_only=st.booleans(),
    waiting_only=st.booleans(),
)
def test_the_attention_order_is_what_python_says_it_is(
    sqlite_store: Store,
    plan: list[tuple[str, int, bool]],
    limit: int,
    seed: int,
    only: list[str],
    active_only: bool,
    waiting_only: bool,
) -> None:
    """Any fleet, filtered, paged at any size: the SQL order equals the rule written plainly
    (and a filter never skips a segment that holds one of its sessions)."""
    store = sqlite_store
    with store.write() as db:
        db.exec_driver_sql("DELETE FROM agent_sessions")
    shuffled = list(enumerate(plan))
    random.Random(seed).shuffle(shuffled)
    for index, (status, minutes_ago, waits) in shuffled:
        session_id = f"s{index:02d}"
        insert_raw(
            store,
            session_id,
            status=status,
            started_at=f"2026-01-01T00:{index * 37 % 60:02d}:00Z",  # unrelated to the rest
            last_seen_at=f"2026-01-01T01:{59 - minutes_ago:02d}:00Z",
            waiting_reason="r" if waits else None,
            waiting_since=f"2026-01-01T01:{minutes_ago:02d}:00Z" if waits else None,
        )
    now = FakeClock(start=datetime(2026, 1, 1, 2, 0, tzinfo=UTC))

    def rank(item: tuple[int, tuple[str, int, bool]]) -> tuple[int, Any, str]:
        index, (status, minutes_ago, waits) = item
        active = status in ("active", "running", "paused", "starting")
        seen = f"01:{59 - minutes_ago:02d}"
        if waits and active:
            return (0, f"01:{minutes_ago:02d}", f"s{index:02d}")
        if status in ("active", "running", "starting"):
            stale = 60 - (59 - minutes_ago) > 5
            if stale:
                return (2, seen, f"s{index:02d}")
            return (4, f"00:{index * 37 % 60:02d}", f"s{index:02d}")  # fresh: by start
        if status in ("paused", "stopped"):
            return (3, seen, f"s{index:02d}")
        if status in ("ended", "done"):
            return (5, seen, f"s{index:02d}")
        return (1, seen, f"s{index:02d}")

    def passes(status: str, waits: bool) -> bool:
        active = status in ("active", "running", "paused", "starting")
        return (
            (not only or status in only)
            and (active or not (active_only or waiting_only))
            and (waits or not waiting_only)
        )

    kept = [item for item in enumerate(plan) if passes(item[1][0], item[1][2])]
    expected = [key[2] for key in sorted(rank(item) for item in kept)]
    filters = {"statuses": tuple(only), "active_only": active_only, "waiting": waiting_only}
    assert attention_ids(store, now, limit=limit, **filters) == expected
    assert attention_ids(store, now, limit=limit, descending=True, **filters) == expected[::-1]


# -- the command line ------------------------------------------------------------------------


def test_heartbeat_waiting_from_the_command_line(rt: Cli) -> None:
    rt.register("s1")
    rt.clock.advance(minutes=1)
    body = rt.json(
        "sessions", "heartbeat", "--session", "s1", "--waiting", "approve deleting build/"
    )
    assert body["waiting"] == {
        "reason": "approve deleting build/",
        "since": "2026-09-17T17:27:35.000000Z",
    }
    assert rt.json("sessions", "show", "--session", "s1")["waiting"] == body["waiting"]
    listed = rt.json("sessions", "list", "--waiting")
    assert [item["id"] for item in listed["items"]] == ["s1"]
    assert listed["items"][0]["waiting"] == body["waiting"]
    shown = rt("sessions", "show", "--session", "s1")
    assert "approve deleting build/ (since 2026-09-17T17:27:35.000000Z)" in shown.stdout
    assert rt.json("sessions", "heartbeat", "--session", "s1")["waiting"] is None
    assert rt.json("sessions", "list", "--waiting")["items"] == []


def test_a_waiting_reason_too_long_is_refused_with_nothing_written(rt: Cli) -> None:
    rt.register("s1")
    before = rt.json("sessions", "show", "--session", "s1")
    result = rt("sessions", "heartbeat", "--session", "s1", "--waiting", "x" * 501, "--json")
    assert result.exit_code == 2
    error = json.loads(result.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "invalid_session"
    assert "500" in error["message"]
    assert rt.json("sessions", "show", "--session", "s1") == before


def test_sessions_list_sort_attention(rt: Cli) -> None:
    rt.register("calm")
    rt.register("broken", "--status", "failed")
    rt.register("asks")
    rt("sessions", "heartbeat", "--session", "asks", "--waiting", "approve")
    rt.register("held", "--status", "paused")
    listed = rt.json("sessions", "list", "--sort", "attention")
    assert [item["id"] for item in listed["items"]] == ["asks", "broken", "held", "calm"]
    backwards = rt.json("sessions", "list", "--sort", "attention", "--descending")
    assert [item["id"] for item in backwards["items"]] == ["calm", "held", "broken", "asks"]
    first = rt.json("sessions", "list", "--sort", "attention", "--limit", "2")
    assert [item["id"] for item in first["items"]] == ["asks", "broken"]
    rest = rt.json(
        "sessions", "list", "--sort", "attention", "--limit", "2", "--cursor", first["next_cursor"]
    )
    assert [item["id"] for item in rest["items"]] == ["held", "calm"]
    text = rt("sessions", "--sort", "attention")
    assert [line.split("\t")[0] for line in text.stdout.splitlines()] == [
        "asks", "broken", "held", "calm"
    ]  # fmt: skip
    refused = rt("sessions", "list", "--sort", "nonsense")
    assert refused.exit_code == 2
    # A cursor of one order is refused by another.
    wrong = rt("sessions", "list", "--limit", "2", "--cursor", first["next_cursor"])
    assert wrong.exit_code != 0 and "cursor" in wrong.stderr


def test_the_next_session_to_go_stale_is_the_fresh_live_one_seen_longest_ago(
    store: Store, clock: FakeClock
) -> None:
    register(store, clock, "old-paused", status="paused")
    register(store, clock, "old-waiting")
    beat(store, clock, "old-waiting", waiting="approve")
    clock.advance(minutes=1)
    register(store, clock, "first")
    register(store, clock, "other-agent", agent_id="agent-2")
    clock.advance(minutes=1)
    register(store, clock, "second")
    with store.read() as db:
        found = sessions.next_to_go_stale(db=db, stale_before=clock() - STALE_AFTER)
        assert found is not None and found.id == "first"
        narrowed = SessionFilter(agent_id="agent-2")
        found = sessions.next_to_go_stale(
            db=db, stale_before=clock() - STALE_AFTER, filters=narrowed
        )
        assert found is not None and found.id == "other-agent"
        # Once every live session is stale, none is left to go stale.
        later = clock() + timedelta(hours=1) - STALE_AFTER
        assert sessions.next_to_go_stale(db=db, stale_before=later) is None


def test_the_fresh_segment_is_read_along_the_start_index_without_a_sort(
    store: Store, clock: FakeClock
) -> None:
    """Issue 19 point 3 in SQL: every read of the fresh live sessions, first page or after a
    cursor, either way, follows migration 0011's index with no sort of the segment (with
    PostgreSQL's sorts and sequential scans priced out, as the other order tests do)."""
    for index in range(30):
        register(store, clock, f"s{index:02d}", status="running" if index % 3 else "ended")
    order = SessionOrder("attention").at(clock() - STALE_AFTER)
    fresh = SessionFilter(statuses=("running",))
    with store.read() as db:
        cursor = sessions.list_sessions(db=db, order=order, limit=4, filters=fresh).next_cursor
    reads: list[tuple[str, Any]] = []
    for direction in (order, order.flipped()):
        for after in (None, cursor):
            reads += _statements(
                store, sessions.list_sessions, order=direction, limit=4, cursor=after, filters=fresh
            )
    reads += _statements(store, places.sessions_at, order=order, offset=5, limit=3)
    fresh_reads = [(sql, params) for sql, params in reads if "ORDER BY" in sql]
    assert fresh_reads
    plans = [_plan(store, statement, parameters) for statement, parameters in fresh_reads]
    for plan in plans:
        assert "TEMP B-TREE" not in plan and "Sort" not in plan, plan
    assert any("ix_agent_sessions_attention_started" in plan for plan in plans), plans


def test_the_attention_keys_compile_to_what_migrations_0007_and_0011_index() -> None:
    """Each migration holds its own copy of the expressions it indexes; the store's queries must
    compile to the same text, or SQLite cannot use the indexes."""
    import importlib

    from sqlalchemy.dialects import sqlite as sqlite_dialect

    from roundtable_console.store.reads.keyset import key_expr
    from roundtable_console.store.reads.listing import ATTENTION_KEY, ATTENTION_TIER, STARTED_KEY

    def lite(key: Any) -> str:
        compiled = key_expr(key).compile(
            dialect=sqlite_dialect.dialect(), compile_kwargs={"literal_binds": True}
        )
        return str(compiled).replace("agent_sessions.", "")

    versions = "roundtable_console.store.db.migrations.versions"
    waiting = importlib.import_module(f"{versions}.0007_waiting_attention")
    calm = importlib.import_module(f"{versions}.0011_calm_attention")
    assert lite(ATTENTION_TIER) == waiting.SQLITE_TIER == calm.SQLITE_TIER
    assert lite(ATTENTION_KEY) == waiting.SQLITE_KEY == calm.SQLITE_KEY
    assert lite(STARTED_KEY) == "julianday(started_at)"
    assert calm.SQLITE_INDEX == (
        f"agent_sessions(({calm.SQLITE_TIER}), julianday(started_at), id, ({calm.SQLITE_KEY}))"
    )
    assert (
        calm.PG_INDEX == "agent_sessions(rt_attention_tier, rt_started_key, id, rt_attention_key)"
    )
