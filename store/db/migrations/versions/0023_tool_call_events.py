"""Tool calls (issue 46 point 1): indexes for reading a session's tool calls a page at a time.

Every tool an agent runs is now a ``tool.call`` row of its session's history
(``store.writes.tool_calls``), and the tool-calls projection reads those with the reference's
tool events of the session's run (``store.reads.projections.tool_calls``). A partial index finds
a session's tool calls among its heartbeats; the reference keeps no index on ``events``, so
without one a page of a run's events costs the table. Indexes alone, which the reference's
migrations leave be.

Revision ID: 0023_tool_call_events
"""

from alembic import op

revision = "0023_tool_call_events"
down_revision = "0022_device_sign_ins"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE INDEX IF NOT EXISTS ix_events_run ON events (run_id, id)")
    op.execute(
        "CREATE INDEX IF NOT EXISTS ix_agent_session_events_tool_calls ON agent_session_events"
        " (session_id, id) WHERE event_type = 'tool.call'"
    )


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
