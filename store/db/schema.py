"""Bringing a database's schema up to date with Alembic, and skipping that when it already is.

The check costs one query; Alembic itself is imported only when there is work to do, so the
agent-facing commands pay nothing for it on a current store.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, Engine, exc, inspect, text

from roundtable_console.store.db.behind_schema import POSTGRES_READABLE_BEHIND
from roundtable_console.store.db.permissions import refused_write
from roundtable_console.store.db.revision import HEAD_REVISION, MIGRATIONS_DIR, known_revisions
from roundtable_console.store.errors import DatabaseUnavailable, ReadOnly

_PG_MIGRATION_LOCK = 0x526F756E64  # any fixed number; "Round"
# How long an opener waits for another process that is migrating the same SQLite store: a first
# open of a million-row store takes seconds, longer than the usual write-lock wait.
MIGRATION_WAIT_MS = 300_000


def current_revision(conn: Connection) -> str | None:
    if conn.dialect.name == "postgresql":
        exists = conn.execute(text("SELECT to_regclass('alembic_version') IS NOT NULL")).scalar()
    else:
        exists = conn.execute(
            text("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'")
        ).scalar()
    if not exists:
        return None
    return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


# The tables every read of sessions needs: a store without them is not one the console reads.
READ_TABLES = ("agent_sessions", "agent_session_events")


def check_readable(engine: Engine, description: str) -> None:
    """For a read-only open, which never migrates: a current schema, or one behind it that still
    has the tables the reads need (the reference's own store, say); else refused in words."""
    with engine.connect() as conn:
        revision = _known(current_revision(conn))
        if revision == HEAD_REVISION:
            return
        present = set(inspect(conn).get_table_names())
        postgres = conn.dialect.name == "postgresql"
    if postgres and revision in POSTGRES_READABLE_BEHIND:
        return  # read through store.db.behind_schema's views
    if postgres:
        # Older stores lack functions and generated columns the reads use.
        behind = f"at revision {revision!r}" if revision else "never brought up to date"
        raise DatabaseUnavailable(
            f"The store {description} has a schema {behind}, behind this roundtable's "
            f"({HEAD_REVISION}), and a read-only open changes nothing: have its owner run "
            "roundtable db upgrade."
        )
    missing = [name for name in READ_TABLES if name not in present]
    if missing:
        behind = f"at revision {revision!r}" if revision else "never brought up to date"
        raise DatabaseUnavailable(
            f"The store {description} has no {' or '.join(missing)} table (its schema is "
            f"{behind}), and a read-only open changes nothing: open it once without "
            "--read-only, or have its owner run roundtable db upgrade."
        )


def ensure_schema(engine: Engine, *, progress: Callable[[str], None] | None = None) -> bool:
    """Upgrade to head if needed. Returns True when migrations ran."""
    with engine.connect() as conn:
        if _known(current_revision(conn)) == HEAD_REVISION:
            return False
    # Imported before the lock is taken, so other openers do not wait for the import.
    import alembic.command  # noqa: F401

    writer = engine.execution_options(write=True)
    with writer.connect() as conn, _waiting_for_migrations(conn), conn.begin():
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
        # Another process may have upgraded while we waited for the lock.
        if _known(current_revision(conn)) == HEAD_REVISION:
            return False
        try:
            if progress is None:
                _run_alembic_upgrade(conn, None)
            else:
                _upgrade_reporting(conn, progress)
        except exc.DBAPIError as error:
            _refuse_if_not_owner(error)
            raise
    return True


def _refuse_if_not_owner(error: exc.DBAPIError) -> None:
    """A migration the database role may not run is refused in words (a role with only the
    grants of ``store.db.grants`` may not change the schema)."""
    reason = refused_write(error)
    if reason is not None:
        raise ReadOnly(
            f"The store's schema needs bringing up to date to {HEAD_REVISION}, and this database "
            f"role may not change it ({reason.rstrip('.')}). Only the schema's owner migrates: "
            "ask its owner to run roundtable db upgrade, or open the store with --read-only."
        ) from None


@contextmanager
def _waiting_for_migrations(conn: Connection) -> Iterator[None]:
    """On SQLite, wait for another opener's migration as long as it takes (PostgreSQL's advisory
    lock waits without a limit already); the connection's usual wait (store.db.database's) is
    restored after."""
    if conn.dialect.name != "sqlite":
        yield
        return
    raw = conn.connection.driver_connection
    usual = int(raw.execute("PRAGMA busy_timeout").fetchone()[0])
    raw.execute(f"PRAGMA busy_timeout = {MIGRATION_WAIT_MS}")
    try:
        yield
    finally:
        raw.execute(f"PRAGMA busy_timeout = {usual}")


def _upgrade_reporting(conn: Connection, progress: Callable[[str], None]) -> None:
    progress("Bringing the store's schema up to date (first open only)…")
    started = time.monotonic()
    steps: list[str] = []

    def step(message: str) -> None:
        steps.append(message)
        progress(message)

    _run_alembic_upgrade(conn, step)
    if steps:  # a long upgrade said what it was doing; say when it is over
        progress(f"The store's schema is up to date ({time.monotonic() - started:.1f} s).")


def _known(revision: str | None) -> str | None:
    """A revision this code can upgrade from; a newer store is refused in words, not with
    Alembic's "Can't locate revision" traceback."""
    if revision is not None and revision not in known_revisions():
        raise DatabaseUnavailable(
            f"The store's schema is at revision {revision!r}, which this roundtable does not "
            f"know (it knows up to {HEAD_REVISION!r}): a newer roundtable upgraded it. "
            "Upgrade roundtable to open this store."
        )
    return revision


def _run_alembic_upgrade(conn: Connection, progress: Callable[[str], None] | None) -> None:
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = conn
    # A migration that builds for long on a large table says what it is doing through this
    # (each migration reads it itself: they are self-contained).
    config.attributes["progress"] = progress
    command.upgrade(config, "head")
