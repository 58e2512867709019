"""Appending history: session events, and the general activity stream for lifecycle actions.

Also ``Prepared``, how the agent-facing write path (every heartbeat) sends its statements.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter
from typing import Any

from sqlalchemy import Connection, Table, bindparam, exc, insert
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.dml import UpdateBase
from sqlalchemy.sql.selectable import Select

from roundtable_console.store.db.models import AgentSessionEvent, Event
from roundtable_console.store.writes.write_values import (  # re-exported for the writers
    to_json_text as to_json_text,
)

_SESSION_EVENTS = AgentSessionEvent.__table__  # type: ignore[attr-defined]
_EVENTS = Event.__table__  # type: ignore[attr-defined]


class Form:
    """A statement as one dialect's DBAPI takes it."""

    def __init__(
        self,
        *,
        sql: str,
        defaults: dict[str, Any],
        order: tuple[str, ...] | None,
        columns: tuple[str, ...],
        dbapi_error: type[Exception],
    ) -> None:
        self.sql = sql
        self.defaults = defaults  # literal values the statement binds itself (``version + 1``)
        self.order = order  # parameter order for a positional paramstyle, else None
        self.columns = columns  # RETURNING column names, in order
        self.dbapi_error = dbapi_error
        self._pick = _picker(order) if order is not None else None

    def parameters(self, values: Mapping[str, Any]) -> Any:
        if self.defaults:
            values = {**self.defaults, **values}
        return values if self._pick is None else self._pick(values)


def _picker(order: tuple[str, ...]) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    """The values in ``order`` as a tuple (itemgetter does it in C; with one name it would
    return the bare value)."""
    if len(order) == 1:
        name = order[0]
        return lambda values: (values[name],)
    if not order:
        return lambda _values: ()
    return itemgetter(*order)


class Prepared:
    """A Core statement with bind parameters (DML, or a SELECT whose first row is wanted),
    compiled once per dialect and sent straight to the DBAPI cursor of the caller's connection,
    inside the caller's transaction.

    ``Connection.execute`` costs tens of microseconds a statement (cache lookup, parameter
    processing, result metadata), several times what SQLite spends running a heartbeat's
    statements; this path skips that work and nothing else. It is taken only when no bound or
    returned value needs a type conversion on the dialect (checked once); otherwise, and for any
    other dialect, the statement goes through ``Connection.execute`` as usual, as it does on a
    connection with no transaction begun (so SQLAlchemy's autobegin still applies). DBAPI errors
    are wrapped as SQLAlchemy wraps them, so ``Store`` turns them into the same typed errors.
    What it gives up: engine events and logging do not see these statements.
    """

    def __init__(self, statement: UpdateBase | Select[Any]) -> None:
        self.statement = statement
        self._forms: weakref.WeakKeyDictionary[Dialect, Form | None] = weakref.WeakKeyDictionary()

    def execute(self, db: Connection, values: Mapping[str, Any]) -> dict[str, Any] | None:
        """Run with ``values``; the first returned row as a column → value dict, if any."""
        form = self._direct(db)
        if form is None:
            result = db.execute(self.statement, dict(values))
            if not result.returns_rows:
                return None
            row = result.mappings().first()
            return dict(row) if row is not None else None
        parameters = form.parameters(values)
        cursor = db.connection.driver_connection.cursor()  # type: ignore[union-attr]
        try:
            cursor.execute(form.sql, parameters)
            row = cursor.fetchone() if form.columns else None
        except form.dbapi_error as error:
            raise exc.DBAPIError.instance(
                form.sql, parameters, error, form.dbapi_error, dialect=db.dialect
            ) from error
        finally:
            cursor.close()
        return dict(zip(form.columns, row, strict=True)) if row is not None else None

    def executemany(self, db: Connection, rows: Sequence[Mapping[str, Any]]) -> None:
        """Run once per row, in one DBAPI ``executemany`` (for statements returning nothing)."""
        form = self._direct(db)
        if form is None or form.columns:
            db.execute(self.statement, [dict(row) for row in rows])
            return
        parameters = [form.parameters(row) for row in rows]
        cursor = db.connection.driver_connection.cursor()  # type: ignore[union-attr]
        try:
            cursor.executemany(form.sql, parameters)
        except form.dbapi_error as error:
            raise exc.DBAPIError.instance(
                form.sql, parameters, error, form.dbapi_error, dialect=db.dialect, ismulti=True
            ) from error
        finally:
            cursor.close()

    def _direct(self, db: Connection) -> Form | None:
        return self.form_for(db.dialect) if db.in_transaction() else None

    def form_for(self, dialect: Dialect) -> Form | None:
        """What this dialect's DBAPI is sent (None: the statement goes through SQLAlchemy)."""
        try:
            return self._forms[dialect]
        except KeyError:
            form = self._forms[dialect] = _compile(self.statement, dialect)
            return form


def _compile(statement: UpdateBase | Select[Any], dialect: Dialect) -> Form | None:
    compiled: Any = statement.compile(dialect=dialect)
    binds = compiled.binds.values()
    if isinstance(statement, Select):
        returning = list(statement.selected_columns)
    else:
        returning = list(compiled.effective_returning or ())
    dbapi = getattr(dialect, "dbapi", None)
    if dialect.name not in ("sqlite", "postgresql") or dbapi is None:
        return None
    if any(_converts(bind.type, dialect, bind=True) for bind in binds):
        return None
    if any(_converts(column.type, dialect, bind=False) for column in returning):
        return None
    given = {bind.key: None for bind in binds if bind.required}
    defaults = {
        name: value for name, value in compiled.construct_params(given).items() if name not in given
    }
    return Form(
        sql=compiled.string,
        defaults=defaults,
        order=tuple(compiled.positiontup) if compiled.positional else None,
        columns=tuple(column.key for column in returning),
        dbapi_error=dbapi.Error,
    )


def _converts(type_: Any, dialect: Dialect, *, bind: bool) -> bool:
    impl = type_.dialect_impl(dialect)
    if bind:
        return impl.bind_processor(dialect) is not None
    return impl.result_processor(dialect, None) is not None


def prepared_insert(table: Table, columns: Sequence[str]) -> Prepared:
    """``INSERT INTO table (columns) VALUES (:column, …)``, with no implicit ``RETURNING``."""
    return Prepared(insert(table).inline().values({name: bindparam(name) for name in columns}))


_APPEND_SESSION_EVENT = prepared_insert(
    _SESSION_EVENTS, ("session_id", "event_type", "payload_json", "created_at")
)
# An operator's action names its actor in a column of its own (migration 0009), which the audit
# trail reads; what agents write leaves it NULL.
_APPEND_ACTION_EVENT = prepared_insert(
    _SESSION_EVENTS, ("session_id", "event_type", "payload_json", "created_at", "actor")
)
_APPEND_RUN_EVENT = prepared_insert(
    _EVENTS, ("run_id", "type", "actor_id", "task_id", "payload_json", "created_at")
)


def session_event_row(
    *,
    session_id: str,
    event_type: str,
    payload: dict[str, Any],
    now: str,
    actor: str | None = None,
) -> dict[str, Any]:
    """The ``agent_session_events`` row of one event; ``actor``: the operator of an action."""
    row = {
        "session_id": session_id,
        "event_type": event_type,
        "payload_json": to_json_text(payload),
        "created_at": now,
    }
    if actor is not None:
        row["actor"] = actor
    return row


def _session_event_insert(row: Mapping[str, Any]) -> Prepared:
    return _APPEND_ACTION_EVENT if "actor" in row else _APPEND_SESSION_EVENT


def run_event_row(
    *, run_id: str, event_type: str, actor: str, payload: dict[str, Any], now: str
) -> dict[str, Any]:
    """The ``events`` row of one event of a run's activity stream."""
    return {
        "run_id": run_id,
        "type": event_type,
        "actor_id": actor,
        "task_id": None,
        "payload_json": to_json_text(payload),
        "created_at": now,
    }


def append_session_event(
    db: Connection,
    *,
    session_id: str,
    event_type: str,
    payload: dict[str, Any],
    now: str,
    actor: str | None = None,
) -> None:
    row = session_event_row(
        session_id=session_id, event_type=event_type, payload=payload, now=now, actor=actor
    )
    _session_event_insert(row).execute(db, row)


def append_run_event(
    db: Connection,
    *,
    run_id: str,
    event_type: str,
    actor: str,
    payload: dict[str, Any],
    now: str,
) -> None:
    _APPEND_RUN_EVENT.execute(
        db,
        run_event_row(run_id=run_id, event_type=event_type, actor=actor, payload=payload, now=now),
    )


def append_events(
    db: Connection, session_events: list[dict[str, Any]], run_events: list[dict[str, Any]]
) -> None:
    """Rows of ``session_event_row`` and ``run_event_row``, each table's in one DBAPI
    ``executemany``, in the order given (the session events all with an actor, or none)."""
    if session_events:
        statement = _session_event_insert(session_events[0])
        if any(_session_event_insert(row) is not statement for row in session_events):
            raise ValueError("session events with and without an actor go in separate calls")
        statement.executemany(db, session_events)
    if run_events:
        _APPEND_RUN_EVENT.executemany(db, run_events)
