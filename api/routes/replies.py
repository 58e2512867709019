"""Ours: a human's reply to an agent that waits for a prompt (``agents.replying``): what can carry
one now, and the reply sent.

Reading the route: whoever may read the session (an agent token: its own agent's sessions only).
Sending: an operator alone, under an ``Idempotency-Key`` (a retry is answered as the first time,
never typed twice): a viewer is refused, and so is an agent token, which would otherwise speak
to an agent as its human; header mode is refused as for decisions.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection

from roundtable_console.agents.replying import reply, reply_route
from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.hosts.panes import panes_of
from roundtable_console.api.problems import Problem
from roundtable_console.api.routes import bodies, found
from roundtable_console.api.routes.found import Found
from roundtable_console.api.routes.session_records import person
from roundtable_console.store.replies.sending import HOOK, PANE, SentReply

REPLY_FIELDS = ("message", "via")


def reply_way(ctx: ServerContext, call: Call, workspace_id: str, session_id: str) -> Answer:
    return _reply_way(ctx, call, found.in_workspace(ctx, workspace_id, session_id))


def reply_way_by_id(ctx: ServerContext, call: Call, session_id: str) -> Answer:
    person(ctx, call)
    return _reply_way(ctx, call, found.by_id(session_id))


def send(ctx: ServerContext, call: Call, workspace_id: str, session_id: str) -> Answer:
    return _send(ctx, call, session_id, found.in_workspace(ctx, workspace_id, session_id))


def send_by_id(ctx: ServerContext, call: Call, session_id: str) -> Answer:
    person(ctx, call)
    return _send(ctx, call, session_id, found.by_id(session_id))


def _reply_way(ctx: ServerContext, call: Call, session_of: Found) -> Answer:
    caller = ctx.caller(call)
    with ctx.store.read() as db:
        session = session_of(db, caller)
    if caller.role == "agent" and caller.agent_id not in (None, session.agent_id):
        raise Problem(
            "forbidden",
            f"The token {caller.name!r} acts for agent {caller.agent_id!r}: it reads only that "
            "agent's sessions.",
        )
    route = reply_route(
        ctx.store, session.id, wall=caller.wall, clock=ctx.clock, panes=panes_of(ctx)
    )
    return Answer(200, {"session_id": session.id, **route.to_json()})


def _send(ctx: ServerContext, call: Call, session_id: str, session_of: Found) -> Answer:
    caller = ctx.caller(call)
    caller.require_human()
    if caller.mode == "header":
        # Header mode trusts a header anyone on this machine can send: an agent is not spoken
        # to as its human on that word.
        raise Problem(
            "forbidden",
            "Replying to an agent needs an operator token: this server runs in header mode "
            "(roundtable tokens create --name NAME --role operator).",
        )
    key = ctx.request_key(call, caller, required=True)
    body = bodies.decoded_object(
        call.body, fields=REPLY_FIELDS, code="invalid_request_body", optional=False
    )
    message = body.get("message")
    if not isinstance(message, str):
        raise Problem("invalid_reply", 'The field "message" is the reply\'s text.')
    via = body.get("via")
    if via is not None and via not in (HOOK, PANE):
        raise Problem("invalid_reply", 'The field "via" is "hook", "pane", or null.')

    def write(within: Callable[[Connection, SentReply], None] | None) -> SentReply:
        return reply(
            ctx.store,
            session_id,
            message,
            caller.name,
            wall=caller.wall,
            clock=ctx.clock,
            before=lambda db: session_of(db, caller),
            within=within,
            expected_via=via,
            panes=panes_of(ctx, look=False),
        )

    return ctx.write_once(
        call,
        key,
        write=write,
        answer=lambda sent: Answer(200, sent.to_json()),
        session_of=lambda sent: sent.session_id,
    )
