"""What the console does as it opens its store, away from the event loop: say who else may read a
SQLite store's file, and seed the demo into an empty one."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from roundtable_console.store.clock import Clock
    from roundtable_console.store.db.database import Store


def store_exposure(url: str) -> str | None:
    """What the console says when other users of the machine may read the SQLite store at
    ``url`` (store.db.private_files.exposure); None for any other store."""
    from roundtable_console.store.db.drivers import sqlite_file
    from roundtable_console.store.db.private_files import exposure

    path = sqlite_file(url)
    return None if path is None else exposure(path)


def seed_demo_if_empty(store: Store, clock: Clock, url: str) -> int:
    """The demo seeded into an empty store, its transcripts beside the store ``url`` names."""
    from roundtable_console.store.writes.demo import seed_if_empty
    from roundtable_console.tui.config import demo_agent_home

    return seed_if_empty(store, clock=clock, agent_home=demo_agent_home(url))
