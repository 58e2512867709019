"""Budgets (issue 46 point 3): what each session spent on each day, and the crossings told.

- ``usage_days``: per session, UTC day, and the agent, run and workspace ('' for none) it spent
  under, the tokens its hooks reported, the dollars they cost where known and the tokens of no
  known price, so that a budget's spending is one sum on an index (``store.budgets``). Written
  beside the session's usage total (``store.writes.usage_values.keep_usage``). Sessions that
  carry a usage total already are counted on the day they were last seen, figures beyond what a
  hook may report left out (an agent wrote that metadata as it liked).
- ``budget_crossings``: a budget that reached 80 % or 100 % of its limit in a period (a day, or
  ``all``), one row each, so that of every server and console reading the same store the crossing
  is told once; ``told_at`` when a server told it to devices and webhooks.

Self-contained: the SQL it runs is written here.

Revision ID: 0024_budgets
"""

import json

from alembic import op
from sqlalchemy import text

revision = "0024_budgets"
down_revision = "0023_tool_call_events"
branch_labels = None
depends_on = None

STATEMENTS = (
    "CREATE TABLE IF NOT EXISTS usage_days ("
    "session_id TEXT NOT NULL, day TEXT NOT NULL, agent_id TEXT NOT NULL,"
    " run_id TEXT NOT NULL, workspace_id TEXT NOT NULL, tokens BIGINT NOT NULL DEFAULT 0,"
    " cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,"
    " unpriced_tokens BIGINT NOT NULL DEFAULT 0, changed_at TEXT NOT NULL,"
    " PRIMARY KEY (session_id, day, agent_id, run_id, workspace_id))",
    "CREATE INDEX IF NOT EXISTS ix_usage_days_day ON usage_days (day)",
    "CREATE INDEX IF NOT EXISTS ix_usage_days_agent ON usage_days (agent_id, day)",
    "CREATE INDEX IF NOT EXISTS ix_usage_days_run ON usage_days (run_id, day)",
    "CREATE INDEX IF NOT EXISTS ix_usage_days_workspace ON usage_days (workspace_id, day)",
    "CREATE INDEX IF NOT EXISTS ix_usage_days_changed ON usage_days (changed_at)",
    "CREATE TABLE IF NOT EXISTS budget_crossings ("
    "id TEXT PRIMARY KEY, budget_key TEXT NOT NULL, period TEXT NOT NULL,"
    " level INTEGER NOT NULL, name TEXT NOT NULL, workspace_id TEXT, unit TEXT NOT NULL,"
    " limit_amount DOUBLE PRECISION NOT NULL, spent DOUBLE PRECISION NOT NULL,"
    " stop BOOLEAN NOT NULL, crossed_at TEXT NOT NULL, told_at TEXT,"
    " UNIQUE (budget_key, period, level))",
    "CREATE INDEX IF NOT EXISTS ix_budget_crossings_crossed ON budget_crossings (crossed_at)",
)
_WITH_USAGE = text(
    "SELECT id, agent_id, run_id, workspace_id, metadata_json,"
    " COALESCE(last_seen_at, started_at) FROM agent_sessions"
    " WHERE metadata_json LIKE '%usage%' AND id > :after ORDER BY id LIMIT 1000"
)
_ADD = text(
    "INSERT INTO usage_days (session_id, day, agent_id, run_id, workspace_id, tokens, cost_usd,"
    " unpriced_tokens, changed_at) VALUES (:session_id, :day, :agent_id, :run_id,"
    " :workspace_id, :tokens, :cost_usd, :unpriced_tokens, :changed_at)"
    " ON CONFLICT (session_id, day, agent_id, run_id, workspace_id) DO NOTHING"
)


# What a hook may report at most (store.writes.usage_values' MOST_TOKENS and MOST_DOLLARS).
MOST = {"tokens": 10**15, "dollars": 1e9}


def _number(usage: dict, key: str, most: float) -> float | None:
    value = usage.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0 <= value <= most else None


def _seed_row(row: tuple) -> dict | None:
    session_id, agent_id, run_id, workspace_id, metadata_json, seen = row
    try:
        usage = json.loads(metadata_json).get("usage")
    except (ValueError, AttributeError):
        return None
    if not isinstance(usage, dict) or not isinstance(seen, str) or len(seen) < 10:
        return None
    most = MOST["tokens"]
    total = _number(usage, "total_tokens", most)
    if total is None:
        parts = (_number(usage, "input_tokens", most), _number(usage, "output_tokens", most))
        total = min(sum(part or 0 for part in parts), most)
    cost = _number(usage, "cost_usd", MOST["dollars"])
    tokens = int(total)
    return {
        "session_id": session_id, "day": seen[:10], "agent_id": agent_id, "run_id": run_id,
        "workspace_id": workspace_id or "", "tokens": tokens, "cost_usd": cost or 0.0,
        "unpriced_tokens": tokens if cost is None else 0, "changed_at": seen,
    }  # fmt: skip


def upgrade() -> None:
    bind = op.get_bind()
    for statement in STATEMENTS:
        op.execute(statement)
    after = ""
    while True:
        rows = bind.execute(_WITH_USAGE, {"after": after}).all()
        if not rows:
            return
        seeded = [found for found in map(_seed_row, rows) if found is not None]
        if seeded:
            bind.execute(_ADD, seeded)
        after = rows[-1][0]


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
