"""A SQLite store's file: which paths may hold one (checked without opening an existing file),
the same file opened read-only, and SQLite's own refusal of a file that is not a database, in
words."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

from sqlalchemy.engine import URL

from roundtable_console.store.db.private_files import create_private_if_missing
from roundtable_console.store.errors import DatabaseUnavailable
from roundtable_console.store.safety.display import printable


def check_sqlite_file(database: str | None) -> None:
    """Refuse paths that cannot hold a store, before SQLite can create anything.

    An existing file is not opened here: SQLite's locks are POSIX advisory locks, which belong
    to the process, and closing *any* descriptor of the file drops them all, those of every
    store this process already has open on it included. Another process then takes the file
    for its last user's: it checkpoints and deletes the ``-wal`` and ``-shm`` files under the
    open stores, which go on reading the deleted ones and miss its later commits. SQLite
    itself refuses a file that is not a database, before writing to it (``not_a_database``);
    its own descriptors it closes only when no lock of the process needs them."""
    if not database or database == ":memory:" or database.startswith("file:"):
        return
    if "\x00" in database:
        raise DatabaseUnavailable(
            f"{printable(database)} cannot be a file name: it holds a NUL character."
        )
    path = Path(database)
    if path.is_dir():
        raise DatabaseUnavailable(f"{path} is a directory, not a SQLite database file.")
    if path.exists():
        if not os.access(path, os.R_OK):
            raise DatabaseUnavailable(f"Cannot read {path}: {os.strerror(errno.EACCES)}.")
        return
    parent = path.parent
    if parent.exists() and not parent.is_dir():
        raise DatabaseUnavailable(f"{parent} is not a directory.")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        create_private_if_missing(path)
    except OSError as error:
        raise DatabaseUnavailable(f"Cannot create {parent}: {error.strerror}.") from None


def is_sqlite_file(database: str | None) -> bool:
    """A database another connection opens as the same file (not a private in-memory one)."""
    if not database or database == ":memory:":
        return False
    return not (database.startswith("file:") and "mode=memory" in database)


def not_a_database(error: sqlite3.Error, database: str | None) -> DatabaseUnavailable | None:
    """The refusal of a file SQLite found not to be a database (its header is not SQLite's);
    None for any other error. SQLite says so on the first read, before it writes anything."""
    if getattr(error, "sqlite_errorcode", None) != sqlite3.SQLITE_NOTADB:
        return None
    return DatabaseUnavailable(
        f"{printable(database or '')} is not a SQLite database; it was left untouched."
    )


def sqlite_read_only(parsed: URL) -> URL:
    """The URL of the same SQLite file as a read-only ``file:`` URI; a file that is not there
    is refused (read-only, nothing may create it)."""
    database = parsed.database or ""
    if not is_sqlite_file(database):
        return parsed  # a private in-memory database: query_only alone keeps it unwritten
    query = {**parsed.query, "mode": "ro", "uri": "true"}
    if database.startswith("file:"):
        return parsed.set(query=query)
    path = Path(database)
    if "\x00" in database or not path.is_file():
        raise DatabaseUnavailable(
            f"{printable(database)} is not a SQLite database file; a read-only open creates "
            "nothing. Check the path, or open it once without --read-only to create it."
        )
    check_sqlite_file(database)
    return parsed.set(database=f"file:{path.resolve()}", query=query)
