"""``POST …/sessions/{id}/launch``: the session resumed and its agent started on its own
machine, by that machine's host (``hosts.launching``), in tmux — for an operator anywhere.

In order, so that a refusal changes nothing: the caller (an operator of the session's
workspace), the session's resume plan (resumable, its briefing), its host (held by this
server), the host's own checks (``check``: a project it was given, an agent it has, tmux);
then the lifecycle resume (its rules and idempotency key: the same key again replays it, so
a start that failed after it can be tried again), the start, and the ``launched`` row (actor,
host, pane) the audit and the pane view read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.edge.identity import Caller
from roundtable_console.api.hosts.activity import unreachable
from roundtable_console.api.hosts.answers import HostRefused, HostUnreachable
from roundtable_console.api.hosts.routed import Found, in_workspace
from roundtable_console.api.problems import Problem
from roundtable_console.api.routes import wire
from roundtable_console.api.routes.actions import expected_version
from roundtable_console.store import service
from roundtable_console.store.db.models import AgentSession
from roundtable_console.store.hosts import protocol
from roundtable_console.store.hosts.registry import get_host
from roundtable_console.store.safety.display import one_line

LAUNCH_SECONDS = 30.0  # tmux starts the agent at once; the host answers when it has


@dataclass(frozen=True)
class Ready:
    caller: Caller
    session: AgentSession
    host: str
    prompt: str
    action_key: str
    version: int


async def start(
    ctx: ServerContext,
    call: Call,
    caller: Caller,
    found: Found,
) -> Answer:
    """The launch of the session ``found`` reads (refusing one the caller may not reach), as
    ``caller``: the API's route, and the web console's button."""
    ready = await ctx.in_worker(_prepare, ctx, call, caller, found)
    args = {"session": protocol.call_session(ready.session), "prompt": ready.prompt}
    await _ask(ctx, ready, {**args, "check": True})
    outcome = await ctx.in_worker(_resume, ctx, ready)
    started = await _ask(ctx, ready, args)
    await ctx.in_worker(_record, ctx, ready, started)
    name = protocol.tmux_session_name(ready.session.id)  # ours, never the host's words
    return Answer(
        200,
        {
            "session": wire.session(outcome.session),
            "host": ready.host,
            "tmux_session": name,
            "attach": f"tmux -L {protocol.TMUX_LABEL} attach -t ={name}",
        },
    )


def _prepare(
    ctx: ServerContext,
    call: Call,
    caller: Caller,
    found: Found,
) -> Ready:
    caller.require_human()
    key = ctx.request_key(call, caller, required=True)
    if key is None:  # required: refused above
        raise Problem("idempotency_key_required", "A launch needs an Idempotency-Key header.")
    if call.body.strip():
        raise Problem("invalid_request_body", "A launch takes no body.")
    with ctx.store.read() as db:
        session = found(db, caller)
        host = get_host(db, session.host, clock=ctx.clock) if session.host else None
    shown = one_line(session.id, 60)
    if host is None:
        raise Problem(
            "not_launchable",
            f"Session {shown!r} runs on a machine with no host (roundtable host run): start "
            "it there with roundtable resume --session ID --exec.",
        )
    why = unreachable(ctx, host)
    if why is not None:
        raise Problem("host_unavailable", f"{why} Nothing was started.")
    view = service.read_briefing(
        store=ctx.store, adapters=ctx.adapters, session_id=session.id, clock=ctx.clock,
        wall=caller.wall,
    )  # fmt: skip
    if not view.plan.resumable:
        raise Problem(
            "not_launchable",
            f"Session {shown!r} is not resumable: {view.plan.reason} Nothing was started.",
        )
    if len(view.plan.argv[-1].encode()) > protocol.PROMPT_MOST_BYTES:
        raise Problem(
            "not_launchable",
            f"The briefing of session {shown!r} is longer than "
            f"{protocol.PROMPT_MOST_BYTES // 1024} KiB, more than a host takes as a prompt. "
            "Nothing was started.",
        )
    version = expected_version(call)
    return Ready(
        caller=caller,
        session=view.session,
        host=host.name,
        prompt=view.plan.argv[-1],
        action_key=key.action_key,
        version=view.session.version if version is None else version,
    )


async def _ask(ctx: ServerContext, ready: Ready, args: dict[str, Any]) -> dict[str, Any]:
    try:
        return await ctx.hosts.call_anywhere(
            ready.host, protocol.LAUNCH, args, timeout=LAUNCH_SECONDS
        )
    except HostRefused as refused:
        raise Problem("not_launchable", f"{refused} Nothing was started.") from None
    except HostUnreachable as unreachable:
        raise Problem("host_unavailable", str(unreachable)) from None


def _resume(ctx: ServerContext, ready: Ready) -> Any:
    return service.perform_action(
        store=ctx.store,
        action="resume",
        session_id=ready.session.id,
        actor=ready.caller.name,
        idempotency_key=ready.action_key,
        expected_version=ready.version,
        clock=ctx.clock,
        wall=ready.caller.wall,
    )


def _record(ctx: ServerContext, ready: Ready, started: dict[str, Any]) -> None:
    """The ``launched`` row: what the host said of its pane, each value of its own shape (a
    host's words are not trusted)."""

    def shaped(key: str, pattern: re.Pattern[str]) -> str | None:
        value = started.get(key)
        return value if isinstance(value, str) and pattern.fullmatch(value) else None

    pane = shaped("tmux_pane", _PANE)
    if pane is None:
        raise Problem("host_unavailable", f"The host {ready.host} did not say where it started.")
    service.record_launch(
        store=ctx.store,
        session_id=ready.session.id,
        tmux_pane=pane,
        tmux_socket=shaped("tmux_socket", _SOCKET),
        tmux_server_pid=shaped("tmux_server_pid", _PID),
        actor=ready.caller.name,
        clock=ctx.clock,
        machine=shaped("machine", _MACHINE),
        via_host=ready.host,
    )


_PANE = re.compile(r"%[0-9]{1,9}")
_PID = re.compile(r"[0-9]{1,10}")
_SOCKET = re.compile(r"/[^\x00-\x1f\x7f]{1,400}")
_MACHINE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}")


launch = in_workspace(start)  # the route: POST …/sessions/{id}/launch
