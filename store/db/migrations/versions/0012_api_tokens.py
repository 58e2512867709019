"""Identities for ``roundtable serve`` (issue 20): ``api_tokens``.

A token is shown once, when it is made; the store keeps only its SHA-256 (``token_hash``,
unique: a bearer is found by it), its name (the actor the server records for what the token
does), its role (``viewer``, ``operator`` or ``agent``), the workspaces it reaches
(``workspaces_json``, a JSON array; NULL: every workspace), the agent an agent token acts for,
and when it was made, expires and was revoked. A revoked token keeps its row: the store still
holds a token, so a server never falls back to the reference's header mode by a revocation.

Revision ID: 0012_api_tokens
"""

from alembic import op

revision = "0012_api_tokens"
down_revision = "0011_calm_attention"
branch_labels = None
depends_on = None

CREATE_TABLE = (
    "CREATE TABLE IF NOT EXISTS api_tokens ("
    "name TEXT PRIMARY KEY, role TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE,"
    " workspaces_json TEXT, agent_id TEXT, created_at TEXT NOT NULL, expires_at TEXT,"
    " revoked_at TEXT)"
)


def upgrade() -> None:
    op.execute(CREATE_TABLE)


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
