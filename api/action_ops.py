"""The lifecycle routes' work: heartbeat (anyone who may write the session; ours: an agent's
``external_session_id`` and ``waiting`` too), and pause, stop, resume, terminate (a human's).

An operator's plain heartbeat, and every other action, is the console's and the CLI's own
lifecycle action (``store.service.perform_action``): the same checks, compare-and-swap, history
and run event, in one durable transaction that also holds the access check and the answer
recorded under the request's idempotency key. An agent's heartbeat is the agent's beat under the
reference's rules (``store.writes.agent_writes.checked_heartbeat``).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection

from roundtable_console.api import bodies, wire
from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.identity import Caller
from roundtable_console.api.problems import Problem
from roundtable_console.store import service
from roundtable_console.store.db.models import AgentSession
from roundtable_console.store.writes import agent_writes
from roundtable_console.store.writes.lifecycle import ActionOutcome, key_required


def heartbeat(ctx: ServerContext, call: Call, workspace_id: str, session_id: str) -> Answer:
    caller = ctx.caller(call)
    body = bodies.read_object(
        call.body, fields=bodies.HEARTBEAT_FIELDS, code="invalid_request_body", optional=True
    )
    status = call.arg("status")
    plain = not body and not (status or "").strip()
    if caller.role == "operator" and plain:
        return _action(ctx, call, caller, "heartbeat", workspace_id, session_id)
    key = ctx.request_key(call, caller, required=False)

    def write(within: Callable[[Connection, AgentSession], None] | None) -> AgentSession:
        with ctx.store.write(durable=caller.role == "operator") as db:
            current = ctx.session_in(db, caller, workspace_id, session_id)
            caller.require_writer_of(current.agent_id)
            session = agent_writes.checked_heartbeat(
                db=db,
                session_id=session_id,
                status=status,
                external_session_id=body.get("external_session_id"),
                waiting=body.get("waiting"),
                actor=caller.name if caller.role == "operator" else None,
                clock=ctx.clock,
            )
            if within is not None:
                within(db, session)
            return session

    return ctx.write_once(
        call,
        key,
        write=write,
        answer=lambda session: Answer(200, wire.session(session)),
        session_of=lambda session: session.id,
    )


def expected_version(call: Call) -> int | None:
    """Ours: ``If-Match: <version>`` (the ``version`` the caller read, quoted or not) makes the
    action refuse a session changed since (409 ``session_transition_conflict``), whatever it
    changed to: two operators acting on what they both saw cannot both win."""
    raw = call.headers.get("if-match")
    if raw is None or raw.strip() in ("", "*"):
        return None
    text = raw.strip().removeprefix("W/").strip('"')
    if not text.isascii() or not text.isdigit():
        raise Problem("invalid_request", "If-Match is the session's version, a whole number.")
    return int(text)


def pause(ctx: ServerContext, call: Call, workspace_id: str, session_id: str) -> Answer:
    return _human(ctx, call, "pause", workspace_id, session_id)


def stop(ctx: ServerContext, call: Call, workspace_id: str, session_id: str) -> Answer:
    return _human(ctx, call, "stop", workspace_id, session_id)


def resume(ctx: ServerContext, call: Call, workspace_id: str, session_id: str) -> Answer:
    return _human(ctx, call, "resume", workspace_id, session_id)


def terminate(ctx: ServerContext, call: Call, workspace_id: str, session_id: str) -> Answer:
    return _human(ctx, call, "terminate", workspace_id, session_id)


def _human(
    ctx: ServerContext, call: Call, action: str, workspace_id: str, session_id: str
) -> Answer:
    caller = ctx.caller(call)
    caller.require_human()
    return _action(ctx, call, caller, action, workspace_id, session_id)


def _action(
    ctx: ServerContext,
    call: Call,
    caller: Caller,
    action: str,
    workspace_id: str,
    session_id: str,
) -> Answer:
    key = ctx.request_key(call, caller, required=key_required(action))
    extra: dict[str, object] = {"expected_version": expected_version(call)}
    if action == "terminate":
        body = bodies.read_object(
            call.body, fields=bodies.TERMINATE_FIELDS, code="invalid_request_body", optional=True
        )
        extra["impact_details"] = body.get("impact_details")
    elif call.body.strip():
        bodies.read_object(call.body, fields=(), code="invalid_request_body", optional=True)

    def write(within: Callable[[Connection, ActionOutcome], None] | None) -> ActionOutcome:
        return service.perform_action(
            store=ctx.store,
            action=action,
            session_id=session_id,
            actor=caller.name,
            idempotency_key=key.action_key if key is not None else None,
            clock=ctx.clock,
            before=lambda db: ctx.session_in(db, caller, workspace_id, session_id),
            within=within,
            **extra,
        )

    return ctx.write_once(
        call,
        key,
        write=write,
        answer=lambda outcome: Answer(200, wire.session(outcome.session)),
        session_of=lambda outcome: outcome.session.id,
    )
