"""The web console's live stream (``GET /live``): server-sent events telling a signed-in page
which sessions changed, so it reads again only the rows it shows.

It is the change feed ``roundtable watch`` prints (``store.reads.changes``), of every
workspace the caller reaches, heartbeats included, woken by the store's own change signal as
the API's streams are (``api.streams.change_hub``). One reader of the feed serves every page open on
this server (``LiveFanout``): twenty pages cost one read a wake, not twenty. Each page gets at
most one ``changed`` event every ``PACE_SECONDS``: the ids changed since the last one, each with
its kinds of change, and an ``id:`` that resumes after it (``Last-Event-ID``, which browsers
send by themselves when they reconnect: the changes since are read for that page alone first).
A page's stream ends, told ``signed-out``, within seconds of its sign-in ending or its token being
revoked (``api.streams.slots``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace

from starlette.responses import StreamingResponse

from roundtable_console.api.context import Call, ServerContext
from roundtable_console.api.edge.identity import Caller
from roundtable_console.api.streams.events import KEEPALIVE_SECONDS, next_wake, sse_response
from roundtable_console.store.errors import StoreError
from roundtable_console.store.reads.changes import Change, ChangeFeed, ChangeFilter, FeedPosition
from roundtable_console.store.reads.sessions import get_sessions

# At most this many sessions named in one event (a page asks again for what it shows).
MAX_IDS = 500
# The least time between two reads of the feed (so between two events of one page): a fleet
# changes many times a second, and each event makes every page read its rows again.
PACE_SECONDS = 0.5
# Told to every listener when the server stops.
CLOSING = ""


@dataclass(frozen=True)
class Batch:
    """What changed since the last batch: each session's kinds of change, its workspace (a page
    bound to workspaces hears only of its own), and the feed's place after it."""

    token: str
    kinds: dict[str, set[str]]
    workspaces: dict[str, str | None] = field(default_factory=dict)
    # The fanout's count of batches: a page asking again because of this batch says so.
    seq: int = 0

    def for_caller(self, caller: Caller) -> dict[str, set[str]]:
        if caller.workspaces is None:
            return self.kinds
        return {
            session_id: kinds
            for session_id, kinds in self.kinds.items()
            if (workspace := self.workspaces.get(session_id)) is not None
            and caller.reaches(workspace)
        }


@dataclass(frozen=True)
class Ended:
    """The page's right to read ended (its problem's code: ``api.streams.slots``)."""

    code: str


Item = Batch | str | Ended


@dataclass(eq=False)
class Listener:
    """One open page: its caller, and the batches (or a store problem's code, or the end of
    its right to read) not yet sent."""

    caller: Caller
    pending: asyncio.Queue[Item] = field(default_factory=asyncio.Queue)


def new_feed(ctx: ServerContext) -> ChangeFeed:
    return ChangeFeed(
        filters=ChangeFilter(heartbeats=True),
        stale_after_seconds=ctx.stale_after_seconds,
        clock=ctx.clock,
    )


def _kinds(found: list[tuple[Change, str]]) -> dict[str, set[str]]:
    kinds: dict[str, set[str]] = {}
    for change, _token in found:
        kinds.setdefault(change.session_id, set()).add(change.change)
    return kinds


def read_batch(ctx: ServerContext, feed: ChangeFeed) -> Batch | None:
    """The changes since the feed's place (None: none), with the sessions' workspaces (read
    whether or not a bound page listens now: one may join while this is read)."""
    with ctx.store.read() as db:
        found = feed.read_positioned(db=db)
        if not found:
            return None
        kinds = _kinds(found)
        sessions = get_sessions(db=db, session_ids=kinds)
    where = {session_id: one.effective_workspace_id for session_id, one in sessions.items()}
    return Batch(found[-1][1], kinds, where)


class LiveFanout:
    """The one reader of the change feed for the pages open in one event loop: woken by the
    store's change signal, it reads what changed at most every ``PACE_SECONDS`` and hands it
    to every listener. It starts with its first listener and stops after its last."""

    def __init__(self, ctx: ServerContext) -> None:
        self.ctx = ctx
        self.listeners: set[Listener] = set()
        self.feed: ChangeFeed | None = None
        self._task: asyncio.Task[None] | None = None
        self._starting = asyncio.Lock()
        self.seq = 0

    async def join(self, listener: Listener) -> str:
        """Listen; the feed's place from which ``listener`` is told every change."""
        self.listeners.add(listener)
        async with self._starting:
            if self.feed is None or self._task is None or self._task.done():
                feed = new_feed(self.ctx)
                await self.ctx.in_worker(_start, self.ctx, feed)
                self.feed = feed
                self._task = asyncio.create_task(self._run(feed))
            return self.feed.position().token()

    def leave(self, listener: Listener) -> None:
        self.listeners.discard(listener)

    async def _run(self, feed: ChangeFeed) -> None:
        hub = self.ctx.hub
        woken = hub.subscribe()
        try:
            while self.listeners and not hub.closing.is_set():
                deadline = feed.seconds_to_deadline()
                wait = KEEPALIVE_SECONDS if deadline is None else min(deadline, KEEPALIVE_SECONDS)
                await next_wake(woken, wait)
                if hub.closing.is_set() or not self.listeners:
                    return
                item: Batch | str | None
                try:
                    item = await self.ctx.in_worker(read_batch, self.ctx, feed)
                except StoreError as error:
                    item = error.code
                if item is not None:
                    if isinstance(item, Batch):
                        self.seq += 1
                        item = replace(item, seq=self.seq)
                    for listener in list(self.listeners):
                        listener.pending.put_nowait(item)
                    await asyncio.sleep(PACE_SECONDS)
        finally:
            hub.unsubscribe(woken)
            if self.feed is feed:
                self.feed = None
            if hub.closing.is_set():
                for listener in list(self.listeners):
                    listener.pending.put_nowait(CLOSING)


def _start(ctx: ServerContext, feed: ChangeFeed) -> None:
    with ctx.store.read() as db:
        feed.start(db=db)


def _position(text: str | None) -> FeedPosition | None:
    if not text:
        return None
    try:
        return FeedPosition.parse(text)
    except StoreError:
        return None  # a position of another server's making, or none: from now


def catch_up(ctx: ServerContext, position: FeedPosition) -> Batch | None:
    """What changed since ``position`` (a page coming back after a lost connection)."""
    feed = new_feed(ctx)
    with ctx.store.read() as db:
        feed.resume(db=db, position=position)
    return read_batch(ctx, feed)


def _merged(first: Item, queue: asyncio.Queue[Item]) -> Item:
    """``first`` and whatever else waits, as one: the union of their changes at the last place;
    the end of the stream when one is among them; the last item when it is a problem's code
    (or ``CLOSING``)."""
    items = [first]
    while not queue.empty():
        items.append(queue.get_nowait())
    ended = [item for item in items if isinstance(item, Ended)]
    if ended:
        return ended[0]
    if isinstance(items[-1], str):
        return items[-1]
    batches = [item for item in items if isinstance(item, Batch)]
    kinds: dict[str, set[str]] = {}
    where: dict[str, str | None] = {}
    for batch in batches:
        for session_id, more in batch.kinds.items():
            kinds.setdefault(session_id, set()).update(more)
        where.update(batch.workspaces)
    # A page's own catch-up (seq 0) is no fanout batch: what follows it is read unshared.
    seq = 0 if any(batch.seq == 0 for batch in batches) else batches[-1].seq
    return Batch(batches[-1].token, kinds, where, seq)


def _event(token: str, kinds: dict[str, set[str]], seq: int) -> str:
    ids = sorted(kinds)[:MAX_IDS]
    changed = {"ids": {one: sorted(kinds[one]) for one in ids}, "seq": seq or None}
    data = json.dumps(changed, separators=(",", ":"))
    return f"id: {token}\nevent: changed\ndata: {data}\n\n"


def live_stream(
    ctx: ServerContext, fanout: LiveFanout, call: Call, caller: Caller
) -> StreamingResponse:
    """The page's stream; ``Problem`` when the caller holds too many (``api.streams.slots``,
    which also ends it once the page's sign-in ends or its token is revoked)."""
    hub = ctx.hub
    resumed = _position(call.headers.get("last-event-id"))
    listener = Listener(caller)
    slot = ctx.streams.take(call, caller, lambda code: listener.pending.put_nowait(Ended(code)))

    def release() -> None:
        fanout.leave(listener)
        ctx.streams.give_back(slot)

    async def events() -> AsyncIterator[str]:
        token = await fanout.join(listener)
        if resumed is not None:
            missed = await ctx.in_worker(catch_up, ctx, resumed)
            if missed is not None:
                listener.pending.put_nowait(missed)
                token = missed.token
        yield f"retry: 1000\nid: {token}\nevent: ready\ndata: {{}}\n\n"
        loop = asyncio.get_running_loop()
        # A keepalive when nothing was sent for KEEPALIVE_SECONDS, on the clock alone: a batch
        # with nothing for this page sends nothing (not when other workspaces change).
        quiet_until = loop.time() + KEEPALIVE_SECONDS
        while not hub.closing.is_set():
            try:
                wait = max(quiet_until - loop.time(), 0.0)
                first = await asyncio.wait_for(listener.pending.get(), wait)
            except TimeoutError:
                yield ": keepalive\n\n"
                quiet_until = loop.time() + KEEPALIVE_SECONDS
                continue
            item = _merged(first, listener.pending)
            if item == CLOSING:
                return
            if isinstance(item, Ended):
                yield f"event: signed-out\ndata: {json.dumps({'code': item.code})}\n\n"
                return
            if isinstance(item, str):
                yield f"event: problem\ndata: {json.dumps({'code': item})}\n\n"
                continue
            kinds = item.for_caller(caller)
            if kinds:
                yield _event(item.token, kinds, item.seq)
                quiet_until = loop.time() + KEEPALIVE_SECONDS

    return sse_response(events(), release)
