"""A fleet view that holds still, and idempotency keys that can be pruned (issue 19).

- The attention order's fresh live sessions go by start, then id (no longer by last seen, which
  every heartbeat moves): ``ix_agent_sessions_attention_started`` on (attention tier, start key,
  id, attention key). The fresh segment is read along it in start order, with its freshness
  (attention key at or after the stale bound) decided from the index itself. SQLite indexes
  the expressions as migration 0007 wrote them; PostgreSQL the stored columns of 0006 and 0007.
- ``ix_idempotency_keys_created``: ``roundtable db prune --idempotency-keys-older-than`` deletes
  the oldest keys a batch at a time along it (our keys' ``created_at`` is RFC 3339 UTC text,
  which sorts as time).

Self-contained: the SQL it runs is written here (tests/test_database.py checks the store's
queries compile to the same expressions).

Revision ID: 0011_calm_attention
"""

from collections.abc import Callable

from alembic import op
from sqlalchemy import Connection, text

revision = "0011_calm_attention"
down_revision = "0010_usage_totals"
branch_labels = None
depends_on = None

LARGE_TABLE_ROWS = 10_000
ACTIVE = "'starting', 'active', 'running', 'paused', 'resuming'"
LIVE = "'starting', 'active', 'running', 'resuming'"
FINISHED = "'ended', 'terminated', 'completed', 'done'"

SQLITE_TIER = (
    f"CASE WHEN waiting_since IS NOT NULL AND status IN ({ACTIVE}) THEN 0"
    f" WHEN status IN ({LIVE}) THEN 2"
    " WHEN status IN ('paused', 'stopped') THEN 3"
    f" WHEN status IN ({FINISHED}) THEN 4"
    " ELSE 1 END"
)
SQLITE_KEY = (
    f"CASE WHEN waiting_since IS NOT NULL AND status IN ({ACTIVE})"
    " THEN COALESCE(julianday(waiting_since), 0)"
    " ELSE COALESCE(julianday(last_seen_at), julianday(started_at), 0) END"
)
INDEX = "ix_agent_sessions_attention_started"
SQLITE_INDEX = f"agent_sessions(({SQLITE_TIER}), julianday(started_at), id, ({SQLITE_KEY}))"
PG_INDEX = "agent_sessions(rt_attention_tier, rt_started_key, id, rt_attention_key)"
KEYS_INDEX = "ix_idempotency_keys_created"
KEYS_INDEX_TARGET = "idempotency_keys(created_at)"


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
    report(f"  index {INDEX} on agent_sessions…")
    op.execute(f"DROP INDEX IF EXISTS {INDEX}")
    target = PG_INDEX if bind.dialect.name == "postgresql" else SQLITE_INDEX
    op.execute(f"CREATE INDEX {INDEX} ON {target}")
    op.execute(f"CREATE INDEX IF NOT EXISTS {KEYS_INDEX} ON {KEYS_INDEX_TARGET}")


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
