"""What was told to whom (issue 44): ``push_told``, one row per receiver and piece of news.

A receiver is a device (``push:`` its subscription's id) or a webhook (``webhook:`` its URL's
hash). A row is written when the news leaves; ``answered_at`` when the session no longer holds
that news (the request decided, the reply sent, the wait over: the device's notice is closed and
the webhook told how), ``again_at`` when a wait still unanswered was told once more. ``about``
names the wait or the turn told (its start, or the turn's words), so that a later wait of the
same session is news of its own. A device's page lists what it was told in the last day.

Revision ID: 0021_push_told
"""

from alembic import op

revision = "0021_push_told"
down_revision = "0020_host_calls"
branch_labels = None
depends_on = None

STATEMENTS = (
    "CREATE TABLE IF NOT EXISTS push_told ("
    "id TEXT PRIMARY KEY, receiver TEXT NOT NULL, session_id TEXT NOT NULL,"
    " kind TEXT NOT NULL, about TEXT NOT NULL, told_at TEXT NOT NULL, title TEXT NOT NULL,"
    " body TEXT NOT NULL, url TEXT NOT NULL, again_at TEXT, answered_at TEXT,"
    " answered_how TEXT)",
    # What is still open, by session (each change of a session looks here) and by age (what is
    # told again); what a device was told, newest first.
    "CREATE INDEX IF NOT EXISTS ix_push_told_open ON push_told (session_id)"
    " WHERE answered_at IS NULL",
    "CREATE INDEX IF NOT EXISTS ix_push_told_waits_unanswered ON push_told (told_at)"
    " WHERE answered_at IS NULL AND again_at IS NULL AND kind = 'needs_you'",
    "CREATE INDEX IF NOT EXISTS ix_push_told_receiver ON push_told (receiver, told_at)",
)


def upgrade() -> None:
    for statement in STATEMENTS:
        op.execute(statement)


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
