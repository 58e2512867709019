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
from typing import Any, Protocol

from roundtable_console.api.hosts.answers import HostRefused, HostUnreachable, outcome_of
from roundtable_console.api.streams.change_hub import ChangeHub
from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import StoreError
from roundtable_console.store.hosts import calls

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
        ``HostUnreachable`` / ``HostRefused`` as over a link. Its store work runs in threads of
        its own, never the request workers' (a worker may be waiting on this very call)."""
        if op not in calls.RELAYED:
            raise HostUnreachable(f"The host {name} is connected to another server of this store.")
        try:
            call_id = await asyncio.to_thread(self._ask, name, op, args, timeout)
        except StoreError:
            said = f"The host {name} could not be asked: the store failed."
            raise HostUnreachable(said) from None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        woken = self.hub.subscribe()
        answered = False
        try:
            while True:
                woken.clear()
                answer = await asyncio.to_thread(self._answer_of, call_id)
                if answer is not None:
                    answered = True
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
                await asyncio.sleep(TAKE_SECONDS)  # a busy store wakes often: look at a pace
        finally:
            self.hub.unsubscribe(woken)
            # Read: the row (a page, a prompt) is not kept. Given up: taken by nobody after.
            ending = self._forget if answered else self._abandon
            self._in_background(asyncio.to_thread(ending, call_id))

    def holding(self) -> None:
        """A host is held here now: take the calls for this server's hosts while any is."""
        if self._taking is None or self._taking.done():
            self._taking = self._in_background(self._take_while_holding())

    def _in_background(self, work: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(work)
        self._answering.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._answering.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("relaying host calls failed", exc_info=task.exception())

    async def _take_while_holding(self) -> None:
        woken = self.hub.subscribe()
        try:
            while self.links.links and not self.links.closing.is_set():
                woken.clear()
                try:
                    taken = await asyncio.to_thread(self._take, list(self.links.links))
                except StoreError:
                    taken = []
                for call in taken:
                    self._in_background(self._answer(call))
                try:
                    await asyncio.wait_for(woken.wait(), LOOK_SECONDS)
                except TimeoutError:
                    pass
                await asyncio.sleep(TAKE_SECONDS)  # a busy store wakes often: take at a pace
        finally:
            self.hub.unsubscribe(woken)

    async def _answer(self, call: calls.OpenCall) -> None:
        body = call.answer_unasked()
        if body is None:
            left = call.seconds_left()
            log.info("relaying %s for host %s (call %s)", call.op, call.host, call.id)
            try:
                ok = await self.links.call(call.host, call.op, call.args, timeout=left - 0.5)
                body = {"ok": ok}
            except HostRefused as refused:
                body = {"refused": str(refused)}
            except HostUnreachable as unreachable:
                body = {"unavailable": str(unreachable)}
        try:
            await asyncio.to_thread(self._write_answer, call.id, body)
        except StoreError:
            log.warning("a relayed call's answer could not be written", exc_info=True)

    def _ask(self, name: str, op: str, args: dict[str, Any], timeout: float) -> str:
        with self.links.store.write() as db:
            return calls.ask(db, name, op, args, seconds=timeout)

    def _answer_of(self, call_id: str) -> dict[str, Any] | None:
        with self.links.store.read() as db:
            return calls.answer_of(db, call_id)

    def _forget(self, call_id: str) -> None:
        with self.links.store.write() as db:
            calls.forget(db, call_id)

    def _abandon(self, call_id: str) -> None:
        with self.links.store.write() as db:
            calls.abandon(db, call_id)

    def _take(self, hosts: list[str]) -> list[calls.OpenCall]:
        with self.links.store.read() as db:
            found = calls.open_for(db, hosts)
        if not found:
            return []
        with self.links.store.write() as db:
            return calls.take(db, found, self.taker)

    def _write_answer(self, call_id: str, body: dict[str, Any]) -> None:
        with self.links.store.write() as db:
            calls.answer(db, call_id, body, self.taker)
