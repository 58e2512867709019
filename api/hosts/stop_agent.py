"""``POST …/sessions/{id}/stop-agent``: the agent's process asked to stop (SIGINT, then SIGTERM
after a grace) where it runs — by its host, for an agent a host started; here, for one ``R``
started in this machine's tmux. An agent started by hand has no pane Roundtable knows: that is
said (stop it in its own terminal). The session's status is not changed here: the agent's
hooks report its end. An operator's; recorded in the history with its actor (``agent_stopped``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roundtable_console.agents.panes import GRACE_MOST, GRACE_SECONDS, stop_agent
from roundtable_console.agents.stopping import HOST_MARGIN_SECONDS, AgentStopped, started_launch
from roundtable_console.agents.transcripts import TranscriptUnavailable
from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.edge.identity import Caller
from roundtable_console.api.hosts.activity import unreachable
from roundtable_console.api.hosts.answers import HostRefused, HostUnreachable
from roundtable_console.api.hosts.routed import Found, by_id, in_workspace
from roundtable_console.api.problems import Problem
from roundtable_console.api.routes import bodies
from roundtable_console.store import service
from roundtable_console.store.hosts import protocol
from roundtable_console.store.hosts.registry import HostRow, get_host
from roundtable_console.store.safety.display import printable

FIELDS = ("grace_seconds",)
BODY = {
    "type": "object",
    "properties": {
        "grace_seconds": {
            "type": ["number", "null"], "minimum": 0, "maximum": GRACE_MOST,
            "description": "How long SIGINT is given before SIGTERM (default 10).",
        }
    },
    "additionalProperties": False,
}  # fmt: skip


async def run(
    ctx: ServerContext,
    call: Call,
    caller: Caller,
    found: Found,
) -> Answer:
    """Stop the agent of the session ``found`` reads, as ``caller``: the API's route and the
    web console's button."""
    session_id, launch, grace, host_row = await ctx.in_worker(_prepare, ctx, call, caller, found)
    host = launch.get("via_host")
    if isinstance(host, str):
        why = unreachable(ctx, host_row) if host_row is not None else None
        if host_row is None or why is not None:
            said = why or f"The host {printable(host)} is not known to this store."
            raise Problem("host_unavailable", f"{said} Nothing was stopped.")
        args = {"launch": dict(launch), "grace": grace}
        try:
            body = await ctx.hosts.call_anywhere(
                host, protocol.STOP_AGENT, args, timeout=grace + HOST_MARGIN_SECONDS
            )
        except (HostUnreachable, HostRefused) as why:
            raise Problem("agent_not_running", f"{why} Nothing was stopped.") from None
        signal_name, exited = protocol.stop_outcome(body)
    else:
        try:
            signal_name, exited = await ctx.in_worker(stop_agent, launch, grace=grace)
        except TranscriptUnavailable as why:
            raise Problem("agent_not_running", f"{why} Nothing was stopped.") from None
    payload = AgentStopped(signal_name, exited, host if isinstance(host, str) else None).payload
    await ctx.in_worker(
        lambda: service.record_agent_stopped(
            store=ctx.store, session_id=session_id, actor=caller.name, payload=payload,
            clock=ctx.clock,
        )
    )  # fmt: skip
    return Answer(200, {"session_id": session_id, **payload})


def _prepare(
    ctx: ServerContext,
    call: Call,
    caller: Caller,
    found: Found,
) -> tuple[str, Mapping[str, Any], float, HostRow | None]:
    caller.require_human()
    body = bodies.decoded_object(
        call.body, fields=FIELDS, code="invalid_request_body", optional=True
    )
    grace = body.get("grace_seconds")
    grace = GRACE_SECONDS if grace is None else grace
    if type(grace) not in (int, float) or not 0 <= grace <= GRACE_MOST:
        raise Problem(
            "invalid_request_body", f"grace_seconds is a number from 0 to {GRACE_MOST:.0f}."
        )
    with ctx.store.read() as db:
        session = found(db, caller)
        launch = started_launch(db, session.id)
        via = launch.get("via_host")
        host = get_host(db, via, clock=ctx.clock) if isinstance(via, str) else None
    return session.id, launch, float(grace), host


stop = in_workspace(run)  # the route: POST …/sessions/{id}/stop-agent
stop_by_id = by_id(run)  # people's: POST /api/v1/sessions/{id}/stop-agent
