"""The terminal console through ``roundtable serve`` (``screens.source.ConsoleSource``'s second
implementation): the list's reads are the server's console routes, answered by the very read
functions a console on the store calls (``store.window``, in their JSON); one session, its
actions, its agent's questions and the audit trail are the server's routes for people's clients
and its workspace routes. Who acts is the token's name: the server records it.

What the console does not offer through a server yet is refused in words
(``NotThroughServer``): ``R``'s launches."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from roundtable_console.client.calls import ServerCalls, checked_answers
from roundtable_console.client.server_source import path_part, session_path
from roundtable_console.store.errors import NotThroughServer
from roundtable_console.store.reads.paging import Page
from roundtable_console.store.records import SessionFields, SessionRecord
from roundtable_console.store.window import wire

if TYPE_CHECKING:
    from roundtable_console.agents.stopping import AgentStopped
    from roundtable_console.store.hosts.registry import HostRow
    from roundtable_console.store.reads.audit import AuditEntry
    from roundtable_console.store.reads.listing import Selection, SessionFilter
    from roundtable_console.store.reads.overview import Overview
    from roundtable_console.store.replies.sending import ReplyRoute, SentReply
    from roundtable_console.store.requests.records import PermissionRequestRecord
    from roundtable_console.store.service import BriefingView, LogBatch
    from roundtable_console.store.window.layout import Groups
    from roundtable_console.store.window.questions import ClockMoved, ReadResult, RowsAsked
    from roundtable_console.store.writes.bulk import BulkItem
    from roundtable_console.store.writes.bulk_plan import BulkPlan
    from roundtable_console.store.writes.bulk_run import BulkOutcome
    from roundtable_console.store.writes.lifecycle_outcomes import (
        ActionOutcome,
        TerminationImpact,
    )

CONSOLE = "/api/v1/console"
# How long a run on many sessions may take (each is its own short transaction on the server).
BULK_SECONDS = 600.0


def _not_yet(what: str) -> NotThroughServer:
    return NotThroughServer(
        f"Through a server, the console does not {what} yet: open the console on the store "
        "(roundtable tui --db URL), or use the web console."
    )


@checked_answers
class ServerConsole:
    def __init__(self, calls: ServerCalls, page_size: int) -> None:
        self.calls = calls
        self.page_size = page_size

    @property
    def ready(self) -> bool:
        return True

    # -- the list -----------------------------------------------------------------------------

    def _ask(self, path: str, body: dict[str, Any]) -> Any:
        return self.calls.post(f"{CONSOLE}/{path}", body=body, headers={}).json()

    def read_rows(self, asked: RowsAsked) -> ReadResult | ClockMoved:
        return wire.answer_from(self._ask("rows", wire.asked_json(asked)), asked.read)

    def count_rows(self, filters: SessionFilter) -> int:
        return int(self._ask("count", {"filters": wire.filter_json(filters)})["total"])

    def count_grouped(self, grouping: str, filters: SessionFilter, descending: bool) -> Groups:
        body = {"filters": wire.filter_json(filters), "grouping": grouping,
                "descending": descending}  # fmt: skip
        return wire.groups_from(self._ask("count", body)["groups"])

    def count_marked(self, selection: Selection) -> int:
        return int(self._ask("selected", {"selection": wire.selection_json(selection)})["total"])

    def admitted_among(self, filters: SessionFilter, ids: Sequence[str]) -> set[str]:
        body = {"filters": wire.filter_json(filters), "ids": list(ids)}
        return set(self._ask("admitted", body)["ids"])

    # -- one session --------------------------------------------------------------------------

    def load_session(self, session_id: str) -> SessionFields:
        return SessionRecord.from_json(self.calls.get(session_path(session_id)))

    def perform_action(
        self,
        action: str,
        session: SessionFields,
        *,
        idempotency_key: str | None = None,
        impact_details: str | None = None,
    ) -> ActionOutcome:
        """Against the version the operator saw (If-Match)."""
        from roundtable_console.store.writes.lifecycle_outcomes import ActionOutcome

        headers = {"If-Match": str(session.version)}
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        body = {"impact_details": impact_details} if impact_details is not None else None
        answer = self.calls.post(session_path(session.id, action), body=body, headers=headers)
        replayed = answer.headers.get("idempotent-replayed") == "true"
        return ActionOutcome.from_json(answer.json(), replayed=replayed)

    def termination_impact(self, session_id: str) -> TerminationImpact:
        from roundtable_console.store.writes.lifecycle_outcomes import TerminationImpact

        return TerminationImpact.from_json(
            self.calls.get(session_path(session_id, "termination-impact"))
        )

    def read_projection(
        self, name: str, session_id: str, limit: int, cursor: str | None
    ) -> Page[dict[str, Any]] | dict[str, Any]:
        from roundtable_console.store.reads.projections import PAGED

        params = {"limit": str(limit), "cursor": cursor or ""}
        body = self.calls.get(session_path(session_id, "projections", name), params)
        if name not in PAGED:
            return dict(body)
        return Page(list(body["items"]), body.get("next_cursor"))

    def read_log_after(self, session_id: str, last_id: int | None) -> LogBatch:
        from roundtable_console.store.service import LogBatch

        params = {"after": "" if last_id is None else str(last_id)}
        body = self.calls.get(session_path(session_id, "history"), params)
        return LogBatch(list(body["items"]), body.get("last_id"), bool(body.get("more_waiting")))

    def read_briefing(self, session_id: str) -> BriefingView:
        """The briefing and the plan the server makes (with the server's adapters)."""
        from roundtable_console.store.resume.briefing import Briefing
        from roundtable_console.store.resume.plan import ResumePlan
        from roundtable_console.store.service import BriefingView

        body = self.calls.get(session_path(session_id, "briefing"))
        plan = body["plan"]
        return BriefingView(
            briefing=Briefing.from_json(body["briefing"]),
            plan=ResumePlan(
                bool(plan["resumable"]),
                [str(arg) for arg in plan["resume_argv"]],
                plan.get("reason"),
            ),  # fmt: skip
        )

    def session_heartbeats(self, session_id: str) -> list[int]:
        return [int(n) for n in self.calls.get(session_path(session_id, "heartbeats"))["hours"]]

    def _in_workspace(self, session: SessionFields, *rest: str) -> str:
        """A workspace route of the session (the reference's are by workspace)."""
        workspace = session.effective_workspace_id
        if workspace is None:
            raise NotThroughServer(
                f"The session {session.id!r} belongs to no workspace, and the server reaches "
                "an agent's questions, replies and transcript by workspace."
            )
        return "/".join(["/api/v1/workspaces", quote(workspace, safe=""), "sessions",
                         path_part(session.id), *rest])  # fmt: skip

    def read_transcript(self, session: SessionFields, before: int | None) -> Any:
        from roundtable_console.agents.transcripts import Page as TranscriptPage

        params = {} if before is None else {"before": str(before)}
        body = self.calls.get(self._in_workspace(session, "transcript"), params)
        if not body.get("available"):
            return str(body.get("reason") or "The transcript is not available.")
        return TranscriptPage.from_json(body)

    def stop_agent(self, session_id: str) -> AgentStopped:
        from roundtable_console.agents.stopping import AgentStopped

        path = self._in_workspace(self.load_session(session_id), "stop-agent")
        body = self.calls.post(path, body={}, headers={}).json()
        return AgentStopped(str(body["signal"]), bool(body["exited"]), body.get("via_host"))

    # -- resuming with its agent --------------------------------------------------------------

    def read_launch_anywhere(self, session_id: str) -> Any:
        raise _not_yet("start an agent with R")

    def launch_on_host(self, plan: Any, idempotency_key: str) -> ActionOutcome:
        raise _not_yet("start an agent with R")

    def resume_for_launch(self, plan: Any, idempotency_key: str) -> ActionOutcome:
        raise _not_yet("start an agent with R")

    def record_launch(
        self, session_id: str, pane: str, socket: str | None, server_pid: str | None
    ) -> None:
        raise _not_yet("start an agent with R")

    # -- many sessions ------------------------------------------------------------------------

    def plan_bulk_action(
        self, action: str, selection: Selection, *, run_key: str, impact_details: str | None = None
    ) -> BulkPlan:
        from roundtable_console.store.writes.bulk_wire import plan_from

        body = {"action": action, "selection": wire.selection_json(selection),
                "run_key": run_key, "impact_details": impact_details}  # fmt: skip
        return plan_from(self._ask("bulk-plan", body))

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
        """One request runs the whole action on the server: its progress is told at its end,
        and it cannot be stopped midway (a retry under the same key does the rest)."""
        from roundtable_console.store.writes.bulk_wire import outcome_from

        body = {"selection": wire.selection_json(selection), "impact_details": impact_details}
        answer = self.calls.post(
            f"/api/v1/bulk/{quote(action, safe='')}", body=body,
            headers={"Idempotency-Key": run_key}, timeout=BULK_SECONDS,
        )  # fmt: skip
        outcome = outcome_from(answer.json(), run_key)
        progress(outcome.tally.total, outcome.total)
        on_items(outcome.tally.items)
        return outcome

    # -- the agents' questions ----------------------------------------------------------------

    def pending_requests(self, session_id: str | None) -> list[PermissionRequestRecord]:
        from roundtable_console.store.requests.records import PermissionRequestRecord

        if session_id is None:
            body = self.calls.get("/api/v1/requests")
        else:
            body = self.calls.get(self._in_workspace(self.load_session(session_id), "requests"))
        return [PermissionRequestRecord.from_json(item) for item in body["items"]]

    def decide_request(
        self,
        record: PermissionRequestRecord,
        decision: str,
        message: str | None,
        suggestion: int | None,
        hidden_seen: bool = False,
    ) -> PermissionRequestRecord:
        from roundtable_console.store.requests.records import PermissionRequestRecord

        session = self.load_session(record.session_id)
        path = self._in_workspace(session, "requests", quote(record.id, safe=""), "decision")
        body = {"decision": decision, "message": message, "suggestion": suggestion,
                "despite_hidden": hidden_seen}  # fmt: skip
        headers = {"Idempotency-Key": f"decide-{record.id}-{decision}"}
        answer = self.calls.post(path, body=body, headers=headers).json()
        return PermissionRequestRecord.from_json(answer)

    def reply_route(self, session_id: str) -> tuple[SessionFields, ReplyRoute]:
        from roundtable_console.store.replies.sending import ReplyRoute

        session = self.load_session(session_id)
        body = self.calls.get(self._in_workspace(session, "reply"))
        return session, ReplyRoute(via=body.get("via"), words=str(body.get("words") or ""))

    def send_reply(self, session_id: str, message: str, via: str | None) -> SentReply:
        import secrets

        from roundtable_console.store.replies.sending import SentReply

        path = self._in_workspace(self.load_session(session_id), "reply")
        headers = {"Idempotency-Key": f"reply-{secrets.token_urlsafe(12)}"}
        body = self.calls.post(path, body={"message": message, "via": via}, headers=headers)
        sent = body.json()
        return SentReply(
            session_id=str(sent["session_id"]), via=str(sent["via"]), message=str(sent["message"]),
            hidden=bool(sent["hidden"]), replied_by=str(sent["replied_by"]),
            replied_at=str(sent["replied_at"]),
        )  # fmt: skip

    # -- the fleet ----------------------------------------------------------------------------

    def fleet_overview(self) -> Overview:
        from roundtable_console.store.reads.overview import overview_from

        return overview_from(self.calls.get("/api/v1/overview"))

    def audit_page(self, cursor: str | None) -> Page[AuditEntry]:
        from roundtable_console.store.reads.audit import AuditEntry

        params = {"limit": str(self.page_size), "cursor": cursor or ""}
        body = self.calls.get("/api/v1/audit", params)
        return Page([AuditEntry.from_json(item) for item in body["items"]],
                    body.get("next_cursor"))  # fmt: skip

    def list_hosts(self) -> list[HostRow]:
        from roundtable_console.store.hosts.facts import HostFacts
        from roundtable_console.store.hosts.registry import HostRow

        return [
            HostRow(
                facts=HostFacts.from_json(item),
                online=bool(item.get("online")),
                connected_at=item.get("connected_at"),
                last_seen_at=item.get("last_seen_at"),
                first_seen_at=str(item.get("first_seen_at") or ""),
                sessions=int(item.get("sessions") or 0),
                active=int(item.get("active_sessions") or 0),
            )  # fmt: skip
            for item in self.calls.get("/api/v1/hosts")["hosts"]
        ]
