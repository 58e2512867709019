"""The console on the store opened directly (``StoreConsole``, one implementation of
``screens.source.ConsoleSource``): each read and write a ``store.service`` function (or the
agents' own, for replies and stops), called with what the console's context knows (the store,
the operator, the clock, the adapters). Each is a blocking call meant for a thread worker;
nothing here touches a widget.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roundtable_console.store.errors import DatabaseUnavailable

if TYPE_CHECKING:
    from roundtable_console.agents.budget_stops import BudgetStopper
    from roundtable_console.agents.stopping import AgentStopped
    from roundtable_console.screens.context import ConsoleContext
    from roundtable_console.store.budgets.standing import Crossing
    from roundtable_console.store.db.database import Store
    from roundtable_console.store.hosts.launches import HostLaunch
    from roundtable_console.store.hosts.new_work import NewWork
    from roundtable_console.store.hosts.registry import HostRow
    from roundtable_console.store.reads.audit import AuditEntry
    from roundtable_console.store.reads.listing import Selection, SessionFilter
    from roundtable_console.store.reads.overview import Overview
    from roundtable_console.store.reads.paging import Page
    from roundtable_console.store.records import SessionFields
    from roundtable_console.store.replies.sending import ReplyRoute, SentReply
    from roundtable_console.store.requests.records import PermissionRequestRecord
    from roundtable_console.store.resume.launch import LaunchPlan
    from roundtable_console.store.service import BriefingView, LogBatch
    from roundtable_console.store.window.layout import Groups
    from roundtable_console.store.window.questions import ClockMoved, ReadResult, RowsAsked
    from roundtable_console.store.window.rows import GroupCounts, StatusCounts
    from roundtable_console.store.writes.bulk import BulkItem
    from roundtable_console.store.writes.bulk_plan import BulkPlan
    from roundtable_console.store.writes.bulk_run import BulkOutcome
    from roundtable_console.store.writes.lifecycle_outcomes import ActionOutcome, TerminationImpact


def require_store(ctx: ConsoleContext) -> Store:
    if ctx.store is None:
        raise DatabaseUnavailable("The store is not open yet; wait a moment and try again.")
    return ctx.store


class StoreConsole:
    """The console's reads and actions on ``ctx.store``, once it is open (before: refused in
    words, ``require_store``)."""

    def __init__(self, ctx: ConsoleContext) -> None:
        self.ctx = ctx
        # The counts by status and by group, kept while the store does not change.
        self._counts: StatusCounts | None = None
        self._groups: GroupCounts | None = None
        # Stops what the console's stop budgets at 100 % count (agents.budget_stops).
        self.budget_stopper: BudgetStopper | None = None

    @property
    def ready(self) -> bool:
        return self.ctx.store is not None

    @property
    def store(self) -> Store:
        return require_store(self.ctx)

    # -- the list -----------------------------------------------------------------------------

    def read_rows(self, asked: RowsAsked) -> ReadResult | ClockMoved:
        from roundtable_console.store.window.rows import GroupCounts, StatusCounts, read_rows

        if self._counts is None or self._groups is None:
            self._counts, self._groups = StatusCounts(), GroupCounts()
        return read_rows(store=self.store, asked=asked, counts=self._counts, groups=self._groups)

    def count_rows(self, filters: SessionFilter) -> int:
        from roundtable_console.store.window.rows import count_rows

        return count_rows(store=self.store, filters=filters)

    def count_grouped(self, grouping: str, filters: SessionFilter, descending: bool) -> Groups:
        from roundtable_console.store.window.rows import count_grouped

        return count_grouped(
            store=self.store, grouping=grouping, filters=filters, descending=descending
        )

    def count_marked(self, selection: Selection) -> int:
        from roundtable_console.store.window.rows import count_marked

        return count_marked(store=self.store, selection=selection)

    def admitted_among(self, filters: SessionFilter, ids: Sequence[str]) -> set[str]:
        from roundtable_console.store.window.rows import admitted_among

        return admitted_among(store=self.store, filters=filters, ids=list(ids))

    # -- one session --------------------------------------------------------------------------

    def load_session(self, session_id: str) -> SessionFields:
        from roundtable_console.store import service

        return service.read_session(store=self.store, session_id=session_id)

    def perform_action(
        self,
        action: str,
        session: SessionFields,
        *,
        idempotency_key: str | None = None,
        impact_details: str | None = None,
    ) -> ActionOutcome:
        """One lifecycle action as the operator, against the version the operator saw."""
        from roundtable_console.store import service

        terminate = {} if impact_details is None else {"impact_details": impact_details}
        return service.perform_action(
            store=self.store, action=action, session_id=session.id, actor=self.ctx.operator,
            idempotency_key=idempotency_key, expected_version=session.version,
            clock=self.ctx.clock, **terminate,
        )  # fmt: skip

    def termination_impact(self, session_id: str) -> TerminationImpact:
        from roundtable_console.store import service

        return service.read_termination_impact(
            store=self.store, session_id=session_id, clock=self.ctx.clock
        )

    def read_projection(
        self, name: str, session_id: str, limit: int, cursor: str | None
    ) -> Page[dict[str, Any]] | dict[str, Any]:
        """A page of a paged projection (``limit`` rows after ``cursor``), else its one record."""
        from roundtable_console.store import service
        from roundtable_console.store.reads.projections import PAGED

        if name in PAGED:
            return service.read_projection_page(
                store=self.store, name=name, session_id=session_id, limit=limit, cursor=cursor
            )
        return service.read_projection(store=self.store, name=name, session_id=session_id)

    def read_log_after(self, session_id: str, last_id: int | None) -> LogBatch:
        from roundtable_console.store import service

        return service.read_log_after(store=self.store, session_id=session_id, last_id=last_id)

    def read_briefing(self, session_id: str) -> BriefingView:
        from roundtable_console.store import service

        return service.read_briefing(
            store=self.store, adapters=self.ctx.adapters, session_id=session_id,
            clock=self.ctx.clock,
        )  # fmt: skip

    def session_heartbeats(self, session_id: str) -> list[int]:
        from roundtable_console.store.reads.overview import session_heartbeats

        return session_heartbeats(store=self.store, session_id=session_id, now=self.ctx.now())

    def read_transcript(self, session: SessionFields, before: int | None) -> Any:
        from roundtable_console.screens.session.transcript import read_transcript

        return read_transcript(self.store, session, before)

    def read_changes(self, session: SessionFields, offset: int) -> dict[str, Any]:
        from roundtable_console.store.errors import StoreError
        from roundtable_console.store.hosts.changes import changes_on_store

        try:
            return changes_on_store(self.store, session, offset=offset, clock=self.ctx.clock)
        except StoreError as error:  # a read-only console cannot write the call for its host
            return {"available": False, "reason": "Its changes are read through its host, by a "
                    f"call this console could not write ({error.message})"}  # fmt: skip

    def stop_agent(self, session_id: str) -> AgentStopped:
        """The session's agent stopped where it runs, recorded with the operator."""
        from roundtable_console.agents.stopping import stop_session_agent

        return stop_session_agent(
            self.store, session_id, actor=self.ctx.operator, clock=self.ctx.clock
        )

    # -- resuming with its agent --------------------------------------------------------------

    def read_launch(self, session_id: str) -> LaunchPlan:
        """The session's briefing and what resuming it would start here (store.resume.launch)."""
        from roundtable_console.agents.operations import machine_name
        from roundtable_console.store.resume import launch

        return launch.read_launch(
            store=self.store, adapters=self.ctx.adapters, session_id=session_id,
            clock=self.ctx.clock, path=os.environ.get("PATH"), here=machine_name(),
        )  # fmt: skip

    def read_launch_anywhere(self, session_id: str) -> LaunchPlan | HostLaunch:
        """``R``'s plan: by the session's host when it runs on another machine whose host the
        store knows (``store.hosts.launches``), else here (``read_launch``)."""
        from roundtable_console.agents.operations import machine_name
        from roundtable_console.store.hosts.launches import plan_launch_by_host

        by_host = plan_launch_by_host(
            store=self.store, adapters=self.ctx.adapters, session_id=session_id,
            here=machine_name(), clock=self.ctx.clock,
        )  # fmt: skip
        return self.read_launch(session_id) if by_host is None else by_host

    def launch_on_host(self, plan: HostLaunch, idempotency_key: str) -> ActionOutcome:
        """The agent started by its host, after the resume (``launch_by_host``)."""
        from roundtable_console.store.hosts.launches import launch_by_host

        outcome: ActionOutcome = launch_by_host(
            store=self.store, plan=plan, actor=self.ctx.operator,
            idempotency_key=idempotency_key, clock=self.ctx.clock,
        )  # fmt: skip
        return outcome

    def resume_for_launch(self, plan: LaunchPlan, idempotency_key: str) -> ActionOutcome:
        """The lifecycle resume before a launch, as the operator, of the row the plan was made
        from."""
        from roundtable_console.store.resume import launch

        return launch.resume_for_launch(
            store=self.store, launch=plan, actor=self.ctx.operator,
            idempotency_key=idempotency_key, clock=self.ctx.clock,
        )  # fmt: skip

    def record_launch(
        self, session_id: str, pane: str, socket: str | None, server_pid: str | None
    ) -> None:
        """That the operator started the session's agent in tmux pane ``pane``."""
        from roundtable_console.store.service import record_launch

        record_launch(
            store=self.store, session_id=session_id, tmux_pane=pane, tmux_socket=socket,
            tmux_server_pid=server_pid, actor=self.ctx.operator, clock=self.ctx.clock,
        )  # fmt: skip

    # -- many sessions ------------------------------------------------------------------------

    def plan_bulk_action(
        self, action: str, selection: Selection, *, run_key: str, impact_details: str | None = None
    ) -> BulkPlan:
        """What ``action`` would do to each selected session now (the first few of each outcome
        kept, every one counted), under the run's key: a session it already did is a replay."""
        from roundtable_console.store.writes.bulk_plan import PREVIEW_ITEMS, plan_bulk

        return plan_bulk(
            store=self.store, action=action, selection=selection, impact_details=impact_details,
            run_key=run_key, clock=self.ctx.clock, keep=PREVIEW_ITEMS,
        )  # fmt: skip

    def run_bulk_action(
        self,
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
        from ``run_key``; the outcome keeps the first few items of each outcome, ``on_items``
        gets them all as each transaction commits."""
        from roundtable_console.store.writes.bulk_plan import PREVIEW_ITEMS
        from roundtable_console.store.writes.bulk_run import run_bulk

        return run_bulk(
            store=self.store, action=action, selection=selection, actor=self.ctx.operator,
            run_key=run_key, impact_details=impact_details, clock=self.ctx.clock,
            progress=progress, cancelled=cancelled, on_items=on_items, keep=PREVIEW_ITEMS,
        )  # fmt: skip

    # -- the agents' questions ----------------------------------------------------------------

    def pending_requests(self, session_id: str | None) -> list[PermissionRequestRecord]:
        """Pending requests (of one session, or the fleet's), oldest first."""
        from roundtable_console.store.requests.reads import list_requests

        return list_requests(store=self.store, session_id=session_id, clock=self.ctx.clock)

    def decide_request(
        self,
        record: PermissionRequestRecord,
        decision: str,
        message: str | None,
        suggestion: int | None,
        hidden_seen: bool = False,
    ) -> PermissionRequestRecord:
        from roundtable_console.store.requests.deciding import decide_request

        return decide_request(
            store=self.store, request_id=record.id, decision=decision, actor=self.ctx.operator,
            message=message, suggestion=suggestion, hidden_seen=hidden_seen,
            clock=self.ctx.clock,
        )  # fmt: skip

    def reply_route(self, session_id: str) -> tuple[SessionFields, ReplyRoute]:
        """The session as it is now, and what can carry a reply to it."""
        from roundtable_console.agents.replying import reply_route
        from roundtable_console.store.reads.sessions import get_session

        store = self.store
        route = reply_route(store, session_id, clock=self.ctx.clock)
        with store.read() as db:
            session = get_session(db=db, session_id=session_id)
        return session, route

    def send_reply(self, session_id: str, message: str, via: str | None) -> SentReply:
        from roundtable_console.agents.replying import reply

        return reply(
            self.store, session_id, message, self.ctx.operator, clock=self.ctx.clock,
            expected_via=via,
        )  # fmt: skip

    # -- the fleet ----------------------------------------------------------------------------

    def fleet_overview(self) -> Overview:
        from roundtable_console.store.reads.overview import fleet_overview

        return fleet_overview(
            store=self.store, now=self.ctx.now(), stale_after=self.ctx.stale_after,
            budgets=self.ctx.budgets,
        )  # fmt: skip

    def budget_news(self, since: str) -> list[Crossing]:
        from roundtable_console.store.budgets.standing import cross_budgets, crossings_since

        if self.ctx.budgets and not self.ctx.read_only:
            cross_budgets(self.store, self.ctx.budgets, clock=self.ctx.clock)
            if any(budget.stop for budget in self.ctx.budgets):
                from roundtable_console.agents.budget_stops import BudgetStopper

                if self.budget_stopper is None:
                    self.budget_stopper = BudgetStopper(self.store, clock=self.ctx.clock)
                self.budget_stopper.stop_due(self.ctx.budgets)
        with self.store.read() as db:
            return crossings_since(db, since)

    def audit_page(self, cursor: str | None) -> Page[AuditEntry]:
        from roundtable_console.store.reads.audit import audit_page

        with self.store.read() as db:
            return audit_page(db=db, limit=self.ctx.page_size, cursor=cursor)

    def start_new(self, work: NewWork) -> dict[str, Any]:
        return self._as_operator().start_new(work)

    def finish(self, session_id: str, discard: bool) -> dict[str, Any]:
        return self._as_operator().finish(session_id, discard)

    def _as_operator(self) -> Any:
        from roundtable_console.store.source import StoreSource

        return StoreSource(require_store(self.ctx), self.ctx.clock, actor=self.ctx.operator)

    def list_hosts(self) -> list[HostRow]:
        from roundtable_console.store.hosts.registry import list_hosts

        with self.store.read() as db:
            return list_hosts(db, clock=self.ctx.clock)


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
