"""Session operations agents and scripts use: register, heartbeat, end, and the reads.

Each write is one statement on the row plus its history row, in the caller's transaction
(``Store.write()``), so a success proves the history exists.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import (
    Connection,
    and_,
    bindparam,
    case,
    false,
    func,
    literal,
    or_,
    select,
    text,
    true,
    update,
)
from sqlalchemy.orm import configure_mappers
from sqlalchemy.orm.instrumentation import manager_of_class
from sqlalchemy.sql.elements import ColumnElement

from store import validation
from store.adapters import AdapterConfig
from store.clock import Clock, format_ts, system_clock
from store.errors import InvalidCursor, SessionNotFound
from store.history import Prepared, append_session_event
from store.listing import (
    ATTENTION_CAP,
    ATTENTION_KEY,
    ATTENTION_SEGMENTS,
    ATTENTION_TIER,
    DEFAULT_ORDER,
    LIVE_TIER,
    NEEDS_ATTENTION,
    NULLABLE_LEAD,
    ORDER_KEYS,
    TEXT_COLUMNS,
    AttentionSegment,
    Selection,
    SessionFilter,
    SessionOrder,
    SortKey,
    attention_segments,
    cursor_columns,
    cursor_kind,
    session_cursor,
)
from store.models import AgentSession, SessionStatusCount
from store.paging import Page, decode_cursor
from store.rules import ACTIVE_STATES
from store.sqlfuncs import COMPUTED_KEYS, ascii_case, effective_workspace, not_indexed, ts_key
from store.write_values import (
    end_values,
    heartbeat_values,
    register_values,
    registered_payload,
    update_payload,
)

SESSIONS = AgentSession.__table__  # type: ignore[attr-defined]
_COUNTS = SessionStatusCount.__table__  # type: ignore[attr-defined]
_C = SESSIONS.c


# Ids per statement when many are looked up (well within every dialect's parameter limit).
_ID_CHUNK = 500

_NEW_SESSION = manager_of_class(AgentSession).new_instance
_COLUMN_COUNT = len(SESSIONS.c)


def _record(row: Any) -> AgentSession:
    return _session(row._mapping)


def _session(values: Mapping[str, Any]) -> AgentSession:
    """A row's values as an AgentSession, built the way the ORM loads one (no ``__init__``, the
    values become its state): a tenth of the cost of ``AgentSession(**values)``, which matters
    on the heartbeat path and for every row of a list page."""
    if len(values) != _COLUMN_COUNT:
        return AgentSession(**values)
    configure_mappers()  # attribute access needs configured mappers; a no-op once they are
    session = _NEW_SESSION()
    session.__dict__.update(values)
    object.__setattr__(session, "__pydantic_fields_set__", set(values.keys()))
    return session


def register(
    *,
    db: Connection,
    session_id: str,
    agent_id: str,
    run_id: str,
    adapter: str,
    working_directory: str,
    provider: str | None = None,
    model: str | None = None,
    external_session_id: str | None = None,
    resume_command: str | None = None,
    mcp_socket: str | None = None,
    status: str | None = None,
    metadata: str | dict[str, Any] | None = None,
    adapters: Mapping[str, AdapterConfig] | None = None,
    clock: Clock = system_clock,
) -> AgentSession:
    """Upsert keyed by the caller's id: an existing session is replaced, not merged (ref)."""
    values = register_values(
        session_id=session_id,
        agent_id=agent_id,
        run_id=run_id,
        adapter=adapter,
        working_directory=working_directory,
        provider=provider,
        model=model,
        external_session_id=external_session_id,
        resume_command=resume_command,
        mcp_socket=mcp_socket,
        status=status,
        metadata=metadata,
        adapters=adapters,
    )
    now = format_ts(clock())
    replaced = {name: value for name, value in values.items() if name != "id"}
    replaced.update(last_seen_at=now, ended_at=None, waiting_reason=None, waiting_since=None)
    statement = _dialect_insert(db)(SESSIONS).values(
        **values, started_at=now, last_seen_at=now, ended_at=None, version=0
    )
    statement = statement.on_conflict_do_update(
        index_elements=[_C.id],
        set_={**replaced, "version": _C.version + 1},
    ).returning(*SESSIONS.c)
    session = _record(db.execute(statement).one())
    append_session_event(
        db,
        session_id=session.id,
        event_type="registered",
        payload=registered_payload(status=session.status, adapter=session.adapter),
        now=now,
    )
    return session


def _prebuilt_update(**values: Any) -> Prepared:
    """``UPDATE agent_sessions SET … WHERE id = :session_id RETURNING *``, built once at import:
    each call then only binds values (no statement construction, coercion or cache lookup)."""
    return Prepared(
        update(SESSIONS)
        .where(_C.id == bindparam("session_id"))
        .values(version=_C.version + 1, **values)
        .returning(*SESSIONS.c)
    )


# A NULL status or external session id keeps the stored one (ref: blank values change nothing).
# A waiting reason sets the wait (its time kept while the reason stays the same); none clears it.
_WAITING = bindparam("waiting", type_=_C.waiting_reason.type)
_HEARTBEAT = _prebuilt_update(
    status=func.coalesce(bindparam("status", type_=_C.status.type), _C.status),
    external_session_id=func.coalesce(
        bindparam("external_session_id", type_=_C.external_session_id.type),
        _C.external_session_id,
    ),
    last_seen_at=bindparam("now"),
    waiting_reason=_WAITING,
    waiting_since=case(
        (_WAITING.is_(None), None),
        (and_(_C.waiting_since.is_not(None), _C.waiting_reason == _WAITING), _C.waiting_since),
        else_=bindparam("now"),
    ),
)
_END = _prebuilt_update(
    status=bindparam("status"),
    ended_at=bindparam("now"),
    last_seen_at=bindparam("now"),
    waiting_reason=None,
    waiting_since=None,
)


def heartbeat(
    *,
    db: Connection,
    session_id: str,
    status: str | None = None,
    external_session_id: str | None = None,
    waiting: str | None = None,
    clock: Clock = system_clock,
) -> AgentSession:
    """An agent's heartbeat (ref): non-empty values replace, ``last_seen_at`` always moves,
    ``ended_at`` is never cleared. ``waiting`` (ours): the session waits for a human, for that
    reason; a heartbeat without it ends the wait."""
    values = heartbeat_values(
        session_id=session_id,
        status=status,
        external_session_id=external_session_id,
        waiting=waiting,
    )
    return _update_one(db, _HEARTBEAT, values, clock=clock, event=("heartbeat", "last_seen_at"))


def end(
    *,
    db: Connection,
    session_id: str,
    status: str | None = None,
    clock: Clock = system_clock,
) -> AgentSession:
    """End (ref): status = given value or ``ended``; end and last-seen times = now."""
    values = end_values(session_id=session_id, status=status)
    return _update_one(db, _END, values, clock=clock, event=("ended", "ended_at"))


def _update_one(
    db: Connection,
    statement: Prepared,
    values: dict[str, Any],
    *,
    clock: Clock,
    event: tuple[str, str],
) -> AgentSession:
    """Run a prebuilt update at ``now`` and record it in the session's history: ``event`` names
    the event type and the field its payload carries the time in, beside the new status."""
    now = format_ts(clock())
    row = statement.execute(db, {**values, "now": now})
    if row is None:
        raise SessionNotFound(f"No session has the id {values['session_id']!r}.")
    session = _session(row)
    event_type, time_field = event
    payload = update_payload(
        status=session.status, time_field=time_field, now=now, waiting_reason=session.waiting_reason
    )
    append_session_event(db, session_id=session.id, event_type=event_type, payload=payload, now=now)
    return session


def _dialect_insert(db: Connection) -> Any:
    """The dialect's INSERT (with ON CONFLICT), imported only by the writes that upsert: the
    PostgreSQL dialect costs a heartbeat on SQLite tens of milliseconds of start-up."""
    if db.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert


def as_session(values: Mapping[str, Any]) -> AgentSession:
    """Every column of an ``agent_sessions`` row, by name, as an AgentSession, built the quick
    way list pages build theirs (with fewer values, the model's own constructor checks them)."""
    return _session(values)


# Built once: each look-up only binds the id (no statement construction or cache key).
_GET_SESSION = select(SESSIONS).where(_C.id == bindparam("session_id"))


def get_session(*, db: Connection, session_id: str) -> AgentSession:
    row = db.execute(_GET_SESSION, {"session_id": session_id}).one_or_none()
    if row is None:
        raise SessionNotFound(f"No session has the id {session_id!r}.")
    return _record(row)


def filter_conditions(
    filters: SessionFilter, *, status_index: bool = True
) -> list[ColumnElement[bool]]:
    """The filter as SQL conditions, each backed by an index where one applies; without
    ``status_index``, SQLite does not look the statuses up by their index (``_status_index``)."""
    found: list[ColumnElement[bool]] = []
    status = _C.status if status_index else not_indexed(_C.status)
    if filters.statuses:
        found.append(status.in_(filters.statuses))
    if filters.agent_id is not None:
        found.append(_C.agent_id == filters.agent_id)
    if filters.run_id is not None:
        found.append(_C.run_id == filters.run_id)
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


def selection_condition(selection: Selection) -> ColumnElement[bool]:
    """The sessions ``selection`` holds, as one SQL condition: its ids, and each filter
    selection's rows less the ids it excludes (``store.matching`` decides the same in Python)."""
    parts: list[ColumnElement[bool]] = []
    if selection.ids:
        parts.append(_C.id.in_(sorted(selection.ids)))
    for chosen in selection.by_filter:
        conditions = filter_conditions(chosen.filters)
        if chosen.excluded:
            conditions.append(_C.id.not_in(sorted(chosen.excluded)))
        parts.append(and_(true(), *conditions))
    return or_(false(), *parts)


def count_selected(*, db: Connection, selection: Selection) -> int:
    """How many sessions ``selection`` holds, each once however many ways it is chosen."""
    if not selection.by_filter:
        return _count(db, [_C.id.in_(sorted(selection.ids))])
    return _count(db, [selection_condition(selection)])


def admitted_ids(*, db: Connection, filters: SessionFilter, ids: Iterable[str]) -> set[str]:
    """Which of ``ids`` ``filters`` lets through: for the sessions whose values
    ``store.matching`` cannot decide in Python."""
    wanted = sorted(set(ids))
    found: set[str] = set()
    conditions = filter_conditions(filters)
    for start in range(0, len(wanted), _ID_CHUNK):
        chunk = wanted[start : start + _ID_CHUNK]
        statement = select(_C.id).where(_C.id.in_(chunk), *conditions)
        found.update(str(found_id) for found_id in db.execute(statement).scalars())
    return found


# Orders whose index SQLite would leave for the status index under a status filter, and then
# sort every session of those statuses to read a page (``_status_index``).
_OWN_INDEX_ORDERS = frozenset({"agent", "run", "workspace", "last_seen"})


def _status_index(
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


def _key_expr(key: SortKey, source: Source = _C) -> ColumnElement[Any]:
    if key.sources:
        return COMPUTED_KEYS[key.column](*(source[column] for column in key.sources))
    column = source[key.column]
    return ts_key(column) if key.timestamp else column


@dataclass(frozen=True)
class _Segment:
    condition: ColumnElement[bool] | None
    keys: tuple[SortKey, ...]
    # The order's leading key, NULL throughout this segment: PostgreSQL follows the order's
    # index for the segment only when asked to sort by it too (it holds IS NULL as no equality).
    null_lead: SortKey | None = None


# A segment the filter leaves empty: nothing is read from it; it keeps the other segments'
# places (a cursor names its segment by place).
_SKIPPED = _Segment(None, ())


def _segments(order: SessionOrder, filters: SessionFilter | None = None) -> list[_Segment]:
    """The order's segments, ascending, each read apart: for ``last_seen`` NULL leading keys
    first, then the rest; for ``attention`` the segments of ``ATTENTION_SEGMENTS`` that may
    hold a session ``filters`` lets through."""
    keys = ORDER_KEYS[order.column]
    if order.column == "attention":
        wanted = attention_segments(filters or SessionFilter(), order.stale_before)
        return [
            _Segment(_attention_condition(segment, order), keys[1:])
            if segment in wanted
            else _SKIPPED
            for segment in ATTENTION_SEGMENTS
        ]
    if order.column not in NULLABLE_LEAD:
        return [_Segment(None, keys)]
    lead = _key_expr(keys[0])
    return [_Segment(lead.is_(None), keys[1:], keys[0]), _Segment(lead.is_not(None), keys)]


def _stale_bound(order: SessionOrder) -> ColumnElement[Any]:
    if order.stale_before is None:
        raise ValueError("The attention order is read at a time: use order.at(stale_before).")
    return ts_key(literal(format_ts(order.stale_before)))


def _attention_condition(
    segment: AttentionSegment, order: SessionOrder, source: Source = _C
) -> ColumnElement[bool]:
    tier = _key_expr(ATTENTION_TIER, source) == segment.tier
    if segment.stale is None:
        return tier
    seen = _key_expr(ATTENTION_KEY, source)
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
    segments = _segments(order)
    if len(segments) == 1:
        return 0, [_key_expr(key, source) for key in segments[0].keys]
    if order.column == "attention":
        # The database places the cursor's row in its segment, with the keys it sorts by.
        found = db.execute(
            select(
                *(_attention_condition(segment, order, source) for segment in ATTENTION_SEGMENTS)
            )
        ).one()
        index = next(index for index, inside in enumerate(found) if inside)
    else:
        # The database decides which text it cannot read as a time, exactly as it sorted it.
        lead = _key_expr(ORDER_KEYS[order.column][0], source)
        index = 0 if db.execute(select(lead.is_(None))).scalar() else 1
    return index, [_key_expr(key, source) for key in segments[index].keys]


def _after(
    keys: tuple[SortKey, ...], bounds: list[ColumnElement[Any]], descending: bool
) -> ColumnElement[bool]:
    """Rows after the position in the order, as one condition whose leading part is a plain
    range on the index (a row-value comparison is not one on every dialect)."""
    head, bound = _key_expr(keys[0]), bounds[0]
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
    head, bound = _key_expr(keys[0]), bounds[0]
    same_head = [
        _Tier([head == bound, *tier.conditions], tier.fixed + 1)
        for tier in _tiers(keys[1:], bounds[1:], descending)
    ]
    return [*same_head, _Tier([head < bound if descending else head > bound])]


def _sort_keys(db: Connection, keys: tuple[SortKey, ...], fixed: int) -> tuple[SortKey, ...]:
    """The keys to sort rows by when the first ``fixed`` are held equal: SQLite sorts a range
    of an index on an expression (the workspace) in a temporary tree when asked to sort by the
    expression it holds equal, and follows the index when not; PostgreSQL follows it either way
    (and, for a NULL key, only when asked to sort by it too)."""
    if db.dialect.name == "postgresql" or not any(key.sources for key in keys[:fixed]):
        return keys
    return keys[fixed:]


def _read(
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
    indexed = _status_index(db, filters, order, size)
    base = [*filter_conditions(filters or SessionFilter(), status_index=indexed), *extra]
    segments = list(enumerate(_segments(order, filters)))
    if descending:
        segments.reverse()
    position = _position(db, order, cursor) if cursor else None
    rows: list[Any] = []
    for index, segment in segments:
        if position is not None and index != position[0]:
            continue  # a segment before the cursor's
        bounds = position[1] if position is not None else None
        position = None  # the segments after the cursor's are read from their start
        if segment is _SKIPPED:
            continue
        where = [*base, *([segment.condition] if segment.condition is not None else [])]
        tiers = _tiers(segment.keys, bounds, descending) if bounds is not None else [_Tier([])]
        for tier in tiers:
            wanted = size + 1 - len(rows)
            if wanted <= 0:
                break
            keys = _sort_keys(db, segment.keys, tier.fixed)
            if segment.null_lead is not None and db.dialect.name == "postgresql":
                keys = (segment.null_lead, *keys)
            sort = [_key_expr(key).desc() if descending else _key_expr(key) for key in keys]
            statement = (
                select(SESSIONS).where(*where, *tier.conditions).order_by(*sort).limit(wanted)
            )
            rows.extend(db.execute(statement).all())
    return [_record(row) for row in rows[:size]], len(rows) > size


def list_sessions(
    *,
    db: Connection,
    filters: SessionFilter | None = None,
    limit: int | None = None,
    cursor: str | None = None,
    order: SessionOrder | None = None,
    backwards: bool = False,
    extra: Sequence[ColumnElement[bool]] = (),
) -> Page[AgentSession]:
    """Ascending ``started_at``, then id (ref), or ``order``; filtered and cut into keyset pages
    in SQL. ``next_cursor`` continues after the page's last row.

    ``backwards`` (``list_sessions_before``): the page that ends just before the cursor's row
    (the last page when ``cursor`` is None), still in the list's order. ``next_cursor`` then
    continues backwards: it is the page's first row, given only when rows lie before it. Read
    in reverse order in SQL and turned around.

    ``extra``: conditions narrowing the list beyond ``filters`` (the folded groups of a grouped
    list, ``store.groups.fold_condition``)."""
    order = order or DEFAULT_ORDER
    items, more = _read(
        db=db,
        filters=filters,
        limit=limit,
        cursor=cursor,
        order=order,
        backwards=backwards,
        extra=extra,
    )
    if backwards:
        items.reverse()
    next_cursor = session_cursor(items[0] if backwards else items[-1], order) if more else None
    return Page(items=items, next_cursor=next_cursor)


# The page before the cursor (see ``list_sessions``).
list_sessions_before = partial(list_sessions, backwards=True)


def count_sessions(*, db: Connection, filters: SessionFilter | None = None) -> int:
    """How many sessions the filter lets through, counted in SQL (an index range where the
    filter has one). ``countable_total`` answers from the status counts when it can."""
    return _count(db, filter_conditions(filters or SessionFilter()))


def count_needing_attention(
    *, db: Connection, stale_before: datetime, cap: int = ATTENTION_CAP
) -> int:
    """How many sessions need a human (waiting, a status outside the vocabulary, stale and
    live: ``NEEDS_ATTENTION``), counted up to ``cap`` in each segment on the attention index,
    so the count costs at most a few thousand index entries however many there are."""
    order = SessionOrder("attention").at(stale_before)
    found = 0
    for segment in NEEDS_ATTENTION:
        inner = select(literal(1)).where(_attention_condition(segment, order)).limit(cap - found)
        found += int(db.execute(select(func.count()).select_from(inner.subquery())).scalar_one())
        if found >= cap:
            break
    return found


def count_in_segment(
    *,
    db: Connection,
    segment: AttentionSegment,
    stale_before: datetime,
    cap: int,
    statuses: Sequence[str] | None = None,
) -> int:
    """The sessions of one segment of the attention order (of ``statuses``, when given), counted
    on the attention index up to ``cap``: what the overview's attention bars show."""
    order = SessionOrder("attention").at(stale_before)
    where = [_attention_condition(segment, order)]
    if statuses is not None:
        where.append(_C.status.in_(sorted(statuses)))
    inner = select(literal(1)).where(*where).limit(cap)
    return int(db.execute(select(func.count()).select_from(inner.subquery())).scalar_one())


def next_to_go_stale(
    *, db: Connection, stale_before: datetime, filters: SessionFilter | None = None
) -> AgentSession | None:
    """The fresh live session ``filters`` lets through that was seen longest ago: the first
    the clock moves up the attention order, once it is unseen for longer than stale_after."""
    order = SessionOrder("attention").at(stale_before)
    fresh = _attention_condition(AttentionSegment(LIVE_TIER, stale=False), order)
    keys = ORDER_KEYS["attention"][1:]
    statement = (
        select(SESSIONS)
        .where(*filter_conditions(filters or SessionFilter()), fresh)
        .order_by(*(_key_expr(key) for key in keys))
        .limit(1)
    )
    row = db.execute(statement).one_or_none()
    return None if row is None else _record(row)


def gone_stale(
    *,
    db: Connection,
    since: datetime,
    until: datetime,
    filters: SessionFilter | None = None,
    limit: int = 500,
) -> list[AgentSession]:
    """The live sessions ``filters`` lets through that were fresh at the stale bound ``since``
    and are stale at ``until`` (both: "unseen since before this instant"), the longest unseen
    first: those that went stale in between. One range of the attention index."""
    fresh = _attention_condition(
        AttentionSegment(LIVE_TIER, stale=False), SessionOrder("attention").at(since)
    )
    stale = _attention_condition(
        AttentionSegment(LIVE_TIER, stale=True), SessionOrder("attention").at(until)
    )
    keys = ORDER_KEYS["attention"][1:]
    statement = (
        select(SESSIONS)
        .where(*filter_conditions(filters or SessionFilter()), fresh, stale)
        .order_by(*(_key_expr(key) for key in keys))
        .limit(limit)
    )
    return [_record(row) for row in db.execute(statement)]


def _count(db: Connection, where: list[ColumnElement[bool]]) -> int:
    return int(db.execute(select(func.count()).select_from(SESSIONS).where(*where)).scalar_one())


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
    items, _more = _read(
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
    segments = _segments(order, filters)
    if descending:
        segments.reverse()
    indexed = _status_index(db, filters, order, position + 1)
    base = [*filter_conditions(filters, status_index=indexed), *extra]
    for segment in segments:
        if segment is _SKIPPED:
            continue
        where = [*base, *([segment.condition] if segment.condition is not None else [])]
        # In the never-seen segment the lead key is NULL throughout. PostgreSQL follows the
        # order's index only when asked to sort by that NULL key too; SQLite only when not.
        keys = ORDER_KEYS[order.column] if db.dialect.name == "postgresql" else segment.keys
        sort = [_key_expr(key).desc() if descending else _key_expr(key) for key in keys]
        statement = select(_C.id).where(*where).order_by(*sort).offset(position).limit(1)
        found = db.execute(statement).scalar_one_or_none()
        if found is not None:
            return str(found)
        # Beyond this segment: the rest of the way is counted in the next one.
        position -= _count(db, where)
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
    ``group`` holds for the group's rows alone (``store.groups.group_condition``); with its
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
    indexed = _status_index(db, filters, order, position + 1)
    where = [*filter_conditions(filters or SessionFilter(), status_index=indexed), *extra, group]
    found = _id_in_group(db, where, order, position, from_end=from_end)
    if found is None:
        return []
    first = get_session(db=db, session_id=found)
    if wanted == 1:
        return [first]
    rest, _more = _read(
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
    indexed = _status_index(db, filters, order, 1)
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
    keys = _sort_keys(db, ORDER_KEYS[order.column], 1)
    sort = [_key_expr(key).desc() if descending else _key_expr(key) for key in keys]
    statement = select(_C.id).where(*where).order_by(*sort).offset(position).limit(1)
    found = db.execute(statement).scalar_one_or_none()
    return None if found is None else str(found)


def find_by_agent(*, db: Connection, agent_id: str) -> AgentSession:
    """The agent's session: exact ``active`` first, then newer last-seen, newer start, id."""
    statement = (
        select(SESSIONS)
        .where(_C.agent_id == agent_id)
        .order_by(
            case((_C.status == "active", 0), else_=1),
            ts_key(_C.last_seen_at).desc().nulls_last(),
            ts_key(_C.started_at).desc(),
            _C.id,
        )
        .limit(1)
    )
    row = db.execute(statement).one_or_none()
    if row is None:
        raise SessionNotFound(f"Agent {agent_id!r} has no session.")
    return _record(row)


@contextmanager
def bulk_session_writes(*, db: Connection) -> Iterator[None]:
    """Around a write of many sessions in one transaction (an import, the demo). On PostgreSQL
    the count triggers stand aside for it and the counts are taken once at its end: counting
    row by row would update one count row as many times, each update slower than the last.
    Every other status change waits until the transaction commits, so none falls between the
    count and the commit (and none waits for the bulk write while it waits for them). On SQLite
    the triggers count as they go, at no such cost, and the write transaction already has the
    database to itself."""
    if db.dialect.name != "postgresql":
        yield
        return
    # In the order the triggers touch them (by name: the group counts first), so that a writer
    # holding one never waits here for the other.
    db.execute(text("LOCK TABLE session_group_counts IN SHARE ROW EXCLUSIVE MODE"))
    db.execute(text("LOCK TABLE session_status_counts IN SHARE ROW EXCLUSIVE MODE"))
    db.execute(text("LOCK TABLE session_usage_totals IN SHARE ROW EXCLUSIVE MODE"))
    # Local to the transaction: the pooled connection counts row by row again after it.
    db.execute(text("SELECT set_config('roundtable.bulk_session_writes', 'on', true)"))
    yield
    db.execute(text("SELECT set_config('roundtable.bulk_session_writes', 'off', true)"))
    db.execute(text("DELETE FROM session_status_counts"))
    db.execute(
        text(
            "INSERT INTO session_status_counts (status, sessions) "
            "SELECT status, count(*) FROM agent_sessions GROUP BY status"
        )
    )
    db.execute(text("DELETE FROM session_group_counts"))
    db.execute(text(RECOUNT_GROUPS))
    db.execute(text("DELETE FROM session_usage_totals"))
    db.execute(text(RECOUNT_USAGE))


# Every group's sessions by status, counted (migration 0008 seeds its table the same way).
_GROUP_KEYS = (("agent", "agent_id"), ("run", "run_id"), ("workspace", "rt_workspace"))
RECOUNT_GROUPS = (
    "INSERT INTO session_group_counts (grouping, keyed, group_key, status, sessions) "
    + " UNION ALL ".join(
        f"SELECT '{grouping}', CASE WHEN {key} IS NULL THEN 0 ELSE 1 END, COALESCE({key}, ''),"
        f" status, count(*) FROM agent_sessions GROUP BY {key}, status"
        for grouping, key in _GROUP_KEYS
    )
)


# Every agent's and run's usage totals, summed (migration 0009 seeds its table the same way).
RECOUNT_USAGE = (
    "INSERT INTO session_usage_totals (grouping, group_key, sessions, tokens, cost) "
    + " UNION ALL ".join(
        f"SELECT '{grouping}', COALESCE({key}, ''), count(*), sum(u[2]), sum(u[3])"
        f" FROM (SELECT {key}, rt_usage(metadata_json) AS u FROM agent_sessions"
        " WHERE metadata_json LIKE '%usage%') AS used"
        f" WHERE u IS NOT NULL GROUP BY COALESCE({key}, '')"
        for grouping, key in (("agent", "agent_id"), ("run", "run_id"))
    )
)


def count_by_status(*, db: Connection) -> dict[str, int]:
    """Sessions per status, from the table the triggers of migration 0004 keep: a few rows,
    however many sessions there are."""
    rows = db.execute(
        select(_COUNTS.c.status, _COUNTS.c.sessions).where(_COUNTS.c.sessions > 0)
    ).all()
    return {str(status): int(count) for status, count in rows}
