"""Reading sessions: one by id or by agent, a list in keyset pages, and the counts and
attention reads of a list (``store.reads.keyset`` holds how a page is cut)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from functools import partial

from sqlalchemy import Connection, and_, bindparam, case, false, func, literal, or_, select, true
from sqlalchemy.sql.elements import ColumnElement

from roundtable_console.store.db.models import AgentSession
from roundtable_console.store.db.session_rows import SESSIONS, session_from_row
from roundtable_console.store.errors import SessionNotFound
from roundtable_console.store.reads.keyset import (
    attention_condition,
    count_rows,
    filter_conditions,
    key_expr,
    read_rows,
)
from roundtable_console.store.reads.listing import (
    ATTENTION_CAP,
    ATTENTION_TIME_KEYS,
    DEFAULT_ORDER,
    LIVE_TIER,
    NEEDS_ATTENTION,
    AttentionSegment,
    Selection,
    SessionFilter,
    SessionOrder,
    session_cursor,
)
from roundtable_console.store.reads.paging import Page
from roundtable_console.store.reads.sqlfuncs import ts_key

_C = SESSIONS.c

# Ids per statement when many are looked up (well within every dialect's parameter limit).
_ID_CHUNK = 500

# Built once: each look-up only binds the id (no statement construction or cache key).
_GET_SESSION = select(SESSIONS).where(_C.id == bindparam("session_id"))


def get_session(*, db: Connection, session_id: str) -> AgentSession:
    row = db.execute(_GET_SESSION, {"session_id": session_id}).one_or_none()
    if row is None:
        raise SessionNotFound(f"No session has the id {session_id!r}.")
    return session_from_row(row)


def get_sessions(*, db: Connection, session_ids: Iterable[str]) -> dict[str, AgentSession]:
    """The sessions of ``session_ids`` that exist, by id, in a statement per 500 ids."""
    wanted = sorted(set(session_ids))
    found: dict[str, AgentSession] = {}
    for start in range(0, len(wanted), _ID_CHUNK):
        chunk = wanted[start : start + _ID_CHUNK]
        for row in db.execute(select(SESSIONS).where(_C.id.in_(chunk))):
            session = session_from_row(row)
            found[session.id] = session
    return found


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
    return session_from_row(row)


def selection_condition(selection: Selection) -> ColumnElement[bool]:
    """The sessions ``selection`` holds, as one SQL condition: its ids, and each filter
    selection's rows less the ids it excludes (``store.reads.matching`` decides the same in
    Python)."""
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
        return count_rows(db, [_C.id.in_(sorted(selection.ids))])
    return count_rows(db, [selection_condition(selection)])


def admitted_ids(*, db: Connection, filters: SessionFilter, ids: Iterable[str]) -> set[str]:
    """Which of ``ids`` ``filters`` lets through: for the sessions whose values
    ``store.reads.matching`` cannot decide in Python."""
    wanted = sorted(set(ids))
    found: set[str] = set()
    conditions = filter_conditions(filters)
    for start in range(0, len(wanted), _ID_CHUNK):
        chunk = wanted[start : start + _ID_CHUNK]
        statement = select(_C.id).where(_C.id.in_(chunk), *conditions)
        found.update(str(found_id) for found_id in db.execute(statement).scalars())
    return found


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
    list, ``store.reads.groups.fold_condition``)."""
    order = order or DEFAULT_ORDER
    items, more = read_rows(
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
    return count_rows(db, filter_conditions(filters or SessionFilter()))


def count_needing_attention(
    *, db: Connection, stale_before: datetime, cap: int = ATTENTION_CAP
) -> int:
    """How many sessions need a human (waiting, a status outside the vocabulary, stale and
    live: ``NEEDS_ATTENTION``), counted up to ``cap`` in each segment on the attention index,
    so the count costs at most a few thousand index entries however many there are."""
    order = SessionOrder("attention").at(stale_before)
    found = 0
    for segment in NEEDS_ATTENTION:
        inner = select(literal(1)).where(attention_condition(segment, order)).limit(cap - found)
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
    where = [attention_condition(segment, order)]
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
    fresh = attention_condition(AttentionSegment(LIVE_TIER, stale=False), order)
    keys = ATTENTION_TIME_KEYS  # the next to go stale: the one seen longest ago
    statement = (
        select(SESSIONS)
        .where(*filter_conditions(filters or SessionFilter()), fresh)
        .order_by(*(key_expr(key) for key in keys))
        .limit(1)
    )
    row = db.execute(statement).one_or_none()
    return None if row is None else session_from_row(row)


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
    fresh = attention_condition(
        AttentionSegment(LIVE_TIER, stale=False), SessionOrder("attention").at(since)
    )
    stale = attention_condition(
        AttentionSegment(LIVE_TIER, stale=True), SessionOrder("attention").at(until)
    )
    keys = ATTENTION_TIME_KEYS  # the next to go stale: the one seen longest ago
    statement = (
        select(SESSIONS)
        .where(*filter_conditions(filters or SessionFilter()), fresh, stale)
        .order_by(*(key_expr(key) for key in keys))
        .limit(limit)
    )
    return [session_from_row(row) for row in db.execute(statement)]
