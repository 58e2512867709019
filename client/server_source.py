"""The sessions through ``roundtable serve`` (``store.source.SessionSource``): each read and action
one call of the server's routes for people's clients (``/api/v1/sessions``, ``/api/v1/audit``),
answered in the shapes the store's own reads give. The actor is the token's: the server records
who acted from the token, never from the command."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from roundtable_console.client.calls import ServerCalls, checked_answers
from roundtable_console.store.errors import NotThroughServer
from roundtable_console.store.reads.paging import Page
from roundtable_console.store.records import SessionFields, SessionRecord
from roundtable_console.store.safety.display import printable

if TYPE_CHECKING:
    from roundtable_console.store.hosts.new_work import NewWork
    from roundtable_console.store.hosts.registry import HostRow
    from roundtable_console.store.reads.audit import AuditFilter
    from roundtable_console.store.reads.listing import SessionFilter, SessionOrder
    from roundtable_console.store.replies.sending import ReplyRoute, SentReply
    from roundtable_console.store.requests.records import PermissionRequestRecord
    from roundtable_console.store.service import BriefingView
    from roundtable_console.store.writes.lifecycle_outcomes import ActionOutcome

SESSIONS = "/api/v1/sessions"
# A launch waits for the host twice (its check, then its start: LAUNCH_SECONDS each at most).
LAUNCH_CALL_SECONDS = 65.0


def path_part(session_id: str) -> str:
    """A session's id as a part of a URL's path. An id holding "/" cannot be one: the server
    reads an encoded "/" as the end of a part too (``api.routes.documented.PATH_ID``)."""
    if "/" in session_id:
        raise NotThroughServer(
            f"The session {printable(session_id[:80])!r} has a '/' in its id, which no address "
            "of the server can carry: read it on the store (--db URL)."
        )
    return quote(session_id, safe="")


def session_path(session_id: str, *rest: str) -> str:
    return "/".join([SESSIONS, path_part(session_id), *rest])


def list_parameters(
    filters: SessionFilter, order: SessionOrder, limit: int | None, cursor: str | None
) -> list[tuple[str, str]]:
    """A list's query: the server judges staleness by its own clock and its ``stale_after``."""
    params: list[tuple[str, str]] = [("status", status) for status in filters.statuses]
    for name in ("agent_id", "run_id", "workspace_id", "host"):
        value = getattr(filters, name)
        if value is not None:
            params.append((name, value))
    if filters.text:
        params.append(("q", filters.text))
    if filters.stale_before is not None:
        params.append(("stale", "true"))
    if filters.waiting:
        params.append(("waiting", "true"))
    params += [("sort", order.column), ("order", "desc" if order.descending else "asc")]
    if limit is not None:
        params.append(("limit", str(limit)))
    if cursor:
        params.append(("cursor", cursor))
    return params


@checked_answers
class ServerSource:
    def __init__(self, calls: ServerCalls) -> None:
        self.calls = calls

    def list_sessions(
        self, filters: SessionFilter, order: SessionOrder, limit: int | None, cursor: str | None
    ) -> Page[SessionFields]:
        body = self.calls.get(SESSIONS, list_parameters(filters, order, limit, cursor))
        items: list[SessionFields] = [SessionRecord.from_json(item) for item in body["items"]]
        return Page(items, body.get("next_cursor"))

    def read_session(self, session_id: str) -> SessionFields:
        return SessionRecord.from_json(self.calls.get(session_path(session_id)))

    def act(
        self,
        action: str,
        session_id: str,
        *,
        idempotency_key: str | None = None,
        expected_version: int | None = None,
        impact_details: str | None = None,
    ) -> ActionOutcome:
        from roundtable_console.store.writes.lifecycle import checked_key

        key = checked_key(action, idempotency_key)  # the store's words, before any call
        headers: dict[str, str] = {}
        if key is not None:
            headers["Idempotency-Key"] = key
        if expected_version is not None:
            headers["If-Match"] = str(expected_version)
        body = {"impact_details": impact_details} if impact_details is not None else None
        answer = self.calls.post(session_path(session_id, action), body=body, headers=headers)
        from roundtable_console.store.writes.lifecycle_outcomes import ActionOutcome

        replayed = answer.headers.get("idempotent-replayed") == "true"
        return ActionOutcome.from_json(answer.json(), replayed=replayed)

    def requests(self, session_id: str | None, everything: bool) -> list[PermissionRequestRecord]:
        from roundtable_console.store.requests.records import PermissionRequestRecord

        params = {"session": session_id or "", "all": "true" if everything else "false"}
        body = self.calls.get("/api/v1/requests", params)
        return [PermissionRequestRecord.from_json(item) for item in body["items"]]

    def decide(
        self,
        request_id: str,
        decision: str,
        message: str | None,
        suggestion: int | None,
        hidden_seen: bool,
    ) -> PermissionRequestRecord:
        import secrets

        from roundtable_console.store.requests.records import PermissionRequestRecord

        body = {"decision": decision, "message": message, "suggestion": suggestion,
                "despite_hidden": hidden_seen}  # fmt: skip
        path = f"/api/v1/requests/{quote(request_id, safe='')}/decision"
        headers = {"Idempotency-Key": f"decide-{secrets.token_urlsafe(12)}"}
        return PermissionRequestRecord.from_json(
            self.calls.post(path, body=body, headers=headers).json()
        )

    def projection(self, name: str, session_id: str) -> dict[str, Any]:
        return dict(self.calls.get(session_path(session_id, "projections", name)))

    def budgets(self) -> list[dict[str, Any]]:
        return list(self.calls.get("/api/v1/budgets")["budgets"])

    def projection_page(
        self, name: str, session_id: str, limit: int | None, cursor: str | None
    ) -> Page[dict[str, Any]]:
        params = {"cursor": cursor or ""}
        if limit is not None:
            params["limit"] = str(limit)
        body = self.calls.get(session_path(session_id, "projections", name), params)
        return Page(list(body["items"]), body.get("next_cursor"))

    def audit(
        self, filters: AuditFilter, limit: int | None, cursor: str | None
    ) -> Page[Mapping[str, Any]]:
        params = {
            "actor": filters.actor or "",
            "action": filters.action or "",
            "session": filters.session_id or "",
            # The store's text to the second, as the route takes a time.
            "since": f"{filters.since[:19]}Z" if filters.since else "",
            "cursor": cursor or "",
        }
        if limit is not None:
            params["limit"] = str(limit)
        body = self.calls.get("/api/v1/audit", params)
        return Page(list(body["items"]), body.get("next_cursor"))

    def find_by_agent(self, agent_id: str) -> SessionFields:
        """The agent's session as the store's ``find_by_agent`` orders them: an active one
        first, then the last seen."""
        from roundtable_console.store.errors import SessionNotFound
        from roundtable_console.store.reads.listing import SessionFilter, SessionOrder

        newest = SessionOrder("last_seen", descending=True)
        for statuses in (("active",), ()):
            found = self.list_sessions(SessionFilter(statuses=statuses, agent_id=agent_id),
                                       newest, 1, None).items  # fmt: skip
            if found:
                return found[0]
        raise SessionNotFound(f"Agent {printable(agent_id[:80])!r} has no session.")

    def briefing(self, session_id: str) -> BriefingView:
        """The session's resume briefing and the plan the server makes (its adapters)."""
        return self.launch_view(session_id, None)[0]

    def launch_view(
        self, session_id: str, here: str | None
    ) -> tuple[BriefingView, SessionHost | None]:
        """The briefing and plan, and the host that starts the session when it runs on another
        machine than ``here`` whose host the server knows (the store's ``runs_elsewhere``)."""
        from roundtable_console.store.resume.briefing import Briefing
        from roundtable_console.store.resume.plan import ResumePlan
        from roundtable_console.store.service import BriefingView

        body = self.calls.get(session_path(session_id, "briefing"))
        plan = body["plan"]
        view = BriefingView(
            briefing=Briefing.from_json(body["briefing"]),
            plan=ResumePlan(
                bool(plan["resumable"]),
                [str(arg) for arg in plan["resume_argv"]],
                plan.get("reason"),
            ),
        )  # fmt: skip
        host = body.get("host")
        if not host or view.session.host in (None, "", here):
            return view, None
        online = host.get("online")  # None: not told (a token bound to workspaces)
        return view, SessionHost(str(host["name"]), None if online is None else bool(online),
                                 host.get("last_seen_at"))  # fmt: skip

    def route_to(self, session_id: str) -> ReplyRoute:
        """What can carry a reply to the session now, or why nothing can."""
        from roundtable_console.store.replies.sending import ReplyRoute

        body = self.calls.get(session_path(session_id, "reply"))
        return ReplyRoute(via=body.get("via"), words=str(body.get("words") or ""))

    def send_to(self, session_id: str, message: str, via: str | None = None) -> SentReply:
        """``via``: the route the person was shown (refused when another would carry it now);
        None: whichever can."""
        import secrets

        from roundtable_console.store.replies.sending import SentReply

        headers = {"Idempotency-Key": f"reply-{secrets.token_urlsafe(12)}"}
        body = {"message": message} if via is None else {"message": message, "via": via}
        sent = self.calls.post(session_path(session_id, "reply"), body=body, headers=headers).json()
        return SentReply(
            session_id=str(sent["session_id"]), via=str(sent["via"]), message=str(sent["message"]),
            hidden=bool(sent["hidden"]), replied_by=str(sent["replied_by"]),
            replied_at=str(sent["replied_at"]),
        )  # fmt: skip

    def hosts(self) -> list[HostRow]:
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

    def changes(self, session_id: str, offset: int) -> dict[str, Any]:
        """``GET …/sessions/{id}/changes``: read by the session's host, as the server asks it."""
        return dict(self.calls.get(session_path(session_id, "changes"), {"offset": str(offset)}))

    def finish(self, session_id: str, discard: bool) -> dict[str, Any]:
        """``POST …/sessions/{id}/finish``: the server asks the session's host."""
        answer = self.calls.post(session_path(session_id, "finish"), body={"discard": discard},
                                 headers={}, timeout=LAUNCH_CALL_SECONDS)  # fmt: skip
        return dict(answer.json())

    def start_new(self, work: NewWork) -> dict[str, Any]:
        """``POST /api/v1/hosts/{name}/sessions``: the server checks and asks the host."""
        import secrets

        body = {
            "project": work.project, "agent": work.agent, "prompt": work.prompt,
            "worktree": work.worktree, "branch": work.branch, "base": work.base,
            "model": work.model, "ask": work.ask, "workspace_id": work.workspace_id,
        }  # fmt: skip
        headers = {"Idempotency-Key": f"new-{secrets.token_urlsafe(16)}"}
        path = f"/api/v1/hosts/{quote(work.host, safe='')}/sessions"
        answer = self.calls.post(path, body=body, headers=headers, timeout=LAUNCH_CALL_SECONDS)
        started = dict(answer.json())
        started.pop("session", None)
        return started

    def launch_by_host(self, session: SessionFields, idempotency_key: str) -> HostStarted:
        """The session resumed (against the version read) and its agent started by its
        machine's host (``POST …/launch``): the server checks and asks the host."""
        from roundtable_console.store.writes.lifecycle_outcomes import ActionOutcome

        headers = {"Idempotency-Key": idempotency_key, "If-Match": str(session.version)}
        answer = self.calls.post(session_path(session.id, "launch"), body=None, headers=headers,
                                 timeout=LAUNCH_CALL_SECONDS)  # fmt: skip
        body = answer.json()
        replayed = answer.headers.get("idempotent-replayed") == "true"
        outcome = ActionOutcome.from_json({"action": "resume", "session": body["session"]},
                                          replayed=replayed)  # fmt: skip
        return HostStarted(outcome, str(body["host"]), str(body["attach"]))


@dataclass(frozen=True)
class HostStarted:
    """A launch by a session's host, as the server told it: the resume's outcome, the host,
    and the command that shows the agent on the host's machine."""

    outcome: ActionOutcome
    host: str
    attach: str


@dataclass(frozen=True)
class SessionHost:
    """The host of a session's machine, as the server tells a person who may read the session."""

    name: str
    online: bool | None  # None: the server does not tell this token (the launch finds out)
    last_seen_at: str | None
