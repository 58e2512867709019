"""The machine a session runs on (issue 41 point 3): ``agent_sessions.host``.

A hook records it as it registers its session (``ROUNDTABLE_HOST``, else the machine's name); the
list filters on it (``--host``, ``?host=``) through its own index. A plain nullable column: the
reference's rows and writes are untouched, and a session it registers names no host.

Revision ID: 0018_session_host
"""

from alembic import op
from sqlalchemy import inspect

revision = "0018_session_host"
down_revision = "0017_presence_order"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A store migrated again from an older revision may hold the column already.
    columns = {column["name"] for column in inspect(op.get_bind()).get_columns("agent_sessions")}
    if "host" not in columns:
        op.execute("ALTER TABLE agent_sessions ADD COLUMN host TEXT")
    op.execute("CREATE INDEX IF NOT EXISTS ix_agent_sessions_host ON agent_sessions (host)")


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
