"""What the agent's writes (register, heartbeat, end) store, decided from their inputs, and the
history payloads they leave.

Standard library only: the store's operations (``store.writes.agent_writes``) and the agent's quick
writes on the database's own driver (``store.writes.quick_writes``) both decide here, so the two
paths apply the same rules, refuse with the same errors and leave the same history.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from roundtable_console.store import validation
from roundtable_console.store.resume.adapters import AdapterConfig, resolve

# typing is not imported at run time: every hook's process would pay ~3 ms for it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# json.dumps with these options builds a new encoder on every call; one shared encoder does not.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"))


def to_json_text(payload: dict[str, Any]) -> str:
    """A history payload as stored: compact, keys sorted."""
    return _ENCODER.encode(payload)


def register_values(
    *,
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
    host: str | None = None,
) -> dict[str, Any]:
    """The columns a register writes (all but the times), by name; ``InvalidSession`` or
    ``InvalidSessionStatus`` before anything is written. ``host`` (ours): the machine the
    session runs on, as its hook says."""
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
        "host": validation.host(host),
    }
    if values["external_resume_command"] is None and values["external_session_id"]:
        values["external_resume_command"] = resolve(adapters, values["adapter"]).expand(
            values["external_session_id"]
        )
    return values


def heartbeat_values(
    *,
    session_id: str,
    status: str | None = None,
    external_session_id: str | None = None,
    waiting: str | None = None,
    turn_done: str | None = None,
) -> dict[str, Any]:
    """An agent's heartbeat (ref): a None status or external id keeps the stored one; a waiting
    reason (validated, redacted) sets the wait, none ends it. ``turn_done`` (ours): the agent's
    turn is done and it awaits a prompt, in its words (kept as the reason, with no wait: no
    human is waited on); a wait wins over it."""
    wait = validation.waiting_reason(waiting) if waiting is not None else None
    done = (
        validation.waiting_reason(turn_done, "A turn's last words")
        if turn_done is not None and wait is None
        else None
    )
    return {
        "session_id": session_id,
        "status": validation.status(status) if status and status.strip() else None,
        "external_session_id": (external_session_id or "").strip() or None,
        "waiting": wait,
        "turn_done": done,
    }


def end_values(*, session_id: str, status: str | None = None) -> dict[str, Any]:
    """End (ref): the given status, else ``ended``."""
    final = validation.status(status) if status and status.strip() else "ended"
    return {"session_id": session_id, "status": final}


def registered_payload(*, status: str, adapter: str) -> dict[str, Any]:
    return {"status": status, "adapter": adapter}


def update_payload(
    *,
    status: str,
    time_field: str,
    now: str,
    waiting_reason: str | None,
    turn_done: str | None = None,
) -> dict[str, Any]:
    """A heartbeat's or an end's history payload: the new status, the time in ``time_field``
    (``last_seen_at``, ``ended_at``), and the reason the session waits, if it does, or the
    words its turn ended with."""
    payload: dict[str, Any] = {"status": status, time_field: now}
    if waiting_reason is not None:
        payload["waiting"] = waiting_reason
    if turn_done is not None:
        payload["turn_done"] = turn_done
    return payload


def beat_is_quiet(current: Any, values: Mapping[str, Any], now: str, quiet_seconds: float) -> bool:
    """Whether a hook's beat ``values`` would change nothing of the ``current`` session (a
    ``SessionRecord`` or an ``AgentSession``) but its last-seen time, within ``quiet_seconds``
    of it: then it writes no heartbeat row (a burst of tool events is one beat)."""
    from datetime import datetime

    if values["status"] not in (None, current.status):
        return False
    if current.ended_at is not None or (values["waiting"] is None) != (current.waiting is None):
        return False
    if (values["waiting"] or values["turn_done"]) != current.waiting_reason:
        return False
    if values["external_session_id"] not in (None, current.external_session_id):
        return False
    try:
        seen = datetime.fromisoformat(current.last_seen_at or "")
        elapsed = (datetime.fromisoformat(now) - seen).total_seconds()
    except ValueError:
        return False
    return 0 <= elapsed < quiet_seconds


# A hook's write under an idempotency key (its spool's) happens once: the key is taken in the
# write's own transaction, and a key already taken means the write was made. The quick writes
# and the full path (``agent_writes.take_hook_key``) take it alike.
TAKE_HOOK_KEY = """
INSERT INTO idempotency_keys (key, action, session_id, outcome, created_at)
VALUES (:key, :action, :session_id, '{}', :now)
ON CONFLICT (key) DO NOTHING RETURNING key"""
