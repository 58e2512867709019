"""Appending history: session events, and the general activity stream for lifecycle actions.

Also ``Prepared``, how the agent-facing write path (every heartbeat) sends its statements.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, bindparam, exc, insert
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.dml import UpdateBase

from store.models import AgentSessionEvent, Event

_SESSION_EVENTS = AgentSessionEvent.__table__  # type: ignore[attr-defined]
_EVENTS = Event.__table__  # type: ignore[attr-defined]
# json.dumps with these options builds a new encoder on every call; one shared encoder does not.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"))


def to_json_text(payload: dict[str, Any]) -> str:
    return _ENCODER.encode(payload)


@dataclass(frozen=True)
class Form:
    """A statement as one dialect's DBAPI takes it."""

    sql: str
    defaults: dict[str, Any]  # literal values the statement binds itself (``version + 1``)
    order: tuple[str, ...] | None  # parameter order for a positional paramstyle, else None
    columns: tuple[str, ...]  # RETURNING column names, in order
    dbapi_error: type[Exception]

    def parameters(self, values: Mapping[str, Any]) -> Any:
        merged = {**self.defaults, **values}
        return merged if self.order is None else tuple(merged[name] for name in self.order)


class Prepared:
    """A Core DML statement with bind parameters, compiled once per dialect and sent straight to
    the DBAPI cursor of the caller's connection, inside the caller's transaction.

    ``Connection.execute`` costs tens of microseconds a statement (cache lookup, parameter
    processing, result metadata), several times what SQLite spends running a heartbeat's
    statements; this path skips that work and nothing else. It is taken only when no bound or
    returned value needs a type conversion on the dialect (checked once); otherwise, and for any
    other dialect, the statement goes through ``Connection.execute`` as usual. DBAPI errors are
    wrapped exactly as SQLAlchemy wraps them, so ``Store`` turns them into the same typed errors.
    """

    def __init__(self, statement: UpdateBase) -> None:
        self.statement = statement
        self._forms: weakref.WeakKeyDictionary[Dialect, Form | None] = weakref.WeakKeyDictionary()

    def execute(self, db: Connection, values: Mapping[str, Any]) -> dict[str, Any] | None:
        """Run with ``values``; the first returned row as a column → value dict, if any."""
        form = self.form_for(db.dialect)
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

    def form_for(self, dialect: Dialect) -> Form | None:
        """What this dialect's DBAPI is sent (None: the statement goes through SQLAlchemy)."""
        try:
            return self._forms[dialect]
        except KeyError:
            form = self._forms[dialect] = _compile(self.statement, dialect)
            return form


def _compile(statement: UpdateBase, dialect: Dialect) -> Form | None:
    compiled: Any = statement.compile(dialect=dialect)
    binds = compiled.binds.values()
    returning = list(compiled.effective_returning or ())
    if dialect.name not in ("sqlite", "postgresql") or dialect.loaded_dbapi is None:
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
        dbapi_error=dialect.loaded_dbapi.Error,
    )


def _converts(type_: Any, dialect: Dialect, *, bind: bool) -> bool:
    impl = type_.dialect_impl(dialect)
    if bind:
        return impl.bind_processor(dialect) is not None
    return impl.result_processor(dialect, None) is not None


_APPEND_SESSION_EVENT = Prepared(
    insert(_SESSION_EVENTS).values(
        session_id=bindparam("session_id"),
        event_type=bindparam("event_type"),
        payload_json=bindparam("payload_json"),
        created_at=bindparam("created_at"),
    )
)
_INSERT_EVENT = insert(_EVENTS)


def append_session_event(
    db: Connection, *, session_id: str, event_type: str, payload: dict[str, Any], now: str
) -> None:
    _APPEND_SESSION_EVENT.execute(
        db,
        {
            "session_id": session_id,
            "event_type": event_type,
            "payload_json": to_json_text(payload),
            "created_at": now,
        },
    )


def append_run_event(
    db: Connection,
    *,
    run_id: str,
    event_type: str,
    actor: str,
    payload: dict[str, Any],
    now: str,
) -> None:
    db.execute(
        _INSERT_EVENT,
        {
            "run_id": run_id,
            "type": event_type,
            "actor_id": actor,
            "task_id": None,
            "payload_json": to_json_text(payload),
            "created_at": now,
        },
    )
