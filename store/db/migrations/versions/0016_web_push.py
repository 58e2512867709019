"""Telling operators on their devices (issue 31): the server's VAPID keys, the browsers that
asked to be told, who has a page of the web console open, and what was told when.

- ``push_keys``: the VAPID key pair every server of the store signs pushes with, made once (the
  first server to need it inserts it; every other reads the same row). The private key never
  leaves the servers.
- ``push_subscriptions``: a browser's push subscription (its push service's endpoint, its
  public key and auth secret), owned by the sign-in that made it (``secret_hash`` of
  ``api_web_sessions``, and that sign-in's token): signing out or revoking the token removes it.
  ``kinds``: what it is told of (``needs_you``, ``turn_done``).
- ``push_presence``: until when a sign-in has a page of the console open and visible (the page
  says so while it is); no push goes to the devices of that sign-in's token meanwhile.
- ``push_sends``: when a session's news of a kind was last told to a receiver (the devices, or
  a webhook by its hash): the cooling period, kept once for every server of the store.

Revision ID: 0016_web_push
"""

from alembic import op

revision = "0016_web_push"
down_revision = "0015_reply_listeners"
branch_labels = None
depends_on = None

STATEMENTS = (
    "CREATE TABLE IF NOT EXISTS push_keys ("
    "name TEXT PRIMARY KEY, public_key TEXT NOT NULL, private_pem TEXT NOT NULL,"
    " created_at TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS push_subscriptions ("
    "id TEXT PRIMARY KEY, endpoint TEXT NOT NULL UNIQUE, p256dh TEXT NOT NULL,"
    " auth TEXT NOT NULL, secret_hash TEXT NOT NULL, token_hash TEXT NOT NULL,"
    " kinds TEXT NOT NULL, created_at TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS ix_push_subscriptions_secret ON push_subscriptions (secret_hash)",
    "CREATE INDEX IF NOT EXISTS ix_push_subscriptions_token ON push_subscriptions (token_hash)",
    "CREATE TABLE IF NOT EXISTS push_presence ("
    "secret_hash TEXT PRIMARY KEY, token_hash TEXT NOT NULL, visible_until TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS ix_push_presence_token ON push_presence (token_hash)",
    "CREATE TABLE IF NOT EXISTS push_sends ("
    "receiver TEXT NOT NULL, session_id TEXT NOT NULL, sent_at TEXT NOT NULL,"
    " PRIMARY KEY (receiver, session_id))",
)


def upgrade() -> None:
    for statement in STATEMENTS:
        op.execute(statement)


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
