"""Sort keys a list can skip through: the console's scrollbar reaches any place of the list (a
thumb dragged to the middle reads the rows at that position), so a read at an offset must walk an
index without computing anything per row it passes.

- SQLite: the last-seen index gains the id, so a position in that order is one index walk (the
  started, status, agent, run and workspace indexes have it already; ``julianday`` is read from
  the index, never computed for the rows passed).
- PostgreSQL: ``rt_ts_key`` is PL/pgSQL with an exception block, and PostgreSQL computes an
  ORDER BY expression for every row an OFFSET passes (~4 µs each, 2 s at half a million rows).
  The two keys the list sorts by become stored generated columns, ``rt_started_key`` and
  ``rt_seen_key``, computed once when a row is written; the list's indexes are rebuilt on them
  under the same names. The reference's columns keep their names, types and values.
- PostgreSQL: the version trigger compared whole rows, and a BEFORE trigger sees the generated
  columns not yet computed (as NULL): it now compares the reference's columns, as SQLite's does.
- PostgreSQL: the two PL/pgSQL functions start a subtransaction (their exception block) on every
  call, which a parallel plan refuses ("cannot start subtransactions during a parallel
  operation"): they are marked PARALLEL UNSAFE, as they are.

Self-contained: the SQL it runs is written here, so a later change elsewhere cannot change what
this migration creates.

Revision ID: 0006_list_positions
"""

from collections.abc import Callable

from alembic import op
from sqlalchemy import Connection, text

revision = "0006_list_positions"
down_revision = "0005_change_notifications"
branch_labels = None
depends_on = None

LARGE_TABLE_ROWS = 10_000
PG_WORKSPACE = "COALESCE(workspace_id, rt_metadata_workspace(metadata_json))"
PG_GENERATED_KEYS = {
    "rt_started_key": "rt_ts_key(started_at)",
    "rt_seen_key": "rt_ts_key(last_seen_at)",
}
PG_INDEXES = {
    "ix_agent_sessions_started": "agent_sessions(rt_started_key, id)",
    "ix_agent_sessions_status": "agent_sessions(status, rt_started_key, id)",
    "ix_agent_sessions_agent": "agent_sessions(agent_id, rt_started_key, id)",
    "ix_agent_sessions_run": "agent_sessions(run_id, rt_started_key, id)",
    "ix_agent_sessions_workspace": f"agent_sessions(({PG_WORKSPACE}), rt_started_key, id)",
    "ix_agent_sessions_last_seen": "agent_sessions(rt_seen_key, id)",
}
# Every reference column of agent_sessions: a change to any of them is a change to the row.
REFERENCE_COLUMNS = (
    "id",
    "agent_id",
    "run_id",
    "adapter",
    "provider",
    "model",
    "external_session_id",
    "external_resume_command",
    "working_directory",
    "mcp_socket",
    "status",
    "started_at",
    "last_seen_at",
    "ended_at",
    "metadata_json",
    "workspace_id",
)
PG_VERSION_FUNCTION = f"""
CREATE OR REPLACE FUNCTION rt_agent_sessions_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.version = OLD.version AND
     ({", ".join(f"NEW.{c}" for c in REFERENCE_COLUMNS)})
     IS DISTINCT FROM ({", ".join(f"OLD.{c}" for c in REFERENCE_COLUMNS)}) THEN
    NEW.version := OLD.version + 1;
  END IF;
  RETURN NEW;
END
$$;
"""
SQLITE_INDEXES = {
    "ix_agent_sessions_last_seen": "agent_sessions((julianday(last_seen_at)), id)",
}


def _progress() -> Callable[[str], None]:
    """The progress callback the store's opener handed Alembic (a first open of a large store
    says what it is doing), or nothing."""
    config = op.get_context().config
    report = config.attributes.get("progress") if config is not None else None
    return report if callable(report) else (lambda _message: None)


def _large(bind: Connection) -> bool:
    found = bind.execute(
        text("SELECT count(*) FROM (SELECT 1 FROM agent_sessions LIMIT :rows) AS sample"),
        {"rows": LARGE_TABLE_ROWS},
    ).scalar()
    return bool(found == LARGE_TABLE_ROWS)


def upgrade() -> None:
    bind = op.get_bind()
    report = _progress() if _large(bind) else (lambda _message: None)
    if bind.dialect.name != "postgresql":
        for name, target in SQLITE_INDEXES.items():
            report(f"  index {name} on agent_sessions…")
            op.execute(f"DROP INDEX IF EXISTS {name}")
            op.execute(f"CREATE INDEX {name} ON {target}")
        return
    op.execute("ALTER FUNCTION rt_ts_key(text) PARALLEL UNSAFE")
    op.execute("ALTER FUNCTION rt_metadata_workspace(text) PARALLEL UNSAFE")
    op.execute(PG_VERSION_FUNCTION)
    report("  sort-key columns of agent_sessions…")
    additions = ", ".join(
        f"ADD COLUMN IF NOT EXISTS {column} timestamp GENERATED ALWAYS AS ({expression}) STORED"
        for column, expression in PG_GENERATED_KEYS.items()
    )
    op.execute(f"ALTER TABLE agent_sessions {additions}")
    for name, target in PG_INDEXES.items():
        report(f"  index {name} on agent_sessions…")
        op.execute(f"DROP INDEX IF EXISTS {name}")
        op.execute(f"CREATE INDEX {name} ON {target}")


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
