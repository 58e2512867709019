"""A page's presence in the order its pages said it (issue 40): ``push_presence.said_at``, the
moment (milliseconds, the browser's clock) the sign-in's latest page said whether it is in view.

Leaving a page of the console says "no longer in view" as the next page says "in view"; the two
posts race, and the older one arriving last left the operator pushed while they watched. A post
older than the one held is now ignored.

Revision ID: 0017_presence_order
"""

from alembic import op
from sqlalchemy import inspect

revision = "0017_presence_order"
down_revision = "0016_web_push"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A store migrated again from an older revision may hold the column already.
    columns = {column["name"] for column in inspect(op.get_bind()).get_columns("push_presence")}
    if "said_at" not in columns:
        op.execute("ALTER TABLE push_presence ADD COLUMN said_at BIGINT")


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
