"""Ours: a session's permission requests (``store.requests``), and a human's decision on one.

Reading: whoever may read the session (an agent token: its own agent's sessions only). Deciding:
an operator alone, under an ``Idempotency-Key`` (a retry is answered as the first time; a second
decision, by anyone, is told who decided): a viewer is refused, and an agent token can never
approve a request, its own least of all.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sqlalchemy import Connection

from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.edge.identity import Caller
from roundtable_console.api.problems import Problem
from roundtable_console.api.routes import bodies, schemas
from roundtable_console.store.clock import format_ts
from roundtable_console.store.errors import SessionNotFound
from roundtable_console.store.requests.deciding import decide_request
from roundtable_console.store.requests.reads import list_requests
from roundtable_console.store.requests.records import PermissionRequestRecord

DECISION_FIELDS = ("decision", "message", "suggestion", "despite_hidden")
# A session's id as a filter: the pattern its OpenAPI parameter says.
_NAME = re.compile(str(schemas.PRINTABLE_NAME["pattern"]))


def session_requests(ctx: ServerContext, call: Call, workspace_id: str, session_id: str) -> Answer:
    caller = ctx.caller(call)
    everything = (call.arg("all") or "").strip().lower() in ("1", "true", "yes")
    with ctx.store.read() as db:
        session = ctx.session_in(db, caller, workspace_id, session_id)
    if caller.role == "agent" and caller.agent_id not in (None, session.agent_id):
        raise Problem(
            "forbidden",
            f"The token {caller.name!r} acts for agent {caller.agent_id!r}: it reads only that "
            "agent's requests.",
        )
    records = list_requests(
        store=ctx.store,
        wall=caller.wall,
        session_id=session.id,
        everything=everything,
        clock=ctx.clock,
    )
    now = format_ts(ctx.clock())
    return Answer(200, {"items": [record.to_json(now) for record in records]})


def decide(
    ctx: ServerContext, call: Call, workspace_id: str, session_id: str, request_id: str
) -> Answer:
    caller = ctx.caller(call)
    return _decided(
        ctx, call, caller, request_id, session_id=session_id,
        before=lambda db: ctx.session_in(db, caller, workspace_id, session_id),
    )  # fmt: skip


def decide_by_id(ctx: ServerContext, call: Call, request_id: str) -> Answer:
    """Ours, for people's clients (``roundtable requests allow ID --server``): the request by
    its id alone, of a session the caller reaches."""
    from roundtable_console.api.routes.session_records import person

    return _decided(ctx, call, person(ctx, call), request_id)


def _decided(
    ctx: ServerContext,
    call: Call,
    caller: Caller,
    request_id: str,
    *,
    session_id: str | None = None,
    before: Callable[[Connection], object] | None = None,
) -> Answer:
    """The caller's decision on the request, under the request's idempotency key."""
    caller.require_human()
    if caller.mode == "header":
        # Header mode trusts a header anyone on this machine can send: what runs on an agent's
        # machine is not decided on its word.
        raise Problem(
            "forbidden",
            "Deciding a permission request needs an operator token: this server runs in header "
            "mode (roundtable tokens create --name NAME --role operator).",
        )
    key = ctx.request_key(call, caller, required=True)
    body = bodies.decoded_object(
        call.body, fields=DECISION_FIELDS, code="invalid_request_body", optional=False
    )
    decision = body.get("decision")
    message = body.get("message")
    suggestion = body.get("suggestion")
    if not isinstance(decision, str):
        raise Problem("invalid_decision", 'The field "decision" is "allow" or "deny".')
    if message is not None and not isinstance(message, str):
        raise Problem("invalid_decision", 'The field "message" is a string, or null.')
    if isinstance(suggestion, float) and suggestion.is_integer():
        suggestion = int(suggestion)  # 44.0 is the JSON integer 44
    if suggestion is not None and (isinstance(suggestion, bool) or not isinstance(suggestion, int)):
        raise Problem("invalid_decision", 'The field "suggestion" is a whole number, or null.')
    despite_hidden = body.get("despite_hidden", False)
    if not isinstance(despite_hidden, bool):
        raise Problem("invalid_decision", 'The field "despite_hidden" is true or false.')

    def write(
        within: Callable[[Connection, PermissionRequestRecord], None] | None,
    ) -> PermissionRequestRecord:
        return decide_request(
            store=ctx.store,
            request_id=request_id,
            decision=decision,
            actor=caller.name,
            message=message,
            suggestion=suggestion,
            hidden_seen=despite_hidden,
            wall=caller.wall,
            session_id=session_id,
            clock=ctx.clock,
            before=before,
            within=within,
        )

    return ctx.write_once(
        call,
        key,
        write=write,
        answer=lambda record: Answer(200, record.to_json(format_ts(ctx.clock()))),
        session_of=lambda record: record.session_id,
    )


def pending(ctx: ServerContext, call: Call) -> Answer:
    """Ours, for people's clients: the pending requests of every session the caller reaches,
    oldest first (the console's ``P``); ``session``: of that one; ``all``: every state, newest
    first (``roundtable requests`` through a server)."""
    from roundtable_console.api.routes.session_records import person

    caller = person(ctx, call)
    if any(value not in ("true", "false") for value in call.query.get("all", [])):
        raise Problem("invalid_request", "all is true or false.")
    everything = call.arg("all") == "true"
    session_id = call.arg("session") or None
    if session_id is not None and not _NAME.match(session_id):
        raise Problem("invalid_request", "session is a session's id: printable text.")
    try:
        records = list_requests(store=ctx.store, wall=caller.wall, session_id=session_id,
                                everything=everything, clock=ctx.clock)  # fmt: skip
    except SessionNotFound:  # a filter: a session not there, or out of reach, has none
        records = []
    now = format_ts(ctx.clock())
    return Answer(200, {"items": [record.to_json(now) for record in records]})
