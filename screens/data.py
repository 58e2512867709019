"""The reads and writes the screens make, each a blocking call meant for a thread worker.

Each is a ``store.service`` function, called with what the console's context knows (the store,
the operator, the clock, the adapters). Nothing here touches a widget.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from roundtable_console.screens.context import ConsoleContext
from roundtable_console.store import service
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.models import AgentSession
from roundtable_console.store.errors import DatabaseUnavailable
from roundtable_console.store.hosts.launches import HostLaunch, launch_by_host, plan_launch_by_host
from roundtable_console.store.reads.listing import Selection
from roundtable_console.store.reads.paging import Page
from roundtable_console.store.reads.projections import PAGED
from roundtable_console.store.records import SessionFields
from roundtable_console.store.resume import launch
from roundtable_console.store.resume.launch import LaunchPlan
from roundtable_console.store.service import BriefingView, LogBatch
from roundtable_console.store.writes.bulk import BulkItem
from roundtable_console.store.writes.bulk_plan import PREVIEW_ITEMS, BulkPlan, plan_bulk
from roundtable_console.store.writes.bulk_run import BulkOutcome, run_bulk
from roundtable_console.store.writes.lifecycle_outcomes import ActionOutcome, TerminationImpact


def require_store(ctx: ConsoleContext) -> Store:
    if ctx.store is None:
        raise DatabaseUnavailable("The store is not open yet; wait a moment and try again.")
    return ctx.store


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


def plan_bulk_action(
    ctx: ConsoleContext,
    action: str,
    selection: Selection,
    *,
    run_key: str,
    impact_details: str | None = None,
) -> BulkPlan:
    """What ``action`` would do to each selected session now (the first few of each outcome
    kept, every one counted), under the run's key: a session it already did is a replay."""
    return plan_bulk(
        store=require_store(ctx),
        action=action,
        selection=selection,
        impact_details=impact_details,
        run_key=run_key,
        clock=ctx.clock,
        keep=PREVIEW_ITEMS,
    )


def run_bulk_action(
    ctx: ConsoleContext,
    action: str,
    selection: Selection,
    *,
    run_key: str,
    impact_details: str | None,
    progress: Callable[[int, int], None],
    cancelled: Callable[[], bool],
    on_items: Callable[[Sequence[BulkItem]], None],
) -> BulkOutcome:
    """``action`` on every selected session as the operator, each under its own key derived
    from ``run_key``; the outcome keeps the first few items of each outcome, ``on_items`` gets
    them all as each transaction commits."""
    return run_bulk(
        store=require_store(ctx),
        action=action,
        selection=selection,
        actor=ctx.operator,
        run_key=run_key,
        impact_details=impact_details,
        clock=ctx.clock,
        progress=progress,
        cancelled=cancelled,
        on_items=on_items,
        keep=PREVIEW_ITEMS,
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


def read_launch(ctx: ConsoleContext, session_id: str) -> LaunchPlan:
    """The session's briefing and what resuming it would start here (store.resume.launch)."""
    from roundtable_console.agents.operations import machine_name

    return launch.read_launch(
        store=require_store(ctx),
        adapters=ctx.adapters,
        session_id=session_id,
        clock=ctx.clock,
        path=os.environ.get("PATH"),
        here=machine_name(),
    )


def read_launch_anywhere(ctx: ConsoleContext, session_id: str) -> LaunchPlan | HostLaunch:
    """``R``'s plan: by the session's host when it runs on another machine whose host the store
    knows (``store.hosts.launches``), else here (``read_launch``)."""
    from roundtable_console.agents.operations import machine_name

    by_host = plan_launch_by_host(
        store=require_store(ctx), adapters=ctx.adapters, session_id=session_id,
        here=machine_name(), clock=ctx.clock,
    )  # fmt: skip
    return read_launch(ctx, session_id) if by_host is None else by_host


def launch_on_host(ctx: ConsoleContext, plan: HostLaunch, idempotency_key: str) -> ActionOutcome:
    """In a worker: the agent started by its host, after the resume (``launch_by_host``)."""
    outcome: ActionOutcome = launch_by_host(
        store=require_store(ctx), plan=plan, actor=ctx.operator,
        idempotency_key=idempotency_key, clock=ctx.clock,
    )  # fmt: skip
    return outcome


def resume_for_launch(ctx: ConsoleContext, plan: LaunchPlan, idempotency_key: str) -> ActionOutcome:
    """The lifecycle resume before a launch, as the operator, of the row the plan was made from."""
    return launch.resume_for_launch(
        store=require_store(ctx),
        launch=plan,
        actor=ctx.operator,
        idempotency_key=idempotency_key,
        clock=ctx.clock,
    )


def record_launch(
    ctx: ConsoleContext, session_id: str, pane: str, socket: str | None, server_pid: str | None
) -> None:
    """That the operator started the session's agent in tmux pane ``pane``."""
    from roundtable_console.store.service import record_launch as record

    record(
        store=require_store(ctx),
        session_id=session_id,
        tmux_pane=pane,
        tmux_socket=socket,
        tmux_server_pid=server_pid,
        actor=ctx.operator,
        clock=ctx.clock,
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
