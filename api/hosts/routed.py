"""An operation on one session, as a route of its workspace (``…/sessions/{id}/…``) and as the
web console's action on a session the caller reaches: written once, taking ``found``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sqlalchemy import Connection

from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.edge.identity import Caller
from roundtable_console.store.db.models import AgentSession

Found = Callable[[Connection, Caller], AgentSession]
OnSession = Callable[[ServerContext, Call, Caller, Found], Awaitable[Answer]]
Route = Callable[[ServerContext, Call, str, str], Awaitable[Answer]]


def in_workspace(operation: OnSession) -> Route:
    """``operation`` as a route: the caller read first, the session one of the path's
    workspace (another's answers as not found)."""

    async def route(ctx: ServerContext, call: Call, workspace_id: str, session_id: str) -> Answer:
        def found(db: Connection, caller: Caller) -> AgentSession:
            return ctx.session_in(db, caller, workspace_id, session_id)

        caller = await ctx.in_worker(ctx.caller, call)
        return await operation(ctx, call, caller, found)

    return route
