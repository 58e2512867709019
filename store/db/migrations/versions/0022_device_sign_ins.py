"""Device sign-ins (issue 44 point 2): an installed app's sign-in, kept while it is used.

Five nullable columns of ``api_web_sessions``; a browser tab's sign-in leaves them null. A device
sign-in has a public id (``device_id``: what lists show and revoke), a name its app gave, the
public key of a pair its app made and keeps (``device_key``: SPKI, base64url; the private half
never leaves the device), when it was last proven used (``last_used_at``), and the challenge its
next proof signs (``device_nonce``, a new one after each proof). A proof moves ``expires_at`` 30
days on, and renews the browser's secret: the one it replaced is still taken for a short while
(``previous_secret_hash``, with the CSRF proof its pages carry, ``previous_csrf``, until
``previous_until``), so that what was under way as the proof was made is not refused. A cookie
taken to another device cannot make a proof, and stops working after the device's next one.

Revision ID: 0022_device_sign_ins
"""

from alembic import op
from sqlalchemy import inspect

revision = "0022_device_sign_ins"
down_revision = "0021_push_told"
branch_labels = None
depends_on = None

COLUMNS = (
    "device_id",
    "device_name",
    "device_key",
    "last_used_at",
    "device_nonce",
    "previous_secret_hash",
    "previous_csrf",
    "previous_until",
)


def upgrade() -> None:
    # A store migrated again from an older revision may hold the columns already.
    held = {column["name"] for column in inspect(op.get_bind()).get_columns("api_web_sessions")}
    for name in COLUMNS:
        if name not in held:
            op.execute(f"ALTER TABLE api_web_sessions ADD COLUMN {name} TEXT")
    op.execute(
        "CREATE UNIQUE INDEX IF NOT EXISTS ix_api_web_sessions_device ON api_web_sessions"
        " (device_id) WHERE device_id IS NOT NULL"
    )
    op.execute(
        "CREATE INDEX IF NOT EXISTS ix_api_web_sessions_previous ON api_web_sessions"
        " (previous_secret_hash) WHERE previous_secret_hash IS NOT NULL"
    )


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
