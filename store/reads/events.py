"""A workspace's activity stream (the reference's ``events`` table), as its WebSocket sends it.

An event belongs to a workspace when its run does: the run's ``workspace_id``, or, for a run
whose row names none (runs are not checked when sessions name them, so a run may have no row),
the workspace of its first session (``in_workspace``). Its sequence is its id: one range of
the primary key per read, each row's workspace found along the runs' and the sessions' run
indexes.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection, and_, func, select

from roundtable_console.store.db.models import Event, Run
from roundtable_console.store.db.session_rows import SESSIONS
from roundtable_console.store.reads.sqlfuncs import effective_workspace, ts_key
from roundtable_console.store.safety.credentials import redact_output_value

_EVENTS = Event.__table__  # type: ignore[attr-defined]
_RUNS = Run.__table__  # type: ignore[attr-defined]


def in_workspace(workspace_id: str) -> Any:
    """Whether an ``events`` row belongs to the workspace: the one its run's row names; for a
    run whose row names none (or that has no row), the workspace of the run's first session (by
    start, which the server sets). A session registered later naming another workspace's run
    neither draws that run's events into its own workspace nor hides them from theirs, and a run
    first used by a session of no workspace belongs to none (``store.access.walls``)."""
    named = (
        select(_RUNS.c.workspace_id)
        .where(_RUNS.c.id == _EVENTS.c.run_id, _RUNS.c.workspace_id != "")
        .scalar_subquery()
    )
    first = (
        select(effective_workspace(SESSIONS.c.workspace_id, SESSIONS.c.metadata_json))
        .where(SESSIONS.c.run_id == _EVENTS.c.run_id)
        .order_by(ts_key(SESSIONS.c.started_at), SESSIONS.c.id)
        .limit(1)
        .scalar_subquery()
    )
    return func.coalesce(named, first) == workspace_id


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
