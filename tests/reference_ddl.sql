-- The reference Roundtable system's own SQLite schema, written by hand from its store's facts
-- (docs/reference/roundtable.md#the-store): its tables, columns and defaults, and its one index
-- per table pair.
-- No version column, no idempotency_keys, no alembic_version: this is what the Go system leaves.

CREATE TABLE workspaces (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    root_path TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL DEFAULT 'active',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    display_name TEXT,
    root_alias TEXT,
    canonical_repository_identity TEXT,
    default_branch TEXT,
    last_opened_at TEXT,
    revision INTEGER NOT NULL DEFAULT 1
);

CREATE TABLE agents (
    id TEXT PRIMARY KEY,
    role TEXT NOT NULL,
    name TEXT NOT NULL,
    adapter TEXT NOT NULL,
    command TEXT,
    status TEXT NOT NULL DEFAULT 'idle',
    is_enabled INTEGER NOT NULL DEFAULT 1,
    created_at TEXT
);

CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    goal TEXT,
    status TEXT NOT NULL DEFAULT 'active',
    started_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
    ended_at TEXT,
    metadata_json TEXT,
    workspace_id TEXT
);

CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    body_md TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'open',
    priority INTEGER NOT NULL DEFAULT 100,
    risk TEXT NOT NULL DEFAULT 'normal',
    assigned_agent_id TEXT,
    created_at TEXT,
    updated_at TEXT
);

CREATE TABLE claims (
    id TEXT PRIMARY KEY,
    resource_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    claim_type TEXT NOT NULL,
    base_hash TEXT,
    status TEXT NOT NULL DEFAULT 'active',
    expires_at TEXT NOT NULL,
    heartbeat_at TEXT,
    renewable INTEGER NOT NULL DEFAULT 1,
    resume_policy TEXT NOT NULL DEFAULT 'hold',
    rationale_md TEXT,
    created_at TEXT,
    workspace_id TEXT
);

CREATE TABLE proposals (
    id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    title TEXT NOT NULL,
    summary_md TEXT NOT NULL,
    patch_path TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    risk TEXT NOT NULL DEFAULT 'normal',
    created_at TEXT,
    workspace_id TEXT,
    proposer_session_id TEXT,
    updated_at TEXT
);

CREATE TABLE decisions (
    id TEXT PRIMARY KEY,
    proposal_id TEXT,
    task_id TEXT,
    decision TEXT NOT NULL,
    rationale_md TEXT NOT NULL,
    decided_by TEXT NOT NULL,
    created_at TEXT
);

CREATE TABLE events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    type TEXT NOT NULL,
    actor_id TEXT,
    task_id TEXT,
    payload_json TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE agent_sessions (
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    adapter TEXT NOT NULL,
    provider TEXT,
    model TEXT,
    external_session_id TEXT,
    external_resume_command TEXT,
    working_directory TEXT NOT NULL,
    mcp_socket TEXT,
    status TEXT NOT NULL DEFAULT 'active',
    started_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
    last_seen_at TEXT,
    ended_at TEXT,
    metadata_json TEXT,
    workspace_id TEXT
);

CREATE TABLE agent_session_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    payload_json TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);

CREATE INDEX idx_agent_sessions_workspace_status ON agent_sessions(workspace_id, status);
CREATE INDEX idx_claims_workspace_status ON claims(workspace_id, status);
CREATE INDEX idx_proposals_workspace_status ON proposals(workspace_id, status);
