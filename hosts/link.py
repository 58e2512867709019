"""The host's one connection to ``roundtable serve``: opened from this machine (no port is
opened here: NAT and laptops are fine), said hello on, held, and opened again when it drops,
after a wait that grows (1 s, 2 s, 4 s … at most ``BACKOFF_MAX_SECONDS``) with jitter, so a
fleet of hosts does not come back at one instant after a server restarts.

Idle, it costs nothing but the WebSocket's own ping every ``PING_SECONDS``: nothing polls.
What cannot be mended by trying again ends the process (exit 1) with one sentence: a token the
server refuses, a hello it refuses. A host another connection holds (a second process of the
same name) is tried again, and taken once the holder is gone.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from roundtable_console.hosts import operations
from roundtable_console.hosts.found import Machine
from roundtable_console.store.hosts import protocol
from roundtable_console.store.hosts.facts import HostFacts

BACKOFF_MAX_SECONDS = 60.0
PING_SECONDS = 20.0
OPEN_SECONDS = 10.0
MAX_MESSAGE_BYTES = protocol.MESSAGE_MOST_BYTES
CALLS_AT_ONCE = 4  # answered at once; more wait their turn
CALLS_QUEUED = 32  # waiting at most: more are answered "busy" at once


class LinkEnded(Exception):
    """The connection cannot be made again by trying: why, in one sentence."""


@dataclass(frozen=True)
class Target:
    server: str  # http(s)://host:port, as hooks are given it
    token: str | None  # None: a lone loopback server in header mode

    @property
    def url(self) -> str:
        parts = urlsplit(self.server.rstrip("/"))
        scheme = "wss" if parts.scheme == "https" else "ws"
        return urlunsplit((scheme, parts.netloc, parts.path + protocol.CONNECT_PATH, "", ""))


def backoff(attempt: int, *, jitter: Callable[[], float] = random.random) -> float:
    """The wait before trying again after ``attempt`` failures in a row (0: the first)."""
    return min(BACKOFF_MAX_SECONDS, 2.0**attempt) * (0.5 + jitter() / 2)


async def run(
    target: Target, machine: Machine, *, say: Callable[[str], None], stop: asyncio.Event
) -> None:
    """Hold the connection until ``stop``; ``LinkEnded`` when it cannot be held."""
    facts = machine.facts
    attempt = 0
    told: str | None = None
    while not stop.is_set():
        try:
            async with connect(
                target.url,
                additional_headers=_headers(target),
                open_timeout=OPEN_SECONDS,
                ping_interval=PING_SECONDS,
                ping_timeout=PING_SECONDS,
                max_size=MAX_MESSAGE_BYTES,
                user_agent_header="roundtable-host",
            ) as connection:
                await _hello(connection, facts)
                say(f"Connected to {target.server} as host {facts.name!r}.")
                attempt, told = 0, None
                await _hold(connection, stop, machine)
                if stop.is_set():
                    return
                code, reason = connection.close_code, connection.close_reason
            problem = _after_close(code, reason, facts)
        except InvalidStatus as refused:
            status = refused.response.status_code
            detail = _detail(refused.response.body)
            if status in (401, 403, 404):
                raise LinkEnded(f"The server refused this host ({status}): {detail}") from None
            problem = f"the server answered {status}: {detail}"
        except ConnectionClosed as closed:
            rcvd = closed.rcvd
            problem = _after_close(rcvd.code if rcvd else None, rcvd.reason if rcvd else "", facts)
        except (OSError, TimeoutError, InvalidHandshake) as error:
            problem = f"cannot reach it ({error.__class__.__name__}: {error})"
        wait = backoff(attempt)
        attempt += 1
        if problem != told:  # said once while it lasts, not at every try
            say(f"{target.server}: {problem}; trying again (in {wait:.0f} s, then less often).")
            told = problem
        try:
            await asyncio.wait_for(stop.wait(), timeout=wait)
        except TimeoutError:
            pass


def _after_close(code: int | None, reason: str | None, facts: HostFacts) -> str:
    """What to say of a closed connection before trying again; ``LinkEnded`` for a close that
    trying again cannot mend (a host held by another connection is tried again: it is this
    one's once the other is gone)."""
    if code in (protocol.CLOSE_REFUSED, protocol.CLOSE_TOKEN_ENDED):
        raise LinkEnded(f"The server ended this host: {reason or code}.")
    if code == protocol.CLOSE_HELD:
        return (
            f"another connection holds the host {facts.name!r} (another host run of this "
            "name, or the last one not yet gone)"
        )
    return f"the connection closed ({code or 'no code'})"


def _headers(target: Target) -> dict[str, str]:
    return {"Authorization": f"Bearer {target.token}"} if target.token else {}


async def _hello(connection: ClientConnection, facts: HostFacts) -> None:
    await connection.send(json.dumps({"kind": protocol.HELLO, **facts.to_json()}))
    raw = await asyncio.wait_for(connection.recv(), timeout=protocol.HELLO_SECONDS)
    try:
        answer = json.loads(raw)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise LinkEnded("The server answered the hello with something else than JSON.")
    if answer.get("kind") == protocol.REFUSED:
        raise LinkEnded(f"The server refused this host: {str(answer.get('detail'))[:300]}")
    if answer.get("kind") != protocol.WELCOME:
        raise LinkEnded("The server answered the hello with something else than a welcome.")


async def _hold(connection: ClientConnection, stop: asyncio.Event, machine: Machine) -> None:
    stopping = asyncio.create_task(stop.wait())
    closed = asyncio.create_task(connection.wait_closed())
    receiving = asyncio.create_task(_answer_calls(connection, machine))
    try:
        await asyncio.wait({stopping, closed}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (stopping, closed, receiving):
            task.cancel()
    if stop.is_set():
        await connection.close()


async def _answer_calls(connection: ClientConnection, machine: Machine) -> None:
    """Each call the server sends, answered (``hosts.operations``: the fixed operations, for
    this host's sessions); its work, reading files and asking tmux, in a thread, a few at
    once. Anything else the server sends is let go."""
    working: set[asyncio.Task[None]] = set()
    at_once = asyncio.Semaphore(CALLS_AT_ONCE)

    async def one(call_id: int, op: Any, args: Any) -> None:
        async with at_once:
            body = await asyncio.to_thread(operations.answer, machine, op, args)
        try:
            await connection.send(operations.encoded(call_id, body))
        except ConnectionClosed:
            pass

    try:
        async for raw in connection:
            try:
                message = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(message, dict) or message.get("kind") != protocol.CALL:
                continue
            if type(message.get("id")) is not int:
                continue
            if len(working) >= CALLS_QUEUED:  # the server stops waiting for them anyway
                busy = {"unavailable": "The host is busy answering; try again in a moment."}
                await connection.send(operations.encoded(message["id"], busy))
                continue
            task = asyncio.create_task(one(message["id"], message.get("op"), message.get("args")))
            working.add(task)
            task.add_done_callback(working.discard)
    except ConnectionClosed:
        pass
    finally:
        for task in working:
            task.cancel()


def _detail(body: bytes | None) -> str:
    try:
        problem = json.loads(body or b"")
        return str(problem.get("detail") or problem.get("title"))[:300]
    except (ValueError, AttributeError):
        return "no detail"
