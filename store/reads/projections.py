"""The six detail projections of a session (the reference's subresources), read in SQL pages.

Each paged projection is a keyset page: rows after the cursor's key, ``LIMIT n + 1`` to learn
whether another page exists. A cursor names its projection and its session, so it cannot be
replayed against another list. Each takes the caller's ``wall`` (``store.access.walls``): a
session out of its reach answers as not found, and of the rows around a session (its agent's
claims and proposals, its run's tool calls) a caller bound to workspaces reads only those of the
session's own workspace.
"""

from __future__ import annotations

import json
import math
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Table,
    Text,
    and_,
    cast,
    func,
    literal,
    literal_column,
    or_,
    select,
    union_all,
)

from roundtable_console.store import validation
from roundtable_console.store.access.walls import OPEN, Wall
from roundtable_console.store.db.models import (
    AgentSession,
    AgentSessionEvent,
    Claim,
    Event,
    Proposal,
)
from roundtable_console.store.errors import InvalidCursor
from roundtable_console.store.reads.events import in_workspace
from roundtable_console.store.reads.paging import Page, decode_cursor, encode_cursor
from roundtable_console.store.reads.sessions import get_session
from roundtable_console.store.rules import PAGED_PROJECTIONS, TOOL_CALL_EVENT, UNPAGED_PROJECTIONS
from roundtable_console.store.safety.credentials import redact_output_json_text, redact_output_text

_SESSION_EVENTS = AgentSessionEvent.__table__  # type: ignore[attr-defined]
_EVENTS = Event.__table__  # type: ignore[attr-defined]
_CLAIMS = Claim.__table__  # type: ignore[attr-defined]
_PROPOSALS = Proposal.__table__  # type: ignore[attr-defined]

METRIC_KEY_BLOCKLIST: tuple[str, ...] = ("secret", "password", "api_key", "authorization")
ENVIRONMENT_NOTE = (
    "This fingerprint describes the viewer's own process (the console or CLI reading the store), "
    "not the agent's environment; only the adapter comes from the session."
)


@dataclass(frozen=True)
class _Paged:
    """One paged projection: the rows of ``table`` that belong to a session, a keyset page at a
    time by their ``id``, each shaped into the item the caller sees. ``belongs`` is given the
    workspace the rows must belong to as well (None: any; ``store.access.walls``)."""

    kind: str
    table: Table
    columns: tuple[str, ...]
    belongs: Callable[[AgentSession, str | None], ColumnElement[bool]]
    shape: Callable[[Any], dict[str, Any]]

    def page(
        self, db: Connection, session_id: str, limit: int | None, cursor: str | None, wall: Wall
    ) -> Page[dict[str, Any]]:
        session = wall.checked(get_session(db=db, session_id=session_id))
        size = validation.limit(limit)
        key = self.table.c.id
        statement = select(key, *(self.table.c[name] for name in self.columns)).where(
            self.belongs(session, wall.around(session))
        )
        after = self._after(session.id, cursor, key.type.python_type)
        if after is not None:
            statement = statement.where(key > after)
        rows = db.execute(statement.order_by(key).limit(size + 1)).all()
        items = [self.shape(row) for row in rows[:size]]
        more = len(rows) > size
        next_cursor = encode_cursor(self.kind, session.id, items[-1]["id"]) if more else None
        return Page(items=items, next_cursor=next_cursor)

    def newest(
        self, db: Connection, session_id: str, limit: int, wall: Wall
    ) -> list[dict[str, Any]]:
        """The session's last ``limit`` rows, oldest first (read newest first on the key)."""
        session = wall.checked(get_session(db=db, session_id=session_id))
        key = self.table.c.id
        statement = (
            select(key, *(self.table.c[name] for name in self.columns))
            .where(self.belongs(session, wall.around(session)))
            .order_by(key.desc())
            .limit(validation.limit(limit))
        )
        return [self.shape(row) for row in reversed(db.execute(statement).all())]

    def _after(self, session_id: str, cursor: str | None, key_type: type) -> Any:
        """The last key of the previous page, or None for the first page."""
        if not cursor:
            return None
        owner, key = decode_cursor(self.kind, cursor, 2)
        if owner != session_id or not isinstance(key, key_type) or isinstance(key, bool):
            raise InvalidCursor(f"That cursor does not belong to this session's {self.kind} list.")
        return key


def _text(value: str | None) -> str | None:
    return redact_output_text(value) if value is not None else None


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
    return redact_output_text(value) if isinstance(value, str) and value else None


def _tool_call(row: Any) -> dict[str, Any]:
    payload = _decode_payload(row.payload_json)
    event_type = row.type or ""
    fallback = event_type.removeprefix("tool.")
    return {
        "id": row.id,
        "type": redact_output_text(event_type),
        "tool": _payload_string(payload, "tool") or redact_output_text(fallback),
        "action": _payload_string(payload, "action"),
        "status": _payload_string(payload, "status"),
        "duration_ms": _payload_duration(payload),
        "actor": row.actor_id,
        "created_at": row.created_at,
    }


def _payload_duration(payload: dict[str, Any]) -> int | None:
    value = payload.get("duration_ms")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return int(value) if value >= 0 else None


def _is_tool_call(session: AgentSession, within: str | None) -> ColumnElement[bool]:
    """Events of the session's run that look like tool calls (ref heuristic): a type starting
    with exactly ``tool.``, or a payload mentioning "tool" in any case; ``within``: only while
    the run belongs to that workspace."""
    # substr, not LIKE: SQLite's LIKE ignores case, and the reference's prefix is exact.
    found = and_(
        _EVENTS.c.run_id == session.run_id,
        or_(
            func.substr(_EVENTS.c.type, 1, 5) == "tool.",
            func.lower(_EVENTS.c.payload_json).contains("tool", autoescape=True),
        ),
    )
    return found if within is None else and_(found, in_workspace(within))


class _ToolCalls:
    """The tool-calls projection: the reference's tool events of the session's run
    (``_is_tool_call``), then (ours) the tool calls its hooks told, rows of the session's own
    history (``store.writes.tool_calls``), a keyset page at a time on (source, id)."""

    kind = "tool-calls"

    def _rows(self, session: AgentSession, within: str | None) -> Any:
        of_run = select(
            literal_column("0").label("source"), _EVENTS.c.id, _EVENTS.c.type, _EVENTS.c.actor_id,
            _EVENTS.c.payload_json, _EVENTS.c.created_at,
        ).where(_is_tool_call(session, within))  # fmt: skip
        own = select(
            literal_column("1").label("source"), _SESSION_EVENTS.c.id,
            _SESSION_EVENTS.c.event_type.label("type"),
            cast(literal(session.agent_id), Text).label("actor_id"),
            _SESSION_EVENTS.c.payload_json, _SESSION_EVENTS.c.created_at,
        ).where(
            _SESSION_EVENTS.c.session_id == session.id,
            _SESSION_EVENTS.c.event_type == TOOL_CALL_EVENT,
        )  # fmt: skip
        return union_all(of_run, own).subquery()

    def page(
        self, db: Connection, session_id: str, limit: int | None, cursor: str | None, wall: Wall
    ) -> Page[dict[str, Any]]:
        session = wall.checked(get_session(db=db, session_id=session_id))
        size = validation.limit(limit)
        rows = self._rows(session, wall.around(session))
        statement = select(rows)
        if cursor:
            owner, source, key = decode_cursor(self.kind, cursor, 3)
            if owner != session.id or type(source) is not int or type(key) is not int:
                raise InvalidCursor("That cursor does not belong to this session's tool calls.")
            statement = statement.where(
                or_(rows.c.source > source, and_(rows.c.source == source, rows.c.id > key))
            )
        found = db.execute(statement.order_by(rows.c.source, rows.c.id).limit(size + 1)).all()
        items = [_tool_call(row) for row in found[:size]]
        more = len(found) > size
        last = found[size - 1] if more else None
        next_cursor = encode_cursor(self.kind, session.id, last.source, last.id) if last else None
        return Page(items=items, next_cursor=next_cursor)


def _of_agent(table: Table) -> Callable[[AgentSession, str | None], ColumnElement[bool]]:
    """The rows of the session's agent; ``within``: only those of that workspace."""

    def belongs(session: AgentSession, within: str | None) -> ColumnElement[bool]:
        mine = table.c.agent_id == session.agent_id
        return mine if within is None else and_(mine, table.c.workspace_id == within)

    return belongs


_LOGS = _Paged(
    kind="logs",
    table=_SESSION_EVENTS,
    columns=("event_type", "payload_json", "created_at"),
    belongs=lambda session, _within: _SESSION_EVENTS.c.session_id == session.id,
    shape=lambda row: {
        "id": row.id,
        "event_type": row.event_type,
        "payload": redact_output_json_text(row.payload_json),
        "created_at": row.created_at,
    },
)
_TOOL_CALLS = _ToolCalls()
_CLAIMS_OF_AGENT = _Paged(
    kind="claims",
    table=_CLAIMS,
    columns=(
        "resource_id",
        "agent_id",
        "task_id",
        "claim_type",
        "base_hash",
        "status",
        "expires_at",
        "heartbeat_at",
        "renewable",
        "resume_policy",
        "created_at",
        "rationale_md",
    ),
    belongs=_of_agent(_CLAIMS),
    shape=lambda row: {
        "id": row.id,
        "resource_id": row.resource_id,
        "agent_id": row.agent_id,
        "task_id": row.task_id,
        "claim_type": row.claim_type,
        "base_hash": row.base_hash,
        "status": row.status,
        "expires_at": row.expires_at,
        "heartbeat_at": row.heartbeat_at,
        "renewable": bool(row.renewable),
        "resume_policy": row.resume_policy,
        "created_at": row.created_at,
        "rationale": _text(row.rationale_md),
    },
)
_PROPOSALS_OF_AGENT = _Paged(
    kind="proposals",
    table=_PROPOSALS,
    columns=("task_id", "title", "summary_md", "status", "risk", "created_at"),
    belongs=_of_agent(_PROPOSALS),
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


def session_logs(
    *,
    db: Connection,
    session_id: str,
    limit: int | None = None,
    cursor: str | None = None,
    wall: Wall = OPEN,
) -> Page[dict[str, Any]]:
    """This session's recorded history, oldest first; payloads as redacted JSON strings."""
    return _LOGS.page(db, session_id, limit, cursor, wall)


def newest_logs(
    *, db: Connection, session_id: str, limit: int, wall: Wall = OPEN
) -> list[dict[str, Any]]:
    """This session's last ``limit`` history rows, oldest first (a page that follows them
    continues with ``logs_cursor`` of the last)."""
    return _LOGS.newest(db, session_id, limit, wall)


def logs_cursor(session_id: str, last_id: int) -> str:
    """A cursor that continues this session's logs after event ``last_id``: what a follower
    that has shown the history up to that event passes to ``session_logs``."""
    return encode_cursor(_LOGS.kind, session_id, last_id)


def tool_calls(
    *,
    db: Connection,
    session_id: str,
    limit: int | None = None,
    cursor: str | None = None,
    wall: Wall = OPEN,
) -> Page[dict[str, Any]]:
    """Events of the session's run that look like tool calls, each naming its actor."""
    return _TOOL_CALLS.page(db, session_id, limit, cursor, wall)


def session_claims(
    *,
    db: Connection,
    session_id: str,
    limit: int | None = None,
    cursor: str | None = None,
    wall: Wall = OPEN,
) -> Page[dict[str, Any]]:
    """All of the agent's claims, whatever their status, by id; rationale redacted. Behind a
    ``wall``, only those of the session's workspace (``store.access.walls``), as for every
    projection."""
    return _CLAIMS_OF_AGENT.page(db, session_id, limit, cursor, wall)


def session_proposals(
    *,
    db: Connection,
    session_id: str,
    limit: int | None = None,
    cursor: str | None = None,
    wall: Wall = OPEN,
) -> Page[dict[str, Any]]:
    """All of the agent's proposals by id; title and summary redacted; never the patch."""
    return _PROPOSALS_OF_AGENT.page(db, session_id, limit, cursor, wall)


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


def cost_words(session: AgentSession) -> str | None:
    """Ours: what ``cost_usd`` is, in words, when its hook said (``store.writes.usage_values``):
    the agent's own figure, an estimate and from which prices, or unknown (never 0)."""
    usage = (validation.decode_metadata(session.metadata_json) or {}).get("usage")
    basis = usage.get("cost_basis") if isinstance(usage, dict) else None
    if basis == "stated":
        return "stated by the agent"
    if basis == "estimated":
        as_of = usage.get("priced_as_of") if isinstance(usage, dict) else None
        dated = f" of {as_of}" if isinstance(as_of, str) and as_of.isprintable() else ""
        return redact_output_text(f"an estimate, from the prices{dated[:40]}")
    if basis == "unknown":
        model = usage.get("model") if isinstance(usage, dict) else None
        named = f" {model}" if isinstance(model, str) and model.isprintable() else ""
        return redact_output_text(f"cost unknown: no price for the model{named[:201]}")
    return None


def session_metrics(*, db: Connection, session_id: str, wall: Wall = OPEN) -> dict[str, Any]:
    """Numeric values the adapter put in ``metadata.usage``; token counts kept (ref). Ours:
    ``cost``, what its cost is in words (``cost_words``), when its hook said."""
    session = wall.checked(get_session(db=db, session_id=session_id))
    metrics = {
        "session_id": session.id,
        "usage": usage_metrics(session),
        "source": "adapter_metadata",
    }
    cost = cost_words(session)
    return metrics if cost is None else {**metrics, "cost": cost}


def session_environment(*, db: Connection, session_id: str, wall: Wall = OPEN) -> dict[str, Any]:
    """The viewer's Python, OS and architecture, with the session's stored adapter."""
    session = wall.checked(get_session(db=db, session_id=session_id))
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


# Each projection's function, by its name in store.rules.
PROJECTIONS: dict[str, Callable[..., Any]] = {
    "logs": session_logs,
    "tool-calls": tool_calls,
    "claims": session_claims,
    "proposals": session_proposals,
    "metrics": session_metrics,
    "environment": session_environment,
}
PAGED: tuple[str, ...] = PAGED_PROJECTIONS
UNPAGED: tuple[str, ...] = UNPAGED_PROJECTIONS
