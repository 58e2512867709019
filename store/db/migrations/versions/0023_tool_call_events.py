"""Tool calls as events (issue 46 point 1): an index of ``events`` by run.

Every tool an agent runs is now an ``events`` row of its session's run (``tool.call``,
``store.writes.tool_calls``), and a session's tool calls are read a page at a time by run
(``store.reads.projections.tool_calls``). The reference keeps no index on ``events``: without one
a page costs the table. An index alone, which the reference's migrations leave be.

Revision ID: 0023_tool_call_events
"""

from alembic import op

revision = "0023_tool_call_events"
down_revision = "0022_device_sign_ins"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE INDEX IF NOT EXISTS ix_events_run ON events (run_id, id)")


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
