"""The machines that run agents (issue 41 point 2): ``hosts``.

One row a host (``roundtable host run --name NAME``), written when it connects and kept after it
goes: what it found (its agents and their versions, tmux, the project directories it was
given), when it was first and last seen, and which connection holds it now (``connection_id``,
NULL while none does). A host is online while a connection holds it and it was seen within the
last ``store.hosts.registry.ONLINE_SECONDS``: a server that stops without saying so leaves its
hosts offline within that.

Revision ID: 0019_hosts
"""

from alembic import op

revision = "0019_hosts"
down_revision = "0018_session_host"
branch_labels = None
depends_on = None

CREATE_TABLE = (
    "CREATE TABLE IF NOT EXISTS hosts ("
    "name TEXT PRIMARY KEY, connection_id TEXT, connected_at TEXT, last_seen_at TEXT,"
    " first_seen_at TEXT NOT NULL, agents_json TEXT NOT NULL, projects_json TEXT NOT NULL,"
    " tmux TEXT, version TEXT, platform TEXT)"
)


def upgrade() -> None:
    op.execute(CREATE_TABLE)


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
