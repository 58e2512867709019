"""The documented parameters and bodies the routes of ``roundtable serve`` share (their entries
in the OpenAPI document; each route reads its own as strictly as they say)."""

from __future__ import annotations

from roundtable_console.api.routes import schemas
from roundtable_console.store.rules import ACTIVE_STATES

# Every route of ours and of the reference's is under this path.
API = "/api/v1"
TEXT_QUERY = {"type": "string", "format": schemas.TEXT, "maxLength": 1024}
LIST_PARAMETERS = [
    schemas.LIMIT,
    schemas.CURSOR,
    {"name": "status", "in": "query", "schema": TEXT_QUERY, "description": "Repeatable."},
    {"name": "agent_id", "in": "query", "schema": TEXT_QUERY},
    {"name": "run_id", "in": "query", "schema": TEXT_QUERY},
    {"name": "host", "in": "query", "schema": TEXT_QUERY, "description": "A machine's name."},
    {"name": "stale", "in": "query", "schema": {"type": "boolean"}},
    {"name": "waiting", "in": "query", "schema": {"type": "boolean"}},
    {"name": "q", "in": "query", "schema": TEXT_QUERY, "description": "Text filter."},
    {
        "name": "sort",
        "in": "query",
        "schema": {"enum": ["attention", "started", "last_seen", "status", "agent"]},
    },
    {"name": "order", "in": "query", "schema": {"enum": ["asc", "desc"]}},
]
WORKSPACE_PARAMETER = {
    "name": "workspace_id",
    "in": "query",
    "schema": TEXT_QUERY,
    "description": "Only this workspace's sessions.",
}
IF_MATCH = {
    "name": "If-Match",
    "in": "header",
    "required": False,
    "schema": {"type": "string", "pattern": '^(W/)?"?[0-9]{1,18}"?$'},
    "description": "The session's version as read: refused (409) if it changed since.",
}
STATUS_PARAMETER = {
    "name": "status",
    "in": "query",
    "schema": {"enum": list(ACTIVE_STATES)},
    "description": "A new status: an active state.",
}


ALL_STATES = {"name": "all", "in": "query", "schema": {"type": "boolean"}}
DECISION_BODY = {
    "type": "object",
    "properties": {
        "decision": {"enum": ["allow", "deny"]},
        "message": {
            "type": ["string", "null"],
            "maxLength": 2000,
            "description": "With a deny: why, for the agent's model to read.",
        },
        "despite_hidden": {
            "type": "boolean",
            "description": "With an allow of an input partly hidden as secrets: allow anyway.",
        },
        "suggestion": {
            "type": ["integer", "null"],
            "minimum": 0,
            "description": "With an allow: the number of the agent's own suggestion to take.",
        },
    },
    "required": ["decision"],
    "additionalProperties": False,
}
REPLY_BODY = {
    "type": "object",
    "properties": {
        "message": {
            "type": "string",
            "minLength": 1,
            "maxLength": 4000,
            "description": "What the agent goes on with: printable text, lines kept.",
        },
        "via": {
            "enum": ["hook", "pane", None],
            "description": "The route the operator was shown (GET …/reply): refused (409) when "
            "another would carry the reply now.",
        },
    },
    "required": ["message"],
    "additionalProperties": False,
}


CHANGES_PARAMETERS = [
    {"name": "status", "in": "query", "schema": TEXT_QUERY, "description": "Repeatable."},
    {"name": "agent_id", "in": "query", "schema": TEXT_QUERY},
    {"name": "run_id", "in": "query", "schema": TEXT_QUERY},
    {"name": "heartbeats", "in": "query", "schema": {"type": "boolean"}},
    {
        "name": "Last-Event-ID",
        "in": "header",
        "schema": {"type": "string"},
        "description": "The id of the last event received: what follows it, nothing twice.",
    },
]
