"""A workspace's activity stream (the reference's ``events`` table), as its WebSocket sends it.

An event belongs to a workspace when its run does: the run's ``workspace_id``, or, for a run
whose row names none (runs are not checked when sessions name them, so a run may have no row),
the one workspace its sessions lie in (``in_workspace``). Its sequence is its id: one range of
the primary key per read, each row's workspace found along the runs' and the sessions' run
indexes.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection, and_, exists, func, or_, select

from roundtable_console.store.db.models import Event, Run
from roundtable_console.store.db.session_rows import SESSIONS
from roundtable_console.store.reads.sqlfuncs import effective_workspace
from roundtable_console.store.safety.credentials import redact_output_value

_EVENTS = Event.__table__  # type: ignore[attr-defined]
_RUNS = Run.__table__  # type: ignore[attr-defined]


def in_workspace(workspace_id: str) -> Any:
    """Whether an ``events`` row belongs to the workspace: its run's row names it; or its run's
    row names none (or there is no row) and the sessions of that run lie in it and in no other.
    A session naming another workspace's run never draws that run's events into its own
    workspace (``store.access.walls``)."""
    run_names = exists().where(
        _RUNS.c.id == _EVENTS.c.run_id,
        _RUNS.c.workspace_id.is_not(None),
        _RUNS.c.workspace_id != "",
    )
    of_run = exists().where(_RUNS.c.id == _EVENTS.c.run_id, _RUNS.c.workspace_id == workspace_id)
    session_workspace = effective_workspace(SESSIONS.c.workspace_id, SESSIONS.c.metadata_json)
    of_session = exists().where(
        SESSIONS.c.run_id == _EVENTS.c.run_id, session_workspace == workspace_id
    )
    of_another = exists().where(
        SESSIONS.c.run_id == _EVENTS.c.run_id, session_workspace != workspace_id
    )
    return or_(of_run, and_(~run_names, of_session, ~of_another))


def newest_event_id(*, db: Connection) -> int:
    return int(db.execute(select(func.max(_EVENTS.c.id))).scalar() or 0)


def workspace_events(
    *, db: Connection, workspace_id: str, after: int, limit: int
) -> list[dict[str, Any]]:
    """The workspace's events after ``after``, oldest first, at most ``limit``."""
    rows = db.execute(
        select(_EVENTS)
        .where(and_(_EVENTS.c.id > after, in_workspace(workspace_id)))
        .order_by(_EVENTS.c.id)
        .limit(limit)
    ).all()
    return [_event(row, workspace_id) for row in rows]


def _event(row: Any, workspace_id: str) -> dict[str, Any]:
    try:
        payload = json.loads(row.payload_json) if row.payload_json else {}
    except (json.JSONDecodeError, TypeError, ValueError, RecursionError):
        payload = {"text": row.payload_json}
    body: dict[str, Any] = {
        "event_id": f"evt-{row.id}",
        "workspace_id": workspace_id,
        "sequence": int(row.id),
        "type": row.type,
        "occurred_at": row.created_at,
    }
    if row.actor_id:
        body["actor"] = row.actor_id
    if isinstance(payload, dict) and isinstance(payload.get("session_id"), str):
        body["entity_type"] = "session"
        body["entity_id"] = payload["session_id"]
    elif row.task_id:
        body["entity_type"] = "task"
        body["entity_id"] = row.task_id
    body["payload"] = payload
    return redact_output_value(body)  # type: ignore[no-any-return]
