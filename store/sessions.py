"""Session operations agents and scripts use: register, heartbeat, end, and the reads.

Each write is one statement on the row plus its history row, in the caller's transaction
(``Store.write()``), so a success proves the history exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, case, func, literal, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.elements import ColumnElement

from store import validation
from store.adapters import AdapterConfig, resolve
from store.clock import Clock, format_ts, system_clock
from store.errors import InvalidCursor, SessionNotFound
from store.history import append_session_event
from store.models import ACTIVE_STATES, AgentSession
from store.paging import Page, decode_cursor, encode_cursor
from store.sqlfuncs import effective_workspace, ts_key

SESSIONS = AgentSession.__table__  # type: ignore[attr-defined]
_C = SESSIONS.c
_CURSOR_KIND = "sessions"


def _record(row: Any) -> AgentSession:
    return AgentSession(**row._mapping)


def register(
    *,
    db: Connection,
    session_id: str,
    agent_id: str,
    run_id: str,
    adapter: str,
    working_directory: str,
    provider: str | None = None,
    model: str | None = None,
    external_session_id: str | None = None,
    resume_command: str | None = None,
    mcp_socket: str | None = None,
    status: str | None = None,
    metadata: str | dict[str, Any] | None = None,
    adapters: Mapping[str, AdapterConfig] | None = None,
    clock: Clock = system_clock,
) -> AgentSession:
    """Upsert keyed by the caller's id: an existing session is replaced, not merged (ref)."""
    values: dict[str, Any] = {
        "id": validation.required("Session id", session_id),
        "agent_id": validation.required("Agent", agent_id),
        "run_id": validation.required("Run", run_id),
        "adapter": validation.required("Adapter", adapter),
        "working_directory": validation.required("Working directory", working_directory),
        "provider": validation.optional(provider),
        "model": validation.optional(model),
        "external_session_id": validation.optional(external_session_id),
        "external_resume_command": validation.optional(resume_command),
        "mcp_socket": validation.optional(mcp_socket),
        "status": validation.status(status) if status and status.strip() else "active",
        "metadata_json": validation.metadata(metadata),
    }
    if values["external_resume_command"] is None and values["external_session_id"]:
        values["external_resume_command"] = resolve(adapters, values["adapter"]).expand(
            values["external_session_id"]
        )
    now = format_ts(clock())
    replaced = {name: value for name, value in values.items() if name != "id"}
    replaced.update(last_seen_at=now, ended_at=None)
    dialect_insert = postgresql.insert if db.dialect.name == "postgresql" else sqlite.insert
    statement = dialect_insert(SESSIONS).values(
        **values, started_at=now, last_seen_at=now, ended_at=None, version=0
    )
    statement = statement.on_conflict_do_update(
        index_elements=[_C.id],
        set_={**replaced, "version": _C.version + 1},
    ).returning(*SESSIONS.c)
    session = _record(db.execute(statement).one())
    append_session_event(
        db,
        session_id=session.id,
        event_type="registered",
        payload={"status": session.status, "adapter": session.adapter},
        now=now,
    )
    return session


def heartbeat(
    *,
    db: Connection,
    session_id: str,
    status: str | None = None,
    external_session_id: str | None = None,
    clock: Clock = system_clock,
) -> AgentSession:
    """An agent's heartbeat (ref): non-empty values replace, ``last_seen_at`` always moves,
    ``ended_at`` is never cleared."""
    changes: dict[str, Any] = {"version": _C.version + 1}
    if status and status.strip():
        changes["status"] = validation.status(status)
    if external_session_id and external_session_id.strip():
        changes["external_session_id"] = external_session_id.strip()
    now = format_ts(clock())
    changes["last_seen_at"] = now
    session = _update_one(db, session_id, changes)
    append_session_event(
        db,
        session_id=session.id,
        event_type="heartbeat",
        payload={"status": session.status, "last_seen_at": now},
        now=now,
    )
    return session


def end(
    *,
    db: Connection,
    session_id: str,
    status: str | None = None,
    clock: Clock = system_clock,
) -> AgentSession:
    """End (ref): status = given value or ``ended``; end and last-seen times = now."""
    final = validation.status(status) if status and status.strip() else "ended"
    now = format_ts(clock())
    session = _update_one(
        db,
        session_id,
        {"status": final, "ended_at": now, "last_seen_at": now, "version": _C.version + 1},
    )
    append_session_event(
        db,
        session_id=session.id,
        event_type="ended",
        payload={"status": session.status, "ended_at": now},
        now=now,
    )
    return session


def _update_one(db: Connection, session_id: str, changes: dict[str, Any]) -> AgentSession:
    row = db.execute(
        update(SESSIONS).where(_C.id == session_id).values(**changes).returning(*SESSIONS.c)
    ).one_or_none()
    if row is None:
        raise SessionNotFound(f"No session has the id {session_id!r}.")
    return _record(row)


def get_session(*, db: Connection, session_id: str) -> AgentSession:
    row = db.execute(select(SESSIONS).where(_C.id == session_id)).one_or_none()
    if row is None:
        raise SessionNotFound(f"No session has the id {session_id!r}.")
    return _record(row)


@dataclass(frozen=True)
class SessionFilter:
    """What a list shows. Every field narrows; the defaults show everything."""

    statuses: tuple[str, ...] = ()
    agent_id: str | None = None
    run_id: str | None = None
    workspace_id: str | None = None
    active_only: bool = False
    # Only active sessions last seen before this instant (the stale ones).
    stale_before: datetime | None = None
    text: str | None = None

    def conditions(self) -> list[ColumnElement[bool]]:
        found: list[ColumnElement[bool]] = []
        if self.statuses:
            found.append(_C.status.in_(self.statuses))
        if self.agent_id:
            found.append(_C.agent_id == self.agent_id)
        if self.run_id:
            found.append(_C.run_id == self.run_id)
        if self.workspace_id:
            found.append(effective_workspace() == self.workspace_id)
        if self.active_only or self.stale_before is not None:
            found.append(_C.status.in_(ACTIVE_STATES))
        if self.stale_before is not None:
            seen = func.coalesce(ts_key(_C.last_seen_at), ts_key(_C.started_at))
            found.append(seen < ts_key(literal(format_ts(self.stale_before))))
        if self.text and self.text.strip():
            needle = self.text.strip()
            found.append(
                or_(
                    *(
                        column.icontains(needle, autoescape=True)
                        for column in (
                            _C.id,
                            _C.agent_id,
                            _C.run_id,
                            _C.adapter,
                            _C.provider,
                            _C.model,
                            _C.status,
                            _C.workspace_id,
                        )
                    )
                )
            )
        return found


def list_sessions(
    *,
    db: Connection,
    filters: SessionFilter | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Page[AgentSession]:
    """Ascending ``started_at``, then id (ref), filtered and cut into keyset pages in SQL."""
    size = validation.limit(limit)
    conditions = (filters or SessionFilter()).conditions()
    order_key = ts_key(_C.started_at)
    if cursor:
        started_at, session_id = decode_cursor(_CURSOR_KIND, cursor, 2)
        if not isinstance(started_at, str) or not isinstance(session_id, str):
            raise InvalidCursor("That cursor is not one this store issued.")
        key = ts_key(literal(started_at))
        # The leading ">=" is a plain range on the index; a row-value comparison is not.
        conditions.append(order_key >= key)
        conditions.append(or_(order_key > key, _C.id > session_id))
    statement = select(SESSIONS).where(*conditions).order_by(order_key, _C.id).limit(size + 1)
    rows = db.execute(statement).all()
    items = [_record(row) for row in rows[:size]]
    next_cursor = (
        encode_cursor(_CURSOR_KIND, items[-1].started_at, items[-1].id)
        if len(rows) > size
        else None
    )
    return Page(items=items, next_cursor=next_cursor)


def find_by_agent(*, db: Connection, agent_id: str) -> AgentSession:
    """The agent's session: exact ``active`` first, then newer last-seen, newer start, id."""
    statement = (
        select(SESSIONS)
        .where(_C.agent_id == agent_id)
        .order_by(
            case((_C.status == "active", 0), else_=1),
            ts_key(_C.last_seen_at).desc().nulls_last(),
            ts_key(_C.started_at).desc(),
            _C.id,
        )
        .limit(1)
    )
    row = db.execute(statement).one_or_none()
    if row is None:
        raise SessionNotFound(f"Agent {agent_id!r} has no session.")
    return _record(row)


def count_by_status(*, db: Connection) -> dict[str, int]:
    rows = db.execute(select(_C.status, func.count()).group_by(_C.status)).all()
    return {str(status): int(count) for status, count in rows}
