"""The hosts this server holds: one WebSocket each, opened by the host (``store.hosts.protocol``).

A link costs a coroutine, no thread. It is counted and its token checked again every
``CHECK_SECONDS`` (``api.streams.slots``: a revoked host token is let go within that); every
``SEEN_EVERY_SECONDS`` one statement marks all of this server's hosts seen. A host held (here, or
by another server of the store) keeps its link: another connection of its name is closed with
``CLOSE_HELD`` and tries again later. Nothing runs while no host is connected.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from starlette.responses import Response
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from roundtable_console.api.edge.identity import Caller
from roundtable_console.api.hosts.answers import Asker, HostRefused, HostUnreachable, outcome_of
from roundtable_console.api.problems import Problem, refusal_of
from roundtable_console.api.streams.slots import Recheck, Slot, StreamSlots
from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import StoreError
from roundtable_console.store.hosts import protocol, registry
from roundtable_console.store.hosts.facts import HostFacts

log = logging.getLogger("roundtable.hosts")

CHECK_SECONDS = 10.0
PARSE_HERE_MOST = 64 * 1024  # a host's message longer than this is decoded in a thread
InWorker = Callable[..., Awaitable[Any]]


@dataclass(eq=False)
class Link:
    name: str
    connection_id: str
    websocket: WebSocket
    slot: Slot
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    close_code: int = 1000
    close_reason: str = ""
    # The calls sent and not yet answered, by id (``HostLinks.call``).
    pending: dict[int, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    last_id: int = 0
    # Calls not waited for any more (too slow): their answers may still come, once each.
    late: deque[int] = field(default_factory=lambda: deque(maxlen=protocol.CALLS_AT_ONCE * 4))

    def end(self, code: int, reason: str) -> None:
        if not self.ended.is_set():
            self.close_code, self.close_reason = code, reason
            self.ended.set()
        for waiting in self.pending.values():
            if not waiting.done():
                waiting.set_exception(HostUnreachable(f"The host {self.name} went away."))

    def answered(self, message: Any) -> bool:
        """Take an answer in; False for anything else (a host sends only answers, each to a
        call it was sent). An answer to a call no longer awaited (it took too long) is let
        go, once."""
        if not isinstance(message, dict) or message.get("kind") != protocol.ANSWER:
            return False
        call_id = message.get("id")
        if type(call_id) is not int:
            return False
        waiting = self.pending.get(call_id)
        if waiting is None:
            if call_id not in self.late:
                return False  # never asked, or answered already
            self.late.remove(call_id)
        elif not waiting.done():
            waiting.set_result(message)
        return True


class HostLinks:
    def __init__(
        self,
        store: Store,
        in_worker: InWorker,
        recheck: Recheck,
        closing: threading.Event,
        *,
        in_all: int,
        seen_every: float = registry.SEEN_EVERY_SECONDS,
    ) -> None:
        self.store = store
        self.in_worker = in_worker
        self.closing = closing
        self.seen_every = seen_every
        # Counted and checked again as streams are (one a host), apart from the streams.
        self.slots = StreamSlots(
            per_holder=1,
            in_all=in_all,
            recheck=recheck,
            closing=closing,
            check_seconds=CHECK_SECONDS,
        )
        self.links: dict[str, Link] = {}
        self._seeing: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # Calls for hosts other servers of the store hold, and theirs for ours (set by the
        # server's context: api.hosts.relay).
        self.relay: Asker | None = None

    async def serve(self, websocket: WebSocket, caller: Caller, call: Any) -> None:
        """Hold the host's connection until it goes, its token ends or the server stops."""
        self._loop = asyncio.get_running_loop()
        if self.slots.full:  # before accepting: nothing more is spent on it
            await websocket.send_denial_response(_busy(call, self.slots.in_all))
            return
        await websocket.accept()
        try:
            facts = await self._hello(websocket, caller)
        except Problem as problem:
            await _refuse(websocket, problem.code, problem.detail)
            return
        except StoreError as error:
            await _refuse(websocket, error.code, error.message)
            return
        except (WebSocketDisconnect, TimeoutError, RuntimeError, OSError):
            await _close(websocket, 1008, "no hello")
            return
        if facts.name in self.links:
            await _close(websocket, protocol.CLOSE_HELD, "held by another connection")
            return
        link: Link | None = None

        def token_ended(code: str) -> None:
            if link is not None:
                link.end(protocol.CLOSE_TOKEN_ENDED, code)

        try:
            slot = self.slots.take(call, caller, token_ended, holder=f"host {facts.name}")
        except Problem as problem:
            await _close(websocket, 1013, problem.detail[:120])
            return
        link = Link(facts.name, secrets.token_hex(12), websocket, slot)
        self.links[facts.name] = link  # held here from now: a second one waits
        taken = False
        code, reason = protocol.CLOSE_HELD, "held by another connection"
        try:
            taken = await self.in_worker(self._connect, facts, link.connection_id)
        except StoreError as error:
            code, reason = 1011, error.message[:120]
        finally:
            if not taken:  # never leave the name held here by no link (whatever was raised)
                del self.links[facts.name]
                self.slots.give_back(slot)
        if not taken:
            await _close(websocket, code, reason)
            return
        self._see()
        if self.relay is not None:
            self.relay.holding()
        log.info("host %s connected", facts.name)
        try:
            await websocket.send_json(
                {
                    "kind": protocol.WELCOME,
                    "name": facts.name,
                    "connection_id": link.connection_id,
                    "seen_every": self.seen_every,
                }
            )
            await self._hold(link)
        except (WebSocketDisconnect, RuntimeError, OSError):
            pass  # it went as it was welcomed: let go below
        finally:
            if self.links.get(facts.name) is link:
                del self.links[facts.name]
            self.slots.give_back(slot)
            try:
                await self.in_worker(self._disconnect, facts.name, link.connection_id)
            except StoreError:
                pass  # offline by itself once it is not seen for registry.ONLINE_SECONDS
            log.info("host %s gone", facts.name)

    async def _hello(self, websocket: WebSocket, caller: Caller) -> HostFacts:
        message = await asyncio.wait_for(websocket.receive(), protocol.HELLO_SECONDS)
        if message["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(message.get("code", 1000))
        raw = message.get("text")
        if raw is None:
            raise Problem("invalid_request", "The hello is a text frame of JSON.")
        try:
            hello = json.loads(raw)
        except ValueError:
            raise Problem("invalid_request", "The hello is one JSON object.") from None
        if not isinstance(hello, dict) or hello.get("kind") != protocol.HELLO:
            raise Problem("invalid_request", 'The first message is {"kind": "hello", …}.')
        facts = HostFacts.from_json(hello)
        if caller.mode != "header" and facts.name != caller.name:
            raise Problem(
                "forbidden",
                f"The token {caller.name!r} connects the host {caller.name!r}, not {facts.name!r}.",
            )
        return facts

    async def call(
        self, name: str, op: str, args: dict[str, Any], *, timeout: float = protocol.CALL_SECONDS
    ) -> dict[str, Any]:
        """What the host ``name`` held here answers to ``op`` (``store.hosts.protocol``): its
        ``ok`` part; else ``HostUnreachable`` (not held here, gone, too slow, too busy, or the
        host says it cannot) or ``HostRefused`` (the host would not), in words."""
        link = self.links.get(name)
        if link is None or link.ended.is_set():
            raise HostUnreachable(f"The host {name} is not connected to this server.")
        if len(link.pending) >= protocol.CALLS_AT_ONCE:
            raise HostUnreachable(f"The host {name} is busy answering; try again in a moment.")
        link.last_id += 1
        call_id = link.last_id
        waiting: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        link.pending[call_id] = waiting
        message = json.dumps({"kind": protocol.CALL, "id": call_id, "op": op, "args": args})
        if len(message.encode()) > protocol.MESSAGE_MOST_BYTES // 2:
            link.pending.pop(call_id, None)
            raise HostRefused(f"What the host {name} would be sent is too long.")
        try:
            async with asyncio.timeout(timeout):  # sending too: a host that reads nothing
                await link.websocket.send_text(message)
                answer = await waiting
        except TimeoutError:
            link.late.append(call_id)
            raise HostUnreachable(
                f"The host {name} did not answer within {timeout:.0f} s."
            ) from None
        except (WebSocketDisconnect, RuntimeError, OSError):
            raise HostUnreachable(f"The host {name} went away.") from None
        finally:
            link.pending.pop(call_id, None)
        return outcome_of(name, answer)

    async def call_anywhere(
        self, name: str, op: str, args: dict[str, Any], *, timeout: float = protocol.CALL_SECONDS
    ) -> dict[str, Any]:
        """``call``, whichever server of the store holds the host: this one, over its link;
        another, through the store (``api.hosts.relay``)."""
        if name in self.links or self.relay is None:
            return await self.call(name, op, args, timeout=timeout)
        return await self.relay.ask(name, op, args, timeout=timeout)

    def call_from_worker(
        self,
        name: str,
        op: str,
        args: dict[str, Any],
        *,
        timeout: float,
        anywhere: bool = False,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> dict[str, Any]:
        """``call_anywhere`` (``anywhere``; else ``call``), from a worker thread (work that must
        ask a host in the middle of it), on ``loop`` (the server's: a request's handler passes
        it; else the one a host's connection was held on): the thread waits ``timeout`` at
        most."""
        loop = loop or self._loop
        if loop is None or loop.is_closed():
            raise HostUnreachable(f"The host {name} is not connected to this server.")
        asking = self.call_anywhere if anywhere else self.call
        asked = asyncio.run_coroutine_threadsafe(asking(name, op, args, timeout=timeout), loop)
        try:
            return asked.result(timeout + 1)
        except TimeoutError:
            asked.cancel()
            said = f"The host {name} did not answer within {timeout:.0f} s."
            raise HostUnreachable(said) from None

    def from_worker(self) -> Callable[..., dict[str, Any]]:
        """``call_from_worker`` wherever a server of the store holds the host, bound to the
        loop it is made on: a request's handler makes it, its work in a worker calls it."""
        return partial(self.call_from_worker, anywhere=True, loop=asyncio.get_running_loop())

    async def _hold(self, link: Link) -> None:
        async def listen() -> None:
            try:
                while True:
                    message = await link.websocket.receive()
                    if message["type"] == "websocket.disconnect":
                        break
                    if not link.answered(await _json_of(message)):
                        # A host sends answers only: anything else ends it.
                        link.end(1008, "a host sends only answers to calls")
                        break
            except (WebSocketDisconnect, RuntimeError, OSError):
                pass
            finally:
                link.end(1000, "")

        listener = asyncio.create_task(listen())
        try:
            if self.closing.is_set():
                link.end(1001, "the server stops")
            await link.ended.wait()
        finally:
            listener.cancel()
            await _close(link.websocket, link.close_code, link.close_reason)

    def close_all(self) -> None:
        """The server stops: every link ends (from any thread, a signal handler's too)."""
        if self._loop is None or self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._end_all)

    def _end_all(self) -> None:
        for link in list(self.links.values()):
            link.end(1001, "the server stops")

    def _connect(self, facts: HostFacts, connection_id: str) -> bool:
        with self.store.write() as db:
            return registry.connect(db, facts, connection_id=connection_id)

    def _disconnect(self, name: str, connection_id: str) -> None:
        with self.store.write() as db:
            registry.disconnect(db, name, connection_id=connection_id)

    def _mark_seen(self, connection_ids: list[str]) -> set[str]:
        with self.store.write() as db:
            return registry.seen(db, connection_ids)

    def _see(self) -> None:
        if self._seeing is None or self._seeing.done():
            self._seeing = asyncio.get_running_loop().create_task(self._seeing_loop())

    async def _seeing_loop(self) -> None:
        while self.links and not self.closing.is_set():
            await asyncio.sleep(self.seen_every)
            links = list(self.links.values())
            if not links:
                break
            try:
                held = await self.in_worker(self._mark_seen, [link.connection_id for link in links])
            except StoreError:
                continue  # not seen this time: online still, until registry.ONLINE_SECONDS
            for link in links:
                if link.connection_id not in held:
                    link.end(protocol.CLOSE_HELD, "held by another connection")


async def _json_of(message: Any) -> Any:
    """A host's text message, decoded (a long one in a thread: the loop serves everyone)."""
    raw = message.get("text")
    if raw is None:
        return None
    try:
        if len(raw) > PARSE_HERE_MOST:
            return await asyncio.to_thread(json.loads, raw)
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def _busy(call: Any, most: int) -> Response:
    return refusal_of(
        call,
        Problem(
            "server_busy",
            f"The server holds {most} hosts, its most; connect to another, or retry later.",
            headers={"Retry-After": "30"},
        ),
    )


async def _refuse(websocket: WebSocket, code: str, detail: str) -> None:
    try:
        await websocket.send_json({"kind": protocol.REFUSED, "code": code, "detail": detail})
    except (WebSocketDisconnect, RuntimeError, OSError):
        pass
    await _close(websocket, protocol.CLOSE_REFUSED, code)


async def _close(websocket: WebSocket, code: int, reason: str) -> None:
    if websocket.client_state == WebSocketState.DISCONNECTED:
        return
    try:
        await websocket.close(code=code, reason=reason)
    except (WebSocketDisconnect, RuntimeError, OSError):
        pass
