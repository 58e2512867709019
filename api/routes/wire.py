"""The reference's JSON shapes (``docs/reference/roundtable.md#the-http-api``), from the store's
records.

A session: ``id, agent_id, run_id, adapter, provider?, model?, external_session_id?,
resume_command_template?, status, started_at, last_seen_at?, ended_at?`` (``?``: left out when
empty); the working directory, the MCP socket and the metadata are never returned. Ours beside
them: the session's ``workspace_id``, ``waiting`` while it waits, and its ``version``. Every
text a person wrote passes the same redaction as every other read path.
"""

from __future__ import annotations

import re
from typing import Any

from roundtable_console.api.problems import Problem
from roundtable_console.store.records import SessionFields
from roundtable_console.store.safety.credentials import redact_output_text, redact_output_value
from roundtable_console.store.validation import has_control_characters, whole_number

DEFAULT_LIMIT = 50
_BASE64URL = re.compile(r"^[A-Za-z0-9_-]+$")
# Ids in a path: printable, no control character (a store never holds such an id).
ID = re.compile(r"^[^\x00-\x1f\x7f]{1,256}$")


def session(record: SessionFields) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": record.id,
        "agent_id": record.agent_id,
        "run_id": record.run_id,
        "adapter": record.adapter,
    }
    for name in ("provider", "model", "external_session_id"):
        value = getattr(record, name)
        if value:
            body[name] = value
    if record.external_session_id:
        body["resume_command_template"] = f"{record.adapter} resume {record.external_session_id}"
    body["status"] = record.status
    body["started_at"] = record.started_at
    for name in ("last_seen_at", "ended_at"):
        value = getattr(record, name)
        if value:
            body[name] = value
    workspace = record.effective_workspace_id
    if workspace is not None:
        body["workspace_id"] = workspace
    if record.host:
        body["host"] = record.host  # ours: the machine it runs on, as its hooks said
    waiting = record.waiting
    if waiting is not None:
        body["waiting"] = waiting._asdict()
    turn_done = record.turn_done
    if turn_done is not None:
        body["turn_done"] = {"message": turn_done, "at": record.last_seen_at}
    body["version"] = record.version
    # The shape is ours and fixed (no key names a secret): its text values are what may hold one.
    for name, value in body.items():
        if isinstance(value, str):
            body[name] = redact_output_text(value)
    for name in ("waiting", "turn_done"):
        if name in body:
            body[name] = redact_output_value(body[name])
    return body


def page(items: list[dict[str, Any]], next_cursor: str | None) -> dict[str, Any]:
    return {"items": items, "next_cursor": next_cursor}


def claim(item: dict[str, Any]) -> dict[str, Any]:
    """A claim as the reference sends it: its Go struct's field names (no JSON tags)."""
    return {
        "ID": item["id"],
        "ResourceID": item["resource_id"],
        "AgentID": item["agent_id"],
        "TaskID": item["task_id"],
        "ClaimType": item["claim_type"],
        "BaseHash": item["base_hash"] or "",
        "Status": item["status"],
        "ExpiresAt": item["expires_at"],
        "HeartbeatAt": item["heartbeat_at"],
        "Renewable": bool(item["renewable"]),
        "ResumePolicy": item["resume_policy"],
        "RationaleMD": item["rationale"] or "",
        "CreatedAt": item["created_at"],
    }


def proposal(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": item["id"],
        "task_id": item["task_id"],
        "title": item["title"],
        "summary_md": item["summary"],
        "status": item["status"],
        "risk": item["risk"],
        "created_at": item["created_at"],
    }


def tool_call(item: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"id": item["id"], "tool": item["tool"]}
    for name in ("action", "status", "actor"):
        if item.get(name):
            body[name] = item[name]
    if item.get("duration_ms") is not None:  # ours: how long it took, where the agent said
        body["duration_ms"] = item["duration_ms"]
    body["created_at"] = item["created_at"]
    return body


def log(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": item["id"],
        "event_type": item["event_type"],
        "payload": item["payload"],
        "created_at": item["created_at"],
    }


def text(value: str | None) -> str | None:
    return redact_output_text(value) if value is not None else None


def limit(raw: str | None) -> int:
    """The reference's ``limit``: default 50, 1 to 200; an empty ``limit=`` is the default."""
    if raw is None or raw == "":
        return DEFAULT_LIMIT
    value = whole_number(raw)
    if value is None or not 1 <= value <= 200:
        raise Problem("invalid_limit", "limit must be between 1 and 200")
    return value


def cursor(raw: str | None) -> str | None:
    """A cursor as the client sent it: None for none; refused when it cannot be one of ours
    (the store refuses what is base64url but not one of its cursors: "cursor is malformed")."""
    if raw is None or raw == "":
        return None
    if not _BASE64URL.match(raw) or len(raw) > 4096:
        raise Problem("invalid_cursor", "cursor must be an opaque base64url cursor")
    return raw


_NOT_FOUND = {
    "workspace": "workspace_not_found",
    "request": "request_not_found",
    "listener": "listener_not_found",
}
_NAMED = {"request": "permission request", "listener": "reply listener"}


def path_id(value: str, *, what: str) -> str:
    """A workspace or session id from the path; one no store holds answers as not found."""
    if not ID.match(value) or has_control_characters(value):
        code = _NOT_FOUND.get(what, "session_not_found")
        raise Problem(code, f"No {_NAMED.get(what, what)} has that id.")
    return value
