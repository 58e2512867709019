"""Sessions that wait for a human, and the attention order (issue 9).

- ``agent_sessions.waiting_reason`` and ``waiting_since``: an agent's heartbeat with
  ``--waiting REASON`` sets them; the next heartbeat without it, an end, a register or any
  lifecycle action clears them. Plain nullable columns: the reference's rows and writes are
  untouched, and a row it writes simply does not wait.
- The attention order reads, in segments, an index on two keys: the session's attention tier
  (waiting, a status outside the vocabulary, live, paused or stopped, finished) and its
  attention time (since when it waits, else when it was last seen). SQLite indexes the two
  expressions; PostgreSQL stores them as generated columns (an ORDER BY expression would be
  computed for every row an OFFSET passes, as migration 0006 explains), ``rt_attention_tier``
  and ``rt_attention_key``, which rewrites the table once.

Self-contained: the SQL it runs is written here (tests/test_database.py checks the store's
queries compile to the same expressions).

Revision ID: 0007_waiting_attention
"""

from collections.abc import Callable

from alembic import op
from sqlalchemy import Connection, text

revision = "0007_waiting_attention"
down_revision = "0006_list_positions"
branch_labels = None
depends_on = None

LARGE_TABLE_ROWS = 10_000
ACTIVE = "'starting', 'active', 'running', 'paused', 'resuming'"
LIVE = "'starting', 'active', 'running', 'resuming'"
FINISHED = "'ended', 'terminated', 'completed', 'done'"


def tier_sql(status: str, waiting_since: str) -> str:
    return (
        f"CASE WHEN {waiting_since} IS NOT NULL AND {status} IN ({ACTIVE}) THEN 0"
        f" WHEN {status} IN ({LIVE}) THEN 2"
        f" WHEN {status} IN ('paused', 'stopped') THEN 3"
        f" WHEN {status} IN ({FINISHED}) THEN 4"
        " ELSE 1 END"
    )


def key_sql(
    ts_key: Callable[[str], str],
    lowest: str,
    status: str,
    waiting_since: str,
    last_seen_at: str,
    started_at: str,
) -> str:
    return (
        f"CASE WHEN {waiting_since} IS NOT NULL AND {status} IN ({ACTIVE})"
        f" THEN COALESCE({ts_key(waiting_since)}, {lowest})"
        f" ELSE COALESCE({ts_key(last_seen_at)}, {ts_key(started_at)}, {lowest}) END"
    )


COLUMNS = ("status", "waiting_since", "last_seen_at", "started_at")
SQLITE_TIER = tier_sql("status", "waiting_since")
SQLITE_KEY = key_sql(lambda column: f"julianday({column})", "0", *COLUMNS)
PG_TIER = tier_sql("status", "waiting_since")
PG_KEY = key_sql(lambda column: f"rt_ts_key({column})", "'-infinity'::timestamp", *COLUMNS)
INDEX = "ix_agent_sessions_attention"
SQLITE_INDEX = f"agent_sessions(({SQLITE_TIER}), ({SQLITE_KEY}), id)"
PG_GENERATED = {
    "rt_attention_tier": ("smallint", PG_TIER),
    "rt_attention_key": ("timestamp", PG_KEY),
}
PG_INDEX = "agent_sessions(rt_attention_tier, rt_attention_key, id)"


def _progress() -> Callable[[str], None]:
    config = op.get_context().config
    report = config.attributes.get("progress") if config is not None else None
    return report if callable(report) else (lambda _message: None)


def _large(bind: Connection) -> bool:
    found = bind.execute(
        text("SELECT count(*) FROM (SELECT 1 FROM agent_sessions LIMIT :rows) AS sample"),
        {"rows": LARGE_TABLE_ROWS},
    ).scalar()
    return bool(found == LARGE_TABLE_ROWS)


def upgrade() -> None:
    bind = op.get_bind()
    report = _progress() if _large(bind) else (lambda _message: None)
    present = {
        str(row[0])
        for row in bind.execute(
            text(
                "SELECT name FROM pragma_table_info('agent_sessions')"
                if bind.dialect.name != "postgresql"
                else "SELECT column_name FROM information_schema.columns "
                "WHERE table_name = 'agent_sessions' AND table_schema = current_schema()"
            )
        )
    }
    for column in ("waiting_reason", "waiting_since"):
        if column not in present:
            op.execute(f"ALTER TABLE agent_sessions ADD COLUMN {column} TEXT")
    report(f"  index {INDEX} on agent_sessions…")
    op.execute(f"DROP INDEX IF EXISTS {INDEX}")
    if bind.dialect.name != "postgresql":
        op.execute(f"CREATE INDEX {INDEX} ON {SQLITE_INDEX}")
        return
    report("  attention columns of agent_sessions…")
    additions = ", ".join(
        f"ADD COLUMN IF NOT EXISTS {column} {kind} GENERATED ALWAYS AS ({expression}) STORED"
        for column, (kind, expression) in PG_GENERATED.items()
    )
    op.execute(f"ALTER TABLE agent_sessions {additions}")
    op.execute(f"CREATE INDEX {INDEX} ON {PG_INDEX}")


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
