"""The session list's reads, each a blocking call meant for a thread worker: the rows a
``screens.list_model.Read`` asks for, with their agents' claim counts and the counts by status,
from one snapshot; and the list's length where the status counts cannot say it."""

from __future__ import annotations

import threading
from datetime import datetime

from sqlalchemy import Connection

from screens.list_model import ClockMoved, ReadResult, RowsAsked
from store.claims import claim_counts
from store.database import Store
from store.listing import SessionFilter, countable_total, session_cursor
from store.records import ClaimCount, SessionFields
from store.sessions import (
    count_by_status,
    count_needing_attention,
    count_sessions,
    list_sessions,
    list_sessions_before,
    sessions_at,
)


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


def read_rows(*, store: Store, asked: RowsAsked, counts: StatusCounts) -> ReadResult | ClockMoved:
    """What ``asked.read`` asks for, in one snapshot. A place in the second half of the list is
    reached from its end when the length is known: from the status counts, else the length
    counted apart. A store still at ``asked.unless_token`` is not read (see ``RowsAsked``)."""
    read, filters, order, now = asked.read, asked.filters, asked.order, asked.now
    token = store.change_token()  # before the snapshot: a commit in between reads once more
    if asked.unless_token is not None and token == asked.unless_token:
        claims = recheck_claims(store=store, agent_ids=list(asked.live_claims), now=now)
        return ClockMoved(read, claims)
    with store.read() as db:
        by_status = counts.read(db=db, token=token)
        total = countable_total(filters, by_status)
        rows: list[SessionFields]
        if read.kind == "at":
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
        claims = claim_counts(db=db, agent_ids=[s.agent_id for s in rows], now=now)
        attention = None
        # Counted with the view's reads and the refreshes, not the pages read ahead.
        if order.stale_before is not None and (read.refresh or read.kind == "at"):
            attention = count_needing_attention(db=db, stale_before=order.stale_before)
    return ReadResult(read, rows, total, claims, by_status, token, attention)


def count_rows(*, store: Store, filters: SessionFilter) -> int:
    """The list's length, counted in SQL (a text or stale filter: the status counts cannot)."""
    with store.read() as db:
        return count_sessions(db=db, filters=filters)


def recheck_claims(*, store: Store, agent_ids: list[str], now: datetime) -> dict[str, ClaimCount]:
    """The claim column alone: live claims expire with the clock, not only with the store."""
    with store.read() as db:
        return claim_counts(db=db, agent_ids=agent_ids, now=now)
