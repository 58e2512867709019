"""``GET …/sessions/{id}/changes``: what the session changed — the commits on its branch since
its base, the files changed, a page of the patch (``offset``) — read by the session's host
(``store.hosts.changes``), never from this server's disk. To whoever may read the session (not an
agent's token: the rows it writes could name any directory). A session no host can be asked for is
said, not an error: ``{"available": false, "reason"}``.
"""

from __future__ import annotations

from typing import Any

from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.edge.identity import Caller
from roundtable_console.api.hosts.activity import unreachable
from roundtable_console.api.hosts.answers import HostRefused, HostUnreachable
from roundtable_console.api.problems import Problem
from roundtable_console.api.routes import found
from roundtable_console.api.routes.found import Found
from roundtable_console.api.routes.session_records import person
from roundtable_console.store.hosts import protocol
from roundtable_console.store.hosts.changes import (
    CHANGES_SECONDS,
    NO_HOST,
    ChangesPage,
    changes_args,
    not_changes,
)
from roundtable_console.store.hosts.registry import get_host
from roundtable_console.store.validation import whole_number


async def changes(ctx: ServerContext, call: Call, workspace_id: str, session_id: str) -> Answer:
    return await _changes(ctx, call, found.in_workspace(ctx, workspace_id, session_id))


async def changes_by_id(ctx: ServerContext, call: Call, session_id: str) -> Answer:
    await ctx.in_worker(person, ctx, call)
    return await _changes(ctx, call, found.by_id(session_id))


def unavailable(reason: str) -> dict[str, Any]:
    return {"available": False, "reason": reason}


async def _changes(ctx: ServerContext, call: Call, session_of: Found) -> Answer:
    caller = await ctx.in_worker(ctx.caller, call)
    raw = call.arg("offset")
    offset = 0
    if raw is not None:
        offset = whole_number(raw)  # type: ignore[assignment]
        if offset is None:
            raise Problem("invalid_cursor", "offset is a byte offset: a whole number.")
    return Answer(200, await read_page(ctx, caller, session_of, offset))


async def read_page(
    ctx: ServerContext, caller: Caller, session_of: Found, offset: int
) -> dict[str, Any]:
    """A page of what the session ``session_of`` finds changed, asked of its host (the route's
    answer, and the web console's page): ``available``, and the page or why there is none."""
    args, host = await ctx.in_worker(_args, ctx, caller, session_of, offset)
    if host is None:
        return unavailable(NO_HOST)
    why = unreachable(ctx, host)
    if why is not None:
        return unavailable(f"{why} Its changes are read through it.")
    try:
        body = await ctx.hosts.call_anywhere(
            host.name, protocol.CHANGES, args, timeout=CHANGES_SECONDS
        )
    except (HostUnreachable, HostRefused) as error:
        return unavailable(str(error))
    try:
        page = await ctx.in_worker(ChangesPage.of, body)
    except ValueError:
        return unavailable(not_changes(host.name))
    return {"available": True, "reason": None, **page.to_json()}


def _args(
    ctx: ServerContext, caller: Caller, session_of: Found, offset: int
) -> tuple[dict[str, Any], Any]:
    with ctx.store.read() as db:
        if caller.role == "agent":  # a row an agent's token wrote could name any directory
            raise Problem(
                "forbidden",
                f"The token {caller.name!r} is an agent's: a session's changes are read by people.",
            )
        session = session_of(db, caller)
        host = get_host(db, session.host, clock=ctx.clock) if session.host else None
        return changes_args(session, offset=offset), host
