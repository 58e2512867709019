"""`roundtable import` of history rows against the driver's executemany of the same rows, on
SQLite and on PostgreSQL (an ``ImportTarget`` each: fresh migrated stores, and the floor)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.figures import Figure, timed
from bench.stores import raw_connection
from roundtable_console.store.db.database import Store, open_store

# ------------------------------------------------------------------ point 7b: import of history


def write_history_export(path: Path, rows: int) -> list[tuple[Any, ...]]:
    """An export's worth of session_event lines (ids included, as `roundtable export` writes
    them); returns the same rows as tuples for the floor."""
    from roundtable_console.store.writes.transfer import encode_record

    tuples = []
    with path.open("w", encoding="utf-8") as out:
        for n in range(rows):
            second = n % 86_400
            stamp = f"2026-09-01T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}Z"
            values = {
                "id": n + 1,
                "session_id": f"sess-{n % 5000:07d}",
                "event_type": "heartbeat",
                "payload_json": json.dumps({"last_seen_at": stamp, "status": "active"}),
                "created_at": stamp,
            }
            out.write(encode_record("session_event", values))
            tuples.append(tuple(values.values()))
    return tuples


HISTORY_INSERT = (
    "INSERT INTO agent_session_events (id, session_id, event_type, payload_json, created_at)"
    " VALUES ({marks})"
)


@dataclass(frozen=True)
class ImportTarget:
    """A backend for the import figure: fresh migrated stores, and the floor's raw insert."""

    name: str
    floor_name: str
    new_url: Callable[[], str]
    raw_insert: Callable[[str, list[tuple[Any, ...]]], Callable[[], None]]


def sqlite_target(directory: Path) -> ImportTarget:
    counter = iter(range(1_000_000))

    def new_url() -> str:
        url = f"sqlite:///{directory / f'import-{next(counter)}.db'}"
        open_store(url).dispose()
        return url

    def raw_insert(url: str, rows: list[tuple[Any, ...]]) -> Callable[[], None]:
        raw = raw_connection(Path(url.removeprefix("sqlite:///")))

        def insert() -> None:
            raw.execute("BEGIN IMMEDIATE")
            raw.executemany(HISTORY_INSERT.format(marks=", ".join("?" * 5)), rows)
            raw.execute("COMMIT")
            raw.close()

        return insert

    return ImportTarget("", "sqlite3.executemany", new_url, raw_insert)


def bench_import(
    directory: Path, rows: int, rounds: int, target: ImportTarget | None = None
) -> list[Figure]:
    """`roundtable import` of history rows (import_records in one Store.write(), the file read
    and parsed as it goes) against the DBAPI's executemany of the same rows in one transaction,
    each into a fresh, migrated store."""
    from roundtable_console.store.writes.transfer import import_records

    target = target or sqlite_target(directory)
    export = directory / "history.jsonl"
    tuples = write_history_export(export, rows)
    mine, theirs = [], []
    for _ in range(rounds):
        store = open_store(target.new_url())

        def ours(store: Store = store) -> None:
            with store.write() as db, export.open(encoding="utf-8") as lines:
                counts = import_records(db=db, lines=lines)
            assert counts["session_event"] == rows

        mine.append(timed(ours))
        store.dispose()
        theirs.append(timed(target.raw_insert(target.new_url(), tuples)))
    return [
        Figure(
            f"import {rows:,} history rows{target.name}",
            statistics.median(mine),
            target.floor_name,
            statistics.median(theirs),
            2.5,
        )
    ]


def postgres_target(server: Any) -> ImportTarget:
    import psycopg
    from sqlalchemy import create_engine, text

    counter = iter(range(1_000_000))

    def new_url() -> str:
        name = f"rt_bench_{next(counter)}"
        admin = create_engine(server.url(), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {name}"))
        admin.dispose()
        url = server.url(name)
        open_store(url).dispose()
        return url

    def raw_insert(url: str, rows: list[tuple[Any, ...]]) -> Callable[[], None]:
        raw = psycopg.connect(url.replace("postgresql+psycopg", "postgresql"))

        def insert() -> None:
            with raw.cursor() as cursor:
                cursor.executemany(HISTORY_INSERT.format(marks=", ".join(["%s"] * 5)), rows)
            raw.commit()
            raw.close()

        return insert

    return ImportTarget(" (PostgreSQL)", "psycopg executemany", new_url, raw_insert)
