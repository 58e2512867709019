"""A host on a machine that reaches the database itself (``roundtable host run --db URL``):
it writes its own row, says it is still there every ``registry.SEEN_EVERY_SECONDS`` (one
statement), and lets go of it as it stops."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable

from roundtable_console.hosts.link import LinkEnded
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
    connection_id = secrets.token_hex(12)

    def connect() -> None:
        with store.write() as db:
            registry.connect(db, facts, connection_id=connection_id)

    def still_held() -> bool:
        with store.write() as db:
            return connection_id in registry.seen(db, [connection_id])

    def let_go() -> None:
        with store.write() as db:
            registry.disconnect(db, facts.name, connection_id=connection_id)

    await asyncio.to_thread(connect)
    say(f"Host {facts.name!r} is on {store.description}.")
    try:
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), timeout=seen_every)
                break
            except TimeoutError:
                pass
            try:
                held = await asyncio.to_thread(still_held)
            except StoreError as error:
                say(f"The store cannot be written now ({error.message}); trying again.")
                continue
            if not held:
                raise LinkEnded(f"Another host connected as {facts.name!r}; this one stops.")
    finally:
        try:
            await asyncio.to_thread(let_go)
        except StoreError:
            pass  # offline by itself once not seen for registry.ONLINE_SECONDS
