"""What the console reads and does, as one interface the screens talk to
(``ConsoleContext.source``): the store opened directly (``screens.data.StoreConsole``) is one
implementation; the app chooses at start-up. Every method is a blocking call meant for a thread
worker, and every refusal a ``StoreError`` with its code and a sentence. Who acts is the
source's: the operator the console was given, on a store."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from roundtable_console.agents.stopping import AgentStopped
    from roundtable_console.store.budgets.standing import Crossing
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
    from roundtable_console.store.writes.bulk import BulkItem
    from roundtable_console.store.writes.bulk_plan import BulkPlan
    from roundtable_console.store.writes.bulk_run import BulkOutcome
    from roundtable_console.store.writes.lifecycle_outcomes import ActionOutcome, TerminationImpact


class ConsoleSource(Protocol):
    @property
    def ready(self) -> bool:
        """Whether reads and actions can be made now (a store still opening cannot)."""

    # -- the list -----------------------------------------------------------------------------
    def read_rows(self, asked: RowsAsked) -> ReadResult | ClockMoved:
        """The rows a read of the list asks for, with their claims and the counts."""

    def count_rows(self, filters: SessionFilter) -> int: ...

    def count_grouped(self, grouping: str, filters: SessionFilter, descending: bool) -> Groups: ...

    def count_marked(self, selection: Selection) -> int: ...

    def admitted_among(self, filters: SessionFilter, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` the filter lets through, as the store decides it."""

    # -- one session --------------------------------------------------------------------------
    def load_session(self, session_id: str) -> SessionFields: ...

    def perform_action(
        self,
        action: str,
        session: SessionFields,
        *,
        idempotency_key: str | None = None,
        impact_details: str | None = None,
    ) -> ActionOutcome:
        """A lifecycle action, against the version of ``session`` the operator saw."""

    def termination_impact(self, session_id: str) -> TerminationImpact: ...

    def read_projection(
        self, name: str, session_id: str, limit: int, cursor: str | None
    ) -> Page[dict[str, Any]] | dict[str, Any]: ...

    def read_log_after(self, session_id: str, last_id: int | None) -> LogBatch: ...

    def read_briefing(self, session_id: str) -> BriefingView: ...

    def session_heartbeats(self, session_id: str) -> list[int]:
        """Heartbeats in each of the last hours, oldest first."""

    def read_transcript(self, session: SessionFields, before: int | None) -> Any:
        """A page of what the agent is doing, else its pane, or why there is neither."""

    def read_changes(self, session: SessionFields, offset: int) -> dict[str, Any]:
        """A page of what the session changed, read by its host (``GET …/changes``'s shape),
        or why it cannot be: ``{"available": false, "reason"}``."""

    def stop_agent(self, session_id: str) -> AgentStopped: ...

    # -- resuming with its agent --------------------------------------------------------------
    def read_launch_anywhere(self, session_id: str) -> LaunchPlan | HostLaunch: ...

    def launch_on_host(self, plan: HostLaunch, idempotency_key: str) -> ActionOutcome: ...

    def resume_for_launch(self, plan: LaunchPlan, idempotency_key: str) -> ActionOutcome: ...

    def record_launch(
        self, session_id: str, pane: str, socket: str | None, server_pid: str | None
    ) -> None: ...

    # -- many sessions ------------------------------------------------------------------------
    def plan_bulk_action(
        self, action: str, selection: Selection, *, run_key: str, impact_details: str | None = None
    ) -> BulkPlan: ...

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
    ) -> BulkOutcome: ...

    # -- the agents' questions ----------------------------------------------------------------
    def pending_requests(self, session_id: str | None) -> list[PermissionRequestRecord]: ...

    def decide_request(
        self,
        record: PermissionRequestRecord,
        decision: str,
        message: str | None,
        suggestion: int | None,
        hidden_seen: bool = False,
    ) -> PermissionRequestRecord: ...

    def reply_route(self, session_id: str) -> tuple[SessionFields, ReplyRoute]: ...

    def send_reply(self, session_id: str, message: str, via: str | None) -> SentReply: ...

    # -- the fleet ----------------------------------------------------------------------------
    def fleet_overview(self) -> Overview: ...

    def budget_news(self, since: str) -> list[Crossing]:
        """The budgets' crossings of 80 % and 100 % claimed at ``since`` (a UTC time) or later
        that the console's operator may see, each budget's highest. On a store, the console
        looks at its configured budgets first (claiming what they crossed, and stopping the
        agents of a ``stop`` budget it claimed at 100 %); through a server, the server does."""

    def audit_page(self, cursor: str | None) -> Page[AuditEntry]: ...

    def list_hosts(self) -> list[HostRow]: ...

    def start_new(self, work: NewWork) -> dict[str, Any]:
        """A new session started on its host (``store.hosts.new_work``): where it runs."""

    def finish(self, session_id: str, discard: bool) -> dict[str, Any]:
        """The session's worktree removed by its host, its branch kept, the session ended
        (``store.hosts.finishing``); ``WorktreeNotClean`` names what is not committed."""
