"""A human's reply to an agent whose turn is done (issue 30): ``reply_listeners``.

When an agent's hook protocol can continue a finished turn (Claude Code's ``Stop`` hook), the
hook, installed with ``--reply-wait``, listens for a reply for that long: a row, ``listening``
until its ``expires_at``. An operator's reply sets it ``replied`` with the message (redacted) and
who sent it; the hook delivers it (``delivered``) or the row ends ``expired`` or ``withdrawn``
(the agent stopped the hook). A session's rows are found along ``(session_id, opened_at)``,
listening rows along a partial index. On PostgreSQL a change notifies (migration 0005): the
listening hook wakes on it.

Revision ID: 0015_reply_listeners
"""

from alembic import op

revision = "0015_reply_listeners"
down_revision = "0014_permission_requests"
branch_labels = None
depends_on = None

CREATE_TABLE = (
    "CREATE TABLE IF NOT EXISTS reply_listeners ("
    "id TEXT PRIMARY KEY, session_id TEXT NOT NULL, agent TEXT NOT NULL,"
    " opened_at TEXT NOT NULL, expires_at TEXT NOT NULL, state TEXT NOT NULL,"
    " message TEXT, replied_by TEXT, replied_at TEXT, delivered_at TEXT, ended_at TEXT,"
    " hook_host TEXT, hook_pid INTEGER)"
)
INDEXES = (
    "CREATE INDEX IF NOT EXISTS ix_reply_listeners_session"
    " ON reply_listeners (session_id, opened_at)",
    "CREATE INDEX IF NOT EXISTS ix_reply_listeners_listening"
    " ON reply_listeners (session_id) WHERE state = 'listening'",
)


def upgrade() -> None:
    op.execute(CREATE_TABLE)
    for statement in INDEXES:
        op.execute(statement)
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS rt_notify_reply_listeners ON reply_listeners")
        op.execute(
            "CREATE TRIGGER rt_notify_reply_listeners AFTER INSERT OR UPDATE OR DELETE OR "
            "TRUNCATE ON reply_listeners FOR EACH STATEMENT EXECUTE FUNCTION rt_notify_change()"
        )


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
