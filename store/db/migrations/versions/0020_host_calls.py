"""Operations for a host held by another server of the store (issue 41 point 2): ``host_calls``.

A server asked for something only a host can do, whose host another server of the same store
holds, writes the call here; the server that holds the host takes it (``taken_by``), asks its
host over its link, and writes the answer; the first server reads it. A call is kept until it
is answered or its time is over, then pruned. On PostgreSQL every write notifies the store's
change channel (migration 0005's function), so both servers are woken, not polling; a new call
also notifies ``roundtable_host_calls``, which a host on the store itself listens on.

Revision ID: 0020_host_calls
"""

from alembic import op

revision = "0020_host_calls"
down_revision = "0019_hosts"
branch_labels = None
depends_on = None

CREATE_TABLE = (
    "CREATE TABLE IF NOT EXISTS host_calls ("
    "id TEXT PRIMARY KEY, host TEXT NOT NULL, op TEXT NOT NULL, args_json TEXT NOT NULL,"
    " asked_at TEXT NOT NULL, expires_at TEXT NOT NULL, taken_by TEXT, answer_json TEXT,"
    " answered_at TEXT)"
)
# A host on the store itself listens on its own channel (store.db.notifications; tests check
# they agree): a call wakes it, a fleet's heartbeats do not.
PG_FUNCTION = """
CREATE OR REPLACE FUNCTION rt_notify_host_call() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('roundtable_host_calls', '');
  RETURN NULL;
END $$
"""
# The open calls alone, oldest first: what a server holding hosts looks at.
CREATE_INDEX = (
    "CREATE INDEX IF NOT EXISTS ix_host_calls_open ON host_calls (asked_at)"
    " WHERE answered_at IS NULL AND taken_by IS NULL"
)


def upgrade() -> None:
    op.execute(CREATE_TABLE)
    op.execute(CREATE_INDEX)
    if op.get_bind().dialect.name == "postgresql":
        op.execute(PG_FUNCTION)
        op.execute("DROP TRIGGER IF EXISTS rt_notify_host_calls ON host_calls")
        op.execute(
            "CREATE TRIGGER rt_notify_host_calls AFTER INSERT OR UPDATE ON host_calls "
            "FOR EACH STATEMENT EXECUTE FUNCTION rt_notify_change()"
        )
        op.execute("DROP TRIGGER IF EXISTS rt_notify_host_call_asked ON host_calls")
        op.execute(
            "CREATE TRIGGER rt_notify_host_call_asked AFTER INSERT ON host_calls "
            "FOR EACH STATEMENT EXECUTE FUNCTION rt_notify_host_call()"
        )


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
