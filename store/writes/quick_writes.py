"""The agent's writes (register, heartbeat, end) with the database's own driver alone.

Agents run ``roundtable sessions heartbeat`` all day, often as a fresh process, and importing the
database layer (SQLAlchemy, SQLModel, pydantic) costs several times what the write does. On a store
whose schema is current these writes go through ``sqlite3`` or ``psycopg`` directly, as the
console's first window is read (``store.reads.first_window``): the same rules and history payloads
(``store.writes.write_values``), the same statements as ``store.writes.agent_writes`` (one
transaction with its history row; the ``version`` bump; the counts tables and PostgreSQL's NOTIFY
kept by the store's triggers), the same errors. tests/test_quick_writes.py holds the two paths equal
on twin stores.

Each function returns the written row, or None when this path does not take the store (another
kind of URL, a file that does not exist yet or is not a store, a schema not at
``HEAD_REVISION``, an unexpected driver error before anything was committed): the caller then
takes the normal path, which migrates, words the error, or writes.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager, suppress
from pathlib import Path

from roundtable_console.store.clock import Clock, format_ts, system_clock
from roundtable_console.store.db import drivers
from roundtable_console.store.db.revision import HEAD_REVISION
from roundtable_console.store.errors import DatabaseUnavailable, SessionNotFound
from roundtable_console.store.records import SESSION_COLUMNS, SessionRecord
from roundtable_console.store.resume.adapters import AdapterConfig
from roundtable_console.store.writes.write_values import (
    TAKE_HOOK_KEY,
    beat_is_quiet,
    end_values,
    heartbeat_values,
    register_values,
    registered_payload,
    to_json_text,
    update_payload,
)

# typing is not imported at run time: every hook's process would pay ~3 ms for it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    from roundtable_console.store.writes.usage_values import Prices

    class _Cursor(Protocol):
        def execute(self, query: Any, params: Any = ..., /) -> Any: ...


# A server that does not answer within this is unavailable, as on the normal path.
CONNECT_TIMEOUT_SECONDS = 5

_RETURNING = "RETURNING " + ", ".join(SESSION_COLUMNS)

# The statements of store.writes.agent_writes, written with :name parameters (every one of them
# text).
_HEARTBEAT = f"""
UPDATE agent_sessions SET
  status = COALESCE(:status, status),
  external_session_id = COALESCE(:external_session_id, external_session_id),
  last_seen_at = :now,
  waiting_reason = COALESCE(:waiting, :turn_done),
  waiting_since = CASE
    WHEN :waiting IS NULL THEN NULL
    WHEN waiting_since IS NOT NULL AND waiting_reason = :waiting THEN waiting_since
    ELSE :now END,
  version = version + 1
WHERE id = :session_id {_RETURNING}"""

_END = f"""
UPDATE agent_sessions SET
  status = :status, ended_at = :now, last_seen_at = :now,
  waiting_reason = NULL, waiting_since = NULL, version = version + 1
WHERE id = :session_id {_RETURNING}"""

# Register replaces these (and the times); workspace_id and started_at stay as they were.
_REGISTERED = (
    "agent_id",
    "run_id",
    "adapter",
    "working_directory",
    "provider",
    "model",
    "external_session_id",
    "external_resume_command",
    "mcp_socket",
    "status",
    "metadata_json",
    "host",
)
_REGISTER = f"""
INSERT INTO agent_sessions
  (id, {", ".join(_REGISTERED)}, started_at, last_seen_at, ended_at, version)
VALUES (:id, {", ".join(f":{name}" for name in _REGISTERED)}, :now, :now, NULL, 0)
ON CONFLICT (id) DO UPDATE SET
  {", ".join(f"{name} = :{name}" for name in _REGISTERED)},
  last_seen_at = :now, ended_at = NULL, waiting_reason = NULL, waiting_since = NULL,
  version = agent_sessions.version + 1
{_RETURNING}"""

_APPEND_EVENT = """
INSERT INTO agent_session_events (session_id, event_type, payload_json, created_at)
VALUES (:session_id, :event_type, :payload_json, :now)"""

_REVISION = "SELECT version_num FROM alembic_version"

_CURRENT = f"SELECT {', '.join(SESSION_COLUMNS)} FROM agent_sessions WHERE id = :session_id"


# Compiled on first use (re's own cache): a write to SQLite never needs it.
_NAMED = r":([a-z_]+)"


def _postgres(statement: str) -> str:
    """A statement in psycopg's parameter style; each parameter typed as text, which the server
    could not always infer (``:waiting IS NULL``)."""
    return re.sub(_NAMED, r"CAST(%(\1)s AS TEXT)", statement)


class _Unavailable(Exception):
    """The store refused the write for a reason the normal path reports as unavailable."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _NotTaken(Exception):
    """This path does not take the store; the normal path will."""


def heartbeat(
    url: str,
    *,
    session_id: str,
    status: str | None = None,
    external_session_id: str | None = None,
    waiting: str | None = None,
    turn_done: str | None = None,
    clock: Clock = system_clock,
    quiet_seconds: float | None = None,
    idempotency_key: str | None = None,
    wait_seconds: float | None = None,
    tool_calls: Sequence[Any] | None = None,
    usage: Mapping[str, Any] | None = None,
    prices: Prices | None = None,
    withdraw: bool = False,
) -> SessionRecord | None:
    """``store.writes.agent_writes.heartbeat`` on the store at ``url``, in a transaction of its
    own. ``quiet_seconds`` (the hooks'): a beat that changes neither status nor waiting reason
    within that many seconds of the last one writes nothing. ``idempotency_key``: written once.
    ``wait_seconds``: how long a locked or unreachable store is waited for. ``tool_calls``: the
    tools the agent ran, written with the beat, quiet or not (``store.writes.tool_calls``).
    ``usage``: what the session spent so far, kept in its metadata
    (``store.writes.usage_values``). ``withdraw``: its agent moved on (its turn is done), so
    its pending requests and listening hook are withdrawn in the same transaction
    (``withdraw_requests``)."""
    spent = _spent(usage, prices)

    def write(run: _Run) -> SessionRecord:
        values = heartbeat_values(
            session_id=session_id,
            status=status,
            external_session_id=external_session_id,
            waiting=waiting,
            turn_done=turn_done,
        )
        now = format_ts(clock())
        session = None
        if quiet_seconds is not None:
            current = _session(run(_CURRENT, {"session_id": session_id}))
            if current is not None and beat_is_quiet(current, values, now, quiet_seconds):
                session = current
        if session is None:
            session = _update_one(run, _HEARTBEAT, values, now, "heartbeat", "last_seen_at")
        if tool_calls:  # imported only by the hooks that carry some
            from roundtable_console.store.writes.tool_calls import INSERT_TOOL_CALL, tool_call_rows

            rows = tool_call_rows(tool_calls, session_id=session.id, now=now)
            for row in rows:
                run(INSERT_TOOL_CALL, row)
        _keep_usage(run, session, spent, now)
        if withdraw:
            _withdraw(run, session.id, now)
        return session

    return _write(url, _once(write, idempotency_key, "heartbeat", session_id, clock), wait_seconds)


def _spent(usage: Mapping[str, Any] | None, prices: Prices | None) -> dict[str, Any] | None:
    """What ``usage`` keeps (``store.writes.usage_values``, imported only when there is some)."""
    if usage is None:
        return None
    from roundtable_console.store.writes.usage_values import SHIPPED, session_usage

    return session_usage(usage, prices or SHIPPED)


def _keep_usage(run: _Run, session: SessionRecord, spent: dict[str, Any] | None, now: str) -> None:
    if spent is not None:
        from roundtable_console.store.writes.usage_values import keep_usage

        keep_usage(run, session, spent, now)


def _once(
    write: Callable[[_Run], SessionRecord],
    key: str | None,
    action: str,
    session_id: str,
    clock: Clock,
) -> Callable[[_Run], SessionRecord]:
    """``write``, made once under ``key``: a key already taken returns the row as it is."""
    if key is None:
        return write

    def once(run: _Run) -> SessionRecord:
        row = {"key": key, "action": f"hook.{action}", "session_id": session_id}
        if run(TAKE_HOOK_KEY, {**row, "now": format_ts(clock())}) is None:
            current = _session(run(_CURRENT, {"session_id": session_id}))
            if current is None:
                raise SessionNotFound(f"No session has the id {session_id!r}.")
            return current
        return write(run)

    return once


def end(
    url: str,
    *,
    session_id: str,
    status: str | None = None,
    clock: Clock = system_clock,
    once_ended: bool = False,
    idempotency_key: str | None = None,
    wait_seconds: float | None = None,
    usage: Mapping[str, Any] | None = None,
    prices: Prices | None = None,
    withdraw: bool = False,
) -> SessionRecord | None:
    """``store.writes.agent_writes.end`` on the store at ``url``, in a transaction of its own.
    ``once_ended`` (the hooks'): a session already ended with that status is left as it is.
    ``usage``: what it spent, kept in its metadata (as ``heartbeat``'s). ``withdraw``: as
    ``heartbeat``'s."""
    spent = _spent(usage, prices)

    def write(run: _Run) -> SessionRecord:
        values = end_values(session_id=session_id, status=status)
        session = None
        if once_ended:
            current = _session(run(_CURRENT, {"session_id": session_id}))
            if current is not None and current.ended_at and current.status == values["status"]:
                session = current
        now = format_ts(clock())
        if session is None:
            session = _update_one(run, _END, values, now, "ended", "ended_at")
        _keep_usage(run, session, spent, now)
        if withdraw:
            _withdraw(run, session.id, now)
        return session

    return _write(url, _once(write, idempotency_key, "end", session_id, clock), wait_seconds)


def register(
    url: str,
    *,
    adapters: Mapping[str, AdapterConfig] | None = None,
    clock: Clock = system_clock,
    idempotency_key: str | None = None,
    wait_seconds: float | None = None,
    **given: Any,
) -> SessionRecord | None:
    """``store.writes.agent_writes.register`` on the store at ``url`` (``given``: its inputs by its
    parameter names), in a transaction of its own."""

    def write(run: _Run) -> SessionRecord:
        values = register_values(adapters=adapters, **given)
        now = format_ts(clock())
        session = _session(run(_REGISTER, {**values, "now": now}))
        assert session is not None  # an upsert always returns its row
        payload = registered_payload(status=session.status, adapter=session.adapter)
        _append_event(run, session.id, "registered", payload, now)
        return session

    session_id = str(given.get("session_id") or "")
    return _write(url, _once(write, idempotency_key, "register", session_id, clock), wait_seconds)


_WITHDRAW = """
UPDATE permission_requests SET state = 'withdrawn', decided_at = :now
WHERE session_id = :session_id AND state = 'pending' RETURNING id"""
_STOP_LISTENING = """
UPDATE reply_listeners SET state = 'withdrawn', ended_at = :now
WHERE session_id = :session_id AND state = 'listening' RETURNING id"""


def _withdraw(run: _Run, session_id: str, now: str) -> None:
    values = {"session_id": session_id, "now": now}
    run(_WITHDRAW, values)
    run(_STOP_LISTENING, values)


def withdraw_requests(
    url: str,
    *,
    session_id: str,
    clock: Clock = system_clock,
    wait_seconds: float | None = None,
) -> bool | None:
    """The session's agent moved on (its turn is done, it ended): its pending permission
    requests are withdrawn (``store.requests``), and so is a finished turn's hook that listened
    for a reply (``store.replies``; a new one listens after this). None when this path does not
    take the store."""

    def write(run: _Run) -> SessionRecord:
        _withdraw(run, session_id, format_ts(clock()))
        return True  # type: ignore[return-value]

    return None if _write(url, write, wait_seconds) is None else True


def current_session(
    url: str, session_id: str, *, wait_seconds: float | None = None
) -> tuple[bool, SessionRecord | None]:
    """The session as stored now, read in a transaction of its own: (whether this path took the
    store, the row or None). A store the path does not take answers (False, None)."""
    found: list[SessionRecord | None] = []

    def read(run: _Run) -> SessionRecord:
        found.append(_session(run(_CURRENT, {"session_id": session_id})))
        raise _Nothing

    try:
        taken = _write(url, read, wait_seconds)
    except _Nothing:
        return True, found[0] if found else None
    return taken is not None, None


class _Nothing(Exception):
    """A read-only use of the write path: nothing to commit (rolled back)."""


if TYPE_CHECKING:
    # Runs one statement (with :name parameters) in the write's transaction; its first row.
    _Run = Callable[[str, Mapping[str, Any]], Any]


def _update_one(
    run: _Run,
    statement: str,
    values: dict[str, Any],
    now: str,
    event_type: str,
    time_field: str,
) -> SessionRecord:
    session = _session(run(statement, {**values, "now": now}))
    if session is None:
        raise SessionNotFound(f"No session has the id {values['session_id']!r}.")
    waiting = session.waiting
    payload = update_payload(
        status=session.status,
        time_field=time_field,
        now=now,
        waiting_reason=None if waiting is None else waiting.reason,
        turn_done=session.turn_done,
    )
    _append_event(run, session.id, event_type, payload, now)
    return session


def _append_event(
    run: _Run, session_id: str, event_type: str, payload: dict[str, Any], now: str
) -> None:
    row = {
        "session_id": session_id,
        "event_type": event_type,
        "payload_json": to_json_text(payload),
        "now": now,
    }
    run(_APPEND_EVENT, row)


def _session(row: Any) -> SessionRecord | None:
    return None if row is None else SessionRecord.from_row(tuple(row))


def _write(
    url: str, write: Callable[[_Run], SessionRecord], wait_seconds: float | None = None
) -> SessionRecord | None:
    """``write`` in one transaction on the store at ``url``; None when this path does not take
    it. A refusal of the rules (``StoreError``) rolls back and propagates; so does a store that
    is unavailable, in the normal path's words."""
    try:
        if drivers.postgres_dsn(url) is not None:
            return _write_postgres(url, write, wait_seconds)
        path = drivers.sqlite_file(url)
        if path is None:
            return None
        return _write_sqlite(path, write, wait_seconds)
    except _NotTaken:
        return None
    except _Unavailable as refused:
        description = _description(url)
        reason = refused.reason.strip().splitlines()[0] if refused.reason.strip() else "unknown"
        raise DatabaseUnavailable(drivers.unavailable_message(description, reason)) from None


def _description(url: str) -> str:
    """The store as ``store.Store.description`` names it: a PostgreSQL URL with its driver."""
    shown = drivers.describe(url) or url
    if drivers.postgres_dsn(url) is not None:
        return "postgresql+psycopg" + shown[shown.index("://") :]
    return shown


def _write_sqlite(
    path: Path, write: Callable[[_Run], SessionRecord], wait_seconds: float | None
) -> SessionRecord:
    busy_ms = drivers.BUSY_TIMEOUT_MS if wait_seconds is None else int(wait_seconds * 1000)
    timeout = busy_ms / 1000
    try:
        conn = sqlite3.connect(path, timeout=timeout, isolation_level=None)
    except sqlite3.Error:
        raise _NotTaken from None
    with closing(conn):
        with _sqlite_errors():
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                raise _NotTaken  # the normal path turns the store to WAL first
            conn.execute(f"PRAGMA busy_timeout = {busy_ms}")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA synchronous = NORMAL")
        # The write lock at BEGIN, as store.Store.write takes it.
        with _sqlite_errors(locking=True):
            conn.execute("BEGIN IMMEDIATE")
        try:
            with _sqlite_errors():
                _check_revision(conn)

            def run(statement: str, values: Mapping[str, Any]) -> Any:
                with _sqlite_errors(locking=True):
                    return conn.execute(statement, values).fetchone()

            session = write(run)
            with _sqlite_errors(locking=True):
                conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                with suppress(sqlite3.Error):  # a failed rollback is SQLite's own on close
                    conn.execute("ROLLBACK")
            raise
    return session


@contextmanager
def _sqlite_errors(*, locking: bool = False) -> Iterator[None]:
    """SQLite's errors as this path's: a store busy or failing while its write lock is taken or
    held (``locking``) is unavailable, as on the normal path; any other error leaves the store
    to the normal path (after a rollback, when a write had begun)."""
    try:
        yield
    except sqlite3.OperationalError as error:
        if locking:
            raise _Unavailable(str(error)) from None
        raise _NotTaken from None
    except sqlite3.Error:
        raise _NotTaken from None


def _check_revision(conn: _Cursor) -> None:
    rows = conn.execute(_REVISION).fetchall()
    if len(rows) != 1 or str(rows[0][0]) != HEAD_REVISION:
        raise _NotTaken


def _write_postgres(
    url: str, write: Callable[[_Run], SessionRecord], wait_seconds: float | None
) -> SessionRecord:
    import psycopg

    dsn = drivers.postgres_dsn(url)
    timeout = CONNECT_TIMEOUT_SECONDS if wait_seconds is None else max(1, round(wait_seconds))
    try:
        conn = psycopg.connect(dsn, connect_timeout=timeout)
    except psycopg.OperationalError as error:
        raise _Unavailable(str(error)) from None
    except psycopg.Error:
        raise _NotTaken from None
    with conn:
        try:
            _check_revision(conn)
        except psycopg.Error:
            raise _NotTaken from None

        def run(statement: str, values: Mapping[str, Any]) -> Any:
            try:
                cursor = conn.execute(_postgres(statement), values)
                return cursor.fetchone() if cursor.description is not None else None
            except psycopg.OperationalError as error:
                raise _Unavailable(str(error)) from None
            except psycopg.Error:
                raise _NotTaken from None

        session = write(run)
        try:
            conn.commit()
        except psycopg.OperationalError as error:
            raise _Unavailable(str(error)) from None
    return session
