"""Where Roundtable last started a session's agent: the newest ``launched`` history row
(``store.service.record_launch`` writes it; the pane view, a stop, a reply typed into the pane
and the terminate dialog read it)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection, text

from roundtable_console.store.rules import LAUNCH_EVENT


def last_launch(db: Connection, session_id: str) -> dict[str, Any] | None:
    """The newest ``launched`` row's payload of the session (where its agent's pane is), if
    any."""
    row = db.execute(
        text(
            "SELECT payload_json FROM agent_session_events WHERE session_id = :session_id "
            "AND event_type = :event ORDER BY id DESC LIMIT 1"
        ),
        {"session_id": session_id, "event": LAUNCH_EVENT},
    ).first()
    if row is None:
        return None
    try:
        payload = json.loads(row[0] or "{}")
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None
