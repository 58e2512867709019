"""``POST …/sessions/{id}/finish``: the session's worktree removed by its host, its branch kept,
the session ended (``store.hosts.finishing``). An operator's. With anything not committed in
the worktree, 409 ``worktree_not_clean`` names it, and nothing is removed unless the body says
``{"discard": true}``."""

from __future__ import annotations

from typing import Any

from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.hosts.activity import unreachable
from roundtable_console.api.problems import Problem
from roundtable_console.api.routes import bodies, found
from roundtable_console.api.routes.found import Found
from roundtable_console.api.routes.session_records import person
from roundtable_console.store.hosts import finishing, protocol
from roundtable_console.store.hosts.registry import get_host

BODY = {
    "type": "object",
    "properties": {"discard": {"type": ["boolean", "null"],
                               "description": "Remove it even with what is not committed."}},
    "additionalProperties": False,
}  # fmt: skip


async def finish(ctx: ServerContext, call: Call, workspace_id: str, session_id: str) -> Answer:
    return await _finish(ctx, call, found.in_workspace(ctx, workspace_id, session_id))


async def finish_by_id(ctx: ServerContext, call: Call, session_id: str) -> Answer:
    await ctx.in_worker(person, ctx, call)
    return await _finish(ctx, call, found.by_id(session_id))


async def _finish(ctx: ServerContext, call: Call, session_of: Found) -> Answer:
    ask_host = ctx.hosts.from_worker()

    def work() -> dict[str, Any]:
        caller = ctx.caller(call)
        caller.require_human()
        body = bodies.decoded_object(call.body, fields=("discard",), code="invalid_request_body",
                                     optional=True)  # fmt: skip
        discard = body.get("discard")
        if discard is not None and not isinstance(discard, bool):
            raise Problem("invalid_request_body", "discard is true or false.")
        with ctx.store.read() as db:
            session = session_of(db, caller)
            host = get_host(db, session.host, clock=ctx.clock) if session.host else None
        if host is None:
            raise Problem("not_finishable", "The session runs on a machine with no host.")
        why = unreachable(ctx, host)
        if why is not None:
            raise Problem("host_unavailable", f"{why} Nothing was removed.")

        def ask(args: dict[str, Any]) -> dict[str, Any]:
            return ask_host(host.name, protocol.FINISH, args, timeout=finishing.FINISH_SECONDS)

        return finishing.finish_session(
            store=ctx.store, session=session, ask=ask, actor=caller.name,
            discard=bool(discard), clock=ctx.clock,
        )  # fmt: skip

    return Answer(200, await ctx.in_worker(work))
