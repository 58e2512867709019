"""What an agent's hook writes about its permission request: the request itself (with its history
row), then, once it knows, how it ended: the decision taken (delivered), expired, or withdrawn.

Each is one transaction. The hook waits between them on the store's change signal
(``agents.asking``), never by reading the table in a loop.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from sqlalchemy import Connection, text

from roundtable_console.store.clock import Clock, format_ts, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import RequestNotFound, TooManyPending
from roundtable_console.store.reads.sessions import get_session
from roundtable_console.store.requests.records import (
    ANSWERS_BY_AGENT,
    ASKED_EVENT,
    DECIDED_EVENT,
    MAX_INPUT_CHARACTERS,
    MAX_SUGGESTIONS,
    MAX_SUGGESTIONS_CHARACTERS,
    WAITING_AFTER,
    WITHDRAWN,
    PermissionRequestRecord,
)
from roundtable_console.store.safety.credentials import redact_output_text, redact_output_value
from roundtable_console.store.writes.history import append_session_event

_INSERT = text(
    "INSERT INTO permission_requests (id, session_id, agent, tool_name, tool_input_json,"
    " input_cut, input_hidden, suggestions_json, answers, reason, asked_at, expires_at, state,"
    " hook_host, hook_pid) VALUES (:id, :session_id, :agent, :tool_name, :tool_input_json,"
    " :input_cut, :input_hidden, :suggestions_json, :answers, :reason, :asked_at, :expires_at,"
    " 'pending', :hook_host, :hook_pid)"
)
_ONE = text("SELECT * FROM permission_requests WHERE id = :id")
_SETTLE = text(
    "UPDATE permission_requests SET state = :state, decided_at = :now"
    " WHERE id = :id AND state = 'pending'"
)
_DELIVERED = text(
    "UPDATE permission_requests SET delivered_at = :now"
    " WHERE id = :id AND state IN ('allowed', 'denied') AND delivered_at IS NULL"
)
_PENDING_COUNT_OF_SESSION = text(
    "SELECT count(*) FROM permission_requests WHERE session_id = :session_id"
    " AND state = 'pending' AND expires_at > :now"
)
_PENDING_COUNT_OF_AGENT = text(
    "SELECT count(*) FROM permission_requests JOIN agent_sessions"
    " ON agent_sessions.id = permission_requests.session_id"
    " WHERE agent_sessions.agent_id = :agent_id AND permission_requests.state = 'pending'"
    " AND permission_requests.expires_at > :now"
)
# At most this many requests pending at once, of one session and of one agent's sessions.
MAX_PENDING_PER_SESSION = 20
MAX_PENDING_PER_AGENT = 200
_PENDING_OF_SESSION = text(
    "SELECT id FROM permission_requests WHERE session_id = :session_id AND state = 'pending'"
)


def new_request_id() -> str:
    return "req-" + os.urandom(10).hex()


def kept_input(tool_input: Any) -> tuple[str, bool, bool]:
    """The input as stored: redacted JSON text, whole up to ``MAX_INPUT_CHARACTERS``; beyond,
    cut (a string then) and said so; and whether redaction hid any of it (then what a human
    reads is not all the agent would run: ``deciding`` asks for that to be acknowledged)."""
    redacted = redact_output_value(tool_input)
    hidden = redacted != tool_input
    try:
        whole = json.dumps(redacted, ensure_ascii=False, allow_nan=False)
    except ValueError:  # NaN or Infinity, which an agent's JSON may hold and JSON has not
        whole = json.dumps(_finite(redacted), ensure_ascii=False)
    if len(whole) <= MAX_INPUT_CHARACTERS:
        return whole, False, hidden
    return json.dumps(whole[:MAX_INPUT_CHARACTERS], ensure_ascii=False), True, hidden


def _finite(value: Any) -> Any:
    """``value`` with each NaN or infinite number written as text."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


def kept_suggestions(suggestions: Any) -> str | None:
    """The agent's own suggestions, kept as it gave them (redacted), if they are a list of
    objects within the bounds; anything else is not offered."""
    if not isinstance(suggestions, list) or not suggestions:
        return None
    if len(suggestions) > MAX_SUGGESTIONS or not all(isinstance(s, dict) for s in suggestions):
        return None
    if any(str(s.get("mode", "")).lower() == "bypasspermissions" for s in suggestions):
        return None  # one click would switch every later question off: not offered from here
    if redact_output_value(suggestions) != suggestions:
        return None  # a rule redaction changed would not be the rule the agent offered
    try:
        kept = json.dumps(redact_output_value(suggestions), ensure_ascii=False, allow_nan=False)
    except ValueError:
        return None  # NaN or Infinity: not a rule the agent could be handed back
    return kept if len(kept) <= MAX_SUGGESTIONS_CHARACTERS else None


def get_request(db: Connection, request_id: str) -> PermissionRequestRecord:
    row = db.execute(_ONE, {"id": request_id}).one_or_none()
    if row is None:
        raise RequestNotFound(f"No permission request has the id {request_id!r}.")
    return PermissionRequestRecord.from_row(row)


def open_request(
    store: Store,
    *,
    session_id: str,
    agent: str,
    tool_name: str,
    tool_input: Any,
    suggestions: Any,
    reason: str,
    wait_seconds: float,
    clock: Clock = system_clock,
    hook_host: str | None = None,
    hook_pid: int | None = None,
    within: Callable[[Connection, PermissionRequestRecord], None] | None = None,
) -> PermissionRequestRecord:
    """Record the request of ``session_id``'s agent, pending for ``wait_seconds``, asked by
    the hook ``hook_pid`` on ``hook_host`` (default: this process, for a hook that writes the
    store itself; a server records the hook that asked through it). ``within``: more of the
    same transaction (a server's idempotency record)."""
    import socket

    moment = clock()
    input_json, cut, hidden = kept_input(tool_input)
    values = {
        "id": new_request_id(),
        "session_id": session_id,
        "agent": agent,
        "tool_name": tool_name[:200],
        "tool_input_json": input_json,
        "input_cut": int(cut),
        "input_hidden": int(hidden),
        "suggestions_json": kept_suggestions(suggestions),
        "answers": ",".join(ANSWERS_BY_AGENT.get(agent, ())),
        "reason": redact_output_text(reason),
        "asked_at": format_ts(moment),
        "expires_at": format_ts(moment + timedelta(seconds=wait_seconds)),
        "hook_host": socket.gethostname() if hook_host is None else hook_host[:255],
        "hook_pid": os.getpid() if hook_pid is None else hook_pid,
    }
    with store.write() as db:
        session = get_session(db=db, session_id=session_id)
        _within_bounds(db, session_id, session.agent_id, values["asked_at"])
        db.execute(_INSERT, values)
        append_session_event(
            db,
            session_id=session_id,
            event_type=ASKED_EVENT,
            payload={"request_id": values["id"], "tool_name": values["tool_name"]},
            now=values["asked_at"],
        )
        record = get_request(db, values["id"])
        if within is not None:
            within(db, record)
        return record


def _within_bounds(db: Connection, session_id: str, agent_id: str, now: str) -> None:
    """A session asks a few things at once, never dozens: past ``MAX_PENDING_PER_SESSION``
    pending requests of the session, or ``MAX_PENDING_PER_AGENT`` of its agent's sessions, a new
    one is refused (a flood would bury every other agent's questions, oldest first)."""
    of_session = db.execute(_PENDING_COUNT_OF_SESSION, {"session_id": session_id, "now": now})
    if of_session.scalar_one() >= MAX_PENDING_PER_SESSION:
        raise TooManyPending(
            f"The session has {MAX_PENDING_PER_SESSION} permission requests pending, its most: "
            "answer or let them expire first."
        )
    of_agent = db.execute(_PENDING_COUNT_OF_AGENT, {"agent_id": agent_id, "now": now})
    if of_agent.scalar_one() >= MAX_PENDING_PER_AGENT:
        raise TooManyPending(
            f"The agent {agent_id!r} has {MAX_PENDING_PER_AGENT} permission requests pending, "
            "its most: answer or let them expire first."
        )


def read_request(store: Store, request_id: str) -> PermissionRequestRecord:
    with store.read() as db:
        return get_request(db, request_id)


def take_decision(
    store: Store, request_id: str, clock: Clock = system_clock
) -> PermissionRequestRecord:
    """The request as its hook delivers it: a decision marked delivered (once)."""
    with store.write() as db:
        db.execute(_DELIVERED, {"id": request_id, "now": format_ts(clock())})
        return get_request(db, request_id)


def settle(store: Store, request_id: str, state: str, clock: Clock = system_clock) -> bool:
    """A pending request expired or withdrawn by its hook; False when it was settled already
    (a decision came in the meantime: the hook reads it again)."""
    now = format_ts(clock())
    with store.write() as db:
        if db.execute(_SETTLE, {"id": request_id, "state": state, "now": now}).rowcount == 0:
            return False
        record = get_request(db, request_id)
        payload: dict[str, Any] = {"request_id": request_id, "state": state}
        if state == WITHDRAWN:
            payload[WAITING_AFTER] = answered(db, record, now)
        append_session_event(
            db,
            session_id=record.session_id,
            event_type=DECIDED_EVENT,
            payload=payload,
            now=now,
        )
        return True


def withdraw_pending(store: Store, session_id: str, clock: Clock = system_clock) -> int:
    """The session's agent moved on (its turn ended, it ended): its pending requests are
    withdrawn. Returns how many."""
    with store.read() as db:
        pending = [row[0] for row in db.execute(_PENDING_OF_SESSION, {"session_id": session_id})]
    return sum(settle(store, request_id, WITHDRAWN, clock) for request_id in pending)


def answered(db: Connection, record: PermissionRequestRecord, now: str) -> str | None:
    """The session no longer waits on ``record``: on its next pending request if it has one,
    else on nothing (its status is the agent's to say, with its next event). Returns what it
    waits on now (its reason), if anything."""
    from sqlalchemy import update

    from roundtable_console.store.db.session_rows import SESSIONS

    following = db.execute(
        text(
            "SELECT reason, asked_at FROM permission_requests WHERE session_id = :session_id"
            " AND state = 'pending' AND expires_at > :now ORDER BY asked_at LIMIT 1"
        ),
        {"session_id": record.session_id, "now": now},
    ).one_or_none()
    session = SESSIONS.c
    if following is not None:
        changes: dict[str, Any] = {"waiting_reason": following[0], "waiting_since": following[1]}
    else:
        changes = {"waiting_reason": None, "waiting_since": None}
    moved = db.execute(
        update(SESSIONS)
        .where(session.id == record.session_id, session.waiting_since.is_not(None))
        .values(**changes, version=session.version + 1)
    ).rowcount
    return changes["waiting_reason"] if moved else None
