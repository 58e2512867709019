"""Usage totals per agent and per run (issue 10 point 4): the overview's bars.

- ``session_usage_totals``: for each agent and each run, how many sessions carry a usage object
  in their metadata (``metadata.usage``), and their tokens and cost summed, kept by triggers on
  ``agent_sessions`` as the status and group counts are (migrations 0004 and 0008, whose notes
  apply: writers that know nothing of it keep it true, a bulk write on PostgreSQL counts once at
  its end, SQLite's triggers avoid UPSERT). Summing the JSON of a million sessions takes seconds;
  this table answers with a row per agent or run.
- A session's tokens: ``usage.total_tokens`` when it is a number, else ``usage.input_tokens`` +
  ``usage.output_tokens`` (those that are numbers). Its cost: ``usage.cost_usd``, else
  ``usage.cost`` (store.usage.usage_amounts is the same rule in Python).
- The triggers fire only when a session is added or removed, or its agent, run or metadata
  changes (a register; never a heartbeat).

Self-contained: the SQL it runs is written here (store.usage keeps the PostgreSQL recount a bulk
write runs; tests/test_store_overview.py checks both give the same totals).

Revision ID: 0010_usage_totals
"""

from collections.abc import Callable

from alembic import op
from sqlalchemy import Connection, text

revision = "0010_usage_totals"
down_revision = "0009_audit_trail"
branch_labels = None
depends_on = None

LARGE_TABLE_ROWS = 10_000

CREATE_TABLE = (
    "CREATE TABLE IF NOT EXISTS session_usage_totals ("
    "grouping TEXT NOT NULL, group_key TEXT NOT NULL,"
    " sessions BIGINT NOT NULL DEFAULT 0,"
    " tokens DOUBLE PRECISION NOT NULL DEFAULT 0,"
    " cost DOUBLE PRECISION NOT NULL DEFAULT 0,"
    " PRIMARY KEY (grouping, group_key))"
)

GROUPINGS = (("agent", "agent_id"), ("run", "run_id"))


def _sqlite_number(metadata: str, path: str) -> str:
    return (
        f"CASE WHEN json_type({metadata}, '$.usage.{path}') IN ('integer', 'real')"
        f" THEN json_extract({metadata}, '$.usage.{path}') END"
    )


def sqlite_has_usage(metadata: str) -> str:
    return (
        f"(CASE WHEN json_valid({metadata})"
        f" THEN json_type({metadata}, '$.usage') = 'object' ELSE 0 END)"
    )


def sqlite_tokens(metadata: str) -> str:
    total = _sqlite_number(metadata, "total_tokens")
    parts = " + ".join(
        f"COALESCE({_sqlite_number(metadata, key)}, 0)" for key in ("input_tokens", "output_tokens")
    )
    return f"COALESCE({total}, {parts})"


def sqlite_cost(metadata: str) -> str:
    return (
        f"COALESCE({_sqlite_number(metadata, 'cost_usd')}, {_sqlite_number(metadata, 'cost')}, 0)"
    )


def _sqlite_add(row: str, sign: str) -> str:
    metadata = f"{row}metadata_json"
    has = sqlite_has_usage(metadata)
    statements = []
    for grouping, column in GROUPINGS:
        key = f"COALESCE({row}{column}, '')"
        where = f"grouping = '{grouping}' AND group_key = {key}"
        statements.append(
            "INSERT INTO session_usage_totals (grouping, group_key, sessions, tokens, cost)"
            f" SELECT '{grouping}', {key}, 0, 0, 0 WHERE {has}"
            f" AND NOT EXISTS (SELECT 1 FROM session_usage_totals WHERE {where});"
            f" UPDATE session_usage_totals SET sessions = sessions {sign} 1,"
            f" tokens = tokens {sign} {sqlite_tokens(metadata)},"
            f" cost = cost {sign} {sqlite_cost(metadata)}"
            f" WHERE {has} AND {where};"
        )
    return " ".join(statements)


def sqlite_triggers() -> list[str]:
    return [
        "CREATE TRIGGER IF NOT EXISTS rt_session_usage_insert AFTER INSERT ON agent_sessions"
        f" FOR EACH ROW BEGIN {_sqlite_add('NEW.', '+')} END",
        "CREATE TRIGGER IF NOT EXISTS rt_session_usage_delete AFTER DELETE ON agent_sessions"
        f" FOR EACH ROW BEGIN {_sqlite_add('OLD.', '-')} END",
        "CREATE TRIGGER IF NOT EXISTS rt_session_usage_update"
        " AFTER UPDATE OF agent_id, run_id, metadata_json ON agent_sessions FOR EACH ROW"
        " WHEN NEW.agent_id IS NOT OLD.agent_id OR NEW.run_id IS NOT OLD.run_id"
        " OR NEW.metadata_json IS NOT OLD.metadata_json"
        f" BEGIN {_sqlite_add('OLD.', '-')} {_sqlite_add('NEW.', '+')} END",
    ]


def sqlite_seed() -> str:
    metadata = "metadata_json"
    parts = [
        f"SELECT '{grouping}', COALESCE({column}, ''), count(*),"
        f" sum({sqlite_tokens(metadata)}), sum({sqlite_cost(metadata)})"
        f" FROM agent_sessions WHERE metadata_json LIKE '%usage%'"
        f" AND {sqlite_has_usage(metadata)} GROUP BY COALESCE({column}, '')"
        for grouping, column in GROUPINGS
    ]
    return (
        "INSERT INTO session_usage_totals (grouping, group_key, sessions, tokens, cost) "
        + " UNION ALL ".join(parts)
    )


# A session's usage as (1, tokens, cost), or NULL without a usage object; malformed JSON is
# no usage rather than an error.
PG_FUNCTIONS = r"""
CREATE OR REPLACE FUNCTION rt_usage_number(v jsonb) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN jsonb_typeof(v) = 'number' THEN v::text::double precision END
$$;

CREATE OR REPLACE FUNCTION rt_usage(t text) RETURNS double precision[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
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
    1,
    COALESCE(rt_usage_number(u -> 'total_tokens'),
             COALESCE(rt_usage_number(u -> 'input_tokens'), 0)
             + COALESCE(rt_usage_number(u -> 'output_tokens'), 0)),
    COALESCE(rt_usage_number(u -> 'cost_usd'), rt_usage_number(u -> 'cost'), 0)
  ];
EXCEPTION WHEN others THEN
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION rt_session_usage_move(
  old_agent text, old_run text, old_usage double precision[],
  new_agent text, new_run text, new_usage double precision[]) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO session_usage_totals AS totals (grouping, group_key, sessions, tokens, cost)
  SELECT grouping, group_key, sum(sessions), sum(tokens), sum(cost)
  FROM (
    SELECT moves.grouping, COALESCE(moves.k, ''), moves.sign * moves.u[1],
           moves.sign * moves.u[2], moves.sign * moves.u[3]
    FROM (VALUES ('agent', old_agent, old_usage, -1), ('run', old_run, old_usage, -1),
                 ('agent', new_agent, new_usage, 1), ('run', new_run, new_usage, 1))
         AS moves(grouping, k, u, sign)
    WHERE moves.u IS NOT NULL
  ) AS changes(grouping, group_key, sessions, tokens, cost)
  GROUP BY grouping, group_key
  ORDER BY grouping, group_key
  ON CONFLICT (grouping, group_key) DO UPDATE SET
    sessions = totals.sessions + EXCLUDED.sessions,
    tokens = totals.tokens + EXCLUDED.tokens,
    cost = totals.cost + EXCLUDED.cost
$$;

CREATE OR REPLACE FUNCTION rt_session_usage_count() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('roundtable.bulk_session_writes', true) = 'on' THEN
    RETURN NULL;  -- a bulk write counts once, at its end (store.sessions.bulk_session_writes)
  END IF;
  IF TG_OP = 'INSERT' THEN
    PERFORM rt_session_usage_move(NULL, NULL, NULL,
      NEW.agent_id, NEW.run_id, rt_usage(NEW.metadata_json));
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM rt_session_usage_move(OLD.agent_id, OLD.run_id, rt_usage(OLD.metadata_json),
      NULL, NULL, NULL);
  ELSE
    PERFORM rt_session_usage_move(OLD.agent_id, OLD.run_id, rt_usage(OLD.metadata_json),
      NEW.agent_id, NEW.run_id, rt_usage(NEW.metadata_json));
  END IF;
  RETURN NULL;
END
$$;
"""

PG_TRIGGERS = (
    "CREATE TRIGGER rt_session_usage_count AFTER INSERT OR DELETE ON agent_sessions "
    "FOR EACH ROW EXECUTE FUNCTION rt_session_usage_count()",
    "CREATE TRIGGER rt_session_usage_move AFTER UPDATE OF agent_id, run_id, metadata_json"
    " ON agent_sessions FOR EACH ROW WHEN ("
    "OLD.agent_id IS DISTINCT FROM NEW.agent_id OR OLD.run_id IS DISTINCT FROM NEW.run_id"
    " OR OLD.metadata_json IS DISTINCT FROM NEW.metadata_json) "
    "EXECUTE FUNCTION rt_session_usage_count()",
)

PG_SEED = (
    "INSERT INTO session_usage_totals (grouping, group_key, sessions, tokens, cost) "
    + " UNION ALL ".join(
        f"SELECT '{grouping}', COALESCE({column}, ''), count(*), sum(u[2]), sum(u[3])"
        f" FROM (SELECT {column}, rt_usage(metadata_json) AS u FROM agent_sessions"
        f" WHERE metadata_json LIKE '%usage%') AS used"
        f" WHERE u IS NOT NULL GROUP BY COALESCE({column}, '')"
        for grouping, column in GROUPINGS
    )
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
    report = _progress() if _large(bind) else (lambda _message: None)
    op.execute(CREATE_TABLE)
    if bind.dialect.name == "postgresql":
        op.execute(PG_FUNCTIONS)
        op.execute("DROP TRIGGER IF EXISTS rt_session_usage_count ON agent_sessions")
        op.execute("DROP TRIGGER IF EXISTS rt_session_usage_move ON agent_sessions")
        for trigger in PG_TRIGGERS:
            op.execute(trigger)
        seed = PG_SEED
    else:
        for trigger in sqlite_triggers():
            op.execute(trigger)
        seed = sqlite_seed()
    # After the triggers exist: on PostgreSQL creating a trigger locks writers out until the
    # commit, so no change falls between the totals and the triggers.
    report("  usage totals by agent and run…")
    op.execute("DELETE FROM session_usage_totals")
    op.execute(seed)


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
