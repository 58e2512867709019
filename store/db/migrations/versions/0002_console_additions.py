"""Our additions, all additive: the session version for compare-and-swap, persisted idempotency
keys, a timestamp sort key on PostgreSQL, and indexes for every order and filter the product uses.

Self-contained: the SQL it runs is written here, as it was at this revision, so a later change
elsewhere cannot change what this migration creates.

Revision ID: 0002_console_additions
"""

from collections.abc import Callable

from alembic import op
from sqlalchemy import Connection, inspect, text

revision = "0002_console_additions"
down_revision = "0001_reference_baseline"
branch_labels = None
depends_on = None

# From this many rows on, a table's indexes are reported one by one as they are built.
LARGE_TABLE_ROWS = 10_000

# The PostgreSQL twin of SQLite's julianday(): NULL for text it cannot read, UTC otherwise.
# Declared IMMUTABLE so it can back an index; every branch supplies an explicit zone, so the
# result does not depend on the session's TimeZone setting.
PG_TS_KEY_FUNCTION = r"""
CREATE OR REPLACE FUNCTION rt_ts_key(t text) RETURNS timestamp
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
  IF t ~ '^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|z|[+-]\d{2}(:?\d{2})?)$' THEN
    RETURN t::timestamptz AT TIME ZONE 'UTC';
  ELSIF t ~ '^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?$' THEN
    RETURN (t || 'Z')::timestamptz AT TIME ZONE 'UTC';
  END IF;
  RETURN NULL;
EXCEPTION WHEN others THEN
  RETURN NULL;
END
$$;
"""

# The workspace_id in a session's metadata, NULL when there is none or it is not JSON.
PG_METADATA_WORKSPACE_FUNCTION = r"""
CREATE OR REPLACE FUNCTION rt_metadata_workspace(t text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
  IF t IS NULL OR t NOT LIKE '%workspace_id%' THEN
    RETURN NULL;
  END IF;
  RETURN (t::jsonb) ->> 'workspace_id';
EXCEPTION WHEN others THEN
  RETURN NULL;
END
$$;
"""

# A session's workspace (its column, else workspace_id in its metadata) as the workspace index
# holds it: store.sqlfuncs.effective_workspace compiles to the same text, so queries use it.
SQLITE_EFFECTIVE_WORKSPACE = (
    "COALESCE(workspace_id, CASE WHEN json_valid(metadata_json) "
    "THEN json_extract(metadata_json, '$.workspace_id') END)"
)
PG_EFFECTIVE_WORKSPACE = "COALESCE(workspace_id, rt_metadata_workspace(metadata_json))"


def _indexes(key: str, workspace: str) -> dict[str, str]:
    """Index name → target; ``key`` formats the timestamp sort-key expression."""
    return {
        "ix_agent_sessions_started": f"agent_sessions(({key.format('started_at')}), id)",
        # Each filter column leads an index that continues in list order, so a filtered page
        # is an index range, not a scan of the whole table.
        "ix_agent_sessions_status": f"agent_sessions(status, ({key.format('started_at')}), id)",
        "ix_agent_sessions_agent": f"agent_sessions(agent_id, ({key.format('started_at')}), id)",
        "ix_agent_sessions_run": f"agent_sessions(run_id, ({key.format('started_at')}), id)",
        "ix_agent_sessions_last_seen": f"agent_sessions(({key.format('last_seen_at')}))",
        "ix_agent_session_events_session": "agent_session_events(session_id, id)",
        "ix_events_run": "events(run_id, id)",
        "ix_tasks_agent": "tasks(assigned_agent_id)",
        "ix_claims_agent": "claims(agent_id, status)",
        "ix_proposals_agent": "proposals(agent_id)",
        "ix_decisions_created": f"decisions(({key.format('created_at')}))",
        "ix_agent_sessions_workspace": (
            f"agent_sessions(({workspace}), ({key.format('started_at')}), id)"
        ),
    }


def upgrade() -> None:
    bind = op.get_bind()
    postgres = bind.dialect.name == "postgresql"
    session_columns = {column["name"] for column in inspect(bind).get_columns("agent_sessions")}
    if "version" not in session_columns:
        op.execute("ALTER TABLE agent_sessions ADD COLUMN version INTEGER NOT NULL DEFAULT 0")
    op.execute(
        "CREATE TABLE IF NOT EXISTS idempotency_keys (key TEXT PRIMARY KEY, action TEXT NOT NULL,"
        " session_id TEXT NOT NULL, outcome TEXT NOT NULL, created_at TEXT NOT NULL)"
    )
    if postgres:
        op.execute(PG_TS_KEY_FUNCTION)
        op.execute(PG_METADATA_WORKSPACE_FUNCTION)
    key = "rt_ts_key({})" if postgres else "julianday({})"
    workspace = PG_EFFECTIVE_WORKSPACE if postgres else SQLITE_EFFECTIVE_WORKSPACE
    indexes = _indexes(key, workspace)
    # On a large reference store each index takes a while: say which one is being built (on a
    # new or small store they take no time, and a new user sees one line, not a dozen).
    report = _progress()
    large: dict[str, bool] = {}
    for number, (name, target) in enumerate(indexes.items(), start=1):
        table = target.split("(")[0]
        if table not in large:
            large[table] = _holds_at_least(bind, table, LARGE_TABLE_ROWS)
        if large[table]:
            report(f"  index {number} of {len(indexes)}: {name} on {table}…")
        op.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {target}")


def _progress() -> Callable[[str], None]:
    """The progress callback the store's opener handed Alembic (store.schema), or one that
    ignores what it is told."""
    config = op.get_context().config
    report = config.attributes.get("progress") if config is not None else None
    return report if report is not None else (lambda _message: None)


def _holds_at_least(bind: Connection, table: str, rows: int) -> bool:
    """Whether the table has ``rows`` rows, reading no more than that many."""
    found = bind.execute(
        text(f"SELECT count(*) FROM (SELECT 1 FROM {table} LIMIT :rows) AS sample"),
        {"rows": rows},
    ).scalar()
    return bool(found == rows)


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
