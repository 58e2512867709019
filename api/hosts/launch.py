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

from dataclasses import dataclass
from typing import Any

from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.edge.identity import Caller
from roundtable_console.api.hosts.activity import unreachable
from roundtable_console.api.hosts.answers import HostRefused, HostUnreachable
from roundtable_console.api.hosts.routed import Found, by_id, in_workspace
from roundtable_console.api.problems import Problem
from roundtable_console.api.routes import wire
from roundtable_console.api.routes.actions import expected_version
from roundtable_console.store import service
from roundtable_console.store.hosts import protocol
from roundtable_console.store.hosts.launches import (
    LAUNCH_SECONDS,
    HostLaunch,
    plan_host_launch,
    record_host_launch,
)
from roundtable_console.store.hosts.registry import get_host
from roundtable_console.store.safety.display import one_line


@dataclass(frozen=True)
class Ready:
    caller: Caller
    launch: HostLaunch
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
    await _ask(ctx, ready, ready.launch.args(check=True))
    outcome = await ctx.in_worker(_resume, ctx, ready)
    started = await _ask(ctx, ready, ready.launch.args())
    await ctx.in_worker(
        lambda: record_host_launch(
            store=ctx.store, launch=ready.launch, started=started, actor=ready.caller.name,
            clock=ctx.clock,
        )
    )  # fmt: skip
    return Answer(
        200,
        {
            "session": wire.session(outcome.session),
            "host": ready.launch.host,
            "tmux_session": ready.launch.tmux_session,
            "attach": ready.launch.attach,
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
    if host is None:
        raise Problem(
            "not_launchable",
            f"Session {one_line(session.id, 60)!r} runs on a machine with no host (roundtable "
            "host run): start it there with roundtable resume --session ID --exec.",
        )
    why = unreachable(ctx, host)
    if why is not None:
        raise Problem("host_unavailable", f"{why} Nothing was started.")
    launch = plan_host_launch(
        store=ctx.store, adapters=ctx.adapters, session_id=session.id, host=host.name,
        clock=ctx.clock, wall=caller.wall,
    )  # fmt: skip
    version = expected_version(call)
    return Ready(
        caller=caller,
        launch=launch,
        action_key=key.action_key,
        version=launch.session.version if version is None else version,
    )


async def _ask(ctx: ServerContext, ready: Ready, args: dict[str, Any]) -> dict[str, Any]:
    try:
        return await ctx.hosts.call_anywhere(
            ready.launch.host, protocol.LAUNCH, args, timeout=LAUNCH_SECONDS
        )
    except HostRefused as refused:
        raise Problem("not_launchable", f"{refused} Nothing was started.") from None
    except HostUnreachable as unreachable:
        raise Problem("host_unavailable", str(unreachable)) from None


def _resume(ctx: ServerContext, ready: Ready) -> Any:
    return service.perform_action(
        store=ctx.store,
        action="resume",
        session_id=ready.launch.session.id,
        actor=ready.caller.name,
        idempotency_key=ready.action_key,
        expected_version=ready.version,
        clock=ctx.clock,
        wall=ready.caller.wall,
    )


launch = in_workspace(start)  # the route: POST …/sessions/{id}/launch
launch_by_id = by_id(start)  # people's: POST /api/v1/sessions/{id}/launch
