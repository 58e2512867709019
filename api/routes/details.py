"""The session's six subresources: logs, tool-calls, claims and proposals a keyset page at a
time, metrics and environment as one object each; read as the CLI and the console read them
(``store.service``), in the reference's shapes (``wire``). A caller bound to workspaces reads
only the rows of the session's own workspace (``store.access.walls``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.problems import Problem
from roundtable_console.api.routes import wire
from roundtable_console.store.errors import InvalidCursor
from roundtable_console.store.reads.projections import PROJECTIONS

SHAPES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "logs": wire.log,
    "tool-calls": wire.tool_call,
    "claims": wire.claim,
    "proposals": wire.proposal,
}


def page_of(name: str) -> Callable[..., Answer]:
    shape = SHAPES[name]

    def read(ctx: ServerContext, call: Call, workspace_id: str, session_id: str) -> Answer:
        caller = ctx.caller(call)
        size = wire.limit(call.arg("limit"))
        after = wire.cursor(call.arg("cursor"))
        with ctx.store.read() as db:
            ctx.session_in(db, caller, workspace_id, session_id)
            try:
                page = PROJECTIONS[name](
                    db=db, session_id=session_id, limit=size, cursor=after, wall=caller.wall
                )
            except InvalidCursor:
                raise Problem("invalid_cursor", "cursor is malformed") from None
        return Answer(200, wire.page([shape(item) for item in page.items], page.next_cursor))

    return read


def record_of(name: str) -> Callable[..., Answer]:
    def read(ctx: ServerContext, call: Call, workspace_id: str, session_id: str) -> Answer:
        caller = ctx.caller(call)
        with ctx.store.read() as db:
            ctx.session_in(db, caller, workspace_id, session_id)
            record = PROJECTIONS[name](db=db, session_id=session_id, wall=caller.wall)
        return Answer(200, record)

    return read
