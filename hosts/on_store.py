"""A host on a machine that reaches the database itself (``roundtable host run --db URL``):
it writes its own row, says it is still there every ``registry.SEEN_EVERY_SECONDS`` (one
statement), and lets go of it as it stops. On PostgreSQL it also answers the calls servers make
for it through the store (``store.hosts.calls``): it LISTENs for them, and is woken by nothing
else."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from typing import Any

from roundtable_console.hosts import operations
from roundtable_console.hosts.found import Machine
from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import StoreError
from roundtable_console.store.hosts import calls, registry


async def run(
    store: Store,
    machine: Machine,
    *,
    say: Callable[[str], None],
    stop: asyncio.Event,
    seen_every: float = registry.SEEN_EVERY_SECONDS,
) -> None:
    facts = machine.facts
    connection_id = registry.ON_STORE + secrets.token_hex(12)

    def connect() -> bool:
        with store.write() as db:
            return registry.connect(db, facts, connection_id=connection_id)

    def still_held() -> bool:
        with store.write() as db:
            return connection_id in registry.seen(db, [connection_id])

    def let_go() -> None:
        with store.write() as db:
            registry.disconnect(db, facts.name, connection_id=connection_id)

    told = False
    while not stop.is_set():
        try:
            held = await asyncio.to_thread(connect)
        except StoreError as error:
            say(f"The store cannot be written now ({error.message}); trying again.")
            held = False
        if held:
            say(f"Host {facts.name!r} is on {store.description}.")
            answering = None
            if store.dialect == "postgresql":
                answering = asyncio.create_task(_answer_calls(store, machine, connection_id))
            try:
                await _hold(still_held, stop, seen_every, say)
            finally:
                if answering is not None:
                    answering.cancel()
                try:
                    await asyncio.to_thread(let_go)
                except StoreError:
                    pass  # offline by itself once not seen for registry.ONLINE_SECONDS
            told = False
        elif not told:
            say(f"Another connection holds the host {facts.name!r}; trying again.")
            told = True
        if not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), timeout=seen_every)
            except TimeoutError:
                pass


async def _hold(
    still_held: Callable[[], bool],
    stop: asyncio.Event,
    seen_every: float,
    say: Callable[[str], None],
) -> None:
    """Say the host is still here every ``seen_every`` until ``stop``, or until another
    connection holds it (its row was not seen for a while: the store was out of reach)."""
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), timeout=seen_every)
            return
        except TimeoutError:
            pass
        try:
            held = await asyncio.to_thread(still_held)
        except StoreError as error:
            say(f"The store cannot be written now ({error.message}); trying again.")
            continue
        if not held:
            return


ANSWER_LOOK_SECONDS = 1.0  # how soon a stop is seen while waiting for calls


async def _answer_calls(store: Store, machine: Machine, taker: str) -> None:
    """Each call for this host, answered (``hosts.operations``), as the calls' channel says
    there is one: a look at the table only then (or after the store was out of reach), the
    calls taken and done one at a time, each only while its asker still waits."""
    name = machine.facts.name

    def take() -> list[calls.OpenCall]:
        with store.read() as db:
            found = calls.open_for(db, [name], most=1)
        if not found:
            return []
        with store.write() as db:
            return calls.take(db, found, taker)

    def write(call_id: str, body: dict[str, Any]) -> None:
        with store.write() as db:
            calls.answer(db, call_id, body, taker)

    token: object | None = None
    while True:
        latest = await asyncio.to_thread(store.wait_for_host_calls, token, ANSWER_LOOK_SECONDS)
        if latest is not None and latest == token:
            continue  # nothing was asked
        try:
            while taken := await asyncio.to_thread(take):
                for call in taken:
                    body = call.answer_unasked()
                    if body is None:
                        body = await asyncio.to_thread(
                            operations.answer, machine, call.op, call.args
                        )
                    await asyncio.to_thread(write, call.id, body)
            token = latest
        except StoreError:
            token = None  # out of reach: look again in a while, and once it answers
            await asyncio.sleep(ANSWER_LOOK_SECONDS)
