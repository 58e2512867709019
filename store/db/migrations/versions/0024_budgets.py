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

from collections.abc import Callable

from alembic import op
from sqlalchemy import Connection, text

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
    "CREATE TABLE IF NOT EXISTS budget_crossings ("
    "id TEXT PRIMARY KEY, budget_key TEXT NOT NULL, period TEXT NOT NULL,"
    " level INTEGER NOT NULL, name TEXT NOT NULL, workspace_id TEXT, unit TEXT NOT NULL,"
    " limit_amount DOUBLE PRECISION NOT NULL, spent DOUBLE PRECISION NOT NULL,"
    " stop BOOLEAN NOT NULL, crossed_at TEXT NOT NULL, told_at TEXT,"
    " UNIQUE (budget_key, period, level))",
    "CREATE INDEX IF NOT EXISTS ix_budget_crossings_crossed ON budget_crossings (crossed_at)",
)
# Made after the seed (a bulk load into a table without them is faster): a budget's spend is
# one sum on one of them.
INDEXES = (
    "CREATE INDEX IF NOT EXISTS ix_usage_days_day ON usage_days (day)",
    "CREATE INDEX IF NOT EXISTS ix_usage_days_agent ON usage_days (agent_id, day)",
    "CREATE INDEX IF NOT EXISTS ix_usage_days_run ON usage_days (run_id, day)",
    "CREATE INDEX IF NOT EXISTS ix_usage_days_workspace ON usage_days (workspace_id, day)",
)
LARGE_TABLE_ROWS = 10_000
# What a hook may report at most (store.writes.usage_values' MOST_TOKENS and MOST_DOLLARS):
# a figure beyond it, or not a number, is left out (an agent wrote that metadata as it liked).
MOST_TOKENS = 10**15
MOST_DOLLARS = 10**9
COLUMNS = (
    "session_id, day, agent_id, run_id, workspace_id, tokens, cost_usd, unpriced_tokens, changed_at"
)


def _sqlite_number(key: str, most: int) -> str:
    path = f"'$.usage.{key}'"
    return (
        f"CASE WHEN json_type(metadata_json, {path}) IN ('integer', 'real')"
        f" AND json_extract(metadata_json, {path}) BETWEEN 0 AND {most}"
        f" THEN json_extract(metadata_json, {path}) END"
    )


def _sqlite_seed() -> str:
    parts = " + ".join(
        f"COALESCE({_sqlite_number(key, MOST_TOKENS)}, 0)"
        for key in ("input_tokens", "output_tokens")
    )
    total = _sqlite_number("total_tokens", MOST_TOKENS)
    tokens = f"CAST(COALESCE({total}, min({parts}, {MOST_TOKENS})) AS INTEGER)"
    return (
        f"INSERT INTO usage_days ({COLUMNS})"
        " SELECT id, substr(seen, 1, 10), agent_id, COALESCE(run_id, ''),"
        " COALESCE(workspace_id, ''), tokens, COALESCE(cost, 0),"
        " CASE WHEN cost IS NULL THEN tokens ELSE 0 END, seen FROM ("
        " SELECT id, agent_id, run_id, workspace_id, COALESCE(last_seen_at, started_at) AS seen,"
        f" {tokens} AS tokens, {_sqlite_number('cost_usd', MOST_DOLLARS)} AS cost"
        " FROM agent_sessions WHERE metadata_json LIKE '%usage%' AND json_valid(metadata_json)"
        " AND json_type(metadata_json, '$.usage') = 'object') AS used"
        " WHERE length(seen) >= 10"
        " ON CONFLICT (session_id, day, agent_id, run_id, workspace_id) DO NOTHING"
    )


# A session's usage as (tokens, dollars or NULL), or NULL without a usage object; malformed JSON
# is no usage rather than an error.
PG_FUNCTIONS = f"""
CREATE OR REPLACE FUNCTION rt_seed_number(v jsonb, most double precision)
RETURNS double precision LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN jsonb_typeof(v) = 'number' AND v::text::double precision BETWEEN 0 AND most
    THEN v::text::double precision END
$$;
CREATE OR REPLACE FUNCTION rt_seed_usage(t text) RETURNS double precision[]
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  u jsonb;
BEGIN
  IF t IS NULL OR t NOT LIKE '%usage%' THEN
    RETURN NULL;
  END IF;
  u := (t::jsonb) -> 'usage';
  IF u IS NULL OR jsonb_typeof(u) <> 'object' THEN
    RETURN NULL;
  END IF;
  RETURN ARRAY[
    floor(COALESCE(rt_seed_number(u -> 'total_tokens', {MOST_TOKENS}),
      least(COALESCE(rt_seed_number(u -> 'input_tokens', {MOST_TOKENS}), 0)
            + COALESCE(rt_seed_number(u -> 'output_tokens', {MOST_TOKENS}), 0), {MOST_TOKENS}))),
    rt_seed_number(u -> 'cost_usd', {MOST_DOLLARS})
  ];
EXCEPTION WHEN others THEN
  RETURN NULL;
END
$$;
"""
PG_SEED = (
    f"INSERT INTO usage_days ({COLUMNS})"
    " SELECT id, substr(seen, 1, 10), agent_id, COALESCE(run_id, ''), COALESCE(workspace_id, ''),"
    " u[1]::bigint, COALESCE(u[2], 0), CASE WHEN u[2] IS NULL THEN u[1]::bigint ELSE 0 END, seen"
    " FROM (SELECT id, agent_id, run_id, workspace_id, COALESCE(last_seen_at, started_at) AS seen,"
    " rt_seed_usage(metadata_json) AS u FROM agent_sessions WHERE metadata_json LIKE '%usage%')"
    " AS used WHERE u IS NOT NULL AND length(seen) >= 10"
    " ON CONFLICT (session_id, day, agent_id, run_id, workspace_id) DO NOTHING"
)


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
    for statement in STATEMENTS:
        op.execute(statement)
    if _large(bind):  # a store this size says what takes its time, as the CLI shows it
        _progress()("  what each session spent, by day, for the budgets…")
    if bind.dialect.name == "postgresql":
        op.execute(PG_FUNCTIONS)
        op.execute(PG_SEED)
        op.execute("DROP FUNCTION rt_seed_usage(text)")
        op.execute("DROP FUNCTION rt_seed_number(jsonb, double precision)")
    else:
        op.execute(_sqlite_seed())
    for statement in INDEXES:
        op.execute(statement)


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
