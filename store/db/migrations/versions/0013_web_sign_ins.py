"""Signed-in browsers of the web console (issue 21): ``api_web_sessions``.

A browser's secret is shown once, in its cookie; the store keeps its SHA-256 (``secret_hash``),
the hash of the token it was opened with (``token_hash``: the browser is whoever that token is,
while it holds) and when it was made and expires (ordered by ``expires_at``, so the expired are
dropped along an index).

Revision ID: 0013_web_sign_ins
"""

from alembic import op

revision = "0013_web_sign_ins"
down_revision = "0012_api_tokens"
branch_labels = None
depends_on = None

CREATE_TABLE = (
    "CREATE TABLE IF NOT EXISTS api_web_sessions ("
    "secret_hash TEXT PRIMARY KEY, token_hash TEXT NOT NULL, created_at TEXT NOT NULL,"
    " expires_at TEXT NOT NULL)"
)
CREATE_INDEX = (
    "CREATE INDEX IF NOT EXISTS ix_api_web_sessions_expires ON api_web_sessions (expires_at)"
)


def upgrade() -> None:
    op.execute(CREATE_TABLE)
    op.execute(CREATE_INDEX)


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
