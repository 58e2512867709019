"""A place anywhere in a session list, read directly: where a scrollbar's thumb was dragged
to, or a place inside one group of a grouped list. The row before the place is found by
walking the order's index (its ids alone), and the rows from there are a keyset page."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, select
from sqlalchemy.sql.elements import ColumnElement

from roundtable_console.store import validation
from roundtable_console.store.db.models import AgentSession
from roundtable_console.store.db.session_rows import SESSIONS
from roundtable_console.store.errors import InvalidCursor
from roundtable_console.store.reads.keyset import (
    SKIPPED,
    count_rows,
    filter_conditions,
    key_expr,
    order_segments,
    read_rows,
    sort_keys,
    status_index,
)
from roundtable_console.store.reads.listing import (
    DEFAULT_ORDER,
    ORDER_KEYS,
    SessionFilter,
    SessionOrder,
    session_cursor,
)
from roundtable_console.store.reads.sessions import get_session

_C = SESSIONS.c


def sessions_at(
    *,
    db: Connection,
    offset: int,
    limit: int | None = None,
    filters: SessionFilter | None = None,
    order: SessionOrder | None = None,
    total: int | None = None,
    extra: Sequence[ColumnElement[bool]] = (),
) -> list[AgentSession]:
    """The sessions at positions ``offset`` … ``offset + limit - 1`` of the list (0-based), in
    its order: where a scrollbar's thumb was dragged to. The row just before that place is
    found by walking the order's index (reading only its ids), and the rows from there are a
    keyset page. With ``total`` (the list's length) a place in the second half is reached from
    the end, so no read walks more than half the list."""
    size = validation.limit(limit)
    order = order or DEFAULT_ORDER
    if offset < 0:
        raise InvalidCursor("A position in the list is never negative.")
    filters = filters or SessionFilter()
    # The row just before the place, in the direction read: from the end in the second half.
    backwards = total is not None and offset > total // 2
    if total is not None and backwards:
        end = min(offset + size, total)
        if end <= offset:
            return []
        anchor_position, size = total - end - 1, end - offset
    else:
        anchor_position = offset - 1
    anchor = _id_at(db, filters, order, anchor_position, from_end=backwards, extra=extra)
    if anchor is None and anchor_position >= 0:
        return []  # the list is shorter than the place (or than ``total`` said)
    cursor = None
    if anchor is not None:
        cursor = session_cursor(get_session(db=db, session_id=anchor), order)
    items, _more = read_rows(
        db=db,
        filters=filters,
        limit=size,
        cursor=cursor,
        order=order,
        backwards=backwards,
        extra=extra,
    )
    if backwards:
        items.reverse()
    return items


def _id_at(
    db: Connection,
    filters: SessionFilter,
    order: SessionOrder,
    position: int,
    *,
    from_end: bool,
    extra: Sequence[ColumnElement[bool]] = (),
) -> str | None:
    """The id of the row at ``position`` (0-based) counted from the start of the list, or from
    its end with ``from_end``; None when the list is shorter (or ``position`` is negative)."""
    if position < 0:
        return None
    descending = order.descending != from_end
    segments = order_segments(order, filters)
    if descending:
        segments.reverse()
    indexed = status_index(db, filters, order, position + 1)
    base = [*filter_conditions(filters, status_index=indexed), *extra]
    for segment in segments:
        if segment is SKIPPED:
            continue
        where = [*base, *([segment.condition] if segment.condition is not None else [])]
        # The order's leading keys are held constant throughout a segment (NULL in the
        # never-seen one, the tier in the attention order's). PostgreSQL follows the segment's
        # index only when asked to sort by them too; SQLite only when not.
        keys = segment.keys
        if db.dialect.name == "postgresql":
            order_keys = ORDER_KEYS[order.column]
            keys = (*order_keys[: len(order_keys) - len(keys)], *keys)
        sort = [key_expr(key).desc() if descending else key_expr(key) for key in keys]
        statement = select(_C.id).where(*where).order_by(*sort).offset(position).limit(1)
        found = db.execute(statement).scalar_one_or_none()
        if found is not None:
            return str(found)
        # Beyond this segment: the rest of the way is counted in the next one.
        position -= count_rows(db, where)
    return None


def sessions_in_group(
    *,
    db: Connection,
    group: ColumnElement[bool],
    offset: int,
    limit: int | None = None,
    filters: SessionFilter | None = None,
    order: SessionOrder | None = None,
    size: int | None = None,
    extra: Sequence[ColumnElement[bool]] = (),
) -> list[AgentSession]:
    """Sessions of a grouped list (``order`` is the grouping's: the group, then start, then id)
    from the ``offset``-th (0-based) of one group on: that group's rows, then the next groups'.
    ``group`` holds for the group's rows alone (``store.reads.groups.group_condition``); with its
    ``size`` known, the place is reached from the group's nearer end, so no read walks more
    than half a group. Empty when the group is shorter than the place."""
    wanted = validation.limit(limit)
    order = order or DEFAULT_ORDER
    if offset < 0:
        raise InvalidCursor("A position in the list is never negative.")
    if size is not None and offset >= size:
        return []
    from_end = size is not None and offset > size // 2
    position = size - 1 - offset if from_end and size is not None else offset
    indexed = status_index(db, filters, order, position + 1)
    where = [*filter_conditions(filters or SessionFilter(), status_index=indexed), *extra, group]
    found = _id_in_group(db, where, order, position, from_end=from_end)
    if found is None:
        return []
    first = get_session(db=db, session_id=found)
    if wanted == 1:
        return [first]
    rest, _more = read_rows(
        db=db,
        filters=filters,
        limit=wanted - 1,
        cursor=session_cursor(first, order),
        order=order,
        backwards=False,
        extra=extra,
    )
    return [first, *rest]


def first_in_group(
    *,
    db: Connection,
    group: ColumnElement[bool],
    filters: SessionFilter | None = None,
    order: SessionOrder | None = None,
) -> str | None:
    """The id of the first session of one group of a grouped list (see ``sessions_in_group``),
    or None when the filters leave it none: one index seek."""
    order = order or DEFAULT_ORDER
    indexed = status_index(db, filters, order, 1)
    where = [*filter_conditions(filters or SessionFilter(), status_index=indexed), group]
    return _id_in_group(db, where, order, 0, from_end=False)


def _id_in_group(
    db: Connection,
    where: list[ColumnElement[bool]],
    order: SessionOrder,
    position: int,
    *,
    from_end: bool,
) -> str | None:
    descending = order.descending != from_end
    # The group is held equal: its rows in the order of the other keys.
    keys = sort_keys(db, ORDER_KEYS[order.column], 1)
    sort = [key_expr(key).desc() if descending else key_expr(key) for key in keys]
    statement = select(_C.id).where(*where).order_by(*sort).offset(position).limit(1)
    found = db.execute(statement).scalar_one_or_none()
    return None if found is None else str(found)
