"""The long waits of hooks that ask or listen through the server (``api.routes.hook_waits``): each
waits for one row to leave its waiting state — a permission request no longer pending, a reply
listener no longer listening — as a coroutine on the server's event loop, never a thread.

At each change of the store (``ChangeHub``: PostgreSQL's LISTEN, SQLite's data version) one read
asks which of all the rows waited on have moved, however many hooks wait, and wakes only theirs:
a thousand waiting hooks cost a thousand small objects and one query per change, not a thousand.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

from roundtable_console.api.problems import Problem
from roundtable_console.api.streams.change_hub import ChangeHub
from roundtable_console.store.db.database import Store
from roundtable_console.store.replies.listeners import ended_among
from roundtable_console.store.requests.reads import settled_among

log = logging.getLogger("roundtable.serve")
Kind = Literal["request", "listener"]
InWorker = Callable[..., Awaitable[Any]]


# Long waits open at once, per credential (or address) and in all: past them, 429 and 503. A
# stolen token cannot hold every connection the server takes (``--max-connections``).
WAITS_PER_HOLDER = 256
WAITS_IN_ALL = 4096


class Awaited:
    """The rows the open long waits are for, and the one task that wakes them."""

    def __init__(
        self,
        store: Store,
        hub: ChangeHub,
        in_worker: InWorker,
        *,
        per_holder: int = WAITS_PER_HOLDER,
        in_all: int = WAITS_IN_ALL,
    ) -> None:
        self.store = store
        self.hub = hub
        self.in_worker = in_worker
        self.per_holder = per_holder
        self.in_all = in_all
        self._waits: dict[tuple[Kind, str], set[asyncio.Event]] = {}
        self._holders: dict[str, int] = {}
        self._task: asyncio.Task[None] | None = None
        self._woken: asyncio.Event | None = None

    @property
    def waiting(self) -> int:
        """How many long waits are open now."""
        return sum(len(events) for events in self._waits.values())

    @asynccontextmanager
    async def watching(self, kind: Kind, row_id: str, holder: str) -> AsyncIterator[asyncio.Event]:
        """An event set when the row ``row_id`` may have left its waiting state (or the server
        stops), for a wait of ``holder``'s (``Problem`` past the limits). Read the row after
        entering, then wait: a change between the read and the wait still sets it."""
        if self.waiting >= self.in_all:
            raise Problem("server_busy", f"The server holds {self.in_all} long waits, its most; "
                          "retry in a moment.", headers={"Retry-After": "5"})  # fmt: skip
        if self._holders.get(holder, 0) >= self.per_holder:
            raise Problem("too_many_requests", f"{self.per_holder} long waits are open for "
                          "this caller, its most.", headers={"Retry-After": "5"})  # fmt: skip
        moved = asyncio.Event()
        key = (kind, row_id)
        self._waits.setdefault(key, set()).add(moved)
        self._holders[holder] = self._holders.get(holder, 0) + 1
        self._start()
        try:
            yield moved
        finally:
            events = self._waits.get(key)
            if events is not None:
                events.discard(moved)
                if not events:
                    del self._waits[key]
            self._holders[holder] -= 1
            if not self._holders[holder]:
                del self._holders[holder]

    def _start(self) -> None:
        if self._task is None or self._task.done():
            # Subscribed now, before the caller reads its row: a change committed after that
            # read is signalled to this subscription, even before the task first runs.
            self._woken = self.hub.subscribe()
            self._task = asyncio.get_running_loop().create_task(self._wake_moved(self._woken))

    async def _wake_moved(self, woken: asyncio.Event) -> None:
        try:
            while self._waits and not self.hub.closing.is_set():
                await woken.wait()
                woken.clear()
                if self.hub.closing.is_set():
                    break
                requests = [row for kind, row in self._waits if kind == "request"]
                listeners = [row for kind, row in self._waits if kind == "listener"]
                try:
                    moved = await self.in_worker(self._moved, requests, listeners)
                except Exception:  # noqa: BLE001 - the store is unreachable now: the next change
                    log.warning("the long waits' read failed; retrying", exc_info=True)
                    continue
                for key in moved:
                    for event in self._waits.get(key, ()):
                        event.set()
        finally:
            self.hub.unsubscribe(woken)
            if self.hub.closing.is_set():
                for events in self._waits.values():
                    for event in events:
                        event.set()

    def _moved(self, requests: list[str], listeners: list[str]) -> list[tuple[Kind, str]]:
        with self.store.read() as db:
            settled = settled_among(db, requests) if requests else set()
            ended = ended_among(db, listeners) if listeners else set()
        return [("request", row) for row in settled] + [("listener", row) for row in ended]
