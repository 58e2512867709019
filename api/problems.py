"""RFC 7807 problems: every refusal the server gives, with the reference's codes and statuses.

A store error keeps its code and its sentence (the detail); the status comes from the code, as
the reference maps them. Our own codes beyond the reference's follow the same form. Nothing
else ever reaches a client: an unexpected error is a 500 ``internal_error`` whose detail names
no internals (the request id finds it in the log).
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.responses import JSONResponse

from roundtable_console.store.errors import StoreError

log = logging.getLogger("roundtable.serve")

PROBLEM_TYPE = "https://roundtable.dev/problems/"
STORE_UNAVAILABLE = "The store is unavailable; retry in a moment. The server's log says why."
MEDIA_TYPE = "application/problem+json; charset=utf-8"

# Each code: (HTTP status, title). The reference's codes first, ours after each group.
CODES: dict[str, tuple[int, str]] = {
    "invalid_session": (400, "Invalid session"),
    "invalid_session_status": (400, "Invalid session status"),
    "idempotency_key_required": (400, "Idempotency key required"),
    "invalid_cursor": (400, "Invalid cursor"),
    "invalid_limit": (400, "Invalid limit"),
    "invalid_request_body": (400, "Invalid request body"),
    "invalid_event_cursor": (400, "Invalid event cursor"),
    "invalid_request": (400, "Invalid request"),
    "invalid_decision": (400, "Invalid decision"),
    "invalid_wait": (400, "Invalid wait"),
    "host_not_allowed": (400, "Host not allowed"),
    "authentication_required": (401, "Authentication required"),
    "invalid_token": (401, "Invalid token"),
    "forbidden": (403, "Forbidden"),
    "unknown_role": (403, "Unknown role"),
    "csrf_origin_forbidden": (403, "Cross-site request refused"),
    "read_only": (403, "Read-only server"),
    "workspace_not_found": (404, "Workspace not found"),
    "session_not_found": (404, "Session not found"),
    "agent_not_found": (404, "Agent not found"),
    "not_found": (404, "Not found"),
    "device_not_found": (404, "Device sign-in not found"),
    "request_not_found": (404, "Permission request not found"),
    "listener_not_found": (404, "Reply listener not found"),
    "method_not_allowed": (405, "Method not allowed"),
    "request_timeout": (408, "Request timeout"),
    "illegal_session_transition": (409, "Illegal session transition"),
    "session_transition_conflict": (409, "Session transition conflict"),
    "session_branch_conflict": (409, "Session branch conflict"),
    "agent_unavailable": (409, "Agent unavailable"),
    "termination_impact_required": (409, "Termination impact required"),
    "idempotency_key_reuse": (409, "Idempotency key reuse"),
    "session_create_conflict": (409, "Session create conflict"),
    "request_already_settled": (409, "Permission request already settled"),
    "not_deliverable": (409, "Answer not deliverable"),
    "no_reply_path": (409, "No way to reply"),
    "not_launchable": (409, "Not launchable"),
    "host_unavailable": (409, "Host unavailable"),
    "agent_not_running": (409, "Agent not running"),
    "not_started": (409, "Not started"),
    "not_finishable": (409, "Not finishable"),
    "worktree_not_clean": (409, "Worktree not clean"),
    "invalid_reply": (400, "Invalid reply"),
    "invalid_host": (400, "Invalid host"),
    "invalid_device": (400, "Invalid device"),
    "invalid_new_session": (400, "Invalid new session"),
    "request_too_large": (413, "Request body too large"),
    "unsupported_media_type": (415, "Unsupported media type"),
    "too_many_requests": (429, "Too many requests"),
    "too_many_pending_requests": (429, "Too many pending requests"),
    "request_header_fields_too_large": (431, "Request header fields too large"),
    "internal_error": (500, "Internal error"),
    "store_unavailable": (503, "Store unavailable"),
    "server_busy": (503, "Server busy"),
}
# Store codes named otherwise on the wire.
WIRE_CODES = {
    "database_unavailable": "store_unavailable",
    "invalid_token_request": "invalid_request",
}
STATUSES = sorted({status for status, _title in CODES.values()})


def problem_status(code: str) -> int:
    return CODES.get(code, (500, ""))[0]


class Problem(Exception):
    """A refusal this server gives itself (the store's are ``StoreError``s)."""

    def __init__(
        self,
        code: str,
        detail: str,
        *,
        metadata: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.metadata = metadata
        self.headers = headers or {}


def problem_body(
    code: str,
    detail: str | None,
    *,
    instance: str | None,
    request_id: str,
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    status, title = CODES.get(code, (500, "Error"))
    body: dict[str, Any] = {"type": PROBLEM_TYPE + code, "title": title, "status": status}
    if detail:
        body["detail"] = detail
    if instance:
        body["instance"] = instance
    body["request_id"] = request_id
    body["code"] = code
    if metadata:
        body["metadata"] = metadata
    return body


def problem_response(
    code: str,
    detail: str | None,
    *,
    instance: str | None,
    request_id: str,
    metadata: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body = problem_body(code, detail, instance=instance, request_id=request_id, metadata=metadata)
    return JSONResponse(body, status_code=body["status"], media_type=MEDIA_TYPE, headers=headers)


def refusal_of(call: Any, problem: Problem) -> JSONResponse:
    """``problem`` as the answer to ``call`` (a request's ``Call``: its path and id)."""
    return problem_response(
        problem.code,
        problem.detail,
        instance=call.path,
        request_id=call.request_id,
        metadata=problem.metadata,
        headers=problem.headers,
    )


def from_store_error(error: StoreError) -> Problem:
    code = WIRE_CODES.get(error.code, error.code)
    if code not in CODES:
        code = "invalid_request"
    if code == "store_unavailable":
        # Its words name the store (a path, a host) and the driver's error: for the log only.
        log.warning("the store is unavailable: %s", error.message)
        return Problem(code, STORE_UNAVAILABLE)
    return Problem(code, error.message, metadata=error.details or None)
