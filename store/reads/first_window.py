"""The console's first rows, read with the database's own driver alone.

``roundtable tui`` on a store whose schema is current paints the list's first page from here while
the database layer (SQLAlchemy, SQLModel) loads in the background: importing it costs more than the
rest of the console's start-up. SQLite is read with the standard library's ``sqlite3``, PostgreSQL
with ``psycopg``. The rows, their order and the claim counts are those of
``store.reads.sessions.list_sessions`` and ``store.reads.claims.claim_counts``, from the same SQL
expressions (tests/test_first_window.py holds them equal on both). Anything unexpected (another kind
of URL, a store not at ``HEAD_REVISION``, a file that is not a store, a server that does not answer)
gives None or False, and the normal path takes over.

Importing psycopg costs about as much as half of Textual's start-up, so on PostgreSQL
``roundtable tui`` starts the read in a child process (``prefetch``) before it imports Textual:
the two run on two cores, and the rows are there when the screen is.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

from roundtable_console.store import validation
from roundtable_console.store.clock import format_ts, parse_ts
from roundtable_console.store.db.drivers import (  # re-exported: the console names its store
    describe as describe,
)
from roundtable_console.store.db.drivers import postgres_dsn, sqlite_file
from roundtable_console.store.db.revision import HEAD_REVISION
from roundtable_console.store.reads.attention_sql import (
    PG_ATTENTION_COLUMNS,
    attention_key_sql,
    attention_tier_sql,
)
from roundtable_console.store.reads.listing import (
    ATTENTION_SEGMENTS,
    ATTENTION_SOURCES,
    DEFAULT_ORDER,
    NULLABLE_LEAD,
    ORDER_KEYS,
    PG_STORED_KEYS,
    SessionOrder,
    SortKey,
    attention_segment_keys,
)
from roundtable_console.store.records import SESSION_COLUMNS, ClaimCount, SessionRecord
from roundtable_console.store.rules import RESOLVED_PROPOSAL_STATES

# A store busy with a write is waited for this long; then the normal path takes over.
BUSY_TIMEOUT_SECONDS = 1.0
# A server that does not answer within this leaves the console to its normal path.
CONNECT_TIMEOUT_SECONDS = 2
# The child reading the first window is waited for this long (psycopg's import and a connect).
PREFETCH_TIMEOUT_SECONDS = 5.0
PREFETCH_VARIABLE = "ROUNDTABLE_FIRST_WINDOW"


@dataclass(frozen=True)
class FirstWindow:
    """The first page of the session list, and the claim counts of the agents on it."""

    sessions: list[SessionRecord]
    # More sessions follow the page.
    has_more: bool
    claims: dict[str, ClaimCount]


def is_current(url: str) -> bool:
    """True when ``url`` names a store whose schema is at ``HEAD_REVISION``: opening it runs no
    migration, so the console may start before the store is opened."""
    try:
        with _reader(url) as conn:
            return conn is not None and _revision(conn) == HEAD_REVISION
    except _driver_errors(url):
        return False


def read_first_window(
    url: str, *, limit: int, now: datetime, order: SessionOrder = DEFAULT_ORDER
) -> FirstWindow | None:
    """The list's first ``limit`` sessions in ``order`` (no filter), and the claim counts at
    ``now`` of their agents, from one snapshot; None unless the store is current."""
    if order.column in NULLABLE_LEAD:
        return None
    size = validation.limit(limit)
    dialect = POSTGRES if postgres_dsn(url) else SQLITE
    try:
        with _reader(url) as conn:
            if conn is None or _revision(conn) != HEAD_REVISION:
                return None
            rows = []
            for sql, params in dialect.page_reads(order):
                rows += conn.execute(sql, (*params, size + 1 - len(rows))).fetchall()
                if len(rows) > size:
                    break
            sessions = [SessionRecord.from_row(row) for row in rows[:size]]
            claims = _claim_counts(conn, dialect, {s.agent_id for s in sessions}, now)
    except (*_driver_errors(url), ValueError):
        return None
    return FirstWindow(sessions=sessions, has_more=len(rows) > size, claims=claims)


class Reader(Protocol):
    def execute(self, query: Any, params: Any = ..., /) -> Any: ...


class Prefetch:
    """The first window of a store, read by a child process (``python -m store.reads.first_window``)
    while this one starts the console."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process

    def result(self, timeout: float = PREFETCH_TIMEOUT_SECONDS) -> FirstWindow | None:
        """The window the child read; None when it had none or did not answer in time."""
        try:
            out, _ = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()
            return None
        try:
            return decode_window(json.loads(out.strip().splitlines()[-1]))
        except (ValueError, IndexError, KeyError, TypeError):
            return None


def prefetch(url: str, *, limit: int, now: datetime, order: SessionOrder) -> Prefetch | None:
    """Start reading the first window of a PostgreSQL store in a child process (None for any
    other store: sqlite3 costs nothing to import). The URL goes to the child in its environment,
    which only its user can read, never on its command line, which anyone can."""
    if postgres_dsn(url) is None:
        return None
    stale_before = None if order.stale_before is None else format_ts(order.stale_before)
    asked = json.dumps(
        {
            "url": url,
            "limit": limit,
            "now": format_ts(now),
            "order": [order.column, order.descending, stale_before],
        }
    )
    module = "roundtable_console.store.reads.first_window"
    return Prefetch(reader_child(module, {PREFETCH_VARIABLE: asked}))


def reader_child(module: str, variables: dict[str, str]) -> subprocess.Popen[str]:
    """``python -m module`` as a child that reads for the console: what it is asked (a URL, a
    token) in its environment, which only its user can read, never on its command line, which
    anyone can; its answer on its stdout."""
    return subprocess.Popen(
        # -P: the operator's working directory is not on the child's path (a module there
        # would run with the database's URL or the token in reach).
        [sys.executable, "-P", "-m", module],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **variables},
    )


def encode_window(window: FirstWindow | None) -> object:
    if window is None:
        return None
    return {
        "sessions": [list(session.column_values().values()) for session in window.sessions],
        "has_more": window.has_more,
        "claims": {agent: list(count) for agent, count in window.claims.items()},
    }


def decode_window(data: Any) -> FirstWindow | None:
    if data is None:
        return None
    return FirstWindow(
        sessions=[SessionRecord.from_row(tuple(row)) for row in data["sessions"]],
        has_more=bool(data["has_more"]),
        claims={agent: ClaimCount(*counts) for agent, counts in data["claims"].items()},
    )


def main() -> None:
    """The child of ``prefetch``: read the window its parent asks for, print it as JSON."""
    asked = json.loads(os.environ[PREFETCH_VARIABLE])
    now = parse_ts(asked["now"])
    column, descending, stale_before = asked["order"]
    order = SessionOrder(column, bool(descending), parse_ts(stale_before))
    window = None
    if now is not None:
        window = read_first_window(asked["url"], limit=int(asked["limit"]), now=now, order=order)
    print(json.dumps(encode_window(window)))


@contextmanager
def _reader(url: str) -> Iterator[Reader | None]:
    """A read-only connection in one snapshot (None when ``url`` is not read quickly)."""
    dsn = postgres_dsn(url)
    if dsn is not None:
        import psycopg

        with psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT_SECONDS) as pg:
            pg.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            pg.read_only = True
            yield pg
        return
    path = sqlite_file(url)
    if path is None:
        yield None
        return
    with closing(_connect(path)) as conn:
        conn.execute("BEGIN")  # one snapshot for the revision, the rows and the claims
        yield conn


def _driver_errors(url: str) -> tuple[type[Exception], ...]:
    if postgres_dsn(url) is None:
        return (sqlite3.Error,)
    import psycopg

    return (sqlite3.Error, psycopg.Error)


def _connect(path: Path) -> sqlite3.Connection:
    uri = f"file:{quote(str(path.absolute()))}?mode=ro"
    return sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)


def _revision(conn: Reader) -> str | None:
    rows = conn.execute("SELECT version_num FROM alembic_version").fetchall()
    return str(rows[0][0]) if len(rows) == 1 else None


@dataclass(frozen=True)
class Dialect:
    """How the store's SQL reads on one database: its parameter mark and ``ts_key``."""

    mark: str
    timestamp: Callable[[str], str]

    # The attention order's keys: SQL over the row's columns, or a stored column's name.
    attention: Callable[[str], str]
    # An expression the database is not to look rows up by (store.reads.sqlfuncs.not_indexed).
    unindexed: Callable[[str], str] = str

    def key(self, key: SortKey) -> str:
        if key.sources:
            return self.attention(key.column)
        return self.timestamp(key.column) if key.timestamp else key.column

    def page_reads(self, order: SessionOrder) -> list[tuple[str, tuple[str, ...]]]:
        """The statements that read the first page in ``order``, one after the other until
        the page is full, with their parameters but the LIMIT (the last, still to be bound)."""
        direction = " DESC" if order.descending else ""
        columns = ", ".join(SESSION_COLUMNS)
        keys = ORDER_KEYS[order.column]
        if order.column != "attention":
            sort = ", ".join(self.key(key) + direction for key in keys)
            return [(f"SELECT {columns} FROM agent_sessions ORDER BY {sort} LIMIT {self.mark}", ())]
        if order.stale_before is None:
            raise ValueError("The attention order is read at a time.")
        tier, seen = self.key(keys[0]), self.key(keys[1])
        cutoff = self.timestamp(self.mark)
        reads = []
        for segment in ATTENTION_SEGMENTS:
            keyed = attention_segment_keys(segment)
            sort = ", ".join(self.key(key) + direction for key in keyed)
            where = f"{tier} = {segment.tier}"
            params: tuple[str, ...] = ()
            if segment.stale is not None:
                # The fresh segment walks the start index (store.reads.keyset.attention_condition).
                checked = self.unindexed(seen) if segment.fresh else seen
                where += f" AND {checked} {'<' if segment.stale else '>='} {cutoff}"
                params = (format_ts(order.stale_before),)
            reads.append(
                (
                    f"SELECT {columns} FROM agent_sessions WHERE {where}"
                    f" ORDER BY {sort} LIMIT {self.mark}",
                    params,
                )
            )
        return reads[::-1] if order.descending else reads


def _postgres_key(column: str) -> str:
    # store.reads.sqlfuncs.ts_key on PostgreSQL: the session list's keys are stored columns.
    return PG_STORED_KEYS.get(column, f"rt_ts_key({column})")


def _sqlite_attention(key: str) -> str:
    if key == "attention_tier":
        return attention_tier_sql("status", "waiting_since")
    return attention_key_sql(lambda column: f"julianday({column})", "0", *ATTENTION_SOURCES)


# store.reads.sqlfuncs.ts_key and the attention keys on each database, the expressions the indexes
# are built on.
SQLITE = Dialect(
    "?", lambda column: f"julianday({column})", _sqlite_attention, lambda sql: f"+({sql})"
)
POSTGRES = Dialect("%s", _postgres_key, PG_ATTENTION_COLUMNS.__getitem__)


def _claim_counts(
    conn: Reader, dialect: Dialect, agent_ids: set[str], now: datetime
) -> dict[str, ClaimCount]:
    """``store.reads.claims.claim_counts``: unreadable expiry text is not expired."""
    wanted = sorted(agent_ids)
    if not wanted:
        return {}
    mark, stamp = dialect.mark, dialect.timestamp
    marks = ", ".join([mark] * len(wanted))
    rows = conn.execute(
        "SELECT agent_id, count(*),"
        f" sum(CASE WHEN {stamp('expires_at')} <= {stamp(mark)} THEN 1 ELSE 0 END)"
        f" FROM claims WHERE agent_id IN ({marks}) AND status = 'active' GROUP BY agent_id",
        (format_ts(now), *wanted),
    ).fetchall()
    resolved = ", ".join([mark] * len(RESOLVED_PROPOSAL_STATES))
    waiting = dict(
        conn.execute(
            f"SELECT agent_id, count(*) FROM proposals WHERE agent_id IN ({marks})"
            f" AND status NOT IN ({resolved}) GROUP BY agent_id",
            (*wanted, *RESOLVED_PROPOSAL_STATES),
        ).fetchall()
    )
    found = {
        str(agent): ClaimCount(
            live=int(total) - int(gone or 0),
            expired=int(gone or 0),
            proposals=int(waiting.pop(agent, 0)),
        )
        for agent, total, gone in rows
    }
    found.update({str(agent): ClaimCount(proposals=int(count)) for agent, count in waiting.items()})
    return found


if __name__ == "__main__":
    main()
