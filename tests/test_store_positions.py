"""Reads by position, behind the console's scrollbar: the rows at any place of the list in every
order, filtered or not, from either end, the list's length counted in SQL or from the status
counts, and the index walks that make a place in the middle of a million sessions cheap. Every
test runs on SQLite and on PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text

from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import InvalidCursor
from roundtable_console.store.reads.keyset import count_by_status
from roundtable_console.store.reads.listing import SessionFilter, SessionOrder, countable_total
from roundtable_console.store.reads.places import sessions_at
from roundtable_console.store.reads.sessions import count_sessions
from roundtable_console.store.writes.agent_writes import heartbeat
from tests.helpers import register_session
from tests.test_store_windows import (
    ALL_ORDERS,
    ROWS,
    STALE_BEFORE,
    _plan,
    _statements,
    expected,
    seed_rows,
)

FILTERS: list[tuple[SessionFilter, Any]] = [
    (SessionFilter(), lambda row: True),
    (SessionFilter(statuses=("active",)), lambda row: row[2] == "active"),
    (SessionFilter(agent_id="b"), lambda row: row[1] == "b"),
    (SessionFilter(active_only=True), lambda row: row[2] != "ended"),
    (SessionFilter(text="A"), lambda row: "a" in (row[0] + row[1] + row[2] + "run-1codex")),
]


def test_every_place_of_every_order_reads_the_rows_there(store: Store) -> None:
    seed_rows(store)
    for order in ALL_ORDERS:
        want = expected(order)
        with store.read() as db:
            for limit in (1, 3, 11):
                for offset in range(len(want) + 2):
                    wanted = want[offset : offset + limit]
                    plain = sessions_at(db=db, order=order, offset=offset, limit=limit)
                    assert [s.id for s in plain] == wanted, (order, offset, limit)
                    # The same place reached from the end when it lies in the second half.
                    ends = sessions_at(
                        db=db, order=order, offset=offset, limit=limit, total=len(want)
                    )
                    assert [s.id for s in ends] == wanted, (order, offset, limit)


@pytest.mark.parametrize(("filters", "keep"), FILTERS)
def test_places_and_lengths_of_a_filtered_list(
    store: Store, filters: SessionFilter, keep: Any
) -> None:
    seed_rows(store)
    for order in (SessionOrder(), SessionOrder("last_seen", descending=True)):
        want = expected(order, keep)
        with store.read() as db:
            total = count_sessions(db=db, filters=filters)
            assert total == len(want)
            countable = countable_total(filters, count_by_status(db=db))
            assert countable in (None, total)
            for offset in range(len(want) + 1):
                rows = sessions_at(
                    db=db, order=order, filters=filters, offset=offset, limit=2, total=total
                )
                assert [s.id for s in rows] == want[offset : offset + 2], (filters, offset)


def test_the_status_counts_say_the_length_only_of_lists_they_can() -> None:
    counts = {"active": 5, "paused": 2, "ended": 7, "failed": 1}
    assert countable_total(SessionFilter(), counts) == 15
    assert countable_total(SessionFilter(statuses=("paused", "ended")), counts) == 9
    assert countable_total(SessionFilter(statuses=("gone",)), counts) == 0
    assert countable_total(SessionFilter(active_only=True), counts) == 7
    assert countable_total(SessionFilter(statuses=("ended",), active_only=True), counts) == 0
    for uncountable in (
        SessionFilter(agent_id="a"),
        SessionFilter(run_id="r"),
        SessionFilter(workspace_id="w"),
        SessionFilter(text="x"),
        SessionFilter(stale_before=datetime(2026, 1, 1, tzinfo=UTC)),
    ):
        assert countable_total(uncountable, counts) is None, uncountable
    # Blank text narrows nothing, as in SQL.
    assert countable_total(SessionFilter(text="  "), counts) == 15


def test_a_length_that_is_out_of_date_gives_a_run_of_the_list_never_an_error(store: Store) -> None:
    """The length comes from the status counts or a count read a moment before: rows written or
    gone meanwhile shift a place reached from the end, but what is read is still consecutive rows
    of the list, in order (the console reads again once it learns of the change)."""
    seed_rows(store)
    want = expected(SessionOrder())
    with store.read() as db:
        for wrong in (len(want) - 3, len(want) + 2, len(want) + 30):
            for offset in range(len(want) + 3):
                rows = [s.id for s in sessions_at(db=db, offset=offset, limit=3, total=wrong)]
                if rows:
                    start = want.index(rows[0])
                    assert rows == want[start : start + len(rows)], (wrong, offset)
        with pytest.raises(InvalidCursor):
            sessions_at(db=db, offset=-1, limit=3)


@pytest.mark.parametrize(
    ("order", "index"),
    [
        (SessionOrder(), "ix_agent_sessions_started"),
        (SessionOrder("status", descending=True), "ix_agent_sessions_status"),
        (SessionOrder("agent"), "ix_agent_sessions_agent"),
        (SessionOrder("last_seen"), "ix_agent_sessions_last_seen"),
        (SessionOrder("attention").at(STALE_BEFORE), "ix_agent_sessions_attention"),
        (SessionOrder("attention", True).at(STALE_BEFORE), "ix_agent_sessions_attention"),
    ],
)
def test_a_place_is_found_by_walking_an_index_of_ids_without_sorting(
    store: Store, order: SessionOrder, index: str
) -> None:
    """The walk to the place reads ids from the order's index (no sort of the table; on
    PostgreSQL no per-row function: the sort keys are stored columns), then one keyset page."""
    seed_rows(store)
    walks = [
        (statement, parameters)
        for statement, parameters in _statements(store, sessions_at, order=order, offset=7, limit=2)
        if "OFFSET" in statement.upper()
    ]
    assert walks, "no index walk"
    for statement, parameters in walks:
        # PostgreSQL: a stored key, never computed per row (a bound's key is computed once).
        assert "rt_ts_key(agent_sessions." not in statement
        plan = _plan(store, statement, parameters)
        assert index in plan, plan
        assert "TEMP B-TREE" not in plan and "Sort" not in plan, plan


def test_postgres_sort_keys_are_stored_and_follow_every_write(pg_store: Store) -> None:
    start = datetime(2026, 9, 17, 17, 26, 35, tzinfo=UTC)
    with pg_store.write() as db:
        register_session(db, "s1", clock=lambda: start)
    with pg_store.write() as db:
        heartbeat(db=db, session_id="s1", clock=lambda: start + timedelta(minutes=5))
        db.execute(
            text("UPDATE agent_sessions SET started_at = '2026-09-17 19:00:00+02:00'")
        )  # a reference form, written by anyone
    with pg_store.read() as db:
        row = db.execute(
            text(
                "SELECT rt_started_key, rt_seen_key, rt_ts_key(started_at) AS started,"
                " rt_ts_key(last_seen_at) AS seen FROM agent_sessions"
            )
        ).one()
    assert row.rt_started_key == row.started == datetime(2026, 9, 17, 17, 0, 0)
    assert row.rt_seen_key == row.seen == datetime(2026, 9, 17, 17, 31, 35)


def test_postgres_counts_that_run_in_parallel_workers_never_fail(pg_store: Store) -> None:
    """rt_ts_key starts a subtransaction on every call, which a parallel plan refuses: it is
    PARALLEL UNSAFE, so a plan that computes it stays in one process."""
    with pg_store.write() as db:
        for number in range(30):
            register_session(db, f"s{number}")
    with pg_store.read() as db:
        for setting in (
            "parallel_setup_cost = 0",
            "parallel_tuple_cost = 0",
            "min_parallel_table_scan_size = 0",
            "max_parallel_workers_per_gather = 2",
            "force_parallel_mode = on",  # PostgreSQL 15 (16 renames it debug_parallel_query)
        ):
            db.exec_driver_sql(f"SET LOCAL {setting}")
        found = db.execute(
            text("SELECT count(*) FROM agent_sessions WHERE rt_ts_key(last_seen_at) IS NOT NULL")
        ).scalar_one()
        stale = count_sessions(
            db=db, filters=SessionFilter(stale_before=datetime(2030, 1, 1, tzinfo=UTC))
        )
    assert found == 30 and stale == 30


def test_rows_written_by_the_reference_get_their_keys_too(store: Store) -> None:
    """A row the reference inserts (no sort key given) sorts by its time as every other does."""
    seed_rows(store)
    with store.read() as db:
        assert [s.id for s in sessions_at(db=db, offset=0, limit=len(ROWS))] == expected(
            SessionOrder()
        )
