"""The ``agent_sessions`` table, and its rows as ``AgentSession`` objects built quickly."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy.orm import configure_mappers
from sqlalchemy.orm.instrumentation import manager_of_class

from roundtable_console.store.db.models import AgentSession

SESSIONS = AgentSession.__table__  # type: ignore[attr-defined]

_NEW_SESSION = manager_of_class(AgentSession).new_instance
_COLUMN_COUNT = len(SESSIONS.c)


def session_from_row(row: Any) -> AgentSession:
    return as_session(row._mapping)


def as_session(values: Mapping[str, Any]) -> AgentSession:
    """A row's values as an AgentSession, built the way the ORM loads one (no ``__init__``, the
    values become its state): a tenth of the cost of ``AgentSession(**values)``, which matters
    on the heartbeat path and for every row of a list page. With fewer values than the table's
    columns, the model's own constructor checks them."""
    if len(values) != _COLUMN_COUNT:
        return AgentSession(**values)
    configure_mappers()  # attribute access needs configured mappers; a no-op once they are
    session = _NEW_SESSION()
    session.__dict__.update(values)
    object.__setattr__(session, "__pydantic_fields_set__", set(values.keys()))
    return session
