"""The session list's reads, each a blocking call meant for a thread worker: the rows a
``store.window.questions.Read`` asks for, with their agents' claim counts and the counts by status,
from one snapshot; the list's length where the status counts cannot say it; and what the marks
need from the store (their count, and the rows only the store can decide).

A grouped list (``RowsAsked.grouping``) is read in its grouping's order, sessions only, with
each row's group and whether the first starts one; the groups with their counts come from the
store's counts by group (``GroupCounts``, read again when the store changes), or are counted
over the sessions apart (``count_grouped``) for a filter those cannot answer."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection

from roundtable_console.store.access.walls import OPEN, Wall
from roundtable_console.store.db.database import Store
from roundtable_console.store.reads.claims import claim_counts
from roundtable_console.store.reads.groups import (
    count_groups,
    fold_condition,
    folded_rows,
    group_condition,
    group_keys,
    read_group_sizes,
    read_status_by_group,
)
from roundtable_console.store.reads.keyset import count_by_status
from roundtable_console.store.reads.listing import (
    Selection,
    SessionFilter,
    SessionOrder,
    countable_total,
    session_cursor,
)
from roundtable_console.store.reads.places import sessions_at, sessions_in_group
from roundtable_console.store.reads.sessions import (
    admitted_ids,
    count_needing_attention,
    count_selected,
    count_sessions,
    list_sessions,
    list_sessions_before,
    next_to_go_stale,
)
from roundtable_console.store.records import ClaimCount, SessionFields
from roundtable_console.store.window.layout import (
    GroupKey,
    Groups,
    Layout,
    countable,
    shown_statuses,
)
from roundtable_console.store.window.questions import ClockMoved, GroupedRows, ReadResult, RowsAsked

# The groups whose counts by status are kept between reads, past which they are read again.
MAX_GROUPS_KEPT = 4096


class StatusCounts:
    """The counts by status, read again only when the store's change token moves. Safe to share
    between worker threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._token: object | None = None
        self._counts: dict[str, int] = {}

    def read(self, *, db: Connection, token: object | None) -> dict[str, int]:
        """``token`` must have been taken before ``db``'s snapshot began, so the counts cached
        under it are never older than it; None (changes unknown) always reads."""
        if token is not None:
            with self._lock:
                if self._token == token:
                    return dict(self._counts)
        counts = count_by_status(db=db)
        if token is not None:
            with self._lock:
                self._token, self._counts = token, dict(counts)
        return counts


class GroupCounts:
    """What the store's counts by group say, read again only when the store's change token
    moves (as ``StatusCounts``): the groups of a list, with their sizes (one ``Groups`` object
    per list and change: the model lays its list out once per object), and the sessions by
    status of the groups in view. Safe to share between worker threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._token: object | None = None
        self._groups: dict[tuple[object, ...], Groups] = {}
        self._statuses: dict[tuple[object, ...], dict[str, int]] = {}

    def _fresh(self, token: object | None) -> None:
        """Under the lock: forget what was read at another change token."""
        if token != self._token:
            self._token, self._groups, self._statuses = token, {}, {}

    def groups(
        self,
        *,
        db: Connection,
        token: object | None,
        grouping: str,
        filters: SessionFilter,
        descending: bool,
    ) -> Groups:
        """The groups of the list ``filters`` shows (a filter the counts answer), in order."""
        statuses = shown_statuses(filters)
        wanted = (grouping, statuses, descending)
        with self._lock:
            if token is not None and token == self._token and wanted in self._groups:
                return self._groups[wanted]
        sizes = read_group_sizes(db=db, grouping=grouping, statuses=statuses)
        found = Groups.from_sizes(sizes, descending=descending)
        if token is not None:
            with self._lock:
                self._fresh(token)
                self._groups[wanted] = found
        return found

    def statuses(
        self,
        *,
        db: Connection,
        token: object | None,
        grouping: str,
        filters: SessionFilter,
        keys: Iterable[GroupKey],
    ) -> dict[GroupKey, dict[str, int]]:
        """The sessions by status of the groups ``keys`` (those the filter shows)."""
        statuses = shown_statuses(filters)
        found: dict[GroupKey, dict[str, int]] = {}
        missing = []
        with self._lock:
            known = self._statuses if token is not None and token == self._token else {}
            for key in set(keys):
                counted = known.get((grouping, statuses, key))
                if counted is None:
                    missing.append(key)
                else:
                    found[key] = counted
        if not missing:
            return found
        read = read_status_by_group(db=db, grouping=grouping, keys=missing, statuses=statuses)
        found.update(read)
        if token is not None:
            with self._lock:
                self._fresh(token)
                if len(self._statuses) > MAX_GROUPS_KEPT:
                    self._statuses.clear()
                for key, counted in read.items():
                    self._statuses[(grouping, statuses, key)] = counted
        return found


def read_rows(
    *,
    store: Store,
    asked: RowsAsked,
    counts: StatusCounts,
    groups: GroupCounts | None = None,
    wall: Wall = OPEN,
) -> ReadResult | ClockMoved:
    """What ``asked.read`` asks for, in one snapshot. A place in the second half of the list is
    reached from its end when the length is known: from the status counts, else the length
    counted apart. A store still at ``asked.unless_token`` is not read (see ``RowsAsked``).

    Behind a ``wall`` (a server's caller bound to workspaces), the filters name one of its
    workspaces, and nothing is counted beyond it: the counts by status are that workspace's,
    the claims those held in it, and how many sessions need a human is not read."""
    read, filters, order, now = asked.read, asked.filters, asked.order, asked.now
    workspace = filters.workspace_id if wall.bound else None
    if wall.bound and (workspace is None or not wall.reaches(workspace)):
        raise ValueError("a walled read names one of the caller's workspaces")
    token = store.change_token()  # before the snapshot: a commit in between reads once more
    if asked.unless_token is not None and token == asked.unless_token:
        claims = recheck_claims(
            store=store, agent_ids=list(asked.live_claims), now=now, workspace_id=workspace
        )
        return ClockMoved(read, claims)
    with store.read() as db:
        if workspace is None:
            by_status = counts.read(db=db, token=token)
        else:
            by_status = dict(
                read_status_by_group(db=db, grouping="workspace", keys=[workspace]).get(
                    workspace, {}
                )
            )
        total = countable_total(filters, by_status)
        rows: list[SessionFields]
        grouped = None
        if asked.grouping is not None:
            total = None  # the model lays the list out from the groups
            rows, grouped = _read_grouped(db, asked, groups or GroupCounts(), token)
        elif read.kind == "at":
            length = total if total is not None else asked.known_total
            rows = sessions_at(
                db=db,
                offset=read.offset,
                limit=read.limit,
                filters=filters,
                order=order,
                total=length,
            )
        else:
            assert read.edge is not None
            page_read = list_sessions if read.kind == "after" else list_sessions_before
            page = page_read(
                db=db,
                filters=filters,
                order=order,
                limit=read.limit,
                cursor=session_cursor(read.edge, order),
            )
            rows = list(page.items)
        claims = claim_counts(
            db=db, agent_ids=[s.agent_id for s in rows], now=now, workspace_id=workspace
        )
        attention, moves_at = None, None
        # Counted with the view's reads and the refreshes, not the pages read ahead.
        if order.stale_before is not None and (read.refresh or read.kind == "at"):
            if not wall.bound:  # counted over every workspace
                attention = count_needing_attention(db=db, stale_before=order.stale_before)
            if order.column == "attention":
                moves_at = _next_move(db, filters, order.stale_before, now)
    return ReadResult(read, rows, total, claims, by_status, token, attention, moves_at, grouped)


def _next_move(
    db: Connection, filters: SessionFilter, stale_before: datetime, now: datetime
) -> datetime:
    """When the clock next moves a session up the attention order (the oldest fresh live one
    goes stale); ``datetime.max`` when none will; ``now`` when its time cannot be read."""
    session = next_to_go_stale(db=db, stale_before=stale_before, filters=filters)
    if session is None:
        return datetime.max.replace(tzinfo=UTC)
    seen = session.last_seen()
    return now if seen is None else seen + (now - stale_before)


def _read_grouped(
    db: Connection, asked: RowsAsked, cache: GroupCounts, token: object | None
) -> tuple[list[SessionFields], GroupedRows]:
    """A grouped list's read: its sessions (a folded group keeps one), each one's group, and
    where groups start. A place is found from the groups' sizes when they are known (read with
    the rows, or counted apart), by a walk inside its group; else at the stream place the model
    believes, reading the session before it to know whether its group starts there."""
    read, filters, order, grouping = asked.read, asked.filters, asked.order, asked.grouping
    assert grouping is not None
    fresh = None
    if countable(filters):
        fresh = cache.groups(
            db=db, token=token, grouping=grouping, filters=filters, descending=order.descending
        )
    known = fresh or asked.groups
    kept = folded_rows(db=db, grouping=grouping, folded=asked.folded, filters=filters, order=order)
    condition = fold_condition(grouping, asked.folded, kept)
    extra = [] if condition is None else [condition]
    before: SessionFields | None = None
    header_first, stream = None, None
    if read.kind == "at":
        layout = Layout(known, asked.folded) if known is not None else None
        place = layout.place(read.offset) if layout is not None else None
        if place is not None:
            rows = sessions_in_group(
                db=db,
                group=group_condition(grouping, place.key),
                offset=place.offset,
                limit=read.limit,
                filters=filters,
                order=order,
                size=place.size,
                extra=extra,
            )
            header_first, stream = place.header, place.stream
        elif layout is not None:  # past the list's end
            rows, header_first, stream = [], False, layout.stream_length
        else:
            rows = sessions_at(
                db=db,
                offset=read.stream,
                limit=read.limit,
                filters=filters,
                order=order,
                extra=extra,
            )
            if rows and read.stream > 0:
                before = _row_before(db, rows[0], filters, order, extra)
    else:
        assert read.edge is not None
        cursor = session_cursor(read.edge, order)
        page_read = list_sessions if read.kind == "after" else list_sessions_before
        rows = list(
            page_read(
                db=db, filters=filters, order=order, limit=read.limit, cursor=cursor, extra=extra
            ).items
        )
        if rows and read.kind == "before":
            before = _row_before(db, rows[0], filters, order, extra)
    around = [session for session in (read.edge, before) if session is not None]
    keys = group_keys(db=db, grouping=grouping, sessions=[*rows, *around])
    row_keys = tuple(keys[: len(rows)])
    edge_key = keys[len(rows)] if read.edge is not None else None
    if read.kind == "at" and header_first is not None:
        first_starts = place is not None and place.offset == 0
    elif read.kind == "after":
        first_starts = bool(rows) and row_keys[0] != edge_key
    else:
        first_starts = before is None or (bool(rows) and keys[-1] != row_keys[0])
    edge_starts = read.kind == "before" and (not rows or row_keys[-1] != edge_key)
    # The counts by status of the groups whose headers these rows bring into view.
    counts = None
    if fresh is not None:
        shown = {*row_keys, *([edge_key] if read.edge is not None else [])}
        counts = cache.statuses(db=db, token=token, grouping=grouping, filters=filters, keys=shown)
    grouped = GroupedRows(
        row_keys,
        first_starts,
        edge_key=edge_key,
        edge_starts=edge_starts,
        header_first=header_first,
        stream=stream,
        groups=fresh,
        counts=counts,
    )
    return rows, grouped


def _row_before(
    db: Connection,
    session: SessionFields,
    filters: SessionFilter,
    order: SessionOrder,
    extra: list[Any],
) -> SessionFields | None:
    """The session just before ``session`` in the list: whether its group starts there."""
    page = list_sessions_before(
        db=db,
        filters=filters,
        order=order,
        limit=1,
        cursor=session_cursor(session, order),
        extra=extra,
    )
    return page.items[0] if page.items else None


def count_grouped(
    *, store: Store, grouping: str, filters: SessionFilter, descending: bool
) -> Groups:
    """The groups of a list whose filter the counts by group cannot answer (a text or stale
    filter): counted over the sessions, apart, as the list's length is."""
    with store.read() as db:
        counted = count_groups(db=db, grouping=grouping, filters=filters)
    return Groups.from_counts(counted, descending=descending)


def count_rows(*, store: Store, filters: SessionFilter) -> int:
    """The list's length, counted in SQL (a text or stale filter: the status counts cannot)."""
    with store.read() as db:
        return count_sessions(db=db, filters=filters)


def count_marked(*, store: Store, selection: Selection) -> int:
    """How many sessions the marks hold (screens.list.marks), each once."""
    with store.read() as db:
        return count_selected(db=db, selection=selection)


def admitted_among(*, store: Store, filters: SessionFilter, ids: list[str]) -> set[str]:
    """Which of ``ids`` a filter mark covers, for the rows Python cannot decide."""
    with store.read() as db:
        return admitted_ids(db=db, filters=filters, ids=ids)


def recheck_claims(
    *, store: Store, agent_ids: list[str], now: datetime, workspace_id: str | None = None
) -> dict[str, ClaimCount]:
    """The claim column alone: live claims expire with the clock, not only with the store."""
    with store.read() as db:
        return claim_counts(db=db, agent_ids=agent_ids, now=now, workspace_id=workspace_id)
