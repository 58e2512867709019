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

from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.edge.identity import Caller
from roundtable_console.api.problems import Problem
from roundtable_console.api.routes import bodies, wire
from roundtable_console.store import service
from roundtable_console.store.db.models import AgentSession
from roundtable_console.store.errors import IllegalSessionTransition
from roundtable_console.store.validation import whole_number
from roundtable_console.store.writes import agent_writes
from roundtable_console.store.writes.lifecycle import key_required
from roundtable_console.store.writes.lifecycle_outcomes import ActionOutcome

# Ours: what only an agent's hooks send with a beat (store.writes.tool_calls, usage_values).
HOOK_FIELDS = ("tool_calls", "usage", "quiet_seconds")


def heartbeat(ctx: ServerContext, call: Call, workspace_id: str, session_id: str) -> Answer:
    """An operator's plain heartbeat is the lifecycle action; anyone else's (or one with a body
    or a status) the agent's beat. Without an idempotency key, in one write transaction: who
    the caller is, the workspace, and the beat itself in one statement."""
    body = bodies.read_object(
        call.body, fields=bodies.HEARTBEAT_FIELDS, code="invalid_request_body", optional=True
    )
    status = call.arg("status")
    plain = not body and not (status or "").strip()
    if "idempotency-key" in call.headers:
        caller = ctx.caller(call)
        if caller.role == "operator" and plain:
            return _action(ctx, call, caller, "heartbeat", workspace_id, session_id)
        key = ctx.request_key(call, caller, required=False)

        def write(within: Callable[[Connection, AgentSession], None] | None) -> AgentSession:
            with ctx.store.write(durable=caller.role == "operator") as db:
                session = _beat(ctx, db, caller, workspace_id, session_id, body, status)
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
    with ctx.store.write() as db:
        caller = ctx.caller(call, db)
        operators = caller.role == "operator" and plain
        session = (
            None if operators else _beat(ctx, db, caller, workspace_id, session_id, body, status)
        )
    if session is None:  # the operator's: the lifecycle action, in a durable write of its own
        return _action(ctx, call, caller, "heartbeat", workspace_id, session_id)
    return Answer(200, wire.session(session))


def _beat(
    ctx: ServerContext,
    db: Connection,
    caller: Caller,
    workspace_id: str,
    session_id: str,
    body: dict[str, object],
    status: str | None,
) -> AgentSession:
    ctx.workspace(db, caller, workspace_id)
    caller.require_writer_of(None)
    if caller.role == "operator" and any(body.get(name) is not None for name in HOOK_FIELDS):
        # What an agent did and spent is its hooks' to tell: a person's would be recorded as
        # the agent's own, with no row naming who wrote it.
        raise Problem("forbidden", "tool_calls, usage and quiet_seconds are an agent's to send.")
    session = agent_writes.beat_in_workspace(
        db=db,
        session_id=session_id,
        workspace_id=workspace_id,
        agent_id=caller.agent_id if caller.role == "agent" else None,
        status=status,
        external_session_id=body.get("external_session_id"),  # type: ignore[arg-type]
        waiting=body.get("waiting"),  # type: ignore[arg-type]
        turn_done=body.get("turn_done"),  # type: ignore[arg-type]
        actor=caller.name if caller.role == "operator" else None,
        clock=ctx.clock,
        quiet_seconds=body.get("quiet_seconds"),  # type: ignore[arg-type]
        tool_calls=body.get("tool_calls"),  # type: ignore[arg-type]
        usage=body.get("usage"),  # type: ignore[arg-type]
        prices=ctx.prices,
    )
    if session is not None:
        return session
    # Nothing matched: say why, as the rules would have (the session, its workspace, its
    # agent, its status), from the row as it is.
    current = ctx.session_in(db, caller, workspace_id, session_id)
    caller.require_writer_of(current.agent_id)
    raise IllegalSessionTransition(
        f"Cannot heartbeat session {session_id!r}: its status is {current.status!r}; a "
        "heartbeat is allowed from an active state."
    )


def expected_version(call: Call) -> int | None:
    """Ours: ``If-Match: <version>`` (the ``version`` the caller read, quoted or not) makes the
    action refuse a session changed since (409 ``session_transition_conflict``), whatever it
    changed to: two operators acting on what they both saw cannot both win."""
    raw = call.headers.get("if-match")
    if raw is None or raw.strip() in ("", "*"):
        return None
    text = raw.strip().removeprefix("W/").strip('"')
    version = whole_number(text)
    if version is None:
        raise Problem("invalid_request", "If-Match is the session's version, a whole number.")
    return version


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
    return act(
        ctx,
        call,
        caller,
        action,
        session_id,
        found=lambda db: ctx.session_in(db, caller, workspace_id, session_id),
    )


def act(
    ctx: ServerContext,
    call: Call,
    caller: Caller,
    action: str,
    session_id: str,
    *,
    found: Callable[[Connection], object],
    answer: Callable[[ActionOutcome], Answer] | None = None,
) -> Answer:
    """The lifecycle ``action`` on the session, as ``caller``, under the request's idempotency
    key; ``found`` refuses first, in the same transaction, a session the caller may not reach
    (the routes: one of the path's workspace; the web console: one of a workspace it reaches).
    ``answer``: the answer made of the outcome (default: the reference's, the session)."""
    key = ctx.request_key(call, caller, required=key_required(action))
    extra: dict[str, object] = {"expected_version": expected_version(call), "wall": caller.wall}
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
            before=found,
            within=within,
            **extra,
        )

    return ctx.write_once(
        call,
        key,
        write=write,
        answer=answer or (lambda outcome: Answer(200, wire.session(outcome.session))),
        session_of=lambda outcome: outcome.session.id,
    )
