"""The sessions through ``roundtable serve`` (``store.source.SessionSource``): each read and action
one call of the server's routes for people's clients (``/api/v1/sessions``, ``/api/v1/audit``),
answered in the shapes the store's own reads give. The actor is the token's: the server records
who acted from the token, never from the command."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from roundtable_console.client.calls import ServerCalls, checked_answers
from roundtable_console.store.errors import NotThroughServer
from roundtable_console.store.reads.paging import Page
from roundtable_console.store.records import SessionFields, SessionRecord
from roundtable_console.store.safety.display import printable

if TYPE_CHECKING:
    from roundtable_console.store.reads.audit import AuditFilter
    from roundtable_console.store.reads.listing import SessionFilter, SessionOrder
    from roundtable_console.store.requests.records import PermissionRequestRecord
    from roundtable_console.store.writes.lifecycle_outcomes import ActionOutcome

SESSIONS = "/api/v1/sessions"


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
        headers: dict[str, str] = {}
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
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
