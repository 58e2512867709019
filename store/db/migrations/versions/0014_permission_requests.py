"""Permission requests an agent asks and a human answers (issue 30): ``permission_requests``.

A request belongs to a session. It keeps the tool, its input (redacted, bounded: ``input_cut``
says it was cut; ``input_hidden`` that redaction hid parts of it, so what is shown is not all the
agent would run), the agent's own suggestions, what can be answered from here (``answers``: the
decisions the agent's hook protocol can deliver), when it was asked and until when its hook
waits, its state (pending, allowed, denied, expired, withdrawn), who decided, when and with what
message, and when the hook delivered the decision. Pending requests are found along a partial
index; a session's requests along ``(session_id, asked_at)``. On PostgreSQL a change notifies as
every table the console shows does (migration 0005): a waiting hook and the console wake on it.

Revision ID: 0014_permission_requests
"""

from alembic import op

revision = "0014_permission_requests"
down_revision = "0013_web_sign_ins"
branch_labels = None
depends_on = None

CREATE_TABLE = (
    "CREATE TABLE IF NOT EXISTS permission_requests ("
    "id TEXT PRIMARY KEY, session_id TEXT NOT NULL, agent TEXT NOT NULL, tool_name TEXT NOT NULL,"
    " tool_input_json TEXT NOT NULL, input_cut INTEGER NOT NULL DEFAULT 0,"
    " input_hidden INTEGER NOT NULL DEFAULT 0, suggestions_json TEXT,"
    " answers TEXT NOT NULL, reason TEXT NOT NULL, asked_at TEXT NOT NULL,"
    " expires_at TEXT NOT NULL, state TEXT NOT NULL, decided_by TEXT, decided_at TEXT,"
    " message TEXT, accepted_suggestion INTEGER, delivered_at TEXT, hook_host TEXT,"
    " hook_pid INTEGER)"
)
INDEXES = (
    "CREATE INDEX IF NOT EXISTS ix_permission_requests_session"
    " ON permission_requests (session_id, asked_at)",
    "CREATE INDEX IF NOT EXISTS ix_permission_requests_pending"
    " ON permission_requests (asked_at) WHERE state = 'pending'",
)


def upgrade() -> None:
    op.execute(CREATE_TABLE)
    for statement in INDEXES:
        op.execute(statement)
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS rt_notify_permission_requests ON permission_requests")
        op.execute(
            "CREATE TRIGGER rt_notify_permission_requests AFTER INSERT OR UPDATE OR DELETE OR "
            "TRUNCATE ON permission_requests FOR EACH STATEMENT EXECUTE FUNCTION rt_notify_change()"
        )


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
