"""Live: the reference's workspace WebSocket of events, and a server-sent events stream of the
changes ``roundtable watch`` prints (ours), both woken by the store's own change signal.

The server's ``ChangeHub`` (``api.streams.change_hub``) wakes every open stream when the store
changes, and each then reads what is new for it from where it is. A stream that falls behind loses
nothing: it reads from its own position. SSE events carry an ``id:``: a client that comes back with
``Last-Event-ID`` gets what followed it, nothing twice. Streams end when the server stops, and
when the right to read them does (``api.streams.slots``: a revoked or expired token, within
seconds), which also bounds how many a caller may hold open.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from roundtable_console.api.context import Call, ServerContext
from roundtable_console.api.edge.identity import Caller
from roundtable_console.api.problems import Problem, from_store_error, refusal_of
from roundtable_console.api.routes import wire
from roundtable_console.api.streams.slots import Slot
from roundtable_console.store.errors import StoreError
from roundtable_console.store.reads.changes import ChangeFeed, ChangeFilter, FeedPosition
from roundtable_console.store.reads.events import newest_event_id, workspace_events
from roundtable_console.store.safety.credentials import redact_output_value
from roundtable_console.store.validation import whole_number

KEEPALIVE_SECONDS = 15.0
PING_SECONDS = 20.0
REPLAY_LIMIT = 1000


async def next_wake(woken: asyncio.Event, timeout: float) -> None:
    try:
        await asyncio.wait_for(woken.wait(), timeout=timeout)
    except TimeoutError:
        pass
    woken.clear()


# ------------------------------------------------------------------ server-sent events (ours)


def _change_filter(call: Call, workspace_id: str | None) -> ChangeFilter:
    heartbeats = (call.arg("heartbeats") or "").strip().lower()
    if heartbeats not in ("", "0", "1", "true", "false"):
        raise Problem("invalid_request", "heartbeats is true or false.")
    return ChangeFilter(
        statuses=tuple(value.strip() for value in call.query.get("status", []) if value.strip()),
        agent_id=(call.arg("agent_id") or "").strip() or None,
        run_id=(call.arg("run_id") or "").strip() or None,
        workspace_id=workspace_id,
        heartbeats=heartbeats in ("1", "true"),
    )


def open_feed(
    ctx: ServerContext, call: Call, workspace_id: str | None
) -> tuple[Caller, ChangeFeed]:
    """The caller and its feed of the workspace's changes (None: every workspace's, for a
    caller bound to none), from ``Last-Event-ID`` when given."""
    caller = ctx.caller(call)
    if workspace_id is None:
        caller.require_every_workspace("the changes of every workspace are for callers bound "
                                       "to none: follow a workspace's")  # fmt: skip
    feed = ChangeFeed(
        filters=_change_filter(call, workspace_id),
        stale_after_seconds=ctx.stale_after_seconds,
        clock=ctx.clock,
    )
    resumed = call.headers.get("last-event-id") or call.arg("last_event_id")
    position = FeedPosition.parse(resumed) if resumed else None
    with ctx.store.read() as db:
        if workspace_id is not None:
            ctx.workspace(db, caller, workspace_id)
        if position is None:
            feed.start(db=db)
        else:
            feed.resume(db=db, position=position)
    return caller, feed


def read_feed(ctx: ServerContext, feed: ChangeFeed) -> list[tuple[dict[str, Any], str]]:
    with ctx.store.read() as db:
        return [
            (redact_output_value(change.to_json()), token)
            for change, token in feed.read_positioned(db=db)
        ]


async def changes_stream(request: Request, call: Call, workspace_id: str | None) -> Response:
    ctx: ServerContext = request.app.state.ctx
    hub = ctx.hub
    try:
        caller, feed = await ctx.in_worker(open_feed, ctx, call, workspace_id)
    except Problem as problem:
        return refusal_of(call, problem)
    except StoreError as error:
        return refusal_of(call, from_store_error(error))
    woken = hub.subscribe()
    try:
        slot = ctx.streams.take(call, caller, lambda _code: woken.set())
    except Problem as problem:
        hub.unsubscribe(woken)
        return refusal_of(call, problem)

    def release() -> None:
        hub.unsubscribe(woken)
        ctx.streams.give_back(slot)

    async def events() -> AsyncIterator[str]:
        yield f"retry: 1000\nid: {feed.position().token()}\nevent: ready\ndata: {{}}\n\n"
        loop = asyncio.get_running_loop()
        # A keepalive when nothing was sent for KEEPALIVE_SECONDS, on the clock alone: one sent
        # at each wake would tell the client when other workspaces change.
        quiet_until = loop.time() + KEEPALIVE_SECONDS
        first = True
        while not hub.closing.is_set():
            if not first:
                deadline = feed.seconds_to_deadline()
                wait = max(quiet_until - loop.time(), 0.0)
                await next_wake(woken, wait if deadline is None else min(deadline, wait))
                if hub.closing.is_set():
                    return
            first = False
            if slot.ended is not None:
                yield f"event: signed-out\ndata: {json.dumps({'code': slot.ended})}\n\n"
                return
            try:
                found = await ctx.in_worker(read_feed, ctx, feed)
            except StoreError as error:
                yield f"event: problem\ndata: {json.dumps({'code': error.code})}\n\n"
                continue
            for change, token in found:
                yield f"id: {token}\nevent: change\ndata: {json.dumps(change)}\n\n"
            if found:
                quiet_until = loop.time() + KEEPALIVE_SECONDS
            elif loop.time() >= quiet_until:
                yield ": keepalive\n\n"
                quiet_until = loop.time() + KEEPALIVE_SECONDS

    return sse_response(events(), release)


class _Stream(StreamingResponse):
    """A streaming response that always runs ``release`` once it is over: also when its
    events never started (a client gone before the first), which a generator's own ``finally``
    would miss."""

    def __init__(self, events: AsyncIterator[str], release: Callable[[], None]) -> None:
        super().__init__(
            events,
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )
        self.release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.release()


def sse_response(events: AsyncIterator[str], release: Callable[[], None]) -> StreamingResponse:
    """A stream of server-sent events: never cached, never buffered by a proxy; ``release``
    when it is over."""
    return _Stream(events, release)


# ------------------------------------------------------------------ the reference's WebSocket


def ws_call(websocket: WebSocket) -> Call:
    query: dict[str, list[str]] = {}
    for name, value in websocket.query_params.multi_items():
        query.setdefault(name, []).append(value)
    headers = {name.lower(): value for name, value in websocket.headers.items()}
    # Browsers cannot send headers on a WebSocket: the token, or (header mode) the actor, may
    # come in the query instead.
    if "authorization" not in headers and query.get("access_token"):
        headers["authorization"] = f"Bearer {query['access_token'][-1]}"
    if "x-actor-id" not in headers and query.get("actor_id"):
        headers["x-actor-id"] = query["actor_id"][-1]
    return Call(
        method="GET",
        path=websocket.url.path,
        headers=headers,
        query=query,
        body=b"",
        address=websocket.client.host if websocket.client else "",
        request_id=websocket.scope.get("state", {}).get("request_id", ""),
    )


def open_events(
    ctx: ServerContext, call: Call, workspace_id: str
) -> tuple[Caller, int, int | None]:
    """The caller, the newest sequence and the client's ``last_event_id`` (None: from now)."""
    wire.path_id(workspace_id, what="workspace")
    caller = ctx.caller(call)
    if caller.mode == "header" and not (call.headers.get("x-actor-id") or "").strip():
        raise Problem("authentication_required", "Name yourself: X-Actor-ID or ?actor_id=.")
    raw = call.arg("last_event_id")
    last: int | None = None
    if raw is not None and raw != "":
        last = whole_number(raw)
        if last is None:
            raise Problem("invalid_event_cursor", "last_event_id is a whole number, 0 or more.")
    with ctx.store.read() as db:
        ctx.workspace(db, caller, workspace_id)
        return caller, newest_event_id(db=db), last


def read_events(
    ctx: ServerContext, workspace_id: str, after: int, limit: int
) -> list[dict[str, Any]]:
    with ctx.store.read() as db:
        return workspace_events(db=db, workspace_id=workspace_id, after=after, limit=limit)


async def events_socket(websocket: WebSocket, workspace_id: str) -> None:
    ctx: ServerContext = websocket.app.state.ctx
    hub = ctx.hub
    call = ws_call(websocket)
    try:
        caller, current, last = await ctx.in_worker(open_events, ctx, call, workspace_id)
    except (Problem, StoreError) as error:
        problem = error if isinstance(error, Problem) else from_store_error(error)
        await websocket.send_denial_response(refusal_of(call, problem))
        return
    woken = hub.subscribe()
    try:
        slot = ctx.streams.take(call, caller, lambda _code: woken.set())
    except Problem as problem:
        hub.unsubscribe(woken)
        await websocket.send_denial_response(refusal_of(call, problem))
        return
    try:
        await _follow(websocket, ctx, workspace_id, current, last, woken, slot)
    finally:
        hub.unsubscribe(woken)
        ctx.streams.give_back(slot)


async def _follow(
    websocket: WebSocket,
    ctx: ServerContext,
    workspace_id: str,
    current: int,
    last: int | None,
    woken: asyncio.Event,
    slot: Slot,
) -> None:
    hub = ctx.hub
    await websocket.accept()
    await websocket.send_json(
        {
            "kind": "hello",
            "schema_version": "1",
            "workspace_id": workspace_id,
            "current_sequence": current,
            "resumable": True,
        }
    )
    position = current if last is None else last
    if last is not None:
        if last > current:
            await _resync(websocket, workspace_id, "cursor_not_retained")
            return
        missed = await ctx.in_worker(read_events, ctx, workspace_id, last, REPLAY_LIMIT + 1)
        if len(missed) > REPLAY_LIMIT:
            await _resync(websocket, workspace_id, "cursor_not_retained")
            return
        for event in missed:
            await websocket.send_json(event)
            position = event["sequence"]
    closed = asyncio.Event()

    async def watch_for_close() -> None:
        try:
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    break
        except WebSocketDisconnect:
            pass
        finally:
            closed.set()
            woken.set()

    listener = asyncio.create_task(watch_for_close())
    loop = asyncio.get_running_loop()
    pinged = loop.time()
    try:
        while not closed.is_set() and not hub.closing.is_set():
            await next_wake(woken, max(PING_SECONDS - (loop.time() - pinged), 0.05))
            if closed.is_set() or hub.closing.is_set():
                break
            if slot.ended is not None:
                await websocket.close(code=1008, reason=slot.ended)
                closed.set()
                break
            fresh = await ctx.in_worker(read_events, ctx, workspace_id, position, REPLAY_LIMIT)
            for event in fresh:
                await websocket.send_json(event)
                position = event["sequence"]
            if loop.time() - pinged >= PING_SECONDS:
                await websocket.send_json(
                    {"kind": "ping", "workspace_id": workspace_id, "sequence": position}
                )
                pinged = loop.time()
    except (WebSocketDisconnect, RuntimeError):
        pass
    finally:
        listener.cancel()
        if not closed.is_set():
            try:
                await websocket.close(code=1001 if hub.closing.is_set() else 1000)
            except RuntimeError:
                pass


async def _resync(websocket: WebSocket, workspace_id: str, reason: str) -> None:
    await websocket.send_json(
        {"kind": "resync_required", "reason": reason, "workspace_id": workspace_id}
    )
    await websocket.close(code=1000)
