"""The console's list grouped by workspace, run or agent, in SQL (``store.rules.GROUP_COLUMNS``).

A grouped list is read in its grouping's order (``SessionOrder("agent")``: the agent, then start,
then id), along that grouping's index, in keyset pages as any list is. What grouping adds:

- the groups under a filter, in the list's order, with their sessions by status: from the
  ``session_group_counts`` table the triggers of migration 0008 keep (a few rows per group,
  however many sessions), or counted over the sessions for a filter that table cannot answer (a
  text or stale filter: a scan, read apart as the list's length is);
- a group's key for rows in hand, as SQL reads it (a workspace comes from the metadata too);
- folded groups: a folded group keeps one row in the list, its first, which stands for its
  header (``fold_condition``), so paging, places and counts stay in SQL.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import Connection, and_, func, or_, select, true
from sqlalchemy.sql.elements import ColumnElement

from roundtable_console.store.db.models import AgentSession, SessionGroupCount
from roundtable_console.store.reads.keyset import filter_conditions
from roundtable_console.store.reads.listing import SessionFilter, SessionOrder
from roundtable_console.store.reads.places import first_in_group
from roundtable_console.store.reads.sqlfuncs import effective_workspace, not_indexed
from roundtable_console.store.records import SessionFields

GroupKey = str | None
# A group's sessions by status.
StatusCounts = dict[str, int]

_SESSIONS = AgentSession.__table__  # type: ignore[attr-defined]
_COUNTS = SessionGroupCount.__table__  # type: ignore[attr-defined]
# Ids per statement when many are looked up.
_ID_CHUNK = 500


def group_expr(grouping: str) -> ColumnElement[Any]:
    """A session's group in SQL, as the grouping's index holds it."""
    if grouping == "workspace":
        return effective_workspace()
    return {"agent": _SESSIONS.c.agent_id, "run": _SESSIONS.c.run_id}[grouping]


def group_condition(grouping: str, key: GroupKey) -> ColumnElement[bool]:
    """The rows of one group (``None``: the sessions without a workspace)."""
    expression = group_expr(grouping)
    return expression.is_(None) if key is None else expression == key


def read_group_sizes(
    *, db: Connection, grouping: str, statuses: Iterable[str] | None = None
) -> list[tuple[GroupKey, int]]:
    """Every group with sessions (of ``statuses``, when given) and how many, in ascending order
    (the sessions without a workspace first), from the table the triggers keep: a row a group."""
    wanted = [_COUNTS.c.grouping == grouping, _COUNTS.c.sessions > 0]
    if statuses is not None:
        wanted.append(_COUNTS.c.status.in_(sorted(statuses)))
    total = func.sum(_COUNTS.c.sessions)
    rows = db.execute(
        select(_COUNTS.c.keyed, _COUNTS.c.group_key, total)
        .where(*wanted)
        .group_by(_COUNTS.c.keyed, _COUNTS.c.group_key)
        .having(total > 0)
        .order_by(_COUNTS.c.keyed, _COUNTS.c.group_key)
    ).all()
    return [(key if keyed else None, int(count)) for keyed, key, count in rows]


def read_status_by_group(
    *,
    db: Connection,
    grouping: str,
    keys: Iterable[GroupKey],
    statuses: Iterable[str] | None = None,
) -> dict[GroupKey, StatusCounts]:
    """The sessions by status (of ``statuses``, when given) of the groups ``keys``: what their
    headers show, for the groups in view."""
    wanted = set(keys)
    named = sorted(key for key in wanted if key is not None)
    found: dict[GroupKey, StatusCounts] = {key: {} for key in wanted}
    if not wanted:
        return found
    which = []
    if named:
        which.append(and_(_COUNTS.c.keyed == 1, _COUNTS.c.group_key.in_(named)))
    if None in wanted:
        which.append(_COUNTS.c.keyed == 0)
    conditions = [_COUNTS.c.grouping == grouping, _COUNTS.c.sessions > 0, or_(*which)]
    if statuses is not None:
        conditions.append(_COUNTS.c.status.in_(sorted(statuses)))
    rows = db.execute(
        select(_COUNTS.c.keyed, _COUNTS.c.group_key, _COUNTS.c.status, _COUNTS.c.sessions).where(
            *conditions
        )
    )
    for keyed, key, status, count in rows:
        found[key if keyed else None][str(status)] = int(count)
    return found


def read_group_counts(*, db: Connection, grouping: str) -> list[tuple[GroupKey, StatusCounts]]:
    """Every group with sessions and its sessions by status, in ascending order (the sessions
    without a workspace first), from the table the triggers keep: the whole table's view of a
    grouping (the console reads ``read_group_sizes`` and, for the groups in view,
    ``read_status_by_group``)."""
    rows = db.execute(
        select(_COUNTS.c.keyed, _COUNTS.c.group_key, _COUNTS.c.status, _COUNTS.c.sessions)
        .where(_COUNTS.c.grouping == grouping, _COUNTS.c.sessions > 0)
        .order_by(_COUNTS.c.keyed, _COUNTS.c.group_key, _COUNTS.c.status)
    ).all()
    return _gathered((key if keyed else None, status, count) for keyed, key, status, count in rows)


def count_groups(
    *, db: Connection, grouping: str, filters: SessionFilter
) -> list[tuple[GroupKey, StatusCounts]]:
    """The groups with sessions ``filters`` lets through, and those sessions by status, in
    ascending order, counted over the sessions (for the filters the table cannot answer)."""
    # Not by the grouping's index (SQLite would walk it, reading each row from the table out of
    # order): the filter reads every row anyway, in the table's order, and few are grouped.
    expression = not_indexed(group_expr(grouping))
    rows = db.execute(
        select(expression, _SESSIONS.c.status, func.count())
        .where(*filter_conditions(filters))
        .group_by(expression, _SESSIONS.c.status)
        .order_by(expression.asc().nulls_first(), _SESSIONS.c.status)
    ).all()
    return _gathered((key, status, count) for key, status, count in rows)


def _gathered(rows: Iterable[tuple[Any, Any, Any]]) -> list[tuple[GroupKey, StatusCounts]]:
    found: list[tuple[GroupKey, StatusCounts]] = []
    for key, status, count in rows:
        group = None if key is None else str(key)
        if not found or found[-1][0] != group:
            found.append((group, {}))
        found[-1][1][str(status)] = int(count)
    return found


def group_keys(
    *, db: Connection, grouping: str, sessions: Sequence[SessionFields]
) -> list[GroupKey]:
    """Each session's group as SQL reads it (an agent's and a run's are their columns; a
    workspace is read by the database, which decides the metadata's as the index holds it)."""
    if grouping != "workspace":
        column = "agent_id" if grouping == "agent" else "run_id"
        return [getattr(session, column) for session in sessions]
    wanted = sorted({session.id for session in sessions})
    found: dict[str, GroupKey] = {}
    for start in range(0, len(wanted), _ID_CHUNK):
        chunk = wanted[start : start + _ID_CHUNK]
        statement = select(_SESSIONS.c.id, effective_workspace()).where(_SESSIONS.c.id.in_(chunk))
        for session_id, key in db.execute(statement):
            found[str(session_id)] = None if key is None else str(key)
    return [found.get(session.id) for session in sessions]


def folded_rows(
    *,
    db: Connection,
    grouping: str,
    folded: Iterable[GroupKey],
    filters: SessionFilter,
    order: SessionOrder,
) -> dict[GroupKey, str]:
    """For each folded group that has sessions ``filters`` lets through, the id of the one it
    keeps in the list (its first in ascending order): an index seek per folded group."""
    ascending = replace(order, descending=False)
    found: dict[GroupKey, str] = {}
    for key in folded:
        session_id = first_in_group(
            db=db, group=group_condition(grouping, key), filters=filters, order=ascending
        )
        if session_id is not None:
            found[key] = session_id
    return found


def fold_condition(
    grouping: str, folded: Iterable[GroupKey], kept: dict[GroupKey, str]
) -> ColumnElement[bool] | None:
    """The rows a list with ``folded`` groups shows: every row outside them, and the one row
    each keeps (``folded_rows``). None when nothing is folded."""
    folded = set(folded)
    if not folded:
        return None
    expression = group_expr(grouping)
    named = sorted(key for key in folded if key is not None)
    outside = expression.not_in(named) if named else true()
    if None in folded:
        outside = and_(expression.is_not(None), outside)
    elif named:
        outside = or_(expression.is_(None), outside)
    if not kept:
        return outside
    return or_(outside, _SESSIONS.c.id.in_(sorted(kept.values())))
