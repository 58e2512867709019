"""The terminal console through ``roundtable serve`` (``screens.source.ConsoleSource``'s second
implementation): the list's reads are the server's console routes, answered by the very read
functions a console on the store calls (``store.window``, in their JSON); one session, its
actions, its agent's questions, replies, transcript and the audit trail are the server's routes
for people's clients. Who acts is the token's name: the server records it.

``R`` starts the agent where the store's console would: by the session's host through the
server, or here after the server resumed it. A session whose id no path of the server can carry
(a "/" in it) is refused in words (``NotThroughServer``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from roundtable_console.client.calls import ServerCalls, ServerRefused, checked_answers
from roundtable_console.client.server_source import ServerSource, session_path
from roundtable_console.store.errors import HostUnavailable
from roundtable_console.store.reads.paging import Page
from roundtable_console.store.records import SessionFields, SessionRecord
from roundtable_console.store.window import wire

if TYPE_CHECKING:
    from roundtable_console.agents.stopping import AgentStopped
    from roundtable_console.store.budgets.standing import Crossing
    from roundtable_console.store.hosts.launches import HostLaunch
    from roundtable_console.store.hosts.new_work import NewWork
    from roundtable_console.store.hosts.registry import HostRow
    from roundtable_console.store.reads.audit import AuditEntry
    from roundtable_console.store.reads.listing import Selection, SessionFilter
    from roundtable_console.store.reads.overview import Overview
    from roundtable_console.store.replies.sending import ReplyRoute, SentReply
    from roundtable_console.store.requests.records import PermissionRequestRecord
    from roundtable_console.store.resume.adapters import AdapterConfig
    from roundtable_console.store.resume.launch import LaunchPlan
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


@checked_answers
class ServerConsole:
    def __init__(
        self,
        calls: ServerCalls,
        page_size: int,
        adapters: Mapping[str, AdapterConfig] | None = None,
    ) -> None:
        self.calls = calls
        self.page_size = page_size
        # This machine's: what R starts here is planned by them.
        self.adapters = dict(adapters or {})
        # The reads and actions the command line makes through a server too.
        self.sessions = ServerSource(calls)

    @property
    def ready(self) -> bool:
        """Whether the HTTP client is made: until then the list shows the first rows a child
        process read (``client.first_window``), and nothing else is asked."""
        return self.calls.connected

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
        return self.sessions.briefing(session_id)

    def session_heartbeats(self, session_id: str) -> list[int]:
        return [int(n) for n in self.calls.get(session_path(session_id, "heartbeats"))["hours"]]

    def read_transcript(self, session: SessionFields, before: int | None) -> Any:
        from roundtable_console.agents.transcripts import CONSOLE_PAGE
        from roundtable_console.agents.transcripts import Page as TranscriptPage

        params = {"limit": str(CONSOLE_PAGE)}
        if before is not None:
            params["before"] = str(before)
        body = self.calls.get(session_path(session.id, "transcript"), params)
        if not body.get("available"):
            return str(body.get("reason") or "The transcript is not available.")
        return TranscriptPage.from_json(body)

    def read_changes(self, session: SessionFields, offset: int) -> dict[str, Any]:
        return dict(self.calls.get(session_path(session.id, "changes"), {"offset": str(offset)}))

    def stop_agent(self, session_id: str) -> AgentStopped:
        from roundtable_console.agents.stopping import AgentStopped

        body = self.calls.post(session_path(session_id, "stop-agent"), body={}, headers={}).json()
        return AgentStopped(str(body["signal"]), bool(body["exited"]), body.get("via_host"))

    # -- resuming with its agent --------------------------------------------------------------

    def read_launch_anywhere(self, session_id: str) -> LaunchPlan | HostLaunch:
        """``R``'s plan, by the store's rule: by the session's host when it runs on another
        machine whose host the server holds, else here, from the server's briefing and plan."""
        import os

        from roundtable_console.agents.operations import machine_name
        from roundtable_console.store.hosts.launches import HostLaunch, offline_words
        from roundtable_console.store.resume.launch import plan_launch, planned_here

        view, host = self.sessions.launch_view(session_id, machine_name())
        if host is None:  # started here: by this machine's adapters, never the server's plan
            return plan_launch(planned_here(view, self.adapters), path=os.environ.get("PATH"))
        if host.online is False:
            raise HostUnavailable(offline_words(view.session.id, host))
        return HostLaunch(session=view.session, host=host.name, prompt=view.briefing.markdown)

    def launch_on_host(self, plan: HostLaunch, idempotency_key: str) -> ActionOutcome:
        """The server checks again, resumes the session as it was read and asks its host."""
        return self.sessions.launch_by_host(plan.session, idempotency_key).outcome

    def resume_for_launch(self, plan: LaunchPlan, idempotency_key: str) -> ActionOutcome:
        """The lifecycle resume of the row the plan was read from (If-Match), before the agent
        starts here."""
        return self.perform_action("resume", plan.session, idempotency_key=idempotency_key)

    def record_launch(
        self, session_id: str, pane: str, socket: str | None, server_pid: str | None
    ) -> None:
        """Nothing is recorded: a pane on this machine is not the server's to reach, and a
        pane it recorded as its own would be looked for on the server's machine. The agent's
        hooks report the session; its replies go through them."""

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
        """The server runs it and tells its progress as it goes (``POST …/progress``, server-sent
        events); ``cancelled`` is asked after each event, and closing the stream stops the run
        (what was done stays: the same key again does the rest)."""
        from roundtable_console.store.writes.bulk import Tally
        from roundtable_console.store.writes.bulk_plan import PREVIEW_ITEMS
        from roundtable_console.store.writes.bulk_run import BulkOutcome
        from roundtable_console.store.writes.bulk_wire import item_from, outcome_from

        body = {"selection": wire.selection_json(selection), "impact_details": impact_details}
        path = f"/api/v1/bulk/{quote(action, safe='')}/progress"
        tally, total = Tally(PREVIEW_ITEMS), 0
        with self.calls.events(path, body=body, headers={"Idempotency-Key": run_key},
                               timeout=BULK_SECONDS) as events:  # fmt: skip
            for event, data, _ident in events:
                said = json.loads(data)
                if event == "progress":
                    total = int(said["total"])
                    progress(int(said["done"]), total)
                elif event == "items":
                    items: list[BulkItem] = [item_from(item) for item in said]
                    for item in items:
                        tally.add(item)
                    on_items(items)
                elif event == "outcome":
                    return outcome_from(said, run_key)
                elif event == "problem":
                    raise ServerRefused(str(said["code"]), str(said["message"]), status=0)
                if cancelled():
                    break
        return BulkOutcome(action, run_key, total, tally, cancelled=True)

    # -- the agents' questions ----------------------------------------------------------------

    def pending_requests(self, session_id: str | None) -> list[PermissionRequestRecord]:
        return self.sessions.requests(session_id, everything=False)

    def decide_request(
        self,
        record: PermissionRequestRecord,
        decision: str,
        message: str | None,
        suggestion: int | None,
        hidden_seen: bool = False,
    ) -> PermissionRequestRecord:
        from roundtable_console.store.requests.records import PermissionRequestRecord

        path = f"/api/v1/requests/{quote(record.id, safe='')}/decision"
        body = {"decision": decision, "message": message, "suggestion": suggestion,
                "despite_hidden": hidden_seen}  # fmt: skip
        headers = {"Idempotency-Key": f"decide-{record.id}-{decision}"}
        answer = self.calls.post(path, body=body, headers=headers).json()
        return PermissionRequestRecord.from_json(answer)

    def reply_route(self, session_id: str) -> tuple[SessionFields, ReplyRoute]:
        session = self.load_session(session_id)
        return session, self.sessions.route_to(session.id)

    def send_reply(self, session_id: str, message: str, via: str | None) -> SentReply:
        return self.sessions.send_to(session_id, message, via)

    # -- the fleet ----------------------------------------------------------------------------

    def fleet_overview(self) -> Overview:
        from roundtable_console.store.reads.overview import overview_from

        return overview_from(self.calls.get("/api/v1/overview"))

    def budget_news(self, since: str) -> list[Crossing]:
        from roundtable_console.store.budgets.standing import crossing_from

        body = self.calls.get("/api/v1/budgets", params={"since": since})
        return [crossing_from(crossing) for crossing in body.get("crossings", [])]

    def audit_page(self, cursor: str | None) -> Page[AuditEntry]:
        from roundtable_console.store.reads.audit import AuditEntry

        params = {"limit": str(self.page_size), "cursor": cursor or ""}
        body = self.calls.get("/api/v1/audit", params)
        return Page([AuditEntry.from_json(item) for item in body["items"]],
                    body.get("next_cursor"))  # fmt: skip

    def start_new(self, work: NewWork) -> dict[str, Any]:
        return self.sessions.start_new(work)

    def finish(self, session_id: str, discard: bool) -> dict[str, Any]:
        return self.sessions.finish(session_id, discard)

    def list_hosts(self) -> list[HostRow]:
        return self.sessions.hosts()
