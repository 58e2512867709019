"""The OpenAPI document's shapes (``/api/v1/openapi.json``). Routes build their JSON themselves
(``wire``) and read their bodies strictly (``bodies``); these models only describe both, so the
document says exactly what is sent and taken, and schemathesis holds the server to it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from roundtable_console.store.reads.audit import ACTIONS, EVENT_ACTIONS
from roundtable_console.store.writes.tool_calls import MAX_CALLS, MAX_DURATION_MS, OUTCOMES
from roundtable_console.store.writes.usage_values import MOST_DOLLARS, MOST_TOKENS
from roundtable_console.store.writes.usage_values import TOKENS as USAGE_TOKENS


class Waiting(BaseModel):
    reason: str
    since: str


class TurnDone(BaseModel):
    message: str
    at: str | None = None


class Session(BaseModel):
    id: str
    agent_id: str
    run_id: str
    adapter: str
    provider: str | None = None
    model: str | None = None
    external_session_id: str | None = None
    resume_command_template: str | None = None
    status: str
    started_at: str
    last_seen_at: str | None = None
    ended_at: str | None = None
    workspace_id: str | None = None
    host: str | None = None
    waiting: Waiting | None = None
    turn_done: TurnDone | None = None
    version: int


class TranscriptEntry(BaseModel):
    kind: str
    text: str
    at: str | None = None


class Transcript(BaseModel):
    available: bool
    reason: str | None
    items: list[TranscriptEntry]
    next_before: int | None
    size: int | None


class ChangedFile(BaseModel):
    path: str
    status: str
    added: int | None
    deleted: int | None
    binary: bool


class ChangedCommit(BaseModel):
    sha: str
    subject: str


class Changes(BaseModel):
    available: bool
    reason: str | None
    directory: str | None = None
    branch: str | None = None
    base: str | None = None
    commits: list[ChangedCommit] = []
    files: list[ChangedFile] = []
    patch: str | None = None
    offset: int | None = None
    next_offset: int | None = None


class SessionPage(BaseModel):
    items: list[Session]
    next_cursor: str | None


class LogItem(BaseModel):
    id: int
    event_type: str
    payload: str
    created_at: str


class ToolCallItem(BaseModel):
    id: int
    tool: str
    action: str | None = None
    status: str | None = None
    duration_ms: int | None = None
    actor: str | None = None
    created_at: str


class Claim(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    ID: str
    ResourceID: str
    AgentID: str
    TaskID: str
    ClaimType: str
    BaseHash: str
    Status: str
    ExpiresAt: str
    HeartbeatAt: str | None
    Renewable: bool
    ResumePolicy: str
    RationaleMD: str
    CreatedAt: str


class ProposalItem(BaseModel):
    id: str
    task_id: str
    title: str | None
    summary_md: str | None
    status: str
    risk: str
    created_at: str


class LogPage(BaseModel):
    items: list[LogItem]
    next_cursor: str | None


class ToolCallPage(BaseModel):
    items: list[ToolCallItem]
    next_cursor: str | None


class ClaimPage(BaseModel):
    items: list[Claim]
    next_cursor: str | None


class ProposalPage(BaseModel):
    items: list[ProposalItem]
    next_cursor: str | None


class Metrics(BaseModel):
    session_id: str
    usage: dict[str, float]
    source: str
    cost: str | None = None


class Fingerprint(BaseModel):
    python_version: str
    os: str
    arch: str
    adapter: str


class Environment(BaseModel):
    session_id: str
    fingerprint: Fingerprint
    scope: str
    note: str


class AgentFound(BaseModel):
    name: str
    version: str | None = None


class Host(BaseModel):
    name: str
    agents: list[AgentFound]
    tmux: str | None = None
    projects: list[str]
    version: str | None = None
    platform: str | None = None
    online: bool
    connected_at: str | None = None
    last_seen_at: str | None = None
    first_seen_at: str
    sessions: int
    active_sessions: int


class HostList(BaseModel):
    hosts: list[Host]


class AuditEntry(BaseModel):
    at: str
    actor: str | None
    db_user: str | None
    action: str
    session_id: str
    previous_status: str | None
    status: str | None
    impact_details: str | None
    field: str | None


class AuditPage(BaseModel):
    items: list[AuditEntry]
    next_cursor: str | None


class SessionRecord(BaseModel):
    """A session with the store's column names (``roundtable sessions show --json``'s)."""

    id: str
    agent_id: str
    run_id: str
    adapter: str
    provider: str | None
    model: str | None
    external_session_id: str | None
    external_resume_command: str | None
    working_directory: str | None
    mcp_socket: str | None
    status: str
    started_at: str
    last_seen_at: str | None
    ended_at: str | None
    workspace_id: str | None
    host: str | None
    metadata: dict[str, Any] | None
    waiting: Waiting | None
    turn_done: TurnDone | None
    version: int


class Me(BaseModel):
    name: str
    role: str
    workspaces: list[str] | None


class SessionRecordPage(BaseModel):
    items: list[SessionRecord]
    next_cursor: str | None


class ActionOutcome(BaseModel):
    """A lifecycle action's outcome (``roundtable sessions pause … --json``'s)."""

    action: str
    session: SessionRecord
    replayed: bool
    notes: list[str]
    claims: list[dict[str, Any]]


class Launched(BaseModel):
    session: Session
    host: str
    tmux_session: str
    attach: str


class NewSessionStarted(BaseModel):
    session_id: str
    session: Session
    host: str | None
    directory: str
    branch: str | None
    base: str | None
    tmux_session: str
    attach: str


class Capabilities(BaseModel):
    authentication: str
    agent_boundary: str
    csrf: str
    default_bind: str
    roles: list[str]
    allowed_origins: list[str]


class Problem(BaseModel):
    """RFC 7807, with the reference's ``request_id``, ``code`` and ``metadata``."""

    type: str
    title: str
    status: int
    detail: str | None = None
    instance: str | None = None
    request_id: str
    code: str
    metadata: dict[str, Any] | None = None


# Text formats of ours (what a schema's pattern cannot say): "printable-text" holds no control,
# format or separator character (Unicode Cc, Cf, Cs, Zl, Zp) and not only spaces; "text" holds
# no NUL.
PRINTABLE = "printable-text"
TEXT = "text"
# Fields whose text is printable, and how long it may be.
PRINTABLE_LENGTHS = {
    "agent_id": 256,
    "run_id": 256,
    "adapter": 256,
    "status": 64,
    "waiting": 500,
    "turn_done": 500,
    "host": 255,
}


# Ours, a hook's beat: the tools its agent ran (store.writes.tool_calls says what each holds).
TOOL_CALL = {
    "type": "object",
    "properties": {
        "tool": {"type": "string"},
        "summary": {"type": "string"},
        "outcome": {"enum": list(OUTCOMES)},
        "duration_ms": {"type": ["number", "null"], "minimum": 0, "maximum": MAX_DURATION_MS},
    },
    "required": ["tool", "outcome"],
    "additionalProperties": False,
}
SPECIAL_FIELDS: dict[str, dict[str, Any]] = {
    "tool_calls": {"type": ["array", "null"], "items": TOOL_CALL, "maxItems": MAX_CALLS},
    "quiet_seconds": {"type": ["number", "null"], "minimum": 0, "maximum": 60},
    # Ours, a hook's: what the session spent so far (store.writes.usage_values).
    "usage": {
        "type": ["object", "null"],
        "properties": {
            **{
                name: {"type": "integer", "minimum": 0, "maximum": MOST_TOKENS}
                for name in USAGE_TOKENS
            },
            "model": {
                "type": "string",
                "minLength": 1,
                "maxLength": 200,
                "pattern": "^[^\\x00-\\x1f\\x7f-\\x9f]+$",
            },  # fmt: skip
            "cost_usd": {"type": "number", "minimum": 0, "maximum": MOST_DOLLARS},
        },
        "additionalProperties": False,
    },
}


def _field(name: str, *, required: bool, objects: tuple[str, ...]) -> dict[str, Any]:
    if name in SPECIAL_FIELDS:
        return SPECIAL_FIELDS[name]
    if name in objects:
        return {"type": "object"} if required else {"type": ["object", "null"]}
    if name in PRINTABLE_LENGTHS:
        text: dict[str, Any] = {
            "type": "string",
            "format": PRINTABLE,
            "maxLength": PRINTABLE_LENGTHS[name],
        }
    else:
        text = {"type": "string", "format": TEXT, "maxLength": 4096}
        if required:
            text["pattern"] = r"\S"
    return text if required else {"anyOf": [text, {"type": "null"}]}


def body_schema(
    fields: tuple[str, ...], required: tuple[str, ...] = (), objects: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A body of these fields (text or null; ``objects`` may hold an object), no other."""
    return {
        "type": "object",
        "properties": {
            name: _field(name, required=name in required, objects=objects) for name in fields
        },
        "required": list(required),
        "additionalProperties": False,
    }


LIMIT = {
    "name": "limit",
    "in": "query",
    "required": False,
    "schema": {"type": "integer", "minimum": 1, "maximum": 200},
    "description": "Page size, 1 to 200 (default 50).",
}
BEFORE = {
    "name": "before",
    "in": "query",
    "required": False,
    "schema": {"type": "string", "pattern": "^[0-9]{1,18}$"},
    "description": "The next_before of a page: read the entries before it.",
}
OFFSET = {
    "name": "offset",
    "in": "query",
    "required": False,
    "schema": {"type": "string", "pattern": "^[0-9]{1,18}$"},
    "description": "The next_offset of a page: the patch from that byte on.",
}
CURSOR = {
    "name": "cursor",
    "in": "query",
    "required": False,
    "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]+$", "maxLength": 4096},
    "description": "The next_cursor of the page before (opaque).",
}
IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "schema": {"type": "string", "minLength": 1, "maxLength": 128, "pattern": "^[!-~]+$"},
    "description": "Makes a retry safe: the same request again gets the first answer.",
}


def idempotency(required: bool) -> dict[str, Any]:
    return {**IDEMPOTENCY_KEY, "required": required}


def text_query(name: str, description: str, schema: dict[str, object]) -> dict[str, object]:
    """An optional query parameter of text."""
    return {"name": name, "in": "query", "required": False, "schema": schema,
            "description": description}  # fmt: skip


# The actions the audit trail names, as the operator names them (pause) or its history does.
AUDIT_ACTIONS = {*ACTIONS, *EVENT_ACTIONS}
# A name as the store keeps one: printable, at most 256 characters (empty: no filter).
PRINTABLE_NAME = {"type": "string", "pattern": "^[^\\x00-\\x1f\\x7f]{0,256}$"}
# What `roundtable audit --since` takes: a duration back from now, or a date or a UTC time (a
# day the month does not have, 2026-02-30, is refused as the route reads it).
SINCE = {
    "type": "string",
    "pattern": "^(|[0-9]{1,4}[smhdw]|(19|20)[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
    "(T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z)?)$",
}


# The cursor of a route of ours: an empty one is none (as an empty filter is none).
OPTIONAL_CURSOR = {**CURSOR, "schema": {**CURSOR["schema"], "pattern": "^[A-Za-z0-9_-]*$"}}
AUDIT_FILTERS = [
    text_query("actor", "Only this operator's actions.", PRINTABLE_NAME),
    text_query(
        "action",
        "Only this action.",
        {"type": "string", "pattern": f"^(|{'|'.join(sorted(AUDIT_ACTIONS))})$"},
    ),  # fmt: skip
    text_query("session", "Only this session's actions.", PRINTABLE_NAME),
    text_query("since", "From this time on (2026-09-17T10:00:00Z), or this far back (90m).", SINCE),
]
