"""The six detail projections of a session (the reference's subresources), read in SQL pages.

Each paged projection is a keyset page: rows after the cursor's key, ``LIMIT n + 1`` to learn
whether another page exists. A cursor names its projection and its session, so it cannot be
replayed against another list.
"""

from __future__ import annotations

import json
import math
import platform
import sys
from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection, Select, func, or_, select

from store import validation
from store.errors import InvalidCursor
from store.models import AgentSession, AgentSessionEvent, Claim, Event, Proposal
from store.paging import Page, decode_cursor, encode_cursor
from store.redaction import redact_json_text, redact_text
from store.sessions import get_session

_SESSION_EVENTS = AgentSessionEvent.__table__  # type: ignore[attr-defined]
_EVENTS = Event.__table__  # type: ignore[attr-defined]
_CLAIMS = Claim.__table__  # type: ignore[attr-defined]
_PROPOSALS = Proposal.__table__  # type: ignore[attr-defined]

METRIC_KEY_BLOCKLIST: tuple[str, ...] = ("secret", "password", "api_key", "authorization")
ENVIRONMENT_NOTE = (
    "This fingerprint describes the viewer's own process (the console or CLI reading the store), "
    "not the agent's environment; only the adapter comes from the session."
)


def _after(kind: str, session_id: str, cursor: str | None, key_type: type) -> Any:
    """The last key of the previous page, or None for the first page."""
    if not cursor:
        return None
    owner, key = decode_cursor(kind, cursor, 2)
    if owner != session_id or not isinstance(key, key_type) or isinstance(key, bool):
        raise InvalidCursor(f"That cursor does not belong to this session's {kind} list.")
    return key


def _page(
    db: Connection,
    *,
    kind: str,
    session_id: str,
    statement: Select[Any],
    key_column: Any,
    key_type: type,
    limit: int | None,
    cursor: str | None,
    shape: Callable[[Any], dict[str, Any]],
) -> Page[dict[str, Any]]:
    size = validation.limit(limit)
    after = _after(kind, session_id, cursor, key_type)
    if after is not None:
        statement = statement.where(key_column > after)
    rows = db.execute(statement.order_by(key_column).limit(size + 1)).all()
    items = [shape(row) for row in rows[:size]]
    next_cursor = encode_cursor(kind, session_id, items[-1]["id"]) if len(rows) > size else None
    return Page(items=items, next_cursor=next_cursor)


def _text(value: str | None) -> str | None:
    return redact_text(value) if value is not None else None


def session_logs(
    *, db: Connection, session_id: str, limit: int | None = None, cursor: str | None = None
) -> Page[dict[str, Any]]:
    """This session's recorded history, oldest first; payloads as redacted JSON strings."""
    session = get_session(db=db, session_id=session_id)
    statement = select(
        _SESSION_EVENTS.c.id,
        _SESSION_EVENTS.c.event_type,
        _SESSION_EVENTS.c.payload_json,
        _SESSION_EVENTS.c.created_at,
    ).where(_SESSION_EVENTS.c.session_id == session.id)
    return _page(
        db,
        kind="logs",
        session_id=session.id,
        statement=statement,
        key_column=_SESSION_EVENTS.c.id,
        key_type=int,
        limit=limit,
        cursor=cursor,
        shape=lambda row: {
            "id": row.id,
            "event_type": row.event_type,
            "payload": redact_json_text(row.payload_json),
            "created_at": row.created_at,
        },
    )


def _decode_payload(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        decoded = json.loads(text)
    except (json.JSONDecodeError, TypeError, ValueError, RecursionError):
        return {}
    return decoded if isinstance(decoded, dict) else {}


def _payload_string(payload: dict[str, Any], key: str) -> str | None:
    value = payload.get(key)
    return redact_text(value) if isinstance(value, str) and value else None


def _tool_call(row: Any) -> dict[str, Any]:
    payload = _decode_payload(row.payload_json)
    event_type = row.type or ""
    fallback = event_type.removeprefix("tool.")
    return {
        "id": row.id,
        "type": redact_text(event_type),
        "tool": _payload_string(payload, "tool") or redact_text(fallback),
        "action": _payload_string(payload, "action"),
        "status": _payload_string(payload, "status"),
        "actor": row.actor_id,
        "created_at": row.created_at,
    }


def tool_calls(
    *, db: Connection, session_id: str, limit: int | None = None, cursor: str | None = None
) -> Page[dict[str, Any]]:
    """Events of the session's run that look like tool calls (ref heuristic): a type starting
    with exactly ``tool.``, or a payload mentioning "tool" in any case."""
    session = get_session(db=db, session_id=session_id)
    # substr, not LIKE: SQLite's LIKE ignores case, and the reference's prefix is exact.
    statement = select(
        _EVENTS.c.id,
        _EVENTS.c.type,
        _EVENTS.c.actor_id,
        _EVENTS.c.payload_json,
        _EVENTS.c.created_at,
    ).where(
        _EVENTS.c.run_id == session.run_id,
        or_(
            func.substr(_EVENTS.c.type, 1, 5) == "tool.",
            func.lower(_EVENTS.c.payload_json).contains("tool", autoescape=True),
        ),
    )
    return _page(
        db,
        kind="tool-calls",
        session_id=session.id,
        statement=statement,
        key_column=_EVENTS.c.id,
        key_type=int,
        limit=limit,
        cursor=cursor,
        shape=_tool_call,
    )


def session_claims(
    *, db: Connection, session_id: str, limit: int | None = None, cursor: str | None = None
) -> Page[dict[str, Any]]:
    """All of the agent's claims, whatever their status, by id; rationale redacted."""
    session = get_session(db=db, session_id=session_id)
    statement = select(
        _CLAIMS.c.id,
        _CLAIMS.c.resource_id,
        _CLAIMS.c.task_id,
        _CLAIMS.c.claim_type,
        _CLAIMS.c.status,
        _CLAIMS.c.expires_at,
        _CLAIMS.c.heartbeat_at,
        _CLAIMS.c.created_at,
        _CLAIMS.c.rationale_md,
    ).where(_CLAIMS.c.agent_id == session.agent_id)
    return _page(
        db,
        kind="claims",
        session_id=session.id,
        statement=statement,
        key_column=_CLAIMS.c.id,
        key_type=str,
        limit=limit,
        cursor=cursor,
        shape=lambda row: {
            "id": row.id,
            "resource_id": row.resource_id,
            "task_id": row.task_id,
            "claim_type": row.claim_type,
            "status": row.status,
            "expires_at": row.expires_at,
            "heartbeat_at": row.heartbeat_at,
            "created_at": row.created_at,
            "rationale": _text(row.rationale_md),
        },
    )


def session_proposals(
    *, db: Connection, session_id: str, limit: int | None = None, cursor: str | None = None
) -> Page[dict[str, Any]]:
    """All of the agent's proposals by id; title and summary redacted; never the patch."""
    session = get_session(db=db, session_id=session_id)
    statement = select(
        _PROPOSALS.c.id,
        _PROPOSALS.c.task_id,
        _PROPOSALS.c.title,
        _PROPOSALS.c.summary_md,
        _PROPOSALS.c.status,
        _PROPOSALS.c.risk,
        _PROPOSALS.c.created_at,
    ).where(_PROPOSALS.c.agent_id == session.agent_id)
    return _page(
        db,
        kind="proposals",
        session_id=session.id,
        statement=statement,
        key_column=_PROPOSALS.c.id,
        key_type=str,
        limit=limit,
        cursor=cursor,
        shape=lambda row: {
            "id": row.id,
            "task_id": row.task_id,
            "title": _text(row.title),
            "summary": _text(row.summary_md),
            "status": row.status,
            "risk": row.risk,
            "created_at": row.created_at,
        },
    )


def _is_metric(key: str, value: Any) -> bool:
    if any(blocked in key.lower() for blocked in METRIC_KEY_BLOCKLIST):
        return False
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value)


def usage_metrics(session: AgentSession) -> dict[str, int | float]:
    usage = (validation.decode_metadata(session.metadata_json) or {}).get("usage")
    if not isinstance(usage, dict):
        return {}
    return {str(key): value for key, value in usage.items() if _is_metric(str(key), value)}


def session_metrics(*, db: Connection, session_id: str) -> dict[str, Any]:
    """Numeric values the adapter put in ``metadata.usage``; token counts kept (ref)."""
    session = get_session(db=db, session_id=session_id)
    return {"session_id": session.id, "usage": usage_metrics(session), "source": "adapter_metadata"}


def session_environment(*, db: Connection, session_id: str) -> dict[str, Any]:
    """The viewer's Python, OS and architecture, with the session's stored adapter."""
    session = get_session(db=db, session_id=session_id)
    return {
        "session_id": session.id,
        "fingerprint": {
            "python_version": platform.python_version(),
            "os": sys.platform,
            "arch": platform.machine(),
            "adapter": session.adapter,
        },
        "scope": "viewer",
        "note": ENVIRONMENT_NOTE,
    }


PROJECTIONS: dict[str, Callable[..., Any]] = {
    "logs": session_logs,
    "tool-calls": tool_calls,
    "claims": session_claims,
    "proposals": session_proposals,
    "metrics": session_metrics,
    "environment": session_environment,
}
PAGED: tuple[str, ...] = ("logs", "tool-calls", "claims", "proposals")
UNPAGED: tuple[str, ...] = ("metrics", "environment")
