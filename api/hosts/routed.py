"""An operation on one session, as a route of its workspace (``…/sessions/{id}/…``), as a route
of people's clients (``/api/v1/sessions/{id}/…``) and as the web console's action on a session
the caller reaches: written once, taking ``found``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.edge.identity import Caller
from roundtable_console.api.routes import found
from roundtable_console.api.routes.found import Found
from roundtable_console.api.routes.session_records import person

OnSession = Callable[[ServerContext, Call, Caller, Found], Awaitable[Answer]]
Route = Callable[[ServerContext, Call, str, str], Awaitable[Answer]]
ByIdRoute = Callable[[ServerContext, Call, str], Awaitable[Answer]]


def in_workspace(operation: OnSession) -> Route:
    """``operation`` as a route: the caller read first, the session one of the path's
    workspace (another's answers as not found)."""

    async def route(ctx: ServerContext, call: Call, workspace_id: str, session_id: str) -> Answer:
        caller = await ctx.in_worker(ctx.caller, call)
        return await operation(ctx, call, caller, found.in_workspace(ctx, workspace_id, session_id))

    return route


def by_id(operation: OnSession) -> ByIdRoute:
    """``operation`` as a route of people's clients (``/api/v1/sessions/{id}/…``): the session
    by its id alone, one the caller reaches (another's answers as not found), so that a session
    of no workspace is reached too."""

    async def route(ctx: ServerContext, call: Call, session_id: str) -> Answer:
        caller = await ctx.in_worker(person, ctx, call)
        return await operation(ctx, call, caller, found.by_id(session_id))

    return route
