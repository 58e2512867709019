"""Which stores the database's own drivers open directly, and how such a store is named.

Standard library only (no SQLAlchemy): the console's first window (``store.reads.first_window``) and
the agent's quick writes (``store.writes.quick_writes``) use these before, or instead of, the
database layer. ``describe`` and ``unavailable_message`` word a store and its refusal exactly as
``store.db.database`` does, so either path says the same thing.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit

# A SQLite writer waits this long for another's write lock before the store is "unavailable".
BUSY_TIMEOUT_MS = 5000
# A plain SQLite URL, as SQLAlchemy parses it: the driver, then the database path. Query
# parameters (and with them URI filenames and in-memory databases) take the normal path.
_SQLITE_URL = re.compile(r"^(?P<driver>sqlite(?:\+pysqlite)?):///(?P<database>[^?]+)$")
# A PostgreSQL URL as SQLAlchemy reads it, with psycopg (or no driver named).
_POSTGRES_URL = re.compile(r"^(?P<scheme>postgres(?:ql)?)(?:\+psycopg)?://(?P<rest>.*)$")


def sqlite_path(url: str) -> Path | None:
    """The file a plain ``sqlite:///PATH`` URL names, whether it exists or not; None for any
    other URL."""
    match = _SQLITE_URL.match(url)
    if match is None:
        return None
    database = unquote(match["database"])
    if database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


def sqlite_file(url: str) -> Path | None:
    """The existing file a plain ``sqlite:///PATH`` URL names; None for any other URL."""
    path = sqlite_path(url)
    return path if path is not None and path.is_file() else None


def postgres_dsn(url: str) -> str | None:
    """The libpq connection URI of a ``postgresql[+psycopg]://`` URL; None for any other."""
    match = _POSTGRES_URL.match(url)
    return None if match is None else f"postgresql://{match['rest']}"


def describe(url: str) -> str | None:
    """The URL as ``store.db.database.describe_url`` shows it (SQLAlchemy quotes the path, hides a
    password), for the URLs read quickly; None for others."""
    match = _SQLITE_URL.match(url)
    if match is not None:
        return f"{match['driver']}:///{quote(unquote(match['database']), safe=' +/')}"
    if postgres_dsn(url) is None:
        return None
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = f"{parts.username or ''}:***@{netloc.rsplit('@', 1)[1]}"
    shown = f"{parts.scheme}://{netloc}"
    if parts.path:
        shown += "/" + quote(unquote(parts.path[1:]), safe=" +/")
    pairs = sorted(parse_qsl(parts.query, keep_blank_values=True), key=lambda pair: pair[0])
    if pairs:
        shown += "?" + "&".join(f"{quote_plus(key)}={quote_plus(value)}" for key, value in pairs)
    from roundtable_console.store.safety.redaction import (  # here: only a refusal names the store
        redact_text,
    )

    return redact_text(shown)


def unavailable_message(description: str, reason: str) -> str:
    """Why the database cannot be used, and what the person can do about it."""
    reason = reason.strip().rstrip(".")
    if "locked" in reason or "busy" in reason:
        hint = (
            f"another process held its write lock for more than {BUSY_TIMEOUT_MS // 1000} s; "
            "retry when it is done"
        )
    elif "deadlock" in reason or "could not serialize" in reason:
        hint = "another transaction was changing the same rows at the same moment; retry"
    else:
        hint = "check that it exists and is reachable, then retry"
    return f"The database {description} is unavailable: {reason}. {hint[0].upper()}{hint[1:]}."
