"""The console's first rows, read with the standard library's ``sqlite3`` alone.

``roundtable tui`` on a SQLite store whose schema is current paints the list's first page from
here while the database layer (SQLAlchemy, SQLModel) loads in the background: importing it costs
more than the rest of the console's start-up. The rows, their order and the claim counts are
those of ``store.sessions.list_sessions`` and ``store.claims.claim_counts`` on SQLite, from the
same SQL expressions (tests/test_first_window.py holds them equal). Anything unexpected (another
kind of URL, a store not at ``HEAD_REVISION``, a file that is not a store) gives None or False,
and the normal path takes over.
"""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from urllib.parse import quote, unquote

from store import validation
from store.clock import format_ts
from store.listing import DEFAULT_ORDER, NULLABLE_LEAD, ORDER_KEYS, SessionOrder, SortKey
from store.records import SESSION_COLUMNS, ClaimCount, SessionRecord
from store.revision import HEAD_REVISION

# A plain SQLite URL, as SQLAlchemy parses it: the driver, then the database path. Query
# parameters (and with them URI filenames and in-memory databases) take the normal path.
_SQLITE_URL = re.compile(r"^(?P<driver>sqlite(?:\+pysqlite)?):///(?P<database>[^?]+)$")
# A store busy with a write is waited for this long; then the normal path takes over.
BUSY_TIMEOUT_SECONDS = 1.0


@dataclass(frozen=True)
class FirstWindow:
    """The first page of the session list, and the claim counts of the agents on it."""

    sessions: list[SessionRecord]
    # More sessions follow the page.
    has_more: bool
    claims: dict[str, ClaimCount]


def sqlite_file(url: str) -> Path | None:
    """The existing file a plain ``sqlite:///PATH`` URL names; None for any other URL."""
    match = _SQLITE_URL.match(url)
    if match is None:
        return None
    database = unquote(match["database"])
    if database == ":memory:" or database.startswith("file:"):
        return None
    path = Path(database)
    return path if path.is_file() else None


def describe(url: str) -> str | None:
    """The URL as ``store.database.describe_url`` shows it (SQLAlchemy quotes the path), for
    the URLs ``sqlite_file`` reads; None for others."""
    match = _SQLITE_URL.match(url)
    if match is None:
        return None
    return f"{match['driver']}:///{quote(unquote(match['database']), safe=' +/')}"


def is_current(url: str) -> bool:
    """True when ``url`` names a SQLite store whose schema is at ``HEAD_REVISION``: opening it
    runs no migration, so the console may start before the store is opened."""
    path = sqlite_file(url)
    if path is None:
        return False
    try:
        with closing(_connect(path)) as conn:
            return _revision(conn) == HEAD_REVISION
    except sqlite3.Error:
        return False


def read_first_window(
    url: str, *, limit: int, now: datetime, order: SessionOrder = DEFAULT_ORDER
) -> FirstWindow | None:
    """The list's first ``limit`` sessions in ``order`` (no filter), and the claim counts at
    ``now`` of their agents, from one snapshot; None unless the store is current."""
    path = sqlite_file(url)
    if path is None or order.column in NULLABLE_LEAD:
        return None
    size = validation.limit(limit)
    try:
        with closing(_connect(path)) as conn:
            conn.execute("BEGIN")  # one snapshot for the revision, the rows and the claims
            if _revision(conn) != HEAD_REVISION:
                return None
            rows = conn.execute(_page_sql(order), (size + 1,)).fetchall()
            sessions = [SessionRecord.from_row(row) for row in rows[:size]]
            claims = _claim_counts(conn, {s.agent_id for s in sessions}, now)
    except (sqlite3.Error, ValueError):
        return None
    return FirstWindow(sessions=sessions, has_more=len(rows) > size, claims=claims)


def _connect(path: Path) -> sqlite3.Connection:
    uri = f"file:{quote(str(path.absolute()))}?mode=ro"
    return sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)


def _revision(conn: sqlite3.Connection) -> str | None:
    rows = conn.execute("SELECT version_num FROM alembic_version").fetchall()
    return str(rows[0][0]) if len(rows) == 1 else None


def _key_sql(key: SortKey) -> str:
    # store.sqlfuncs.ts_key on SQLite, the expression the indexes are built on.
    return f"julianday({key.column})" if key.timestamp else key.column


def _page_sql(order: SessionOrder) -> str:
    direction = " DESC" if order.descending else ""
    keys = ", ".join(_key_sql(key) + direction for key in ORDER_KEYS[order.column])
    return f"SELECT {', '.join(SESSION_COLUMNS)} FROM agent_sessions ORDER BY {keys} LIMIT ?"


def _claim_counts(
    conn: sqlite3.Connection, agent_ids: set[str], now: datetime
) -> dict[str, ClaimCount]:
    """``store.claims.claim_counts``: unreadable expiry text is not expired."""
    wanted = sorted(agent_ids)
    if not wanted:
        return {}
    marks = ", ".join("?" * len(wanted))
    rows = conn.execute(
        "SELECT agent_id, count(*),"
        " sum(CASE WHEN julianday(expires_at) <= julianday(?) THEN 1 ELSE 0 END)"
        f" FROM claims WHERE agent_id IN ({marks}) AND status = 'active' GROUP BY agent_id",
        (format_ts(now), *wanted),
    ).fetchall()
    return {
        str(agent): ClaimCount(live=int(total) - int(gone or 0), expired=int(gone or 0))
        for agent, total, gone in rows
    }
