"""Calls for a host another server of the store holds (issue 41 point 2: several servers on one
store share the hosts), through the store's ``host_calls`` (``store.hosts.calls``).

The server asked writes the call and waits for its answer, woken by the store's change signal
(``api.streams.change_hub``; PostgreSQL notifies on every write of the table). The server that
holds the host, woken the same way while it holds any, takes the open calls for its hosts, asks
each host over its link, and writes the answer. A server that holds no host takes nothing and
waits for nothing: nothing polls while no call is made and no host held.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from roundtable_console.api.hosts.answers import HostRefused, HostUnreachable, outcome_of
from roundtable_console.api.streams.change_hub import ChangeHub
from roundtable_console.store.clock import parse_ts, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import StoreError
from roundtable_console.store.hosts import calls, protocol

log = logging.getLogger("roundtable.hosts")

# A change signal can be missed (SQLite is looked at every so often; a PostgreSQL listener
# reconnects): what waits looks again this often anyway, and no more often than TAKE_SECONDS.
LOOK_SECONDS = 1.0
TAKE_SECONDS = 0.05


class Holder(Protocol):
    """The hosts this server holds (``api.hosts.links.HostLinks``), as the relay uses them."""

    store: Store
    links: dict[str, Any]
    closing: Any
    in_worker: Callable[..., Awaitable[Any]]

    async def call(
        self, name: str, op: str, args: dict[str, Any], *, timeout: float
    ) -> dict[str, Any]: ...


class Relay:
    def __init__(self, links: Holder, hub: ChangeHub) -> None:
        self.links = links
        self.hub = hub
        self.taker = secrets.token_hex(8)  # this server, as it takes calls
        self._taking: asyncio.Task[None] | None = None
        self._answering: set[asyncio.Task[None]] = set()

    async def ask(self, name: str, op: str, args: dict[str, Any], *, timeout: float) -> Any:
        """``op`` for the host ``name``, through the server that holds it: its ``ok`` part, or
        ``HostUnreachable`` / ``HostRefused`` as over a link."""
        links = self.links
        try:
            call_id = await links.in_worker(self._ask, name, op, args, timeout)
        except StoreError:
            said = f"The host {name} could not be asked: the store failed."
            raise HostUnreachable(said) from None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        woken = self.hub.subscribe()
        try:
            while True:
                woken.clear()
                answer = await links.in_worker(self._answer_of, call_id)
                if answer is not None:
                    return outcome_of(name, answer)
                left = deadline - loop.time()
                if left <= 0:
                    raise HostUnreachable(
                        f"The host {name} did not answer within {timeout:.0f} s (it is held by "
                        "another server of this store)."
                    )
                try:
                    await asyncio.wait_for(woken.wait(), min(left, LOOK_SECONDS))
                except TimeoutError:
                    pass
        finally:
            self.hub.unsubscribe(woken)

    def holding(self) -> None:
        """A host is held here now: take the calls for this server's hosts while any is."""
        if self._taking is None or self._taking.done():
            self._taking = asyncio.get_running_loop().create_task(self._take_while_holding())

    async def _take_while_holding(self) -> None:
        woken = self.hub.subscribe()
        try:
            while self.links.links and not self.links.closing.is_set():
                woken.clear()
                try:
                    taken = await self.links.in_worker(self._take, list(self.links.links))
                except StoreError:
                    taken = []
                for call in taken:
                    task = asyncio.get_running_loop().create_task(self._answer(call))
                    self._answering.add(task)
                    task.add_done_callback(self._answering.discard)
                try:
                    await asyncio.wait_for(woken.wait(), LOOK_SECONDS)
                except TimeoutError:
                    pass
                await asyncio.sleep(TAKE_SECONDS)  # a busy store wakes often: take at a pace
        finally:
            self.hub.unsubscribe(woken)

    async def _answer(self, call: calls.OpenCall) -> None:
        expires = parse_ts(call.expires_at)
        left = (expires - system_clock()).total_seconds() if expires else 0.0
        if call.op not in protocol.OPERATIONS:
            body: dict[str, Any] = {"refused": "A host does not do that."}
        else:
            try:
                ok = await self.links.call(call.host, call.op, call.args, timeout=max(left, 0.1))
                body = {"ok": ok}
            except HostRefused as refused:
                body = {"refused": str(refused)}
            except HostUnreachable as unreachable:
                body = {"unavailable": str(unreachable)}
        try:
            await self.links.in_worker(self._write_answer, call.id, body)
        except StoreError:
            log.warning("a relayed call's answer could not be written", exc_info=True)

    def _ask(self, name: str, op: str, args: dict[str, Any], timeout: float) -> str:
        with self.links.store.write() as db:
            return calls.ask(db, name, op, args, seconds=timeout)

    def _answer_of(self, call_id: str) -> dict[str, Any] | None:
        with self.links.store.read() as db:
            return calls.answer_of(db, call_id)

    def _take(self, hosts: list[str]) -> list[calls.OpenCall]:
        with self.links.store.read() as db:
            found = calls.open_for(db, hosts)
        if not found:
            return []
        with self.links.store.write() as db:
            return calls.take(db, found, self.taker)

    def _write_answer(self, call_id: str, body: dict[str, Any]) -> None:
        with self.links.store.write() as db:
            calls.answer(db, call_id, body)
