"""Appending history: session events, and the general activity stream for lifecycle actions."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection, insert

from store.models import AgentSessionEvent, Event

_SESSION_EVENTS = AgentSessionEvent.__table__  # type: ignore[attr-defined]
_EVENTS = Event.__table__  # type: ignore[attr-defined]


def to_json_text(payload: dict[str, Any]) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"))


def append_session_event(
    db: Connection, *, session_id: str, event_type: str, payload: dict[str, Any], now: str
) -> None:
    db.execute(
        insert(_SESSION_EVENTS).values(
            session_id=session_id,
            event_type=event_type,
            payload_json=to_json_text(payload),
            created_at=now,
        )
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
        insert(_EVENTS).values(
            run_id=run_id,
            type=event_type,
            actor_id=actor,
            task_id=None,
            payload_json=to_json_text(payload),
            created_at=now,
        )
    )
