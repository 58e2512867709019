"""``GET /api/v1/audit``: the operators' actions across every session, newest first, a keyset
page at a time — what ``roundtable audit`` prints and the console's and the web's audit trail
show, read by the same function (``store.reads.audit.audit_page``). It spans every workspace, so
a token bound to some is refused, as the web's page refuses it. Its filters are taken exactly as
its OpenAPI parameters say (``schemas.AUDIT_FILTERS``): an empty one is none."""

from __future__ import annotations

import re

from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.problems import Problem
from roundtable_console.api.routes import schemas, wire
from roundtable_console.store.errors import InvalidCursor, InvalidSession
from roundtable_console.store.reads.audit import AuditFilter, audit_page, since_time

_NAME = re.compile(str(schemas.PRINTABLE_NAME["pattern"]))
_SINCE = re.compile(str(schemas.SINCE["pattern"]))


def _name(call: Call, name: str) -> str | None:
    value = call.arg(name) or ""
    if not _NAME.match(value):
        raise Problem("invalid_request", f"{name} must be at most 256 printable characters")
    return value or None


def audit(ctx: ServerContext, call: Call) -> Answer:
    ctx.caller(call).require_every_workspace("the audit trail spans every workspace")
    action = call.arg("action") or ""
    if action and action not in schemas.AUDIT_ACTIONS:
        raise Problem(
            "invalid_session", f"action must be one of {', '.join(sorted(schemas.AUDIT_ACTIONS))}"
        )
    since = call.arg("since") or ""
    try:
        if not _SINCE.match(since):
            raise InvalidSession(since)
        moment = since_time(since, ctx.clock()) if since else None
    except InvalidSession:
        raise Problem(
            "invalid_session",
            "since is neither a date or UTC time (2026-09-17, 2026-09-17T10:00:00Z) nor a "
            "duration back from now (90m, 2h, 7d)",
        ) from None
    filters = AuditFilter(
        actor=_name(call, "actor"),
        action=action or None,
        session_id=_name(call, "session"),
        since=moment,
    )
    raw_limit = call.arg("limit")
    if raw_limit == "":  # a route of ours: the reference's empty limit= is not carried over
        raise Problem("invalid_limit", "limit must be between 1 and 200")
    size = wire.limit(raw_limit)
    after = wire.cursor(call.arg("cursor"))
    with ctx.store.read() as db:
        try:
            page = audit_page(db=db, filters=filters, limit=size, cursor=after)
        except InvalidCursor:
            raise Problem("invalid_cursor", "cursor is malformed") from None
    return Answer(200, wire.page([entry.to_json() for entry in page.items], page.next_cursor))
