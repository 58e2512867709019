"""Ours: what the agent is doing — a page of its own transcript, newest last, read from the end
(``agents.transcripts``), else the tmux pane ``R`` started it in (``agents.panes``), to whoever
may read the session. ``before`` (the ``next_before`` of a
page) reads older entries; a transcript Roundtable does not know or cannot read is said, not an
error: ``{"available": false, "reason"}``."""

from __future__ import annotations

from roundtable_console.agents.transcripts import TranscriptUnavailable
from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.hosts import activity
from roundtable_console.api.problems import Problem
from roundtable_console.api.routes import found, wire
from roundtable_console.api.routes.found import Found
from roundtable_console.api.routes.session_records import person
from roundtable_console.store.validation import whole_number


async def transcript(ctx: ServerContext, call: Call, workspace_id: str, session_id: str) -> Answer:
    return await _transcript(ctx, call, found.in_workspace(ctx, workspace_id, session_id))


async def transcript_by_id(ctx: ServerContext, call: Call, session_id: str) -> Answer:
    await ctx.in_worker(person, ctx, call)
    return await _transcript(ctx, call, found.by_id(session_id))


async def _transcript(ctx: ServerContext, call: Call, session_of: Found) -> Answer:
    source, before, size = await ctx.in_worker(_source, ctx, call, session_of)
    try:
        page = await activity.read(ctx, source, before=before, limit=size)
    except TranscriptUnavailable as unavailable:
        body = {
            "available": False,
            "reason": str(unavailable),
            "items": [],
            "next_before": None,
            "size": None,
        }
        return Answer(200, body)
    return Answer(200, {"available": True, "reason": None, **page.to_json()})


def _source(
    ctx: ServerContext, call: Call, session_of: Found
) -> tuple[activity.Source, int | None, int]:
    """Who asks (first), what they ask, and where the session's activity is read."""
    caller = ctx.caller(call)
    size = wire.limit(call.arg("limit"))
    raw = call.arg("before")
    before = None
    if raw is not None:
        before = whole_number(raw)
        if before is None:
            raise Problem("invalid_cursor", "before is a byte offset: a whole number")
    with ctx.store.read() as db:
        session = session_of(db, caller)
        found.own_agents_only(caller, session, "transcripts")
        return activity.Source(db, session), before, size
