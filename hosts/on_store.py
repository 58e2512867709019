"""A host on a machine that reaches the database itself (``roundtable host run --db URL``):
it writes its own row, says it is still there every ``registry.SEEN_EVERY_SECONDS`` (one
statement), and lets go of it as it stops."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable

from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import StoreError
from roundtable_console.store.hosts import registry
from roundtable_console.store.hosts.facts import HostFacts


async def run(
    store: Store,
    facts: HostFacts,
    *,
    say: Callable[[str], None],
    stop: asyncio.Event,
    seen_every: float = registry.SEEN_EVERY_SECONDS,
) -> None:
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
            try:
                await _hold(still_held, stop, seen_every, say)
            finally:
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
