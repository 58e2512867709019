"""The reference system's tables, created only where they are missing.

A database written by the reference already has them and is left exactly as it is; a new database
gets the same tables, columns, types and defaults.

Revision ID: 0001_reference_baseline
"""

from alembic import op
from sqlalchemy import inspect

revision = "0001_reference_baseline"
down_revision = None
branch_labels = None
depends_on = None

# {serial} is the auto-incrementing integer key of each dialect.
REFERENCE_TABLES: dict[str, str] = {
    "workspaces": """
        id TEXT PRIMARY KEY, name TEXT NOT NULL, root_path TEXT NOT NULL UNIQUE,
        status TEXT NOT NULL DEFAULT 'active', created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
        display_name TEXT, root_alias TEXT, canonical_repository_identity TEXT,
        default_branch TEXT, last_opened_at TEXT, revision INTEGER NOT NULL DEFAULT 1""",
    "agents": """
        id TEXT PRIMARY KEY, role TEXT NOT NULL, name TEXT NOT NULL, adapter TEXT NOT NULL,
        command TEXT, status TEXT NOT NULL DEFAULT 'idle', is_enabled INTEGER NOT NULL DEFAULT 1,
        created_at TEXT""",
    "runs": """
        id TEXT PRIMARY KEY, goal TEXT, status TEXT NOT NULL DEFAULT 'active',
        started_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP, ended_at TEXT, metadata_json TEXT,
        workspace_id TEXT""",
    "tasks": """
        id TEXT PRIMARY KEY, title TEXT NOT NULL, body_md TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'open', priority INTEGER NOT NULL DEFAULT 100,
        risk TEXT NOT NULL DEFAULT 'normal', assigned_agent_id TEXT, created_at TEXT,
        updated_at TEXT""",
    "claims": """
        id TEXT PRIMARY KEY, resource_id TEXT NOT NULL, agent_id TEXT NOT NULL,
        task_id TEXT NOT NULL, claim_type TEXT NOT NULL, base_hash TEXT,
        status TEXT NOT NULL DEFAULT 'active', expires_at TEXT NOT NULL, heartbeat_at TEXT,
        renewable INTEGER NOT NULL DEFAULT 1, resume_policy TEXT NOT NULL DEFAULT 'hold',
        rationale_md TEXT, created_at TEXT, workspace_id TEXT""",
    "proposals": """
        id TEXT PRIMARY KEY, task_id TEXT NOT NULL, agent_id TEXT NOT NULL, title TEXT NOT NULL,
        summary_md TEXT NOT NULL, patch_path TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'pending',
        risk TEXT NOT NULL DEFAULT 'normal', created_at TEXT, workspace_id TEXT,
        proposer_session_id TEXT, updated_at TEXT""",
    "decisions": """
        id TEXT PRIMARY KEY, proposal_id TEXT, task_id TEXT, decision TEXT NOT NULL,
        rationale_md TEXT NOT NULL, decided_by TEXT NOT NULL, created_at TEXT""",
    "events": """
        id {serial}, run_id TEXT NOT NULL, type TEXT NOT NULL, actor_id TEXT, task_id TEXT,
        payload_json TEXT NOT NULL, created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP""",
    "agent_sessions": """
        id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, run_id TEXT NOT NULL, adapter TEXT NOT NULL,
        provider TEXT, model TEXT, external_session_id TEXT, external_resume_command TEXT,
        working_directory TEXT NOT NULL, mcp_socket TEXT, status TEXT NOT NULL DEFAULT 'active',
        started_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP, last_seen_at TEXT, ended_at TEXT,
        metadata_json TEXT, workspace_id TEXT""",
    "agent_session_events": """
        id {serial}, session_id TEXT NOT NULL, event_type TEXT NOT NULL,
        payload_json TEXT NOT NULL, created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP""",
}

REFERENCE_INDEXES: dict[str, str] = {
    "idx_agent_sessions_workspace_status": "agent_sessions(workspace_id, status)",
    "idx_claims_workspace_status": "claims(workspace_id, status)",
    "idx_proposals_workspace_status": "proposals(workspace_id, status)",
}


def upgrade() -> None:
    bind = op.get_bind()
    serial = (
        "SERIAL PRIMARY KEY"
        if bind.dialect.name == "postgresql"
        else "INTEGER PRIMARY KEY AUTOINCREMENT"
    )
    existing = set(inspect(bind).get_table_names())
    for table, columns in REFERENCE_TABLES.items():
        if table not in existing:
            op.execute(f"CREATE TABLE {table} ({columns.format(serial=serial)})")
            for name, target in REFERENCE_INDEXES.items():
                if target.startswith(f"{table}("):
                    op.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {target}")


def downgrade() -> None:
    raise NotImplementedError("The reference baseline is never removed.")
