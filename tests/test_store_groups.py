"""The grouped list in the store (issue 9 point 6): the workspace and run orders, places inside a
group, the counts by group the triggers keep, the counts under a filter, folded groups and a
group's mark. Every test runs on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import delete, insert, text, update

from roundtable_console.store.clock import fixed_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.session_rows import SESSIONS
from roundtable_console.store.reads.groups import (
    GroupKey,
    count_groups,
    fold_condition,
    folded_rows,
    group_condition,
    group_keys,
    read_group_counts,
    read_group_sizes,
    read_status_by_group,
)
from roundtable_console.store.reads.listing import (
    FilterSelection,
    Selection,
    SessionFilter,
    SessionOrder,
    group_filter,
    session_cursor,
)
from roundtable_console.store.reads.matching import filter_admits
from roundtable_console.store.reads.places import sessions_at, sessions_in_group
from roundtable_console.store.reads.sessions import (
    count_selected,
    list_sessions,
    list_sessions_before,
)
from roundtable_console.store.writes import agent_writes, lifecycle
from roundtable_console.store.writes.transfer import export_records, import_records
from tests.helpers import register_session
from tests.test_store_windows import _plan, _statements

START = datetime(2026, 9, 17, 12, 0, tzinfo=UTC)
GROUPINGS = ("agent", "run", "workspace")

# id, agent, run, status, workspace column, metadata, minutes after START: a workspace from the
# column, from the metadata, from neither (the sessions without one), an empty one, ties in time.
ROWS: list[tuple[str, str, str, str, str | None, str | None, int]] = [
    ("s01", "ada", "run-b", "active", "ws-b", None, 5),
    ("s02", "grace", "run-a", "paused", None, json.dumps({"workspace_id": "ws-a"}), 1),
    ("s03", "ada", "run-a", "ended", None, None, 3),
    ("s04", "linus", "run-c", "active", "ws-a", None, 3),
    ("s05", "grace", "run-b", "running", None, json.dumps({"other": 1}), 0),
    ("s06", "ada", "run-c", "paused", "ws-b", None, 9),
    ("s07", "knuth", "run-a", "active", "", None, 2),
    ("s08", "linus", "run-b", "stopped", None, "not json", 7),
    ("s09", "grace", "run-c", "active", "ws-a", None, 3),
    ("s10", "ada", "run-a", "active", None, json.dumps({"workspace_id": "ws-b"}), 6),
    ("s11", "knuth", "run-b", "ended", "ws-c", None, 4),
    ("s12", "hopper", "run-c", "active", None, None, 8),
]


def seed(store: Store) -> None:
    with store.write() as db:
        for session_id, agent, run, status, workspace, metadata, minutes in ROWS:
            register_session(
                db,
                session_id,
                agent_id=agent,
                run_id=run,
                status=status,
                clock=fixed_clock(START + timedelta(minutes=minutes)),
            )
            db.execute(
                update(SESSIONS)
                .where(SESSIONS.c.id == session_id)
                .values(workspace_id=workspace, metadata_json=metadata)
            )


def workspace_of(row: tuple[Any, ...]) -> GroupKey:
    """The effective workspace as the product defines it: the column, else the metadata's."""
    workspace, metadata = row[4], row[5]
    if workspace is not None:
        return str(workspace)
    try:
        found = json.loads(metadata) if metadata else None
    except ValueError:
        return None
    return found.get("workspace_id") if isinstance(found, dict) else None


def key_of(grouping: str, row: tuple[Any, ...]) -> GroupKey:
    return (
        {"agent": row[1], "run": row[2]}.get(grouping)
        if grouping != "workspace"
        else (workspace_of(row))
    )


def expected(
    grouping: str, descending: bool = False, keep: Callable[[Any], bool] = lambda row: True
) -> list[str]:
    """The grouped order in Python: the group (no workspace first), then start, then id."""

    def sort_key(row: tuple[Any, ...]) -> Any:
        key = key_of(grouping, row)
        return (key is not None, key or "", row[6], row[0])

    ids = [row[0] for row in sorted((row for row in ROWS if keep(row)), key=sort_key)]
    return ids[::-1] if descending else ids


def expected_groups(grouping: str, keep: Callable[[Any], bool] = lambda row: True) -> Any:
    found: dict[GroupKey, dict[str, int]] = {}
    for row in sorted(
        (row for row in ROWS if keep(row)),
        key=lambda row: (key_of(grouping, row) is not None, key_of(grouping, row) or ""),
    ):
        counts = found.setdefault(key_of(grouping, row), {})
        counts[row[3]] = counts.get(row[3], 0) + 1
    return list(found.items())


ORDERS = [SessionOrder(grouping, descending) for grouping in GROUPINGS for descending in (0, 1)]


@pytest.mark.parametrize("order", ORDERS, ids=str)
def test_grouped_orders_page_both_ways_as_the_model_says(store: Store, order: SessionOrder) -> None:
    seed(store)
    want = expected(order.column, order.descending)
    for size in (1, 2, 5):
        pages, cursor = [], None
        for _ in range(20):
            with store.read() as db:
                page = list_sessions(db=db, order=order, limit=size, cursor=cursor)
            pages += [s.id for s in page.items]
            cursor = page.next_cursor
            if cursor is None:
                break
        assert pages == want, size
        back, cursor = [], None
        for _ in range(20):
            with store.read() as db:
                page = list_sessions_before(db=db, order=order, limit=size, cursor=cursor)
            back = [s.id for s in page.items] + back
            cursor = page.next_cursor
            if cursor is None:
                break
        assert back == want, size
    with store.read() as db:
        for offset in range(len(want) + 1):
            rows = sessions_at(db=db, order=order, offset=offset, limit=3)
            assert [s.id for s in rows] == want[offset : offset + 3], offset
            ends = sessions_at(db=db, order=order, offset=offset, limit=3, total=len(want))
            assert [s.id for s in ends] == want[offset : offset + 3], offset


@pytest.mark.parametrize("order", ORDERS, ids=str)
def test_a_place_inside_a_group_reads_from_there_into_the_next_groups(
    store: Store, order: SessionOrder
) -> None:
    seed(store)
    want = expected(order.column, order.descending)
    groups = expected_groups(order.column)
    if order.descending:
        groups.reverse()
    start = 0
    with store.read() as db:
        for key, counts in groups:
            size = sum(counts.values())
            for offset in range(size + 1):
                for known in (None, size):
                    rows = sessions_in_group(
                        db=db,
                        group=group_condition(order.column, key),
                        offset=offset,
                        limit=4,
                        order=order,
                        size=known,
                    )
                    place = start + offset
                    wanted = want[place : place + 4] if offset < size else []
                    assert [s.id for s in rows] == wanted, (key, offset, known)
            start += size


@pytest.mark.parametrize("grouping", GROUPINGS)
def test_the_counts_by_group_are_read_from_the_table_and_agree_with_a_count(
    store: Store, grouping: str
) -> None:
    seed(store)
    with store.read() as db:
        kept = read_group_counts(db=db, grouping=grouping)
        counted = count_groups(db=db, grouping=grouping, filters=SessionFilter())
        paused = count_groups(db=db, grouping=grouping, filters=SessionFilter(text="a"))
    assert kept == counted == expected_groups(grouping)
    with store.read() as db:
        sizes = read_group_sizes(db=db, grouping=grouping)
        live = read_group_sizes(db=db, grouping=grouping, statuses=("active", "paused"))
        keys = [key for key, _ in kept]
        by_group = read_status_by_group(db=db, grouping=grouping, keys=[keys[0], keys[-1], "x"])
        only_paused = read_status_by_group(db=db, grouping=grouping, keys=keys, statuses=["paused"])
    assert sizes == [(key, sum(counts.values())) for key, counts in kept]
    assert live == [
        (key, n) for key, counts in kept if (n := counts.get("active", 0) + counts.get("paused", 0))
    ]
    assert by_group == {keys[0]: kept[0][1], keys[-1]: kept[-1][1], "x": {}}
    assert only_paused == {
        key: ({"paused": counts["paused"]} if "paused" in counts else {}) for key, counts in kept
    }
    assert paused == expected_groups(grouping, lambda row: any("a" in str(v) for v in row[:4]))
    if grouping == "workspace":
        # The sessions without a workspace come first; an empty workspace is a group of its own.
        assert [key for key, _ in kept] == [None, "", "ws-a", "ws-b", "ws-c"]


def kept_counts(store: Store, grouping: str) -> list[tuple[GroupKey, dict[str, int]]]:
    with store.read() as db:
        return read_group_counts(db=db, grouping=grouping)


def counted(store: Store, grouping: str) -> list[tuple[GroupKey, dict[str, int]]]:
    with store.read() as db:
        return count_groups(db=db, grouping=grouping, filters=SessionFilter())


def test_the_counts_by_group_follow_every_write(store: Store) -> None:
    seed(store)
    with store.write() as db:
        lifecycle.pause(db=db, session_id="s01", actor="op")
        lifecycle.stop(db=db, session_id="s04", actor="op")
        agent_writes.end(db=db, session_id="s09")
        agent_writes.heartbeat(db=db, session_id="s12")  # changes no count
        agent_writes.heartbeat(db=db, session_id="s07", status="running")
        # Registered again: another agent, run and workspace (metadata replaced).
        register_session(
            db, "s02", agent_id="turing", run_id="run-z", metadata={"workspace_id": "ws-z"}
        )
        register_session(db, "s13", agent_id="ada", run_id="run-a")
        # A writer that knows nothing of the table: raw SQL.
        db.execute(
            text(
                "UPDATE agent_sessions SET workspace_id = 'ws-q', status = 'done' WHERE id = 's05'"
            )
        )
        db.execute(text("UPDATE agent_sessions SET metadata_json = NULL WHERE id = 's10'"))
        db.execute(delete(SESSIONS).where(SESSIONS.c.id == "s11"))
        db.execute(
            insert(SESSIONS).values(
                id="s14",
                agent_id="ada",
                run_id="run-b",
                adapter="codex",
                working_directory="/w",
                status="failed",
                started_at="2026-09-17 12:30:00",
                metadata_json=json.dumps({"workspace_id": "ws-m"}),
            )
        )
    for grouping in GROUPINGS:
        assert kept_counts(store, grouping) == counted(store, grouping), grouping
    assert ("ws-z", {"active": 1}) in kept_counts(store, "workspace")
    assert ("ws-c", {}) not in kept_counts(store, "workspace")  # a group with none left is gone


def test_an_import_counts_its_groups_too(store: Store, empty_store: Store) -> None:
    seed(store)
    with store.write() as db:  # an import takes JSON metadata only
        db.execute(text("UPDATE agent_sessions SET metadata_json = NULL WHERE id = 's08'"))
    lines: list[str] = []
    with store.read() as db:
        export_records(db=db, write=lines.append)
    with empty_store.write() as db:
        import_records(db=db, lines=lines)
    for grouping in GROUPINGS:
        assert kept_counts(empty_store, grouping) == kept_counts(store, grouping)


def test_group_keys_are_read_as_the_index_holds_them(store: Store) -> None:
    seed(store)
    with store.read() as db:
        rows = list_sessions(db=db, order=SessionOrder("workspace"), limit=50).items
        keys = group_keys(db=db, grouping="workspace", sessions=rows)
        agents = group_keys(db=db, grouping="agent", sessions=rows)
    by_id = {row[0]: row for row in ROWS}
    assert keys == [workspace_of(by_id[s.id]) for s in rows]
    assert agents == [s.agent_id for s in rows]


@pytest.mark.parametrize("order", ORDERS, ids=str)
def test_a_folded_group_keeps_one_row_in_the_list(store: Store, order: SessionOrder) -> None:
    seed(store)
    grouping = order.column
    keys = [key for key, _ in expected_groups(grouping)]
    folded = {keys[0], keys[2], "nobody"}
    filters = SessionFilter(statuses=("active", "paused", "ended", "stopped"))

    def shown(row: tuple[Any, ...]) -> bool:
        return row[3] in filters.statuses

    kept_ids: dict[GroupKey, str] = {}
    for session_id in expected(grouping, keep=shown):
        row = next(row for row in ROWS if row[0] == session_id)
        kept_ids.setdefault(key_of(grouping, row), session_id)
    with store.read() as db:
        kept = folded_rows(db=db, grouping=grouping, folded=folded, filters=filters, order=order)
        assert kept == {key: kept_ids[key] for key in folded if key in kept_ids}
        condition = fold_condition(grouping, folded, kept)
        assert condition is not None
        ids = []
        page = list_sessions(db=db, order=order, filters=filters, limit=2, extra=[condition])
        ids += [s.id for s in page.items]
        while page.next_cursor is not None:
            page = list_sessions(
                db=db,
                order=order,
                filters=filters,
                limit=2,
                extra=[condition],
                cursor=page.next_cursor,
            )
            ids += [s.id for s in page.items]
        at = sessions_at(db=db, order=order, filters=filters, offset=1, limit=50, extra=[condition])
    want = [
        session_id
        for session_id in expected(grouping, order.descending, shown)
        if key_of(grouping, next(r for r in ROWS if r[0] == session_id)) not in folded
        or session_id in kept.values()
    ]
    assert ids == want
    assert [s.id for s in at] == want[1:]
    assert fold_condition(grouping, set(), {}) is None


@pytest.mark.parametrize("grouping", GROUPINGS)
def test_a_group_mark_is_the_filter_and_the_group(store: Store, grouping: str) -> None:
    seed(store)
    filters = SessionFilter(statuses=("active",))
    for key, _counts in expected_groups(grouping):
        chosen = group_filter(filters, grouping, key)
        want = {row[0] for row in ROWS if row[3] == "active" and key_of(grouping, row) == key}
        with store.read() as db:
            selection = Selection(by_filter=(FilterSelection(chosen),))
            assert count_selected(db=db, selection=selection) == len(want), key
            rows = list_sessions(db=db, filters=chosen, limit=50).items
        assert {s.id for s in rows} == want, key
        for session in rows:
            assert filter_admits(chosen, session) in (True, None), session.id


@pytest.mark.parametrize(
    ("order", "index"),
    [
        (SessionOrder("run"), "ix_agent_sessions_run"),
        (SessionOrder("run", True), "ix_agent_sessions_run"),
        (SessionOrder("workspace"), "ix_agent_sessions_workspace"),
        (SessionOrder("workspace", True), "ix_agent_sessions_workspace"),
    ],
)
def test_grouped_pages_and_places_follow_their_index_without_sorting(
    store: Store, order: SessionOrder, index: str
) -> None:
    seed(store)
    with store.read() as db:
        middle = list_sessions(db=db, order=order, limit=5).items[-1]
    cursor = session_cursor(middle, order)
    key = "ws-a" if order.column == "workspace" else "run-b"
    reads: list[tuple[Any, dict[str, Any]]] = [
        (list_sessions, {"limit": 2, "cursor": cursor}),
        (list_sessions_before, {"limit": 2, "cursor": cursor}),
        (sessions_at, {"offset": 7, "limit": 2}),
        (sessions_in_group, {"group": group_condition(order.column, key), "offset": 1}),
    ]
    if order.column == "workspace":
        reads.append(
            (sessions_in_group, {"group": group_condition("workspace", None), "offset": 1})
        )
    for read, arguments in reads:
        statements = _statements(store, read, order=order, **arguments)
        assert statements
        for statement, parameters in statements:
            if "agent_sessions.id = " in statement:
                continue  # a row read by its id
            plan = _plan(store, statement, parameters)
            assert index in plan, (read, plan)
            assert "TEMP B-TREE" not in plan and "Sort" not in plan, (read, plan)


def test_postgres_workspace_key_is_stored_and_follows_every_write(pg_store: Store) -> None:
    with pg_store.write() as db:
        register_session(db, "s1", metadata={"workspace_id": "ws-1"})
        register_session(db, "s2")
        db.execute(text("UPDATE agent_sessions SET workspace_id = 'ws-2' WHERE id = 's2'"))
    with pg_store.read() as db:
        rows = dict(db.execute(text("SELECT id, rt_workspace FROM agent_sessions")).all())
    assert rows == {"s1": "ws-1", "s2": "ws-2"}
