"""The reads and writes the screens make, each a blocking call meant for a thread worker.

The list's window is read here; everything else is a ``store.service`` function, called with
what the console's context knows (the store, the operator, the clock, the adapters). Nothing here
touches a widget.
"""

from __future__ import annotations

import re
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection

from screens.context import ConsoleContext
from screens.window import ListWindow, WindowSpec
from store import service
from store.claims import claim_counts
from store.database import Store
from store.errors import DatabaseUnavailable
from store.lifecycle import ActionOutcome, TerminationImpact
from store.listing import SessionFilter, SessionOrder
from store.models import AgentSession
from store.paging import Page
from store.projections import PAGED
from store.records import ClaimCount, SessionFields
from store.service import BriefingView, LogBatch
from store.sessions import count_by_status as store_count_by_status
from store.sessions import list_sessions, list_sessions_before


class StatusCounts:
    """The counts by status, re-read only when the store's change token moves (a count over the
    whole table is the dearest read of a refresh). Safe to share between worker threads."""

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
        counts = store_count_by_status(db=db)
        if token is not None:
            with self._lock:
                self._token, self._counts = token, dict(counts)
        return counts


def read_list_window(
    *,
    db: Connection,
    filters: SessionFilter,
    order: SessionOrder,
    spec: WindowSpec,
    page_size: int,
    now: datetime,
    status_counts: StatusCounts | None = None,
    token: object | None = None,
) -> ListWindow:
    """Page by page in SQL from the spec's cursor, in either direction; the claim counts of the
    agents on those rows and the counts by status come from the same snapshot (or, through
    ``status_counts``, from the last snapshot with the same change ``token``)."""
    sessions: list[SessionFields] = []
    cursor = spec.cursor
    read = list_sessions_before if spec.backwards else list_sessions
    for _ in range(max(spec.pages, 1)):
        page = read(db=db, filters=filters, order=order, limit=page_size, cursor=cursor)
        sessions = [*page.items, *sessions] if spec.backwards else [*sessions, *page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    # Sessions are never deleted, so a window read from a cursor has that row on the far side.
    beyond_start = spec.cursor is not None
    return ListWindow(
        sessions=sessions,
        has_before=cursor is not None if spec.backwards else beyond_start,
        has_after=beyond_start if spec.backwards else cursor is not None,
        claims=claim_counts(db=db, agent_ids=[s.agent_id for s in sessions], now=now),
        counts=(
            status_counts.read(db=db, token=token)
            if status_counts is not None
            else store_count_by_status(db=db)
        ),
        now=now,
    )


def require_store(ctx: ConsoleContext) -> Store:
    if ctx.store is None:
        raise DatabaseUnavailable("The store is not open yet; wait a moment and try again.")
    return ctx.store


def read_claim_counts(
    ctx: ConsoleContext, agent_ids: list[str], now: datetime
) -> dict[str, ClaimCount]:
    """The claim column alone: live claims expire with the clock, not only with the store."""
    with require_store(ctx).read() as db:
        return claim_counts(db=db, agent_ids=agent_ids, now=now)


def load_session(ctx: ConsoleContext, session_id: str) -> AgentSession:
    return service.read_session(store=require_store(ctx), session_id=session_id)


def perform_action(
    ctx: ConsoleContext,
    action: str,
    session: SessionFields,
    *,
    idempotency_key: str | None = None,
    impact_details: str | None = None,
) -> ActionOutcome:
    """Run one lifecycle action as the operator, against the version the operator saw."""
    terminate = {} if impact_details is None else {"impact_details": impact_details}
    return service.perform_action(
        store=require_store(ctx),
        action=action,
        session_id=session.id,
        actor=ctx.operator,
        idempotency_key=idempotency_key,
        expected_version=session.version,
        clock=ctx.clock,
        **terminate,
    )


def load_termination_impact(ctx: ConsoleContext, session_id: str) -> TerminationImpact:
    return service.read_termination_impact(
        store=require_store(ctx), session_id=session_id, clock=ctx.clock
    )


def read_projection(
    ctx: ConsoleContext, name: str, session_id: str, limit: int, cursor: str | None
) -> Page[dict[str, Any]] | dict[str, Any]:
    """A page of a paged projection (``limit`` rows after ``cursor``), else its one record."""
    store = require_store(ctx)
    if name in PAGED:
        return service.read_projection_page(
            store=store, name=name, session_id=session_id, limit=limit, cursor=cursor
        )
    return service.read_projection(store=store, name=name, session_id=session_id)


def read_log_after(ctx: ConsoleContext, session_id: str, last_id: int | None) -> LogBatch:
    return service.read_log_after(store=require_store(ctx), session_id=session_id, last_id=last_id)


def read_briefing(ctx: ConsoleContext, session_id: str) -> BriefingView:
    return service.read_briefing(
        store=require_store(ctx), adapters=ctx.adapters, session_id=session_id, clock=ctx.clock
    )


def write_briefing(directory: Path, session_id: str, markdown: str) -> Path:
    """Write the briefing to a new file (never over an existing one) and return where."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", session_id)[:80] or "session"
    directory.mkdir(parents=True, exist_ok=True)
    for number in range(1000):
        suffix = f"-{number}" if number else ""
        path = directory / f"briefing-{safe}{suffix}.md"
        try:
            with path.open("x", encoding="utf-8") as handle:
                handle.write(markdown)
        except FileExistsError:
            continue
        return path.resolve()
    raise FileExistsError(f"Too many briefing files for {safe} in {directory}.")
