"""A session row changed by a writer that knows nothing of ``version`` still moves its version.

The reference system (and any other writer) updates ``agent_sessions`` without touching our
``version`` column, so without this an operator's compare-and-swap could not see its changes. Our
own writes always set ``version = version + 1`` and are left alone; an update that changes no
column (an identical re-import) does not count as a change.

Revision ID: 0003_session_version_trigger
"""

from alembic import op

revision = "0003_session_version_trigger"
down_revision = "0002_console_additions"
branch_labels = None
depends_on = None

# Every reference column of agent_sessions: a change to any of them is a change to the row.
_COLUMNS = (
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

SQLITE_TRIGGER = f"""
CREATE TRIGGER IF NOT EXISTS rt_agent_sessions_version
AFTER UPDATE ON agent_sessions FOR EACH ROW
WHEN NEW.version = OLD.version AND ({" OR ".join(f"NEW.{c} IS NOT OLD.{c}" for c in _COLUMNS)})
BEGIN
  UPDATE agent_sessions SET version = OLD.version + 1 WHERE id = NEW.id;
END
"""

PG_FUNCTION = """
CREATE OR REPLACE FUNCTION rt_agent_sessions_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.version = OLD.version AND NEW IS DISTINCT FROM OLD THEN
    NEW.version := OLD.version + 1;
  END IF;
  RETURN NEW;
END
$$;
"""

PG_TRIGGER = (
    "CREATE TRIGGER rt_agent_sessions_version BEFORE UPDATE ON agent_sessions "
    "FOR EACH ROW EXECUTE FUNCTION rt_agent_sessions_version()"
)


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(PG_FUNCTION)
        op.execute("DROP TRIGGER IF EXISTS rt_agent_sessions_version ON agent_sessions")
        op.execute(PG_TRIGGER)
    else:
        op.execute(SQLITE_TRIGGER)


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
