"""The session list's reads on the big store, each under 50 ms whatever the store's size: each
filter's first page, the last page, the attention order, the counts after a change, the grouped
list's pages, groups and places; and ``roundtable sessions list`` as a process on the big store
against the same on a small one."""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench.figures import (
    Figure,
    compiled_env,
    median_seconds,
    paired_medians,
    roundtable_command,
    run_process,
    timed,
)
from roundtable_console.store.clock import system_clock
from roundtable_console.store.db.database import open_store

# ------------------------------------------------------------- point 4: reads and counts

READ_LIMIT_SECONDS = 0.05


def bench_reads(url: str, label: str, repeats: int) -> list[Figure]:
    """Each filter's first page, the last page (End) and the counts by status just after a
    change, on the big store: each must stay under 50 ms (issue 4 point 4)."""
    from datetime import timedelta

    from sqlalchemy import text

    from roundtable_console.store.reads.keyset import count_by_status
    from roundtable_console.store.reads.listing import SessionFilter, SessionOrder
    from roundtable_console.store.reads.sessions import (
        count_needing_attention,
        list_sessions,
        list_sessions_before,
    )

    store = open_store(url)
    stale_before = system_clock() - timedelta(seconds=300)
    cases = {
        "first page": SessionFilter(),
        "status filter": SessionFilter(statuses=("paused",)),
        "agent filter": SessionFilter(agent_id="agent-42"),
        "run filter": SessionFilter(run_id="run-500"),
        "workspace filter": SessionFilter(workspace_id="ws-3"),
        "stale filter": SessionFilter(stale_before=stale_before),
        "ended hidden": SessionFilter(active_only=True),
    }
    figures: list[Figure] = []
    try:
        for name, filters in cases.items():

            def page(filters: Any = filters) -> None:
                with store.read() as db:
                    assert list_sessions(db=db, filters=filters, limit=50).items

            figures.append(read_figure(f"{name} ({label})", median_seconds(page, repeats)))

        def last_page() -> None:
            with store.read() as db:
                assert list_sessions_before(db=db, limit=50).items

        figures.append(read_figure(f"last page, End ({label})", median_seconds(last_page, repeats)))
        # The console's default order (issue 9 point 2), filtered as the console filters.
        attention = SessionOrder("attention").at(stale_before)
        for name in ("first page", "status filter", "agent filter", "stale filter", "ended hidden"):

            def attention_page(filters: Any = cases[name]) -> None:
                with store.read() as db:
                    assert list_sessions(db=db, filters=filters, order=attention, limit=50).items

            seconds = median_seconds(attention_page, repeats)
            figures.append(read_figure(f"attention, {name} ({label})", seconds))

        def attention_end() -> None:
            with store.read() as db:
                assert list_sessions_before(db=db, order=attention, limit=50).items

        seconds = median_seconds(attention_end, repeats)
        figures.append(read_figure(f"attention, last page, End ({label})", seconds))

        def needing_attention() -> None:
            with store.read() as db:
                assert count_needing_attention(db=db, stale_before=stale_before) > 0

        seconds = median_seconds(needing_attention, repeats)
        figures.append(read_figure(f"attention, how many need it ({label})", seconds))
        times: list[float] = []
        for number in range(repeats):
            with store.write() as db:  # a change: the cached counts are stale now
                db.execute(
                    text("UPDATE agent_sessions SET status = :status WHERE id = 'sess-0000042'"),
                    {"status": ("paused", "active")[number % 2]},
                )
            with store.read() as db:
                times.append(timed(lambda db=db: count_by_status(db=db)))
        figures.append(read_figure(f"counts after a change ({label})", statistics.median(times)))
    finally:
        store.dispose()
    return figures


def read_figure(name: str, seconds: float) -> Figure:
    return Figure(name, seconds, limit=READ_LIMIT_SECONDS, absolute=True)


# -------------------------------------------------------- issue 9 point 6: the grouped list


def bench_grouped_reads(url: str, label: str, repeats: int) -> list[Figure]:
    """The grouped list's reads on the big store, each under 50 ms as the others: per grouping,
    the first page, the first page of the stale and status filters, the last page (End), the
    groups' sizes (the list's length and where each group is), the counts by status of the
    groups in view, and the rows at the middle place of the list (a thumb dragged there: the
    worker's whole read, the groups included)."""
    from datetime import timedelta

    from roundtable_console.store.reads.groups import read_group_sizes, read_status_by_group
    from roundtable_console.store.reads.listing import SessionFilter, SessionOrder
    from roundtable_console.store.reads.sessions import list_sessions, list_sessions_before
    from roundtable_console.store.rules import GROUP_COLUMNS
    from roundtable_console.store.window.layout import Layout
    from roundtable_console.store.window.questions import Read, RowsAsked
    from roundtable_console.store.window.rows import GroupCounts, StatusCounts, read_rows

    store = open_store(url)
    now = system_clock()
    stale = SessionFilter(stale_before=now - timedelta(seconds=300))
    paused = SessionFilter(statuses=("paused",))
    figures: list[Figure] = []
    try:
        for grouping in GROUP_COLUMNS:
            order = SessionOrder(grouping)
            name = f"by {grouping}"

            def page(filters: Any = None, order: Any = order) -> None:
                with store.read() as db:
                    assert list_sessions(db=db, filters=filters, order=order, limit=50).items

            def end(order: Any = order) -> None:
                with store.read() as db:
                    assert list_sessions_before(db=db, order=order, limit=50).items

            def sizes(grouping: str = grouping) -> list[Any]:
                with store.read() as db:
                    return read_group_sizes(db=db, grouping=grouping)

            keys = [key for key, _size in sizes()][:20]

            def in_view(grouping: str = grouping, keys: Any = keys) -> None:
                with store.read() as db:
                    assert read_status_by_group(db=db, grouping=grouping, keys=keys)

            def middle(grouping: str = grouping, order: Any = order) -> None:
                from roundtable_console.store.window.layout import Groups

                groups = Groups.from_sizes(sizes(grouping))
                place = Layout(groups, frozenset()).length // 2
                read = Read("at", place, 150, 0, 0)
                asked = RowsAsked(read, SessionFilter(), order.at(now), now, grouping=grouping)
                found = read_rows(
                    store=store, asked=asked, counts=StatusCounts(), groups=GroupCounts()
                )
                assert found.rows  # type: ignore[union-attr]

            for what, action in (
                ("first page", page),
                ("stale filter", lambda page=page: page(stale)),
                ("status filter", lambda page=page: page(paused)),
                ("last page, End", end),
                ("groups' sizes", sizes),
                ("counts of 20 groups in view", in_view),
                ("rows at the middle place", middle),
            ):
                seconds = median_seconds(action, repeats)
                figures.append(read_figure(f"{name}, {what} ({label})", seconds))
    finally:
        store.dispose()
    return figures


# -------------------------------------------------------- issue 12 point 4: a CLI page


CLI_LIST_LIMIT = 1.3


def bench_cli_list(big: tuple[str, str], small: tuple[str, str], repeats: int) -> list[Figure]:
    """``roundtable sessions list --limit 50`` as a whole process on the big store, against the
    same on a store of 10 sessions (issue 12 point 4: a page costs the page, whatever the size)."""
    env = compiled_env(Path(tempfile.gettempdir()) / "rt-bench-pycache")

    def listing(url: str) -> list[str]:
        return [*roundtable_command(), "sessions", "list", "--limit", "50", "--db", url]

    for store in (big, small):
        run_process(listing(store[1]), env)  # bytecode written, the store's pages cached
    ours, floor = paired_medians(
        lambda: run_process(listing(big[1]), env),
        lambda: run_process(listing(small[1]), env),
        repeats,
    )
    return [
        Figure(
            f"cli sessions list --limit 50 ({big[0]})",
            ours,
            f"the same, {small[0]}",
            floor,
            CLI_LIST_LIMIT,
        )
    ]
