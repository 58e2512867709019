"""The stores the figures are taken on: a few registered sessions (``seed``), the reference
store of N sessions as the reference system leaves it (SQLite, no migrations yet) and its
PostgreSQL counterpart, a raw sqlite3 connection set up as the store's are; and the one figure
of building them, the reference store's first open (its migrations)."""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.figures import Figure, median_seconds, timed
from roundtable_console.store.db.database import open_store

ROOT = Path(__file__).resolve().parent.parent


def seed(url: str, sessions: int) -> None:
    from roundtable_console.store.writes import agent_writes

    store = open_store(url)
    with store.write() as db:
        for number in range(sessions):
            agent_writes.register(
                db=db,
                session_id=f"bench-{number}",
                agent_id=f"agent-{number % 7}",
                run_id="run-1",
                adapter="codex",
                working_directory="/tmp",
            )
    store.dispose()


def raw_connection(path: Path) -> sqlite3.Connection:
    """sqlite3 set up as the store sets up its connections (WAL, synchronous NORMAL)."""
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("PRAGMA journal_mode = WAL")
    raw.execute("PRAGMA synchronous = NORMAL")
    raw.execute("PRAGMA foreign_keys = ON")
    return raw


# -------------------------------------------------------------------- point 8: the first open

REFERENCE_DDL = ROOT / "tests" / "reference_ddl.sql"
STATUSES = ("active", "running", "paused", "stopped", "ended", "terminated", "starting")


def build_reference_store(path: Path, sessions: int, usage: bool = False) -> None:
    """A store as the reference system would leave it: its DDL, its timestamp forms, no
    migrations yet. ``usage``: every session's metadata carries a usage object."""
    raw = sqlite3.connect(path)
    raw.executescript(REFERENCE_DDL.read_text())
    forms = (
        "2026-09-{day:02d} {hour:02d}:{minute:02d}:{second:02d}",
        "2026-09-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}Z",
        "2026-09-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}.123456789Z",
    )

    def rows() -> Iterator[tuple[str, ...]]:
        for n in range(sessions):
            moment = {
                "day": 1 + n * 29 // max(sessions, 1),
                "hour": n % 24,
                "minute": n % 60,
                "second": (n // 60) % 60,
            }
            yield (
                f"sess-{n:07d}",
                f"agent-{n % 97}",
                f"run-{n % 1009}",
                "codex",
                "/work",
                STATUSES[n % len(STATUSES)],
                forms[n % 3].format(**moment),
                forms[(n + 1) % 3].format(**moment),
                f"ws-{n % 5}",
                usage_metadata(n) if usage else None,
            )

    raw.executemany(
        "INSERT INTO agent_sessions (id, agent_id, run_id, adapter, working_directory, status,"
        " started_at, last_seen_at, workspace_id, metadata_json)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows(),
    )
    raw.commit()
    raw.close()


def usage_metadata(n: int) -> str:
    tokens_in, tokens_out = 1000 + n % 90_000, 100 + n % 7_000
    cost = (tokens_in * 3 + tokens_out * 15) / 1_000_000
    return json.dumps(
        {"usage": {"input_tokens": tokens_in, "output_tokens": tokens_out, "cost_usd": cost}}
    )


def bench_first_open(path: Path, sessions: int) -> list[Figure]:
    """The first open (migrations and indexes, progress shown as the CLI shows it) and a later
    open. The limit is the issue's 60 s for a million sessions, scaled to this store's size."""
    started = time.perf_counter()

    def progress(message: str) -> None:
        print(f"  [{time.perf_counter() - started:6.1f}s] {message}", file=sys.stderr)

    first = timed(lambda: open_store(f"sqlite:///{path}", progress=progress).dispose())
    later = median_seconds(lambda: open_store(f"sqlite:///{path}").dispose(), 5)
    scaled = 60 * sessions / 1_000_000
    return [
        Figure(f"first open ({sessions:,} ref.)", first, limit=round(scaled, 3)),
        Figure(f"later open ({sessions:,} ref.)", later),
    ]


# ------------------------------------------------------------------- the PostgreSQL store


def build_postgres_store(
    server: Any, sessions: int, name: str = "rt_bench_big", usage: bool = False
) -> str:
    """A migrated PostgreSQL store holding ``sessions`` sessions shaped like the reference
    store's (the same agents, runs, workspaces and statuses), written in one statement, then
    vacuumed and analysed as autovacuum leaves a store at rest. ``usage``: every session's
    metadata carries a usage object (as ``usage_metadata``)."""
    from sqlalchemy import create_engine, text

    from roundtable_console.store.writes.agent_writes import bulk_session_writes

    admin = create_engine(server.url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    admin.dispose()
    url = server.url(name)
    store = open_store(url)
    statuses = ", ".join(f"'{status}'" for status in STATUSES)
    with store.write() as db, bulk_session_writes(db=db):
        db.execute(
            text(
                "INSERT INTO agent_sessions (id, agent_id, run_id, adapter, working_directory,"
                " status, started_at, last_seen_at, workspace_id, metadata_json)"
                " SELECT 'sess-' || lpad(n::text, 7, '0'), 'agent-' || n % 97,"
                " 'run-' || n % 1009, 'codex', '/work',"
                f" (ARRAY[{statuses}])[1 + n % {len(STATUSES)}],"
                " to_char(timestamp '2026-09-01' + n * interval '2 seconds',"
                ' \'YYYY-MM-DD"T"HH24:MI:SS"Z"\'),'
                " NULL, 'ws-' || n % 5,"
                " CASE WHEN :usage THEN json_build_object('usage', json_build_object("
                "'input_tokens', 1000 + n % 90000, 'output_tokens', 100 + n % 7000,"
                " 'cost_usd', ((1000 + n % 90000) * 3 + (100 + n % 7000) * 15) / 1000000.0"
                "))::text END"
                " FROM generate_series(0, :last) AS n"
            ),
            {"last": sessions - 1, "usage": usage},
        )
    with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE"))
    store.dispose()
    return url
