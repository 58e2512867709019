"""The agent's writes through the database layer: register, heartbeat, end (the quick path,
``store.writes.quick_writes``, does the same with the driver alone), and many sessions written
in one transaction.

Each write is one statement on the row plus its history row, in the caller's transaction
(``Store.write()``), so a success proves the history exists.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, and_, bindparam, case, func, select, text, update
from sqlalchemy.sql.elements import ColumnElement

from roundtable_console.store.clock import Clock, format_ts, system_clock
from roundtable_console.store.db.models import AgentSession
from roundtable_console.store.db.session_rows import SESSIONS, as_session, session_from_row
from roundtable_console.store.errors import (
    IllegalSessionTransition,
    InvalidSessionStatus,
    SessionNotFound,
)
from roundtable_console.store.reads.attention_sql import ACTIVE_SQL
from roundtable_console.store.reads.sqlfuncs import effective_workspace
from roundtable_console.store.resume.adapters import AdapterConfig
from roundtable_console.store.rules import ACTIVE_STATES
from roundtable_console.store.writes.history import Prepared, append_session_event
from roundtable_console.store.writes.tool_calls import INSERT_TOOL_CALL, tool_call_rows
from roundtable_console.store.writes.usage_values import (
    SHIPPED,
    Prices,
    keep_usage,
    session_usage,
)
from roundtable_console.store.writes.write_values import (
    TAKE_HOOK_KEY,
    beat_is_quiet,
    end_values,
    heartbeat_values,
    register_values,
    registered_payload,
    update_payload,
)

_C = SESSIONS.c


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
    workspace_id: str | None = None,
    clock: Clock = system_clock,
    host: str | None = None,
) -> AgentSession:
    """Upsert keyed by the caller's id: an existing session is replaced, not merged (ref).
    ``workspace_id`` (a register over HTTP: the workspace of its path) sets the session's
    workspace column; without it the column is left as it is."""
    values = register_values(
        session_id=session_id,
        agent_id=agent_id,
        run_id=run_id,
        adapter=adapter,
        working_directory=working_directory,
        provider=provider,
        model=model,
        external_session_id=external_session_id,
        resume_command=resume_command,
        mcp_socket=mcp_socket,
        status=status,
        metadata=metadata,
        adapters=adapters,
        host=host,
    )
    if workspace_id is not None:
        values["workspace_id"] = workspace_id
    now = format_ts(clock())
    replaced = {name: value for name, value in values.items() if name != "id"}
    replaced.update(last_seen_at=now, ended_at=None, waiting_reason=None, waiting_since=None)
    statement = _dialect_insert(db)(SESSIONS).values(
        **values, started_at=now, last_seen_at=now, ended_at=None, version=0
    )
    statement = statement.on_conflict_do_update(
        index_elements=[_C.id],
        set_={**replaced, "version": _C.version + 1},
    ).returning(*SESSIONS.c)
    session = session_from_row(db.execute(statement).one())
    append_session_event(
        db,
        session_id=session.id,
        event_type="registered",
        payload=registered_payload(status=session.status, adapter=session.adapter),
        now=now,
    )
    return session


def _prebuilt_update(*conditions: ColumnElement[bool], **values: Any) -> Prepared:
    """``UPDATE agent_sessions SET … WHERE id = :session_id [AND conditions] RETURNING *``,
    built once at import: each call then only binds values (no statement construction,
    coercion or cache lookup)."""
    return Prepared(
        update(SESSIONS)
        .where(_C.id == bindparam("session_id"), *conditions)
        .values(version=_C.version + 1, **values)
        .returning(*SESSIONS.c)
    )


# A NULL status or external session id keeps the stored one (ref: blank values change nothing).
# A waiting reason sets the wait (its time kept while the reason stays the same); none clears it.
_WAITING = bindparam("waiting", type_=_C.waiting_reason.type)

_BEAT_VALUES: dict[str, Any] = {
    "status": func.coalesce(bindparam("status", type_=_C.status.type), _C.status),
    "external_session_id": func.coalesce(
        bindparam("external_session_id", type_=_C.external_session_id.type),
        _C.external_session_id,
    ),
    "last_seen_at": bindparam("now"),
    # The wait's reason, else the words a turn ended with (no wait: ``waiting_since`` NULL).
    "waiting_reason": func.coalesce(_WAITING, bindparam("turn_done", type_=_C.waiting_reason.type)),
    "waiting_since": case(
        (_WAITING.is_(None), None),
        (and_(_C.waiting_since.is_not(None), _C.waiting_reason == _WAITING), _C.waiting_since),
        else_=bindparam("now"),
    ),
}
_HEARTBEAT = _prebuilt_update(**_BEAT_VALUES)
# The server's heartbeat (``beat_in_workspace``): the same update, of a live session of one
# workspace (and of one agent, for an agent's token), all decided in the statement itself.
_LIVE = text(f"agent_sessions.status IN ({ACTIVE_SQL})")
_OF_WORKSPACE = effective_workspace(_C.workspace_id, _C.metadata_json) == bindparam("workspace_id")
_BEAT_IN_WORKSPACE = _prebuilt_update(_LIVE, _OF_WORKSPACE, **_BEAT_VALUES)
_BEAT_OF_AGENT = _prebuilt_update(
    _LIVE, _OF_WORKSPACE, _C.agent_id == bindparam("agent_id"), **_BEAT_VALUES
)


def _prebuilt_read(*conditions: ColumnElement[bool]) -> Prepared:
    """The session a prebuilt update of the same ``conditions`` would change, as it is."""
    return Prepared(select(*SESSIONS.c).where(_C.id == bindparam("session_id"), *conditions))


# What a quiet beat reads instead of writing, for each beat's update.
_QUIET_READS = {
    _HEARTBEAT: _prebuilt_read(),
    _BEAT_IN_WORKSPACE: _prebuilt_read(_LIVE, _OF_WORKSPACE),
    _BEAT_OF_AGENT: _prebuilt_read(_LIVE, _OF_WORKSPACE, _C.agent_id == bindparam("agent_id")),
}

_END = _prebuilt_update(
    status=bindparam("status"),
    ended_at=bindparam("now"),
    last_seen_at=bindparam("now"),
    waiting_reason=None,
    waiting_since=None,
)


def heartbeat(
    *,
    db: Connection,
    session_id: str,
    status: str | None = None,
    external_session_id: str | None = None,
    waiting: str | None = None,
    turn_done: str | None = None,
    clock: Clock = system_clock,
    quiet_seconds: float | None = None,
    tool_calls: Sequence[Any] | None = None,
    usage: Mapping[str, Any] | None = None,
    prices: Prices = SHIPPED,
) -> AgentSession:
    """An agent's heartbeat (ref): non-empty values replace, ``last_seen_at`` always moves,
    ``ended_at`` is never cleared. ``waiting`` (ours): the session waits for a human, for that
    reason; a heartbeat without it ends the wait. ``turn_done`` (ours): its turn is done, in its
    words. ``quiet_seconds`` and ``tool_calls`` (ours, a hook's): see ``beat_in_workspace``."""
    values = heartbeat_values(
        session_id=session_id,
        status=status,
        external_session_id=external_session_id,
        waiting=waiting,
        turn_done=turn_done,
    )
    spent = None if usage is None else session_usage(usage, prices)
    return _beat(db, _HEARTBEAT, values, clock, None, quiet_seconds, tool_calls, spent)


def checked_heartbeat(
    *,
    db: Connection,
    session_id: str,
    status: str | None = None,
    external_session_id: str | None = None,
    waiting: str | None = None,
    actor: str | None = None,
    clock: Clock = system_clock,
    turn_done: str | None = None,
) -> AgentSession:
    """A heartbeat under the reference's HTTP rules: a given status must be an active state
    (``invalid_session_status``) and the session must be in one (``illegal_session_transition``),
    then the agent's heartbeat (its status, external id and wait). ``actor``: the operator who
    beat it, named in the history row as an operator's action is."""
    if status is not None and status.strip() and status.strip() not in ACTIVE_STATES:
        raise InvalidSessionStatus(
            f"A heartbeat's status must be an active state ({', '.join(ACTIVE_STATES)}); "
            f"{status.strip()!r} is not one."
        )
    current = db.execute(select(_C.status).where(_C.id == session_id)).scalar_one_or_none()
    if current is None:
        raise SessionNotFound(f"No session has the id {session_id!r}.")
    if current not in ACTIVE_STATES:
        raise IllegalSessionTransition(
            f"Cannot heartbeat session {session_id!r}: its status is {current!r}; a heartbeat "
            "is allowed from an active state."
        )
    values = heartbeat_values(
        session_id=session_id,
        status=status,
        external_session_id=external_session_id,
        waiting=waiting,
        turn_done=turn_done,
    )
    return _update_one(
        db, _HEARTBEAT, values, clock=clock, event=("heartbeat", "last_seen_at"), actor=actor
    )


def beat_in_workspace(
    *,
    db: Connection,
    session_id: str,
    workspace_id: str,
    agent_id: str | None = None,
    status: str | None = None,
    external_session_id: str | None = None,
    waiting: str | None = None,
    actor: str | None = None,
    clock: Clock = system_clock,
    turn_done: str | None = None,
    quiet_seconds: float | None = None,
    tool_calls: Sequence[Any] | None = None,
    usage: Mapping[str, Any] | None = None,
    prices: Prices = SHIPPED,
) -> AgentSession | None:
    """``checked_heartbeat`` of a session of ``workspace_id`` (and of ``agent_id``, when given)
    in one statement: the session, or None when no such live session matched (the caller reads
    why: not there, another workspace's or agent's, or not live). ``quiet_seconds`` (a hook's):
    a beat that would change nothing but the last-seen time within that many seconds of it
    writes no heartbeat row. ``tool_calls``: the tools the agent ran, written in the same
    transaction, quiet or not (``store.writes.tool_calls``)."""
    if status is not None and status.strip() and status.strip() not in ACTIVE_STATES:
        raise InvalidSessionStatus(
            f"A heartbeat's status must be an active state ({', '.join(ACTIVE_STATES)}); "
            f"{status.strip()!r} is not one."
        )
    values = heartbeat_values(
        session_id=session_id,
        status=status,
        external_session_id=external_session_id,
        waiting=waiting,
        turn_done=turn_done,
    )
    values["workspace_id"] = workspace_id
    statement = _BEAT_IN_WORKSPACE
    if agent_id is not None:
        values["agent_id"] = agent_id
        statement = _BEAT_OF_AGENT
    try:
        spent = None if usage is None else session_usage(usage, prices)
        return _beat(db, statement, values, clock, actor, quiet_seconds, tool_calls, spent)
    except SessionNotFound:
        return None


def _beat(
    db: Connection,
    statement: Prepared,
    values: dict[str, Any],
    clock: Clock,
    actor: str | None,
    quiet_seconds: float | None,
    tool_calls: Sequence[Any] | None,
    spent: dict[str, Any] | None,
) -> AgentSession:
    """The heartbeat ``statement`` (or, quiet, none: the session as it is, if the statement's
    conditions hold), then the tool calls and the usage (``session_usage``'s) it carries."""
    now = format_ts(clock())
    # Checked (InvalidSession) before anything is written.
    rows = tool_call_rows(tool_calls, session_id=values["session_id"], now=now)
    session = None
    if quiet_seconds is not None:
        row = _QUIET_READS[statement].execute(db, values)
        current = None if row is None else as_session(row)
        if current is not None and beat_is_quiet(current, values, now, quiet_seconds):
            session = current
    if session is None:
        session = _update_one(
            db, statement, values, clock=clock, event=("heartbeat", "last_seen_at"), actor=actor
        )
    if rows:
        db.execute(text(INSERT_TOOL_CALL), rows)
    _keep_usage(db, session, spent, now)
    return session


def end(
    *,
    db: Connection,
    session_id: str,
    status: str | None = None,
    clock: Clock = system_clock,
    usage: Mapping[str, Any] | None = None,
    prices: Prices = SHIPPED,
) -> AgentSession:
    """End (ref): status = given value or ``ended``; end and last-seen times = now. ``usage``
    (ours, a hook's): what the session spent, kept in its metadata, priced by ``prices``."""
    values = end_values(session_id=session_id, status=status)
    spent = None if usage is None else session_usage(usage, prices)
    session = _update_one(db, _END, values, clock=clock, event=("ended", "ended_at"))
    _keep_usage(db, session, spent, format_ts(clock()))
    return session


def _keep_usage(
    db: Connection, session: AgentSession, spent: dict[str, Any] | None, now: str
) -> None:
    def run(statement: str, values: Mapping[str, Any]) -> Any:
        return db.execute(text(statement), dict(values)).first()

    keep_usage(run, session, spent, now)


def _update_one(
    db: Connection,
    statement: Prepared,
    values: dict[str, Any],
    *,
    clock: Clock,
    event: tuple[str, str],
    actor: str | None = None,
) -> AgentSession:
    """Run a prebuilt update at ``now`` and record it in the session's history: ``event`` names
    the event type and the field its payload carries the time in, beside the new status."""
    now = format_ts(clock())
    row = statement.execute(db, {**values, "now": now})
    if row is None:
        raise SessionNotFound(f"No session has the id {values['session_id']!r}.")
    session = as_session(row)
    event_type, time_field = event
    waiting = session.waiting
    payload = update_payload(
        status=session.status,
        time_field=time_field,
        now=now,
        waiting_reason=None if waiting is None else waiting.reason,
        turn_done=session.turn_done,
    )
    if actor is not None:
        payload["actor"] = actor
    append_session_event(
        db, session_id=session.id, event_type=event_type, payload=payload, now=now, actor=actor
    )
    return session


def take_hook_key(
    *, db: Connection, key: str, action: str, session_id: str, clock: Clock = system_clock
) -> bool:
    """Whether a hook's write under ``key`` is to be made now (the key taken in the caller's
    transaction), or was made before: a spooled write replayed is written once on this path
    too (``write_values.TAKE_HOOK_KEY``)."""
    row = {"key": key, "action": f"hook.{action}", "session_id": session_id}
    return db.execute(text(TAKE_HOOK_KEY), {**row, "now": format_ts(clock())}).first() is not None


def _dialect_insert(db: Connection) -> Any:
    """The dialect's INSERT (with ON CONFLICT), imported only by the writes that upsert: the
    PostgreSQL dialect costs a heartbeat on SQLite tens of milliseconds of start-up."""
    if db.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert


@contextmanager
def bulk_session_writes(*, db: Connection) -> Iterator[None]:
    """Around a write of many sessions in one transaction (an import, the demo). On PostgreSQL
    the count triggers stand aside for it and the counts are taken once at its end: counting
    row by row would update one count row as many times, each update slower than the last.
    Every other status change waits until the transaction commits, so none falls between the
    count and the commit (and none waits for the bulk write while it waits for them). On SQLite
    the triggers count as they go, at no such cost, and the write transaction already has the
    database to itself."""
    if db.dialect.name != "postgresql":
        yield
        return
    # In the order the triggers touch them (by name: the group counts first), so that a writer
    # holding one never waits here for the other.
    db.execute(text("LOCK TABLE session_group_counts IN SHARE ROW EXCLUSIVE MODE"))
    db.execute(text("LOCK TABLE session_status_counts IN SHARE ROW EXCLUSIVE MODE"))
    db.execute(text("LOCK TABLE session_usage_totals IN SHARE ROW EXCLUSIVE MODE"))
    # Local to the transaction: the pooled connection counts row by row again after it.
    db.execute(text("SELECT set_config('roundtable.bulk_session_writes', 'on', true)"))
    yield
    db.execute(text("SELECT set_config('roundtable.bulk_session_writes', 'off', true)"))
    db.execute(text("DELETE FROM session_status_counts"))
    db.execute(
        text(
            "INSERT INTO session_status_counts (status, sessions) "
            "SELECT status, count(*) FROM agent_sessions GROUP BY status"
        )
    )
    db.execute(text("DELETE FROM session_group_counts"))
    db.execute(text(RECOUNT_GROUPS))
    db.execute(text("DELETE FROM session_usage_totals"))
    db.execute(text(RECOUNT_USAGE))


# Every group's sessions by status, counted (migration 0008 seeds its table the same way).
_GROUP_KEYS = (("agent", "agent_id"), ("run", "run_id"), ("workspace", "rt_workspace"))

RECOUNT_GROUPS = (
    "INSERT INTO session_group_counts (grouping, keyed, group_key, status, sessions) "
    + " UNION ALL ".join(
        f"SELECT '{grouping}', CASE WHEN {key} IS NULL THEN 0 ELSE 1 END, COALESCE({key}, ''),"
        f" status, count(*) FROM agent_sessions GROUP BY {key}, status"
        for grouping, key in _GROUP_KEYS
    )
)

# Every agent's and run's usage totals, summed (migration 0009 seeds its table the same way).
RECOUNT_USAGE = (
    "INSERT INTO session_usage_totals (grouping, group_key, sessions, tokens, cost) "
    + " UNION ALL ".join(
        f"SELECT '{grouping}', COALESCE({key}, ''), count(*), sum(u[2]), sum(u[3])"
        f" FROM (SELECT {key}, rt_usage(metadata_json) AS u FROM agent_sessions"
        " WHERE metadata_json LIKE '%usage%') AS used"
        f" WHERE u IS NOT NULL GROUP BY COALESCE({key}, '')"
        for grouping, key in (("agent", "agent_id"), ("run", "run_id"))
    )
)
