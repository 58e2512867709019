"""The audit trail: the operators' actions across all sessions, newest first.

An operator's action is a session history row with an actor (migration 0009): pause, stop,
resume, terminate, and the operator's heartbeat (an agent's own heartbeat names no actor and
is not one). Pages are cut in SQL by id, newest first, on the partial indexes of migration 0009:
a page costs the page, never the history.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Connection, func, select

from roundtable_console.store import validation
from roundtable_console.store.clock import format_ts, parse_ts
from roundtable_console.store.db.models import AgentSessionEvent
from roundtable_console.store.errors import InvalidCursor, InvalidSession
from roundtable_console.store.reads.paging import Page, decode_cursor, encode_cursor
from roundtable_console.store.requests.records import DECIDED_EVENT, REPLY_EVENT
from roundtable_console.store.rules import LAUNCH_EVENT, REVEAL_EVENT
from roundtable_console.store.safety.redaction import redact_text
from roundtable_console.store.writes.lifecycle import ACTION_EVENTS

_HISTORY = AgentSessionEvent.__table__  # type: ignore[attr-defined]
_KIND = "audit"

# Each history event with an actor, by the action that writes it (revealing a masked field,
# a read, is audited too: store.service.reveal_field; so is starting an agent in a tmux pane:
# store.service.record_launch).
EVENT_ACTIONS = {event: action for action, event in ACTION_EVENTS.items()} | {
    REVEAL_EVENT: "reveal",
    LAUNCH_EVENT: "launch",
    DECIDED_EVENT: "decide",
    REPLY_EVENT: "reply",
}
ACTIONS = {action: event for event, action in EVENT_ACTIONS.items()}
_DECIDED = {"allow": "allowed", "deny": "denied"}
_DURATION = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


@dataclass(frozen=True)
class AuditFilter:
    """Which actions: by whom, of which kind, on which session, from when on (all optional)."""

    actor: str | None = None
    action: str | None = None
    session_id: str | None = None
    since: str | None = None  # an RFC 3339 UTC time, as the store writes them


def note_of(entry: Mapping[str, Any]) -> str | None:
    """What an entry's line says beside the change of status (``AuditEntry.to_json``'s): the
    impact text given, or which field was revealed."""
    field = entry.get("field")
    return f"revealed {field}" if field is not None else entry.get("impact_details")


AUDIT_FIELDS = ("at", "actor", "db_user", "action", "session_id", "previous_status", "status",
                "impact_details", "field")  # fmt: skip


@dataclass(frozen=True)
class AuditEntry:
    """One operator action. ``actor`` and ``impact_details`` are redacted text. ``id``: its
    history row's (what the next page starts after); None in one a server sent."""

    id: int | None
    at: str
    actor: str
    db_user: str | None
    action: str
    session_id: str
    previous_status: str | None
    status: str | None
    impact_details: str | None
    # The masked field an operator revealed (a ``reveal``), else None.
    field: str | None = None

    @property
    def note(self) -> str | None:
        return note_of(self.to_json())

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> AuditEntry:
        """An entry as ``to_json`` wrote it (a server's answer)."""
        return cls(id=None, **{name: body.get(name) for name in AUDIT_FIELDS})

    def to_json(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "actor": self.actor,
            "db_user": self.db_user,
            "action": self.action,
            "session_id": self.session_id,
            "previous_status": self.previous_status,
            "status": self.status,
            "impact_details": self.impact_details,
            "field": self.field,
        }


def action_event(action: str) -> str:
    """The history event of an action, named as the operator names it (``pause``) or as the
    history does (``paused``); ``invalid_session`` for anything else."""
    name = action.strip().lower()
    if name in ACTIONS:
        return ACTIONS[name]
    if name in EVENT_ACTIONS:
        return name
    raise InvalidSession(f"{action!r} is not an operator action: give one of {', '.join(ACTIONS)}.")


def since_time(value: str, now: datetime) -> str:
    """``--since``: a duration back from now (``90m``, ``2h``, ``7d``) or a time (RFC 3339, or a
    date), as the store's UTC text."""
    match = _DURATION.match(value)
    if match:
        try:
            moment = now - timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
        except OverflowError:  # further back than any date
            raise InvalidSession(f"--since {value!r} goes back further than any date.") from None
        return format_ts(moment)
    parsed = parse_ts(value.strip()) if value.strip() else None
    if parsed is None:
        parsed = _iso_time(value.strip())
    if parsed is None:
        raise InvalidSession(
            f"--since {value!r} is neither a time (2026-09-17 or 2026-09-17T10:00:00Z) nor a "
            "duration back from now (90m, 2h, 7d)."
        )
    return format_ts(parsed)


def _iso_time(value: str) -> datetime | None:
    """A date (midnight UTC) or an ISO time; one without a zone is taken as UTC."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _conditions(filters: AuditFilter) -> list[ColumnElement[bool]]:
    # The same predicate as the partial indexes' WHERE, so both SQLite and PostgreSQL use them.
    where: list[ColumnElement[bool]] = [_HISTORY.c.actor.is_not(None)]
    if filters.actor is not None:
        where.append(_HISTORY.c.actor == filters.actor)
    if filters.action is not None:
        where.append(_HISTORY.c.event_type == action_event(filters.action))
    if filters.session_id is not None:
        where.append(_HISTORY.c.session_id == filters.session_id)
    if filters.since is not None:
        # The reference writes "YYYY-MM-DD HH:MM:SS": compared in the RFC 3339 form.
        where.append(func.replace(_HISTORY.c.created_at, " ", "T") >= filters.since)
    return where


def audit_page(
    *,
    db: Connection,
    filters: AuditFilter | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Page[AuditEntry]:
    """One page of operator actions, newest first; ``next_cursor`` continues after it."""
    size = validation.limit(limit)
    where = _conditions(filters or AuditFilter())
    if cursor is not None:
        (last,) = decode_cursor(_KIND, cursor, 1)
        if isinstance(last, bool) or not isinstance(last, int):
            raise InvalidCursor("That cursor is not one this store issued.")
        where.append(_HISTORY.c.id < last)
    statement = (
        select(
            _HISTORY.c.id,
            _HISTORY.c.created_at,
            _HISTORY.c.actor,
            _HISTORY.c.db_user,
            _HISTORY.c.event_type,
            _HISTORY.c.session_id,
            _HISTORY.c.payload_json,
        )
        .where(*where)
        .order_by(_HISTORY.c.id.desc())
        .limit(size + 1)
    )
    rows = db.execute(statement).all()
    items = [_entry(row) for row in rows[:size]]
    next_cursor = encode_cursor(_KIND, items[-1].id) if len(rows) > size else None
    return Page(items=items, next_cursor=next_cursor)


def _entry(row: Any) -> AuditEntry:
    payload = _payload(row.payload_json)
    impact = payload.get("impact_details")
    return AuditEntry(
        id=int(row.id),
        at=row.created_at,
        actor=redact_text(row.actor),
        db_user=row.db_user,
        action=EVENT_ACTIONS.get(row.event_type, row.event_type),
        session_id=row.session_id,
        previous_status=_text(payload.get("previous_status")),
        status=_text(payload.get("status") or _DECIDED.get(payload.get("decision"))),
        impact_details=redact_text(impact) if isinstance(impact, str) else None,
        field=_text(payload.get("field")) if row.event_type == REVEAL_EVENT else None,
    )


def _payload(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text or "")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
