"""On PostgreSQL, every committed change to a table the console shows sends a notification on
the ``roundtable_changes`` channel, so a console learns of it from one listening connection
instead of reading the tables again (issue 4 point 5). SQLite needs nothing: ``PRAGMA
data_version`` tells the same.

The triggers are per statement, and PostgreSQL folds identical notifications of one transaction
into one, so a write costs one notification however many rows and statements it has.

Revision ID: 0005_change_notifications
"""

from alembic import op

revision = "0005_change_notifications"
down_revision = "0004_session_status_counts"
branch_labels = None
depends_on = None

# session_status_counts is left out: its triggers fire only with a change to agent_sessions,
# which notifies already.
WATCHED_TABLES = (
    "agent_sessions",
    "agent_session_events",
    "claims",
    "events",
    "tasks",
    "proposals",
    "decisions",
    "agents",
    "runs",
    "workspaces",
)

# The channel store.notifications listens on (CHANNEL; tests/test_database.py checks they agree).
PG_FUNCTION = """
CREATE OR REPLACE FUNCTION rt_notify_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('roundtable_changes', '');
  RETURN NULL;
END
$$;
"""


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(PG_FUNCTION)
    for table in WATCHED_TABLES:
        trigger = f"rt_notify_{table}"
        op.execute(f"DROP TRIGGER IF EXISTS {trigger} ON {table}")
        op.execute(
            f"CREATE TRIGGER {trigger} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION rt_notify_change()"
        )


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
