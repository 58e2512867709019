"""How a session list is read in keyset pages: the filters as SQL conditions, the order's
segments and keys, and the rows after a position, each statement cut in SQL with LIMIT and
backed by an index."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, func, literal, or_, select, type_coerce
from sqlalchemy.sql.elements import ColumnElement

from roundtable_console.store import validation
from roundtable_console.store.clock import format_ts
from roundtable_console.store.db.models import AgentSession, SessionStatusCount
from roundtable_console.store.db.session_rows import SESSIONS, session_from_row
from roundtable_console.store.errors import InvalidCursor
from roundtable_console.store.reads.listing import (
    ATTENTION_KEY,
    ATTENTION_SEGMENTS,
    ATTENTION_TIER,
    DEFAULT_ORDER,
    NULLABLE_LEAD,
    ORDER_KEYS,
    TEXT_COLUMNS,
    AttentionSegment,
    SessionFilter,
    SessionOrder,
    SortKey,
    attention_segment_keys,
    attention_segments,
    cursor_columns,
    cursor_kind,
)
from roundtable_console.store.reads.paging import decode_cursor
from roundtable_console.store.reads.sqlfuncs import (
    COMPUTED_KEYS,
    ascii_case,
    effective_workspace,
    not_indexed,
    ts_key,
)
from roundtable_console.store.rules import ACTIVE_STATES

_COUNTS = SessionStatusCount.__table__  # type: ignore[attr-defined]
_C = SESSIONS.c


def filter_conditions(
    filters: SessionFilter, *, status_index: bool = True
) -> list[ColumnElement[bool]]:
    """The filter as SQL conditions, each backed by an index where one applies; without
    ``status_index``, SQLite does not look the statuses up by their index (``status_index``)."""
    found: list[ColumnElement[bool]] = []
    status = _C.status if status_index else not_indexed(_C.status)
    if filters.statuses:
        found.append(status.in_(filters.statuses))
    if filters.agent_id is not None:
        found.append(_C.agent_id == filters.agent_id)
    if filters.run_id is not None:
        found.append(_C.run_id == filters.run_id)
    if filters.host is not None:
        found.append(_C.host == filters.host)
    if filters.workspace_id is not None:
        found.append(effective_workspace() == filters.workspace_id)
    if filters.without_workspace:
        found.append(effective_workspace().is_(None))
    if filters.active_only or filters.stale_before is not None or filters.waiting:
        found.append(status.in_(ACTIVE_STATES))
    if filters.waiting:
        found.append(_C.waiting_since.is_not(None))
    if filters.stale_before is not None:
        seen = func.coalesce(ts_key(_C.last_seen_at), ts_key(_C.started_at))
        found.append(seen < ts_key(literal(format_ts(filters.stale_before))))
    if filters.text and filters.text.strip():
        needle = filters.text.strip()
        found.append(
            or_(*(ascii_case(_C[name]).icontains(needle, autoescape=True) for name in TEXT_COLUMNS))
        )
    return found


# Orders whose index SQLite would leave for the status index under a status filter, and then
# sort every session of those statuses to read a page (``status_index``).
_OWN_INDEX_ORDERS = frozenset({"agent", "run", "workspace", "last_seen"})


def status_index(
    db: Connection, filters: SessionFilter | None, order: SessionOrder, reach: int
) -> bool:
    """Whether SQLite may find the sessions of a status filter by the status index. That index
    is not in the order of most lists: it finds the filter's every session, then sorts them.
    Walking the order's own index instead reaches ``reach`` sessions in ``reach / density``
    steps. From the counts by status (a few rows), the cheaper: the status index when the
    filter's sessions number fewer than about ``sqrt(reach * sessions)``. PostgreSQL weighs
    this itself, from its statistics."""
    if db.dialect.name == "postgresql" or order.column not in _OWN_INDEX_ORDERS or not filters:
        return True
    statuses: set[str] | None = set(filters.statuses) if filters.statuses else None
    if filters.active_only or filters.stale_before is not None or filters.waiting:
        statuses = set(ACTIVE_STATES) if statuses is None else statuses & set(ACTIVE_STATES)
    if statuses is None:
        return True  # no status condition
    counts = count_by_status(db=db)
    matching = sum(counts.get(status, 0) for status in statuses)
    return matching * matching <= max(reach, 1) * sum(counts.values())


# Where a key reads its columns from: the table's, or a cursor's values as literals.
Source = Mapping[str, ColumnElement[Any]]


def key_expr(key: SortKey, source: Source = _C) -> ColumnElement[Any]:
    if key.sources:
        return COMPUTED_KEYS[key.column](*(source[column] for column in key.sources))
    column = source[key.column]
    return ts_key(column) if key.timestamp else column


@dataclass(frozen=True)
class Segment:
    condition: ColumnElement[bool] | None
    keys: tuple[SortKey, ...]
    # The order's leading key, NULL throughout this segment: PostgreSQL follows the order's
    # index for the segment only when asked to sort by it too (it holds IS NULL as no equality).
    null_lead: SortKey | None = None


# A segment the filter leaves empty: nothing is read from it; it keeps the other segments'
# places (a cursor names its segment by place).
SKIPPED = Segment(None, ())


def order_segments(order: SessionOrder, filters: SessionFilter | None = None) -> list[Segment]:
    """The order's segments, ascending, each read apart: for ``last_seen`` NULL leading keys
    first, then the rest; for ``attention`` the segments of ``ATTENTION_SEGMENTS`` that may
    hold a session ``filters`` lets through."""
    keys = ORDER_KEYS[order.column]
    if order.column == "attention":
        wanted = attention_segments(filters or SessionFilter(), order.stale_before)
        return [
            Segment(
                attention_condition(segment, order, in_order=True),
                attention_segment_keys(segment),
            )
            if segment in wanted
            else SKIPPED
            for segment in ATTENTION_SEGMENTS
        ]
    if order.column not in NULLABLE_LEAD:
        return [Segment(None, keys)]
    lead = key_expr(keys[0])
    return [Segment(lead.is_(None), keys[1:], keys[0]), Segment(lead.is_not(None), keys)]


def _stale_bound(order: SessionOrder) -> ColumnElement[Any]:
    if order.stale_before is None:
        raise ValueError("The attention order is read at a time: use order.at(stale_before).")
    return ts_key(literal(format_ts(order.stale_before)))


def attention_condition(
    segment: AttentionSegment, order: SessionOrder, source: Source = _C, *, in_order: bool = False
) -> ColumnElement[bool]:
    """The rows of one segment of the attention order. ``in_order``: for reading the segment in
    its own order. The fresh segment goes by start: SQLite is then not to find its rows by a
    range of the time they were seen (the attention index), which it would have to sort, but
    to walk the start index of migration 0011 and check that time as it goes."""
    tier = key_expr(ATTENTION_TIER, source) == segment.tier
    if segment.stale is None:
        return tier
    seen = key_expr(ATTENTION_KEY, source)
    if in_order and segment.fresh:
        seen = type_coerce(not_indexed(seen), seen.type)
    return and_(tier, seen < _stale_bound(order) if segment.stale else seen >= _stale_bound(order))


def _position(
    db: Connection, order: SessionOrder, cursor: str
) -> tuple[int, list[ColumnElement[Any]]]:
    """(segment index, the bounds of the segment's keys) of a cursor; invalid_cursor if it is
    not one this list issued."""
    columns = cursor_columns(order)
    values = decode_cursor(cursor_kind(order), cursor, len(columns))
    nullable = {"last_seen_at"} if order.column in NULLABLE_LEAD else set()
    if order.column == "attention":
        nullable = {"waiting_since", "last_seen_at"}
    if order.column == "workspace":
        nullable = {"workspace_id", "metadata_json"}
    for column, value in zip(columns, values, strict=True):
        if not isinstance(value, str) and not (column in nullable and value is None):
            raise InvalidCursor("That cursor is not one this store issued.")
    source = {
        column: literal(value, _C[column].type)
        for column, value in zip(columns, values, strict=True)
    }
    segments = order_segments(order)
    if len(segments) == 1:
        return 0, [key_expr(key, source) for key in segments[0].keys]
    if order.column == "attention":
        # The database places the cursor's row in its segment, with the keys it sorts by.
        found = db.execute(
            select(*(attention_condition(segment, order, source) for segment in ATTENTION_SEGMENTS))
        ).one()
        index = next(index for index, inside in enumerate(found) if inside)
    else:
        # The database decides which text it cannot read as a time, exactly as it sorted it.
        lead = key_expr(ORDER_KEYS[order.column][0], source)
        index = 0 if db.execute(select(lead.is_(None))).scalar() else 1
    return index, [key_expr(key, source) for key in segments[index].keys]


def _after(
    keys: tuple[SortKey, ...], bounds: list[ColumnElement[Any]], descending: bool
) -> ColumnElement[bool]:
    """Rows after the position in the order, as one condition whose leading part is a plain
    range on the index (a row-value comparison is not one on every dialect)."""
    head, bound = key_expr(keys[0]), bounds[0]
    beyond = head < bound if descending else head > bound
    if len(keys) == 1:
        return beyond
    reached = head <= bound if descending else head >= bound
    return and_(reached, or_(beyond, _after(keys[1:], bounds[1:], descending)))


@dataclass(frozen=True)
class _Tier:
    conditions: list[ColumnElement[bool]]
    # How many leading keys the conditions hold equal (the rows are sorted by the others).
    fixed: int = 0


def _tiers(
    keys: tuple[SortKey, ...], bounds: list[ColumnElement[Any]], descending: bool
) -> list[_Tier]:
    """The rows after a position, as consecutive index ranges read one after the other. With a
    leading key shared by many rows (a status), one condition would walk every row of that
    status before the position; an equality range and then a strict range each cost the page."""
    if len(keys) <= 2:
        return [_Tier([_after(keys, bounds, descending)])]
    head, bound = key_expr(keys[0]), bounds[0]
    same_head = [
        _Tier([head == bound, *tier.conditions], tier.fixed + 1)
        for tier in _tiers(keys[1:], bounds[1:], descending)
    ]
    return [*same_head, _Tier([head < bound if descending else head > bound])]


def sort_keys(db: Connection, keys: tuple[SortKey, ...], fixed: int) -> tuple[SortKey, ...]:
    """The keys to sort rows by when the first ``fixed`` are held equal: SQLite sorts a range
    of an index on an expression (the workspace) in a temporary tree when asked to sort by the
    expression it holds equal, and follows the index when not; PostgreSQL follows it either way
    (and, for a NULL key, only when asked to sort by it too)."""
    if db.dialect.name == "postgresql" or not any(key.sources for key in keys[:fixed]):
        return keys
    return keys[fixed:]


def read_rows(
    *,
    db: Connection,
    filters: SessionFilter | None,
    limit: int | None,
    cursor: str | None,
    order: SessionOrder | None,
    backwards: bool,
    extra: Sequence[ColumnElement[bool]] = (),
) -> tuple[list[AgentSession], bool]:
    """Up to ``limit`` rows from the cursor on, nearest first (away from it when ``backwards``),
    and whether more lie beyond them. Every statement is cut in SQL with LIMIT."""
    size = validation.limit(limit)
    order = order or DEFAULT_ORDER
    descending = order.descending != backwards
    indexed = status_index(db, filters, order, size)
    base = [*filter_conditions(filters or SessionFilter(), status_index=indexed), *extra]
    segments = list(enumerate(order_segments(order, filters)))
    if descending:
        segments.reverse()
    position = _position(db, order, cursor) if cursor else None
    rows: list[Any] = []
    for index, segment in segments:
        if position is not None and index != position[0]:
            continue  # a segment before the cursor's
        bounds = position[1] if position is not None else None
        position = None  # the segments after the cursor's are read from their start
        if segment is SKIPPED:
            continue
        where = [*base, *([segment.condition] if segment.condition is not None else [])]
        tiers = _tiers(segment.keys, bounds, descending) if bounds is not None else [_Tier([])]
        for tier in tiers:
            wanted = size + 1 - len(rows)
            if wanted <= 0:
                break
            keys = sort_keys(db, segment.keys, tier.fixed)
            if segment.null_lead is not None and db.dialect.name == "postgresql":
                keys = (segment.null_lead, *keys)
            sort = [key_expr(key).desc() if descending else key_expr(key) for key in keys]
            statement = (
                select(SESSIONS).where(*where, *tier.conditions).order_by(*sort).limit(wanted)
            )
            rows.extend(db.execute(statement).all())
    return [session_from_row(row) for row in rows[:size]], len(rows) > size


def count_rows(db: Connection, where: list[ColumnElement[bool]]) -> int:
    return int(db.execute(select(func.count()).select_from(SESSIONS).where(*where)).scalar_one())


def count_by_status(*, db: Connection) -> dict[str, int]:
    """Sessions per status, from the table the triggers of migration 0004 keep: a few rows,
    however many sessions there are."""
    rows = db.execute(
        select(_COUNTS.c.status, _COUNTS.c.sessions).where(_COUNTS.c.sessions > 0)
    ).all()
    return {str(status): int(count) for status, count in rows}
