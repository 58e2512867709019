"""Sessions counted by status in a table of their own, kept by triggers on ``agent_sessions``.

The console's header shows the count of every status. Counting a million rows takes ~50 ms on
SQLite and ~100 ms on PostgreSQL after every change; this table answers in one read of a handful
of rows. Triggers keep it, so writers that know nothing of it (the reference system) keep it true
too, in their own transaction. A status whose sessions are all gone keeps its row at 0.

On PostgreSQL, one transaction that changes many sessions would update the same count row as
many times, and each update walks the row's versions the transaction has made so far: a bulk
write (an import, the demo) turns the triggers off for itself and counts once at its end.

On SQLite the triggers avoid UPSERT, which SQLite only parses from 3.24 on: the reference
system's own SQLite library runs these triggers when it writes. On PostgreSQL an update that
moves a session between two statuses touches their rows in status order, so two such updates
never wait for each other in opposite orders.

Revision ID: 0004_session_status_counts
"""

from alembic import op

revision = "0004_session_status_counts"
down_revision = "0003_session_version_trigger"
branch_labels = None
depends_on = None

CREATE_TABLE = (
    "CREATE TABLE IF NOT EXISTS session_status_counts "
    "(status TEXT PRIMARY KEY, sessions BIGINT NOT NULL DEFAULT 0)"
)


def _sqlite_add(row: str, amount: str) -> str:
    # No conflict clause: in a trigger it would give way to the outer statement's (an upsert's
    # ON CONFLICT turns INSERT OR IGNORE into a constraint failure).
    return (
        f"INSERT INTO session_status_counts (status, sessions) SELECT {row}.status, 0"
        f" WHERE NOT EXISTS (SELECT 1 FROM session_status_counts WHERE status = {row}.status);"
        f" UPDATE session_status_counts SET sessions = sessions {amount} 1"
        f" WHERE status = {row}.status;"
    )


SQLITE_TRIGGERS = (
    f"""CREATE TRIGGER IF NOT EXISTS rt_session_status_insert
AFTER INSERT ON agent_sessions FOR EACH ROW
BEGIN {_sqlite_add("NEW", "+")} END""",
    f"""CREATE TRIGGER IF NOT EXISTS rt_session_status_delete
AFTER DELETE ON agent_sessions FOR EACH ROW
BEGIN {_sqlite_add("OLD", "-")} END""",
    f"""CREATE TRIGGER IF NOT EXISTS rt_session_status_update
AFTER UPDATE OF status ON agent_sessions FOR EACH ROW WHEN NEW.status IS NOT OLD.status
BEGIN {_sqlite_add("OLD", "-")} {_sqlite_add("NEW", "+")} END""",
)

PG_FUNCTION = """
CREATE OR REPLACE FUNCTION rt_session_status_add(status_name TEXT, amount BIGINT) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO session_status_counts AS counts (status, sessions) VALUES (status_name, amount)
  ON CONFLICT (status) DO UPDATE SET sessions = counts.sessions + EXCLUDED.sessions
$$;

CREATE OR REPLACE FUNCTION rt_session_status_count() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('roundtable.bulk_session_writes', true) = 'on' THEN
    RETURN NULL;  -- a bulk write counts once, at its end (store.sessions.bulk_session_writes)
  END IF;
  IF TG_OP = 'INSERT' THEN
    PERFORM rt_session_status_add(NEW.status, 1);
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM rt_session_status_add(OLD.status, -1);
  ELSIF NEW.status IS DISTINCT FROM OLD.status THEN
    IF OLD.status < NEW.status THEN
      PERFORM rt_session_status_add(OLD.status, -1);
      PERFORM rt_session_status_add(NEW.status, 1);
    ELSE
      PERFORM rt_session_status_add(NEW.status, 1);
      PERFORM rt_session_status_add(OLD.status, -1);
    END IF;
  END IF;
  RETURN NULL;
END
$$;
"""

PG_TRIGGER = (
    "CREATE TRIGGER rt_session_status_count AFTER INSERT OR DELETE OR UPDATE OF status "
    "ON agent_sessions FOR EACH ROW EXECUTE FUNCTION rt_session_status_count()"
)

# Run after the triggers exist, in the same transaction: on PostgreSQL, creating a trigger locks
# out writers until the commit, so no change falls between this count and the triggers.
SEED_COUNTS = (
    "INSERT INTO session_status_counts (status, sessions) "
    "SELECT status, count(*) FROM agent_sessions GROUP BY status"
)


def upgrade() -> None:
    op.execute(CREATE_TABLE)
    if op.get_bind().dialect.name == "postgresql":
        op.execute(PG_FUNCTION)
        op.execute("DROP TRIGGER IF EXISTS rt_session_status_count ON agent_sessions")
        op.execute(PG_TRIGGER)
    else:
        for trigger in SQLITE_TRIGGERS:
            op.execute(trigger)
    op.execute("DELETE FROM session_status_counts")
    op.execute(SEED_COUNTS)


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
