"""Who did it (issue 11 points 4 and 5): the operator and the database role of each action.

- ``agent_session_events.actor``: the operator name a lifecycle action was given (it was in the
  payload alone). Set for operator actions only (pause, stop, resume, terminate and the
  operator's heartbeat); NULL for what agents write. Rows written before this migration get it
  from their payload. The audit trail is exactly the rows that have one.
- ``agent_session_events.db_user``: on PostgreSQL the role that wrote the row, recorded by the
  database: the column defaults to ``current_user``, and a trigger puts it back when an insert
  or update names another value, so no client can forge it. NULL on SQLite (no roles).
- Indexes for the audit trail, newest first: partial, on the rows that have an actor, by id,
  by actor and by event type.

Both columns are nullable additions: the reference's code keeps reading and writing the table.
Self-contained: the SQL it runs is written here.

Revision ID: 0009_audit_trail
"""

from collections.abc import Callable

from alembic import op
from sqlalchemy import Connection, inspect, text

revision = "0009_audit_trail"
down_revision = "0008_session_groups"
branch_labels = None
depends_on = None

LARGE_TABLE_ROWS = 10_000
LIFECYCLE_EVENTS = "('paused', 'stopped', 'resuming', 'terminated', 'heartbeat')"

AUDIT_INDEXES = {
    "ix_agent_session_events_audit": "agent_session_events(id)",
    "ix_agent_session_events_audit_actor": "agent_session_events(actor, id)",
    "ix_agent_session_events_audit_type": "agent_session_events(event_type, id)",
}
AUDIT_ROWS = "actor IS NOT NULL"

PG_FUNCTIONS = """
CREATE OR REPLACE FUNCTION rt_history_db_user() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    NEW.db_user := OLD.db_user;
  ELSE
    NEW.db_user := current_user;
  END IF;
  RETURN NEW;
END
$$;
CREATE OR REPLACE FUNCTION rt_try_jsonb(value text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  RETURN value::jsonb;
EXCEPTION WHEN others THEN
  RETURN NULL;
END
$$;
"""
# The default records the role at no cost; the triggers fire only for a row that names another.
PG_TRIGGERS = (
    "DROP TRIGGER IF EXISTS rt_history_db_user_insert ON agent_session_events",
    "CREATE TRIGGER rt_history_db_user_insert BEFORE INSERT ON agent_session_events"
    " FOR EACH ROW WHEN (NEW.db_user IS DISTINCT FROM CURRENT_USER)"
    " EXECUTE FUNCTION rt_history_db_user()",
    "DROP TRIGGER IF EXISTS rt_history_db_user_update ON agent_session_events",
    "CREATE TRIGGER rt_history_db_user_update BEFORE UPDATE ON agent_session_events"
    " FOR EACH ROW WHEN (NEW.db_user IS DISTINCT FROM OLD.db_user)"
    " EXECUTE FUNCTION rt_history_db_user()",
)

SQLITE_BACKFILL = (
    "UPDATE agent_session_events SET actor = json_extract(payload_json, '$.actor')"
    f" WHERE event_type IN {LIFECYCLE_EVENTS} AND payload_json LIKE '%\"actor\"%'"
    " AND json_valid(payload_json) AND json_type(payload_json, '$.actor') = 'text'"
)
PG_BACKFILL = (
    "UPDATE agent_session_events SET actor = rt_try_jsonb(payload_json) ->> 'actor'"
    f" WHERE event_type IN {LIFECYCLE_EVENTS} AND payload_json LIKE '%\"actor\"%'"
    " AND jsonb_typeof(rt_try_jsonb(payload_json) -> 'actor') = 'string'"
)


def _progress() -> Callable[[str], None]:
    config = op.get_context().config
    report = config.attributes.get("progress") if config is not None else None
    return report if callable(report) else (lambda _message: None)


def _large(bind: Connection) -> bool:
    found = bind.execute(
        text("SELECT count(*) FROM (SELECT 1 FROM agent_session_events LIMIT :rows) AS sample"),
        {"rows": LARGE_TABLE_ROWS},
    ).scalar()
    return bool(found == LARGE_TABLE_ROWS)


def upgrade() -> None:
    bind = op.get_bind()
    postgres = bind.dialect.name == "postgresql"
    report = _progress() if _large(bind) else (lambda _message: None)
    columns = {column["name"] for column in inspect(bind).get_columns("agent_session_events")}
    if "actor" not in columns:
        op.execute("ALTER TABLE agent_session_events ADD COLUMN actor TEXT")
    if "db_user" not in columns:
        op.execute("ALTER TABLE agent_session_events ADD COLUMN db_user TEXT")
    if postgres:
        # Set apart from ADD COLUMN, which would stamp the rows already there with the role
        # running this migration: who wrote those is not known.
        op.execute("ALTER TABLE agent_session_events ALTER COLUMN db_user SET DEFAULT CURRENT_USER")
        op.execute(PG_FUNCTIONS)
        for statement in PG_TRIGGERS:
            op.execute(statement)
    report("  the operators' actions in the session history…")
    op.execute(PG_BACKFILL if postgres else SQLITE_BACKFILL)
    if postgres:
        op.execute("DROP FUNCTION rt_try_jsonb(text)")
    for name, target in AUDIT_INDEXES.items():
        report(f"  index {name}…")
        op.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {target} WHERE {AUDIT_ROWS}")


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
