"""The web console's live stream (``GET /live``): server-sent events telling a signed-in page
which sessions changed, so it reads again only the rows it shows.

It is the change feed ``roundtable watch`` prints (``store.reads.changes``), of every
workspace the caller reaches, heartbeats included, woken by the store's own change signal as
the API's streams are (``api.change_hub``). Each wake sends one ``changed`` event: the ids
changed since the last one, each with its kinds of change, and an ``id:`` that resumes after
it (``Last-Event-ID``, which browsers send by themselves when they reconnect).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from sqlalchemy import Connection, select
from starlette.responses import StreamingResponse

from roundtable_console.api.context import Call, ServerContext
from roundtable_console.api.identity import Caller
from roundtable_console.api.problems import Problem
from roundtable_console.api.streams import KEEPALIVE_SECONDS, next_wake, sse_response
from roundtable_console.store.db.models import AgentSession
from roundtable_console.store.errors import StoreError
from roundtable_console.store.reads.changes import ChangeFeed, ChangeFilter, FeedPosition

_SESSIONS = AgentSession.__table__  # type: ignore[attr-defined]
# At most this many sessions named in one event (a page asks again for what it shows).
MAX_IDS = 500


def open_feed(ctx: ServerContext, call: Call) -> ChangeFeed:
    feed = ChangeFeed(
        filters=ChangeFilter(heartbeats=True),
        stale_after_seconds=ctx.stale_after_seconds,
        clock=ctx.clock,
    )
    resumed = call.headers.get("last-event-id")
    with ctx.store.read() as db:
        position = _position(resumed)
        if position is None:
            feed.start(db=db)
        else:
            feed.resume(db=db, position=position)
    return feed


def _position(text: str | None) -> FeedPosition | None:
    if not text:
        return None
    try:
        return FeedPosition.parse(text)
    except StoreError:
        return None  # a position of another server's making, or none: from now


def read_changed(
    ctx: ServerContext, call: Call, feed: ChangeFeed
) -> tuple[dict[str, dict[str, list[str]]], str | None]:
    """The sessions changed since the feed's place (the caller's only), and the new place; a
    ``Problem`` once the browser is signed out (its sign-in ended, its token revoked)."""
    with ctx.store.read() as db:
        caller = ctx.caller(call, db)
        found = feed.read_positioned(db=db)
        kinds: dict[str, set[str]] = {}
        for change, _token in found:
            kinds.setdefault(change.session_id, set()).add(change.change)
        if caller.workspaces is not None and kinds:
            kinds = _reached(db, caller, kinds)
    ids = sorted(kinds)[:MAX_IDS]
    token = found[-1][1] if found else None
    return {"ids": {session_id: sorted(kinds[session_id]) for session_id in ids}}, token


def _reached(db: Connection, caller: Caller, kinds: dict[str, set[str]]) -> dict[str, set[str]]:
    rows = db.execute(
        select(_SESSIONS.c.id, _SESSIONS.c.workspace_id, _SESSIONS.c.metadata_json).where(
            _SESSIONS.c.id.in_(sorted(kinds))
        )
    ).all()
    kept: dict[str, set[str]] = {}
    for row in rows:
        workspace = row.workspace_id or _metadata_workspace(row.metadata_json)
        if workspace is not None and caller.reaches(workspace):
            kept[row.id] = kinds[row.id]
    return kept


def _metadata_workspace(text: str | None) -> str | None:
    try:
        value = json.loads(text or "{}").get("workspace_id")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) and value else None


def live_stream(ctx: ServerContext, call: Call, feed: ChangeFeed) -> StreamingResponse:
    hub = ctx.hub

    async def events() -> AsyncIterator[str]:
        woken = hub.subscribe()
        try:
            yield f"retry: 1000\nid: {feed.position().token()}\nevent: ready\ndata: {{}}\n\n"
            while not hub.closing.is_set():
                deadline = feed.seconds_to_deadline()
                wait = KEEPALIVE_SECONDS if deadline is None else min(deadline, KEEPALIVE_SECONDS)
                await next_wake(woken, wait)
                if hub.closing.is_set():
                    return
                try:
                    changed, token = await ctx.in_worker(read_changed, ctx, call, feed)
                except Problem as problem:
                    yield f"event: signed-out\ndata: {json.dumps({'code': problem.code})}\n\n"
                    return
                except StoreError as error:
                    yield f"event: problem\ndata: {json.dumps({'code': error.code})}\n\n"
                    continue
                if token is None:
                    yield ": keepalive\n\n"
                    continue
                data = json.dumps(changed, separators=(",", ":"))
                yield f"id: {token}\nevent: changed\ndata: {data}\n\n"
        finally:
            hub.unsubscribe(woken)

    return sse_response(events())
