"""``GET /api/v1/audit``: the operators' actions across every session, newest first, a keyset
page at a time — what ``roundtable audit`` prints and the console's and the web's audit trail
show, read by the same function (``store.reads.audit.audit_page``). It spans every workspace, so
a token bound to some is refused, as the web's page refuses it."""

from __future__ import annotations

from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.problems import Problem
from roundtable_console.api.routes import wire
from roundtable_console.store.errors import InvalidCursor, InvalidSession
from roundtable_console.store.reads.audit import AuditFilter, audit_page, since_time

FILTERS = ("actor", "action", "session", "since")


def audit(ctx: ServerContext, call: Call) -> Answer:
    caller = ctx.caller(call)
    if caller.workspaces is not None:
        raise Problem(
            "forbidden",
            f"The token {caller.name!r} reaches some workspaces only; the audit trail spans "
            "every workspace.",
        )
    given = {name: (call.arg(name) or "").strip() or None for name in FILTERS}
    for name in ("actor", "session"):
        value = given[name]
        if value is not None and not wire.ID.match(value):
            raise Problem("invalid_request", f"{name} must be 1 to 256 printable characters")
    since = given["since"]
    try:
        since = since_time(since, ctx.clock()) if since is not None else None
    except InvalidSession:
        raise Problem(
            "invalid_session",
            "since is neither a time (2026-09-17 or 2026-09-17T10:00:00Z) nor a duration back "
            "from now (90m, 2h, 7d)",
        ) from None
    filters = AuditFilter(
        actor=given["actor"], action=given["action"], session_id=given["session"], since=since
    )
    size = wire.limit(call.arg("limit"))
    after = wire.cursor(call.arg("cursor"))
    with ctx.store.read() as db:
        try:
            page = audit_page(db=db, filters=filters, limit=size, cursor=after)
        except InvalidCursor:
            raise Problem("invalid_cursor", "cursor is malformed") from None
    return Answer(200, wire.page([entry.to_json() for entry in page.items], page.next_cursor))
