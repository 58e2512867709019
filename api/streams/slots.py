"""The streams open on one server — the API's server-sent events and WebSocket, the web
console's live stream — counted, and ended when the right to read them ends.

- A caller holds at most ``Exposure.streams_per_token`` streams at once (a token's, its browsers'
  sign-ins included; in header mode, an address's), and the server ``streams_in_all``: past the
  first, 429 ``too_many_requests``; past the second, 503 ``server_busy``. Each open stream reads
  the store at every change, so a viewer with thousands of them would slow every other.
- Every ``CHECK_SECONDS`` one task checks again the credential of every open stream, in one read
  (each distinct credential once), and ends those whose credential no longer holds: a token
  revoked or expired, a sign-out, header mode ended. Each stream is told why (its problem's
  code) and closes: the right to read ends within ``CHECK_SECONDS`` and a read of a revocation.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from roundtable_console.api.edge.identity import BROWSER_COOKIE, Caller
from roundtable_console.api.problems import Problem
from roundtable_console.store.errors import StoreError

CHECK_SECONDS = 2.0


class Opening(Protocol):
    """The request that opened a stream (``api.context.Call``): its credential."""

    headers: Mapping[str, str]
    address: str

    def cookie(self, name: str) -> str | None: ...


# Each opening request's credential checked again, all in one read: for each, None while it
# holds, else the code of the problem that now refuses it (``ServerContext.recheck``).
Recheck = Callable[[list[Opening]], Awaitable[list[str | None]]]


@dataclass(eq=False)
class Slot:
    """One open stream: whose it is, the request that opened it, what to do when it must
    end."""

    holder: str
    call: Opening
    on_end: Callable[[str], None]
    ended: str | None = None

    @property
    def credential(self) -> tuple[str | None, str | None]:
        return self.call.headers.get("authorization"), self.call.cookie(BROWSER_COOKIE)

    def end(self, code: str) -> None:
        if self.ended is None:
            self.ended = code
            self.on_end(code)


@dataclass
class StreamSlots:
    per_holder: int
    in_all: int
    recheck: Recheck
    closing: threading.Event
    check_seconds: float = CHECK_SECONDS
    slots: set[Slot] = field(default_factory=set)
    _watcher: asyncio.Task[None] | None = None

    def take(
        self,
        call: Opening,
        caller: Caller,
        on_end: Callable[[str], None],
        *,
        holder: str | None = None,
    ) -> Slot:
        """A slot for a stream ``caller`` opens with ``call``; ``Problem`` past a limit.
        ``holder``: whose it counts as (default: the token's name; in header mode, the
        address's)."""
        if holder is None:
            holder = caller.name if caller.mode != "header" else f"address {call.address}"
        if len(self.slots) >= self.in_all:
            raise Problem(
                "server_busy",
                f"The server has {self.in_all} streams open, its most; retry in a moment.",
                headers={"Retry-After": "5"},
            )
        if sum(1 for slot in self.slots if slot.holder == holder) >= self.per_holder:
            raise Problem(
                "too_many_requests",
                f"{self.per_holder} streams are open for this caller, the most it may hold; "
                "close one first.",
                headers={"Retry-After": "5"},
            )
        slot = Slot(holder, call, on_end)
        self.slots.add(slot)
        self._watch()
        return slot

    def give_back(self, slot: Slot) -> None:
        self.slots.discard(slot)

    @property
    def full(self) -> bool:
        return len(self.slots) >= self.in_all

    def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        watcher = self._watcher
        if watcher is None or watcher.done() or watcher.get_loop() is not loop:
            self._watcher = loop.create_task(self._watching())

    async def _watching(self) -> None:
        while self.slots and not self.closing.is_set():
            await asyncio.sleep(self.check_seconds)
            by_credential: dict[tuple[str | None, str | None], list[Slot]] = {}
            for slot in list(self.slots):
                by_credential.setdefault(slot.credential, []).append(slot)
            holders = list(by_credential.values())
            try:
                codes = await self.recheck([holding[0].call for holding in holders])
            except StoreError:
                continue  # the store cannot tell now: asked again at the next check
            for holding, code in zip(holders, codes, strict=True):
                if code is None:
                    continue
                for slot in holding:
                    slot.end(code)
                    self.give_back(slot)
