"""The reads and writes the screens make, each a blocking call meant for a thread worker.

Everything here composes store/ functions inside one transaction; nothing here touches a widget.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from screens.context import ConsoleContext
from store import lifecycle
from store.briefing import Briefing, build_briefing
from store.claims import claim_counts
from store.database import Store
from store.errors import DatabaseUnavailable
from store.models import AgentSession
from store.projections import logs_cursor, session_logs
from store.records import ClaimCount, SessionFields
from store.resume import ResumePlan, resume_plan
from store.sessions import get_session
from store.validation import MAX_LIMIT


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
    with require_store(ctx).read() as db:
        return get_session(db=db, session_id=session_id)


def perform_action(
    ctx: ConsoleContext,
    action: str,
    session: SessionFields,
    *,
    idempotency_key: str | None = None,
    impact_details: str | None = None,
) -> lifecycle.ActionOutcome:
    """Run one lifecycle action as the operator, against the version the operator saw."""
    common = {
        "session_id": session.id,
        "actor": ctx.operator,
        "idempotency_key": idempotency_key,
        "expected_version": session.version,
        "clock": ctx.clock,
    }
    if action == "terminate":
        common["impact_details"] = impact_details
    with require_store(ctx).write() as db:
        return lifecycle.ACTIONS[action](db=db, **common)


def load_termination_impact(ctx: ConsoleContext, session_id: str) -> lifecycle.TerminationImpact:
    with require_store(ctx).read() as db:
        return lifecycle.termination_impact(db=db, session_id=session_id, clock=ctx.clock)


@dataclass(frozen=True)
class LogBatch:
    items: list[dict[str, Any]]
    last_id: int | None
    # True when the reader stopped at MAX_LOG_ROWS per poll with more still waiting.
    more_waiting: bool = False


MAX_LOG_ROWS = 2000


def read_log_after(ctx: ConsoleContext, session_id: str, last_id: int | None) -> LogBatch:
    """The session's history rows after ``last_id`` (all of them from the start when None),
    oldest first, in one snapshot. Payloads come redacted from store.projections."""
    items: list[dict[str, Any]] = []
    cursor = logs_cursor(session_id, last_id) if last_id is not None else None
    with require_store(ctx).read() as db:
        while True:
            page = session_logs(db=db, session_id=session_id, limit=MAX_LIMIT, cursor=cursor)
            items.extend(page.items)
            cursor = page.next_cursor
            if cursor is None or len(items) >= MAX_LOG_ROWS:
                break
    newest = int(items[-1]["id"]) if items else last_id
    return LogBatch(items=items, last_id=newest, more_waiting=cursor is not None)


@dataclass(frozen=True)
class BriefingView:
    briefing: Briefing
    plan: ResumePlan


def read_briefing(ctx: ConsoleContext, session_id: str) -> BriefingView:
    with require_store(ctx).read() as db:
        briefing = build_briefing(db=db, session_id=session_id, clock=ctx.clock)
    plan = resume_plan(
        session=briefing.session, briefing_markdown=briefing.markdown, adapters=ctx.adapters
    )
    return BriefingView(briefing=briefing, plan=plan)


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
