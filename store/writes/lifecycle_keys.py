"""The idempotency keys of the operator's lifecycle actions (``store.writes.lifecycle``): a key
looked up (the first outcome under it replayed, or its reuse for another action or session
refused), many looked up at once, and keys recorded with their outcomes.

Every statement is built once (a bulk run sends thousands); the writes go straight to the DBAPI
as a heartbeat's do (``store.writes.history.Prepared``).
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection, Row, bindparam, select
from sqlalchemy.exc import IntegrityError

from roundtable_console.store import errors
from roundtable_console.store.db.models import IdempotencyKey
from roundtable_console.store.writes.history import prepared_insert
from roundtable_console.store.writes.lifecycle_outcomes import ActionOutcome

_KEYS = IdempotencyKey.__table__  # type: ignore[attr-defined]
_FIND_KEY = select(_KEYS.c.action, _KEYS.c.session_id, _KEYS.c.outcome).where(
    _KEYS.c.key == bindparam("key")
)
_INSERT_KEY = prepared_insert(_KEYS, ("key", "action", "session_id", "outcome", "created_at"))


class BatchInterrupted(Exception):
    """A statement of ``store.writes.lifecycle_many.apply_many`` failed after its first write
    (another transaction recorded one of its keys at the same moment): the caller rolls the
    transaction back and applies the sessions one at a time, where that refusal falls on the one
    session it concerns."""


def replay(db: Connection, key: str | None, action: str, session_id: str) -> ActionOutcome | None:
    if key is None:
        return None
    row = db.execute(_FIND_KEY, {"key": key}).one_or_none()
    if row is None:
        return None
    return replayed(row, key, action, session_id)


def replayed(row: Row[Any], key: str, action: str, session_id: str) -> ActionOutcome:
    """The first outcome under ``key`` (a row of ``_KEYS``), when it was for this action and
    session; else the key's reuse is refused."""
    if row.action != action or row.session_id != session_id:
        raise errors.IdempotencyKeyReuse(
            f"The idempotency key {key!r} was already used to {row.action} session "
            f"{row.session_id!r}; use a new key for this action."
        )
    return ActionOutcome.from_json(json.loads(row.outcome), replayed=True)


def find_keys(db: Connection, keys: list[str]) -> list[Row[Any]]:
    """The recorded ``keys`` among these, as ``replay`` reads one."""
    columns = (_KEYS.c.key, _KEYS.c.action, _KEYS.c.session_id, _KEYS.c.outcome)
    return list(db.execute(select(*columns).where(_KEYS.c.key.in_(keys))))


def record_keys(db: Connection, rows: list[dict[str, Any]], *, many: bool = False) -> None:
    try:
        if many:
            _INSERT_KEY.executemany(db, rows)
        else:
            (row,) = rows
            _INSERT_KEY.execute(db, row)
    except IntegrityError:
        # Another transaction recorded the same key after our look-up (PostgreSQL lets both
        # look-ups run at once; the key's primary key is where they meet). Its action won.
        if many:
            raise BatchInterrupted() from None
        raise errors.IdempotencyKeyReuse(
            f"The idempotency key {rows[0]['key']!r} was used by another action at the same "
            "moment; nothing was applied. Use a new key for this action."
        ) from None
