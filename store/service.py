"""What the CLI and the console both do, each written once: a lifecycle action, the termination
impact, a session, a projection, the briefing with its resume plan, the session's history.

Each function is one unit of work on an opened ``Store`` (one transaction; the briefing's is one
snapshot) from plain inputs, and raises the store's typed errors. Callers bring what they know:
the CLI its flags, the console its context; neither opens a transaction of its own for these.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection

from roundtable_console.store.access.walls import OPEN, Wall
from roundtable_console.store.clock import Clock, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.reads import sessions
from roundtable_console.store.rules import (
    LAUNCH_EVENT,
    PAGED_PROJECTIONS,
    REVEAL_EVENT,
    SENSITIVE_FIELDS,
)
from roundtable_console.store.validation import MAX_LIMIT

# The modules behind the actions, the projections and the briefing are imported by the
# functions that use them: `roundtable sessions show`, an agent's read-back, needs none of them.
if TYPE_CHECKING:
    from roundtable_console.store.db.models import AgentSession
    from roundtable_console.store.reads.paging import Page
    from roundtable_console.store.resume.adapters import AdapterConfig
    from roundtable_console.store.resume.briefing import Briefing
    from roundtable_console.store.resume.plan import ResumePlan
    from roundtable_console.store.writes.lifecycle_outcomes import ActionOutcome, TerminationImpact


def perform_action(
    *,
    store: Store,
    action: str,
    before: Callable[[Connection], object] | None = None,
    within: Callable[[Connection, ActionOutcome], None] | None = None,
    **arguments: Any,
) -> ActionOutcome:
    """One lifecycle action (``store.writes.lifecycle.ACTIONS``) in one write transaction.
    ``arguments`` are the action's own: ``session_id``, ``actor``, ``idempotency_key``,
    ``expected_version`` (refuses a row that changed since), ``clock``, and terminate's
    ``impact_details``. In the same transaction, ``before`` may refuse first (the server's
    access checks) and ``within`` records what follows from the outcome (the server's answer
    under its idempotency key): all of it commits, or none."""
    from roundtable_console.store.writes.lifecycle import ACTIONS

    with store.write(durable=True) as db:
        if before is not None:
            before(db)
        outcome: ActionOutcome = ACTIONS[action](db=db, **arguments)
        if within is not None:
            within(db, outcome)
        return outcome


def read_termination_impact(
    *, store: Store, session_id: str, clock: Clock = system_clock, wall: Wall = OPEN
) -> TerminationImpact:
    """The session and its agent's active claims, as a human reads them before terminating
    (behind a ``wall``: those of the session's workspace, ``store.access.walls``)."""
    from roundtable_console.store.writes.lifecycle_outcomes import termination_impact

    with store.read() as db:
        return termination_impact(db=db, session_id=session_id, clock=clock, wall=wall)


def read_session(*, store: Store, session_id: str) -> AgentSession:
    with store.read() as db:
        return sessions.get_session(db=db, session_id=session_id)


def reveal_field(
    *,
    store: Store,
    session_id: str,
    field: str,
    actor: str,
    wall: Wall = OPEN,
    clock: Clock = system_clock,
) -> str:
    """A sensitive field's value, read in the transaction that records who revealed it and
    when: a ``revealed`` history row with the reader as its actor, in the audit trail."""
    from roundtable_console.store.clock import format_ts
    from roundtable_console.store.writes.history import append_session_event

    if field not in SENSITIVE_FIELDS:
        raise ValueError(f"{field!r} is not one of the session's sensitive fields")
    with store.write(durable=True) as db:
        session = wall.checked(sessions.get_session(db=db, session_id=session_id))
        append_session_event(
            db,
            session_id=session.id,
            event_type=REVEAL_EVENT,
            payload={"field": field},
            now=format_ts(clock()),
            actor=actor,
        )
        return str(getattr(session, field) or "")


def record_launch(
    *,
    store: Store,
    session_id: str,
    tmux_pane: str,
    tmux_socket: str | None,
    actor: str,
    tmux_server_pid: str | None = None,
    clock: Clock = system_clock,
    machine: str | None = None,
    via_host: str | None = None,
    new: dict[str, Any] | None = None,
) -> None:
    """That an operator started the session's agent in tmux pane ``tmux_pane`` (of the tmux
    server at ``tmux_socket``, whose process is ``tmux_server_pid``, on the machine named
    ``machine``: this one unless a host, ``via_host``, started it there): a ``launched``
    history row with its actor, which the console reads to show the pane (``last_launch``)
    while that very server runs (pane ids start again with a new one)."""
    import socket

    payload: dict[str, Any] = {"tmux_pane": tmux_pane, "host": machine or socket.gethostname()}
    if via_host:
        payload["via_host"] = via_host
    if tmux_socket:
        payload["tmux_socket"] = tmux_socket
    if tmux_server_pid:
        payload["tmux_server_pid"] = tmux_server_pid
    if new:  # a new session (``store.hosts.new_work``): what it was started as
        payload["new"] = new
    _record_quiet(store, session_id, LAUNCH_EVENT, payload, actor, clock)


def record_agent_stopped(
    *,
    store: Store,
    session_id: str,
    actor: str,
    payload: dict[str, Any],
    clock: Clock = system_clock,
) -> None:
    """That an operator stopped the session's agent process (the signal it took, whether it
    exited, the host that did it): an ``agent_stopped`` history row with its actor."""
    from roundtable_console.store.rules import AGENT_STOP_EVENT

    _record_quiet(store, session_id, AGENT_STOP_EVENT, payload, actor, clock)


def _record_quiet(
    store: Store,
    session_id: str,
    event_type: str,
    payload: dict[str, Any],
    actor: str,
    clock: Clock,
) -> None:
    """A history row of the session that changes nothing of it (``rules.QUIET_EVENTS``)."""
    from roundtable_console.store.clock import format_ts
    from roundtable_console.store.writes.history import append_session_event

    with store.write() as db:
        session = sessions.get_session(db=db, session_id=session_id)
        append_session_event(
            db,
            session_id=session.id,
            event_type=event_type,
            payload=payload,
            now=format_ts(clock()),
            actor=actor,
        )


def read_projection(*, store: Store, name: str, session_id: str) -> dict[str, Any]:
    """One of the projections that are a single record (``store.reads.projections.UNPAGED``)."""
    from roundtable_console.store.reads.projections import PROJECTIONS

    if name in PAGED_PROJECTIONS:
        raise ValueError(f"{name} is read a page at a time: use read_projection_page")
    with store.read() as db:
        record: dict[str, Any] = PROJECTIONS[name](db=db, session_id=session_id)
    return record


def read_projection_page(
    *, store: Store, name: str, session_id: str, limit: int | None = None, cursor: str | None = None
) -> Page[dict[str, Any]]:
    """One page of a paged projection (``store.reads.projections.PAGED``), after ``cursor``."""
    from roundtable_console.store.reads.projections import PROJECTIONS

    if name not in PAGED_PROJECTIONS:
        raise ValueError(f"{name} is not paged: use read_projection")
    with store.read() as db:
        page: Page[dict[str, Any]] = PROJECTIONS[name](
            db=db, session_id=session_id, limit=limit, cursor=cursor
        )
    return page


@dataclass(frozen=True)
class BriefingView:
    """A session's resume briefing and the plan that resumes it, from one snapshot."""

    briefing: Briefing
    plan: ResumePlan

    @property
    def session(self) -> AgentSession:
        return self.briefing.session


def read_briefing(
    *,
    store: Store,
    adapters: Mapping[str, AdapterConfig] | None,
    session_id: str | None = None,
    agent_id: str | None = None,
    clock: Clock = system_clock,
    wall: Wall = OPEN,
) -> BriefingView:
    """The briefing of the session ``session_id``, or of the agent's session (``agent_id``:
    exact ``active`` first, as ``store.reads.sessions.find_by_agent`` orders them), and its plan."""
    from roundtable_console.store.resume.briefing import build_briefing
    from roundtable_console.store.resume.plan import resume_plan

    if (session_id is None) == (agent_id is None):
        raise ValueError("give exactly one of session_id and agent_id")
    with store.read() as db:
        if session_id is None:
            session_id = sessions.find_by_agent(db=db, agent_id=str(agent_id)).id
        briefing = build_briefing(db=db, session_id=session_id, clock=clock, wall=wall)
    plan = resume_plan(
        session=briefing.session, briefing_markdown=briefing.markdown, adapters=adapters
    )
    return BriefingView(briefing=briefing, plan=plan)


@dataclass(frozen=True)
class LogBatch:
    items: list[dict[str, Any]]
    last_id: int | None
    # True when the reader stopped at MAX_LOG_ROWS per call with more still waiting.
    more_waiting: bool = False


MAX_LOG_ROWS = 2000


def read_log_after(*, store: Store, session_id: str, last_id: int | None) -> LogBatch:
    """The session's history rows after ``last_id`` (all of them from the start when None),
    oldest first, in one snapshot, at most about ``MAX_LOG_ROWS`` a call. Payloads come
    redacted from store.reads.projections."""
    from roundtable_console.store.reads.projections import logs_cursor, session_logs

    items: list[dict[str, Any]] = []
    cursor = logs_cursor(session_id, last_id) if last_id is not None else None
    with store.read() as db:
        while True:
            page = session_logs(db=db, session_id=session_id, limit=MAX_LIMIT, cursor=cursor)
            items.extend(page.items)
            cursor = page.next_cursor
            if cursor is None or len(items) >= MAX_LOG_ROWS:
                break
    newest = int(items[-1]["id"]) if items else last_id
    return LogBatch(items=items, last_id=newest, more_waiting=cursor is not None)
