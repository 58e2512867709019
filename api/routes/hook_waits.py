"""Ours: what an agent's hook does through the server when it waits for a human
(``agents.over_server``), as it does against the store itself (``agents.asking``,
``agents.listening``): a permission request opened, its decision awaited and taken, or the request
settled (expired, withdrawn); a finished turn's listener opened, its reply awaited and taken, or
ended; and, when the agent moves on, whatever of its session still waits withdrawn.

Writing: whoever may write the session (``Caller.require_writer_of``: an agent token for that
session's agent only; never a viewer). Reading and awaiting: whoever may read the session (an
agent token: its own agent's sessions only). A wait (``?wait=SECONDS``, at most
``MAX_LONG_WAIT``) is a coroutine on the server's loop woken by ``api.streams.awaited``, never a
thread: the hook comes back for more until its own bound.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection

from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.edge.identity import Caller
from roundtable_console.api.problems import Problem
from roundtable_console.api.routes import bodies
from roundtable_console.api.streams.awaited import Kind
from roundtable_console.store.clock import format_ts, parse_ts
from roundtable_console.store.db.models import AgentSession
from roundtable_console.store.errors import RequestNotFound
from roundtable_console.store.replies import listeners
from roundtable_console.store.replies.listeners import MAX_LISTEN_SECONDS, ReplyListenerRecord
from roundtable_console.store.requests import asking
from roundtable_console.store.requests.records import (
    ANSWERS_BY_AGENT,
    EXPIRED,
    MAX_WAIT_SECONDS,
    WITHDRAWN,
    PermissionRequestRecord,
)
from roundtable_console.store.safety.credentials import redact_output_value
from roundtable_console.store.validation import has_control_characters

# One long wait holds at most this long (below the idle timeouts of common proxies).
MAX_LONG_WAIT = 30.0
ASK_FIELDS = (
    "agent", "tool_name", "tool_input", "suggestions", "reason",
    "wait_seconds", "hook_host", "hook_pid",
)  # fmt: skip
LISTEN_FIELDS = ("agent", "wait_seconds", "hook_host", "hook_pid")
SETTLE_FIELDS = ("state",)
ENDINGS = (EXPIRED, WITHDRAWN)


def _reached(
    ctx: ServerContext, db: Connection, caller: Caller, workspace_id: str, session_id: str,
    *, write: bool,
) -> AgentSession:  # fmt: skip
    """The session, once the caller is seen to reach it: to read it (an agent token: its own
    agent's only), or (``write``) as its agent's hook: an agent token for its agent, or a
    caller of header mode. An operator decides and replies; it does not ask, wait, take an
    answer meant for a hook or withdraw one."""
    session = ctx.session_in(db, caller, workspace_id, session_id)
    if write:
        if caller.role != "agent" and caller.mode != "header":
            raise Problem(
                "forbidden",
                f"The token {caller.name!r} is not an agent's: only the agent's hook asks and "
                "waits for a human (roundtable tokens create --role agent --agent ID).",
            )
        caller.require_writer_of(session.agent_id)
    elif caller.role == "agent" and caller.agent_id not in (None, session.agent_id):
        raise Problem(
            "forbidden",
            f"The token {caller.name!r} acts for agent {caller.agent_id!r}: it reads only that "
            "agent's sessions.",
        )
    return session


def _text(body: dict[str, Any], name: str, *, limit: int, required: bool = False) -> str | None:
    value = body.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        raise Problem("invalid_request_body", f'The field "{name}" is text of 1 to {limit} '
                      "characters.")  # fmt: skip
    if has_control_characters(value):
        raise Problem("invalid_request_body", f'The field "{name}" holds a control character.')
    return value


def _waits(body: dict[str, Any], most: float) -> float:
    value = body.get("wait_seconds")
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 < value <= most
    ):
        raise Problem("invalid_wait", f'The field "wait_seconds" is a number of seconds, '
                      f"above 0 and at most {most:g}.")  # fmt: skip
    return float(value)


def _hook(body: dict[str, Any]) -> tuple[str, int, str]:
    """The agent, and the hook that waits: its machine and process (as it says)."""
    agent = body.get("agent")
    if agent not in ANSWERS_BY_AGENT:
        raise Problem("invalid_request_body", 'The field "agent" is one of '
                      f"{', '.join(ANSWERS_BY_AGENT)}.")  # fmt: skip
    host = _text(body, "hook_host", limit=255) or "?"
    pid = body.get("hook_pid", 0)
    if isinstance(pid, bool) or not isinstance(pid, int) or not 0 <= pid < 2**31:
        raise Problem("invalid_request_body", 'The field "hook_pid" is a process id.')
    return host, pid, agent


def _holder(call: Call) -> str:
    """Whose waits a wait counts among (``Awaited``): its credential's, else its address's."""
    import hashlib

    credential = call.headers.get("authorization") or ""
    if not credential:
        return f"address {call.address}"
    return hashlib.sha256(credential.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _long_wait(call: Call) -> float:
    raw = call.arg("wait")
    if raw is None or raw == "":
        return 0.0
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not math.isfinite(seconds) or not 0 <= seconds <= MAX_LONG_WAIT:
        raise Problem("invalid_wait", f"wait is a number of seconds from 0 to {MAX_LONG_WAIT:g}.")
    return seconds


def _written(
    ctx: ServerContext, call: Call, workspace_id: str, session_id: str
) -> tuple[Caller, AgentSession]:
    """The caller and the session, once it is seen to be its agent's hook."""
    caller = ctx.caller(call)
    with ctx.store.read() as db:
        return caller, _reached(ctx, db, caller, workspace_id, session_id, write=True)


def _agent_json(body: dict[str, Any], name: str) -> Any:
    """What the agent gave as ``name``, if it can be stored and shown again as JSON."""
    value = body.get(name)
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
        redact_output_value(value)
    except (ValueError, RecursionError, UnicodeEncodeError):
        raise Problem(
            "invalid_request_body",
            f'The field "{name}" cannot be kept: it is nested too deeply, or holds text that is '
            "not Unicode.",
        ) from None
    return value


def _agent_of(session: AgentSession, body: dict[str, Any]) -> str:
    """Which agent's protocol answers: the session's own when it is one we know."""
    return session.adapter if session.adapter in ANSWERS_BY_AGENT else str(body["agent"])


# ------------------------------------------------------------------ permission requests


def ask(ctx: ServerContext, call: Call, workspace_id: str, session_id: str) -> Answer:
    """The agent's permission request, pending for its hook's wait."""
    caller, session = _written(ctx, call, workspace_id, session_id)
    key = ctx.request_key(call, caller, required=False)
    body = bodies.decoded_object(
        call.body, fields=ASK_FIELDS, code="invalid_request_body", optional=False
    )
    host, pid, _ = _hook(body)
    agent = _agent_of(session, body)
    tool_input = _agent_json(body, "tool_input")
    suggestions = _agent_json(body, "suggestions")
    tool_name = _text(body, "tool_name", limit=200, required=True)
    reason = _text(body, "reason", limit=1000) or f"asks to run {tool_name}"
    wait_seconds = _waits(body, MAX_WAIT_SECONDS)

    def write(
        within: Callable[[Connection, PermissionRequestRecord], None] | None,
    ) -> PermissionRequestRecord:
        return asking.open_request(
            ctx.store,
            session_id=session_id,
            agent=agent,
            tool_name=str(tool_name),
            tool_input=tool_input,
            suggestions=suggestions,
            reason=reason,
            wait_seconds=wait_seconds,
            clock=ctx.clock,
            hook_host=host,
            hook_pid=pid,
            within=within,
        )

    return ctx.write_once(
        call,
        key,
        write=write,
        answer=lambda record: Answer(201, record.to_json(format_ts(ctx.clock()))),
        session_of=lambda record: record.session_id,
    )


def _request(
    ctx: ServerContext, call: Call, workspace_id: str, session_id: str, request_id: str,
    *, write: bool = False, checked: bool = True,
) -> PermissionRequestRecord:  # fmt: skip
    """The request, once the caller is seen to reach it (``checked`` False: seen already, in
    this same call)."""
    caller = ctx.caller(call) if checked else None
    with ctx.store.read() as db:
        if caller is not None:
            _reached(ctx, db, caller, workspace_id, session_id, write=write)
        record = asking.get_request(db, request_id)
    if record.session_id != session_id:
        raise RequestNotFound(f"No permission request has the id {request_id!r}.")
    return record


async def request(
    ctx: ServerContext, call: Call, workspace_id: str, session_id: str, request_id: str
) -> Answer:
    """One request; with ``wait`` (its hook's: a caller that may write it), once it is no
    longer pending or the wait is over."""
    ids = (ctx, call, workspace_id, session_id, request_id)
    record = await _after_wait(ctx, call, "request", _request, ids, _pending)
    return Answer(200, record.to_json(format_ts(ctx.clock())))


def _pending(record: PermissionRequestRecord, now: str) -> bool:
    return record.is_open(now)


def delivered(
    ctx: ServerContext, call: Call, workspace_id: str, session_id: str, request_id: str
) -> Answer:
    """The decision as the hook takes it (marked delivered, once; again: the same answer)."""
    _request(ctx, call, workspace_id, session_id, request_id, write=True)
    record = asking.take_decision(ctx.store, request_id, clock=ctx.clock)
    return Answer(200, record.to_json(format_ts(ctx.clock())))


def settle(
    ctx: ServerContext, call: Call, workspace_id: str, session_id: str, request_id: str
) -> Answer:
    """The hook stops waiting: the request expired or withdrawn, unless a decision came first
    (``settled`` false: the hook reads it)."""
    _request(ctx, call, workspace_id, session_id, request_id, write=True)
    state = _ending(call)
    done = asking.settle(ctx.store, request_id, state, clock=ctx.clock)
    with ctx.store.read() as db:
        record = asking.get_request(db, request_id)
    return Answer(200, {"settled": done, "request": record.to_json(format_ts(ctx.clock()))})


def _ending(call: Call) -> str:
    body = bodies.decoded_object(
        call.body, fields=SETTLE_FIELDS, code="invalid_request_body", optional=False
    )
    state = body.get("state")
    if state not in ENDINGS:
        raise Problem("invalid_request_body", 'The field "state" is "expired" or "withdrawn".')
    return str(state)


def withdraw(ctx: ServerContext, call: Call, workspace_id: str, session_id: str) -> Answer:
    """The agent moved on (its turn is done, it ended): its pending requests and a hook still
    listening for a reply to its last turn are withdrawn."""
    _written(ctx, call, workspace_id, session_id)
    requests = asking.withdraw_pending(ctx.store, session_id, clock=ctx.clock)
    listening = listeners.withdraw_listening(ctx.store, session_id, clock=ctx.clock)
    return Answer(200, {"requests": requests, "listeners": listening})


# ------------------------------------------------------------------ reply listeners


def listen(ctx: ServerContext, call: Call, workspace_id: str, session_id: str) -> Answer:
    """A finished turn's hook listens for a reply for its wait."""
    _, session = _written(ctx, call, workspace_id, session_id)
    body = bodies.decoded_object(
        call.body, fields=LISTEN_FIELDS, code="invalid_request_body", optional=False
    )
    host, pid, _ = _hook(body)
    record = listeners.open_listener(
        ctx.store,
        session_id=session_id,
        agent=_agent_of(session, body),
        wait_seconds=_waits(body, MAX_LISTEN_SECONDS),
        clock=ctx.clock,
        hook_host=host,
        hook_pid=pid,
    )
    return Answer(201, record.to_json(format_ts(ctx.clock())))


def _listener(
    ctx: ServerContext, call: Call, workspace_id: str, session_id: str, listener_id: str,
    *, write: bool = False, checked: bool = True,
) -> ReplyListenerRecord:  # fmt: skip
    """The listener, once the caller is seen to reach it (``checked`` as ``_request``'s)."""
    caller = ctx.caller(call) if checked else None
    with ctx.store.read() as db:
        if caller is not None:
            _reached(ctx, db, caller, workspace_id, session_id, write=write)
        try:
            record = listeners.get_listener(db, listener_id)
        except LookupError:
            record = None
    if record is None or record.session_id != session_id:
        raise Problem("listener_not_found", "No reply listener has that id.")
    return record


def _listening(record: ReplyListenerRecord, now: str) -> bool:
    return record.state_at(now) == listeners.LISTENING


async def listener(
    ctx: ServerContext, call: Call, workspace_id: str, session_id: str, listener_id: str
) -> Answer:
    """One listener (never the reply's text); with ``wait``, once it no longer listens or the
    wait is over."""
    ids = (ctx, call, workspace_id, session_id, listener_id)
    record = await _after_wait(ctx, call, "listener", _listener, ids, _listening)
    return Answer(200, record.to_json(format_ts(ctx.clock())))


def reply_taken(
    ctx: ServerContext, call: Call, workspace_id: str, session_id: str, listener_id: str
) -> Answer:
    """The reply as its hook takes it, with its text (marked delivered once; taken again: the
    same text, for a hook whose first answer was lost on the way)."""
    _listener(ctx, call, workspace_id, session_id, listener_id, write=True)
    listeners.take_reply(ctx.store, listener_id, clock=ctx.clock)
    with ctx.store.read() as db:
        record = listeners.get_listener(db, listener_id)
    now = format_ts(ctx.clock())
    return Answer(200, record.to_json(now, with_message=record.state == listeners.DELIVERED))


def stop_listening(
    ctx: ServerContext, call: Call, workspace_id: str, session_id: str, listener_id: str
) -> Answer:
    """The hook stops listening (expired, withdrawn), unless a reply came first (``ended``
    false: the hook takes it)."""
    _listener(ctx, call, workspace_id, session_id, listener_id, write=True)
    done = listeners.end_listener(ctx.store, listener_id, _ending(call), clock=ctx.clock)
    with ctx.store.read() as db:
        record = listeners.get_listener(db, listener_id)
    return Answer(200, {"ended": done, "listener": record.to_json(format_ts(ctx.clock()))})


async def _after_wait(
    ctx: ServerContext,
    call: Call,
    kind: Kind,
    read: Callable[..., Any],
    ids: tuple[Any, ...],
    waiting: Callable[[Any, str], bool],
) -> Any:
    """The row ``read(*ids)`` gives, read again once it no longer waits (``waiting``), its own
    expiry passed, or the caller's ``wait`` ended: a coroutine woken by ``ctx.awaited``."""
    wait = _long_wait(call)
    record = await ctx.in_worker(read, *ids, write=wait > 0)
    if wait <= 0 or not waiting(record, format_ts(ctx.clock())):
        return record
    async with ctx.awaited.watching(kind, ids[-1], _holder(call)) as moved:
        # Again, now that a change wakes it (the caller was checked a moment ago; it is again
        # at the end, so a token revoked meanwhile gets no answer).
        record = await ctx.in_worker(read, *ids, checked=False)
        now = ctx.clock()
        if waiting(record, format_ts(now)):
            expires = parse_ts(record.expires_at)
            left = wait if expires is None else (expires - now).total_seconds()
            try:
                await asyncio.wait_for(moved.wait(), timeout=max(0.0, min(wait, left)))
            except TimeoutError:
                pass
    return await ctx.in_worker(read, *ids)


# ------------------------------------------------------------------ the routes and their document

HOOK = {"type": "string", "maxLength": 255, "description": "The waiting hook's machine."}
PID = {"type": "integer", "minimum": 0, "description": "The waiting hook's process id."}
AGENT = {"enum": list(ANSWERS_BY_AGENT)}
ASK_BODY = {
    "type": "object",
    "properties": {
        "agent": AGENT,
        "tool_name": {"type": "string", "minLength": 1, "maxLength": 200},
        "tool_input": {"description": "The tool's input as the agent gave it (stored redacted)."},
        "suggestions": {"description": "The agent's own suggestions, as it gave them."},
        "reason": {"type": "string", "minLength": 1, "maxLength": 1000},
        "wait_seconds": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_WAIT_SECONDS},
        "hook_host": HOOK,
        "hook_pid": PID,
    },
    "required": ["agent", "tool_name", "wait_seconds"],
    "additionalProperties": False,
}
LISTEN_BODY = {
    "type": "object",
    "properties": {
        "agent": AGENT,
        "wait_seconds": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_LISTEN_SECONDS},
        "hook_host": HOOK,
        "hook_pid": PID,
    },
    "required": ["agent", "wait_seconds"],
    "additionalProperties": False,
}
ENDING_BODY = {
    "type": "object",
    "properties": {"state": {"enum": list(ENDINGS)}},
    "required": ["state"],
    "additionalProperties": False,
}
WAIT = {
    "name": "wait",
    "in": "query",
    "schema": {"type": "number", "minimum": 0, "maximum": MAX_LONG_WAIT},
    "description": "Seconds to wait, at most, while it still waits itself (a long poll).",
}


def add_routes(app: Any, one: str) -> None:
    """The hooks' routes under ``one`` (a session's path)."""
    from roundtable_console.api.routes import schemas
    from roundtable_console.api.routes.documented import operation

    key = [schemas.idempotency(False)]
    request_path = f"{one}/requests/{{request_id}}"
    listener_path = f"{one}/listeners/{{listener_id}}"
    operation(app, "POST", f"{one}/requests", ask, name="ask_permission",
              summary="An agent's hook asks a human for a permission (an agent token for the "
              "session's agent).", success=201, parameters=key,
              body=ASK_BODY, body_required=True)  # fmt: skip
    operation(app, "GET", request_path, request, name="get_request",
              summary="One permission request; with wait, answered once it is no longer "
              "pending (or the wait ends).", parameters=[WAIT])  # fmt: skip
    operation(app, "POST", f"{request_path}/delivered", delivered, name="take_decision",
              summary="The asking hook takes the decision (marked delivered).")  # fmt: skip
    operation(app, "POST", f"{request_path}/settle", settle, name="settle_request",
              summary="The asking hook stops waiting: expired or withdrawn, unless decided "
              "first (settled: false).", body=ENDING_BODY, body_required=True)  # fmt: skip
    operation(app, "POST", f"{one}/withdraw-waits", withdraw, name="withdraw_waits",
              summary="The agent moved on: its pending requests and a listening hook are "
              "withdrawn.")  # fmt: skip
    operation(app, "POST", f"{one}/listeners", listen, name="listen_for_reply",
              summary="A finished turn's hook listens for a human's reply.", success=201,
              body=LISTEN_BODY, body_required=True)  # fmt: skip
    operation(app, "GET", listener_path, listener, name="get_listener",
              summary="One reply listener (never the reply's text); with wait, answered once "
              "it no longer listens (or the wait ends).", parameters=[WAIT])  # fmt: skip
    operation(app, "POST", f"{listener_path}/delivered", reply_taken, name="take_reply",
              summary="The listening hook takes the reply, with its text (marked "
              "delivered).")  # fmt: skip
    operation(app, "POST", f"{listener_path}/end", stop_listening, name="stop_listening",
              summary="The listening hook stops: expired or withdrawn, unless a reply came "
              "first (ended: false).", body=ENDING_BODY, body_required=True)  # fmt: skip
