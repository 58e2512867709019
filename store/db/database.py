"""Engines, transactions and schema currency for SQLite and PostgreSQL stores."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, exc
from sqlalchemy.engine import URL, make_url

from roundtable_console.store.db.drivers import BUSY_TIMEOUT_MS, unavailable_message
from roundtable_console.store.db.notifications import HOST_CALLS_CHANNEL, ChangeListener
from roundtable_console.store.db.permissions import refused_write
from roundtable_console.store.db.sqlite_files import (
    check_sqlite_file,
    is_sqlite_file,
    not_a_database,
    sqlite_read_only,
)
from roundtable_console.store.errors import DatabaseUnavailable, ReadOnly, StoreError
from roundtable_console.store.safety.redaction import redact_text

# How often a SQLite store waiting for a change reads its data version.
SQLITE_WATCH_SECONDS = 0.2


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


def _normalise_url(url: str) -> URL:
    try:
        parsed = make_url(url)
    except exc.ArgumentError as error:
        raise DatabaseUnavailable(
            f"{url!r} is not a database URL ({str(error).rstrip('.')}); "
            "give a sqlite:///PATH or postgresql://HOST/NAME URL."
        ) from None
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() not in ("sqlite", "postgresql"):
        raise DatabaseUnavailable(
            f"Unsupported database {parsed.get_backend_name()!r}: use a sqlite:/// or "
            "postgresql:// URL."
        )
    return parsed


def use_wal(cursor: Any, *, wait_seconds: float | None = None) -> None:
    """Put the database in WAL mode, unless it is already (or in memory). Processes opening a new
    file at once all turn it to WAL, and SQLite answers some of them "locked" at once rather
    than wait (waiting could deadlock): they look again until the busy timeout has passed."""
    wait = BUSY_TIMEOUT_MS / 1000 if wait_seconds is None else wait_seconds
    deadline = time.monotonic() + wait
    while True:
        try:
            mode = cursor.execute("PRAGMA journal_mode").fetchone()[0]
            if mode != "wal" and mode != "memory":
                cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


# SQLite's synchronous level for a write, by whether it must survive power loss (``durable``).
# In WAL mode NORMAL syncs the log only at checkpoints: a commit is safe from a crash of the
# process, not of the machine. FULL syncs the log at every commit, before it is reported done.
_SYNCHRONOUS = {False: "NORMAL", True: "FULL"}


class _Turns:
    """Whose turn it is to write, in this process: one writer at a time, and a writer that
    would not wait (``Store.without_waiting``) never takes the turn before one that waits."""

    def __init__(self) -> None:
        self._turn = threading.Lock()
        self._count = threading.Lock()
        self._waiting = 0

    def acquire(self, *, wait: bool) -> bool:
        if not wait:
            return self._waiting == 0 and self._turn.acquire(blocking=False)
        with self._count:
            self._waiting += 1
        try:
            return self._turn.acquire()
        finally:
            with self._count:
                self._waiting -= 1

    def release(self) -> None:
        self._turn.release()


class WriteBusy(Exception):
    """A write that would have had to wait, under ``Store.without_waiting``: nothing was done."""


# Whether a SQLite write waits for its turn (False under ``Store.without_waiting``).
_WAIT_FOR_WRITES: ContextVar[bool] = ContextVar("wait_for_writes", default=True)


def _driver_sql(connection: Connection, sql: str) -> None:
    """``sql`` on the connection's own ``sqlite3`` connection: a transaction's BEGIN and its
    pragmas, at a fraction of ``exec_driver_sql``'s cost. Its errors are SQLAlchemy's, as that
    would raise them, so ``Store`` tells them apart as ever."""
    raw: Any = connection.connection.driver_connection
    try:
        raw.execute(sql)
    except sqlite3.Error as error:
        raise exc.DBAPIError.instance(
            sql, (), error, sqlite3.Error, dialect=connection.dialect
        ) from error


def _begin_write(connection: Connection, options: Mapping[str, Any]) -> None:
    # SQLite takes the level only outside a transaction, and applies it at the commit.
    level = _SYNCHRONOUS[bool(options.get("durable", False))]
    if connection.info.get("synchronous") != level:
        _driver_sql(connection, f"PRAGMA synchronous = {level}")
        connection.info["synchronous"] = level
    _driver_sql(connection, "BEGIN IMMEDIATE")


def _configure_sqlite(
    engine: Engine, *, read_only: bool = False, database: str | None = None
) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, record: Any) -> None:
        try:
            _set_up_connection(dbapi_connection, record)
        except sqlite3.DatabaseError as error:
            refused = not_a_database(error, database)
            if refused is None:
                raise
            dbapi_connection.close()
            raise refused from None

    def _set_up_connection(dbapi_connection: Any, record: Any) -> None:
        # Let SQLAlchemy's "begin" event issue BEGIN itself, so writers can take the lock up front.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if read_only:
            from roundtable_console.store.db.behind_schema import cover_missing

            cover_missing(dbapi_connection)  # a schema behind ours is read through views
            # From here on not even a temporary table: nothing this connection runs can write.
            cursor.execute("PRAGMA query_only = ON")
        else:
            cursor.execute("PRAGMA foreign_keys = ON")
            use_wal(cursor)
            cursor.execute(f"PRAGMA synchronous = {_SYNCHRONOUS[False]}")
            record.info["synchronous"] = _SYNCHRONOUS[False]
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        options = connection.get_execution_options()
        if options.get("write", False) and not _WAIT_FOR_WRITES.get():
            # Begin at once or not at all: SQLite's busy handler is not to wait here.
            try:
                _driver_sql(connection, "PRAGMA busy_timeout = 0")
                _begin_write(connection, options)
            except exc.OperationalError as error:
                if "locked" in str(error) or "busy" in str(error):
                    raise WriteBusy() from None
                raise
            finally:
                _driver_sql(connection, f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            return
        if options.get("write", False):
            _begin_write(connection, options)
            return
        _driver_sql(connection, "BEGIN")


def create_store_engine(
    url: str, *, pool_size: int | None = None, read_only: bool = False
) -> Engine:
    """The engine of a store. ``read_only``: a SQLite file is opened ``mode=ro`` (and every
    connection ``query_only``), a PostgreSQL session defaults to read-only transactions; the
    file or database must exist already."""
    parsed = _normalise_url(url)
    if parsed.get_backend_name() == "sqlite":
        connect_args: dict[str, Any] = {"timeout": BUSY_TIMEOUT_MS / 1000}
        database = parsed.database  # as given: a read-only engine's is a file: URI
        if read_only:
            parsed = sqlite_read_only(parsed)
        else:
            check_sqlite_file(parsed.database)
        pool = {"pool_size": pool_size} if pool_size is not None else {}
        engine = create_engine(parsed, connect_args=connect_args, **pool)
        _configure_sqlite(engine, read_only=read_only, database=database)
        return engine
    kwargs: dict[str, Any] = {"pool_pre_ping": True}
    if pool_size is not None:
        kwargs["pool_size"] = pool_size
    engine = create_engine(parsed, connect_args={"connect_timeout": 5}, **kwargs)
    if read_only:
        _configure_postgres_read_only(engine)
    return engine


def _configure_postgres_read_only(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        from roundtable_console.store.db.behind_schema import cover_missing_postgres

        cover_missing_postgres(dbapi_connection)  # a schema one revision behind is read so
        with dbapi_connection.cursor() as cursor:
            # From here on every transaction of this session is read-only.
            cursor.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
        dbapi_connection.commit()


def _is_unavailable(error: exc.DBAPIError) -> bool:
    return not isinstance(error, exc.IntegrityError | exc.ProgrammingError | exc.DataError)


def read_only_message(description: str, reason: str) -> str:
    reason = reason.strip().rstrip(".")
    return (
        f"The database {description} refused: {reason}. This open or this database role may "
        "not do that here: open the store without --read-only, or ask the schema's owner for "
        "the grants it needs (roundtable db grants --viewer or --writer)."
    )


def describe_url(url: str | URL) -> str:
    """The URL with any password hidden (libpq's ``?password=`` too), for headers and messages."""
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except exc.ArgumentError:
        return "(unreadable URL)"
    return redact_text(parsed.render_as_string(hide_password=True))


class Store:
    """One database: its engine, and the two kinds of transaction the operations use."""

    def __init__(self, engine: Engine, *, read_only: bool = False, url: str | None = None) -> None:
        self.engine = engine
        self.read_only = read_only
        # The URL as given: a read-only SQLite engine's own is a ``file:`` URI.
        self._url = url
        self.dialect: str = engine.dialect.name
        self._writer = engine.execution_options(write=True)
        self._durable_writer = engine.execution_options(write=True, durable=True)
        # SQLite lets one writer in at a time; this process's writers queue here, in order,
        # rather than in SQLite's busy handler, which sleeps ever longer between tries (a
        # server's threads writing at once would otherwise wait tens of milliseconds each).
        self._write_turn = _Turns() if self.dialect == "sqlite" else None
        self._snapshot_reader = (
            engine.execution_options(isolation_level="REPEATABLE READ")
            if self.dialect == "postgresql"
            else engine
        )
        # The change detector's own connection, opened on first use: on SQLite one that reads
        # PRAGMA data_version, on PostgreSQL one that LISTENs.
        self._watch_lock = threading.Lock()
        self._watch: Any = None
        self._watch_identity: object | None = None
        # Once disposed, the watch is never opened again: a watcher thread still waiting would
        # otherwise connect afresh, and SQLite would make the file anew where it was deleted.
        self._watch_closed = False
        self._listener = ChangeListener(self._listening_connection)
        # Calls for hosts alone (a host on the store itself: store.hosts.calls), opened on use.
        self._calls_listener = ChangeListener(self._listening_connection, HOST_CALLS_CHANNEL)

    @property
    def description(self) -> str:
        return describe_url(self._url or self.engine.url)

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except StoreError:
            raise
        except exc.DBAPIError as error:
            refused = refused_write(error)
            if refused is not None:
                raise ReadOnly(read_only_message(self.description, refused)) from None
            if _is_unavailable(error):
                reason = str(error.orig).strip().splitlines()[0] if error.orig else str(error)
                raise DatabaseUnavailable(unavailable_message(self.description, reason)) from None
            raise

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read transaction that sees one consistent snapshot."""
        with self._guard(), self._snapshot_reader.connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def write(self, *, durable: bool = False) -> Iterator[Connection]:
        """A write transaction: the row change and its history commit together or not at all.
        On SQLite it takes the write lock at BEGIN, so a read-then-write cannot be overtaken.
        A store opened read-only refuses before it begins.

        ``durable``: what an operator does (a lifecycle action, a bulk run's batch, an import, a
        prune batch, a token change) survives power loss once this returns: on SQLite the
        commit syncs the log to disk (``synchronous = FULL``). Agents' writes (register,
        heartbeat, end) do not ask for it: the next beat says it again. On PostgreSQL every
        commit is as durable as the server's ``synchronous_commit`` makes it."""
        if self.read_only:
            raise ReadOnly(
                f"The store {self.description} is open read-only: nothing was written. "
                "Open it without --read-only (and read_only = false, ROUNDTABLE_READ_ONLY unset) "
                "to act on sessions."
            )
        writer = self._durable_writer if durable else self._writer
        # The connection is taken from the pool before the turn: only the transaction waits.
        with self._guard(), writer.connect() as conn, self._turn(), conn.begin():
            yield conn

    @contextmanager
    def _turn(self) -> Iterator[None]:
        if self._write_turn is None:
            yield
            return
        if not self._write_turn.acquire(wait=_WAIT_FOR_WRITES.get()):
            raise WriteBusy()
        try:
            yield
        finally:
            self._write_turn.release()

    @contextmanager
    def without_waiting(self) -> Iterator[None]:
        """Within this block a SQLite write that cannot begin at once (another thread of this
        process writes, or another process holds the database's write lock) raises
        ``WriteBusy`` before anything is done, rather than waiting: for a caller that would
        rather not wait where it runs (a server's event loop), and does the work elsewhere
        then. Elsewhere, and on PostgreSQL, writes wait as always."""
        if self._write_turn is None:
            yield
            return
        token = _WAIT_FOR_WRITES.set(False)
        try:
            yield
        finally:
            _WAIT_FOR_WRITES.reset(token)

    def change_token(self) -> object | None:
        """A value that differs whenever the store may have changed since it was last taken; None
        when that cannot be told (in-memory SQLite, an unreadable file, a PostgreSQL server
        that refuses the listening connection, a store disposed of), so callers always
        re-read. Safe to call from any thread; never reads a table.

        SQLite's ``PRAGMA data_version`` moves when any *other* connection commits, our pooled
        writers included, so it is read on one connection kept for this alone that never
        writes; its identity is part of the token, since a new connection counts afresh. On
        PostgreSQL the token counts the notifications migration 0005's triggers send."""
        if self.dialect == "postgresql":
            return self._listener.token()
        if not is_sqlite_file(self.engine.url.database):
            return None
        with self._watch_lock:
            if self._watch_closed:
                return None
            try:
                if self._watch is None:
                    proxied = self.engine.raw_connection()
                    watch = proxied.driver_connection
                    proxied.detach()  # ours alone from now on: the pool opens another
                    self._watch = watch
                    self._watch_identity = object()
                # fetchall ends the statement: no read snapshot is left holding back checkpoints.
                rows = self._watch.execute("PRAGMA data_version").fetchall()
            except Exception:  # noqa: BLE001 - unknown means "re-read"; the read reports why
                self._close_watch()
                return None
            return (self._watch_identity, int(rows[0][0]))

    def wait_for_change(self, since: object | None, timeout: float) -> object | None:
        """The change token once it differs from ``since``, or the current one after ``timeout``
        seconds. PostgreSQL wakes on the notification itself; SQLite checks its data version
        every ``SQLITE_WATCH_SECONDS``. With no token to be had it just waits the timeout."""
        if self.dialect == "postgresql":
            return self._listener.wait(since, timeout)
        deadline = time.monotonic() + timeout
        while True:
            token = self.change_token()
            left = deadline - time.monotonic()
            if (token is not None and token != since) or left <= 0:
                return token
            time.sleep(min(SQLITE_WATCH_SECONDS, left))

    def wait_for_host_calls(self, since: object | None, timeout: float) -> object | None:
        """As ``wait_for_change``, for calls for hosts only (PostgreSQL; None elsewhere, after
        ``timeout``: a host on a SQLite store takes no calls)."""
        if self.dialect != "postgresql":
            time.sleep(timeout)
            return None
        return self._calls_listener.wait(since, timeout)

    def _listening_connection(self) -> Any:
        """A connection of the pool's kind, taken out of it for LISTEN, in autocommit mode."""
        proxied = self.engine.raw_connection()
        connection = proxied.driver_connection
        proxied.detach()
        connection.rollback()  # the pool's liveness check may have begun a transaction
        connection.autocommit = True
        return connection

    def _close_watch(self) -> None:
        watch, self._watch, self._watch_identity = self._watch, None, None
        if watch is not None:
            try:
                watch.close()
            except Exception:  # noqa: BLE001 - closing a broken connection may fail; it is gone
                pass

    def dispose(self) -> None:
        self._listener.close()
        self._calls_listener.close()
        with self._watch_lock:
            self._watch_closed = True
            self._close_watch()
        self.engine.dispose()


def open_store(
    url: str,
    *,
    upgrade: bool = True,
    progress: Callable[[str], None] | None = None,
    read_only: bool = False,
    pool_size: int | None = None,
) -> Store:
    """Open a store and bring its schema up to date (cheaply, when it already is). A read-only
    open never migrates: a schema that is behind is read if the tables it needs are there
    (``store.db.schema.check_readable``), else refused in words. ``pool_size``: the connections
    kept open for reuse (a server's worker threads each hold one while they work)."""
    from roundtable_console.store.db.schema import check_readable, ensure_schema

    engine = create_store_engine(url, read_only=read_only, pool_size=pool_size)
    # A read-only SQLite engine's URL is a file: URI; the store is described by the one given.
    given = url if read_only and engine.dialect.name == "sqlite" else None
    store = Store(engine, read_only=read_only, url=given)
    try:
        with store._guard():
            if read_only:
                check_readable(engine, store.description)
            elif upgrade:
                ensure_schema(engine, progress=progress)
    except BaseException:
        engine.dispose()
        raise
    return store
