"""Groups of sessions (issue 9 point 6): the console's list grouped by workspace, run or agent.

- ``session_group_counts``: the sessions of each group (an agent, a run, a workspace) counted by
  status, kept by triggers on ``agent_sessions`` as ``session_status_counts`` is (migration
  0004, whose notes apply: writers that know nothing of it keep it true, a bulk write on
  PostgreSQL counts once at its end, SQLite's triggers avoid UPSERT). A group header shows its
  counts, and the grouped list's length (sessions and headers) and the place of each group in
  it are read from here: a few rows per group, however many sessions there are.
  ``keyed`` is 0 for the sessions without a workspace (``group_key`` is then ''), so that group
  sorts first, as NULL leads the workspace order.
- PostgreSQL: a session's workspace (its column, else the metadata's) becomes a stored generated
  column, ``rt_workspace``, and the workspace index is rebuilt on it under the same name: an
  index on an expression allows no index-only scan, and a place in the list grouped by
  workspace is found by walking that index (migration 0006 did the same for the start time).

Self-contained: the SQL it runs is written here (tests/test_database.py checks the store's
queries compile to the same expressions).

Revision ID: 0008_session_groups
"""

from collections.abc import Callable

from alembic import op
from sqlalchemy import Connection, text

revision = "0008_session_groups"
down_revision = "0007_waiting_attention"
branch_labels = None
depends_on = None

LARGE_TABLE_ROWS = 10_000

CREATE_TABLE = (
    "CREATE TABLE IF NOT EXISTS session_group_counts ("
    "grouping TEXT NOT NULL, keyed SMALLINT NOT NULL, group_key TEXT NOT NULL,"
    " status TEXT NOT NULL, sessions BIGINT NOT NULL DEFAULT 0,"
    " PRIMARY KEY (grouping, keyed, group_key, status))"
)


def sqlite_workspace(row: str) -> str:
    return (
        f"COALESCE({row}workspace_id, CASE WHEN json_valid({row}metadata_json) "
        f"THEN json_extract({row}metadata_json, '$.workspace_id') END)"
    )


# Each grouping: the key of a row (``row`` is "NEW." or "OLD."), and the columns it is read from.
SQLITE_KEYS: dict[str, tuple[Callable[[str], str], tuple[str, ...]]] = {
    "agent": (lambda row: f"{row}agent_id", ("agent_id",)),
    "run": (lambda row: f"{row}run_id", ("run_id",)),
    "workspace": (sqlite_workspace, ("workspace_id", "metadata_json")),
}


def _sqlite_add(grouping: str, key: str, row: str, amount: str) -> str:
    # No conflict clause, no UPSERT (see migration 0004).
    where = (
        f"grouping = '{grouping}' AND keyed = (({key}) IS NOT NULL)"
        f" AND group_key = COALESCE({key}, '') AND status = {row}status"
    )
    return (
        "INSERT INTO session_group_counts (grouping, keyed, group_key, status, sessions)"
        f" SELECT '{grouping}', ({key}) IS NOT NULL, COALESCE({key}, ''), {row}status, 0"
        f" WHERE NOT EXISTS (SELECT 1 FROM session_group_counts WHERE {where});"
        f" UPDATE session_group_counts SET sessions = sessions {amount} 1 WHERE {where};"
    )


def sqlite_triggers() -> list[str]:
    triggers = []
    for grouping, (key, columns) in SQLITE_KEYS.items():
        new, old = key("NEW."), key("OLD.")
        name = f"rt_session_group_{grouping}"
        triggers += [
            f"CREATE TRIGGER IF NOT EXISTS {name}_insert AFTER INSERT ON agent_sessions"
            f" FOR EACH ROW BEGIN {_sqlite_add(grouping, new, 'NEW.', '+')} END",
            f"CREATE TRIGGER IF NOT EXISTS {name}_delete AFTER DELETE ON agent_sessions"
            f" FOR EACH ROW BEGIN {_sqlite_add(grouping, old, 'OLD.', '-')} END",
            f"CREATE TRIGGER IF NOT EXISTS {name}_update"
            f" AFTER UPDATE OF status, {', '.join(columns)} ON agent_sessions FOR EACH ROW"
            f" WHEN NEW.status IS NOT OLD.status OR ({new}) IS NOT ({old})"
            f" BEGIN {_sqlite_add(grouping, old, 'OLD.', '-')}"
            f" {_sqlite_add(grouping, new, 'NEW.', '+')} END",
        ]
    return triggers


PG_WORKSPACE = "COALESCE(workspace_id, rt_metadata_workspace(metadata_json))"
PG_STORED_WORKSPACE = "rt_workspace"
PG_INDEX = "ix_agent_sessions_workspace"
PG_INDEX_TARGET = f"agent_sessions({PG_STORED_WORKSPACE}, rt_started_key, id)"

# A session moved out of its groups (-1) and into others (+1): the changes summed per count row,
# those that cancel out left aside, applied in the rows' order (two moves never wait for each
# other in opposite orders).
PG_FUNCTIONS = """
CREATE OR REPLACE FUNCTION rt_session_group_move(
  old_agent text, old_run text, old_workspace text, old_status text,
  new_agent text, new_run text, new_workspace text, new_status text) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO session_group_counts AS counts (grouping, keyed, group_key, status, sessions)
  SELECT grouping, keyed, group_key, status, sum(amount)
  FROM (
    SELECT moves.grouping, CASE WHEN moves.k IS NULL THEN 0 ELSE 1 END,
           COALESCE(moves.k, ''), moves.status, moves.amount
    FROM (VALUES ('agent', old_agent, old_status, -1), ('run', old_run, old_status, -1),
                 ('workspace', old_workspace, old_status, -1),
                 ('agent', new_agent, new_status, 1), ('run', new_run, new_status, 1),
                 ('workspace', new_workspace, new_status, 1))
         AS moves(grouping, k, status, amount)
    WHERE moves.status IS NOT NULL
  ) AS changes(grouping, keyed, group_key, status, amount)
  GROUP BY grouping, keyed, group_key, status
  HAVING sum(amount) <> 0
  ORDER BY grouping, keyed, group_key, status
  ON CONFLICT (grouping, keyed, group_key, status)
  DO UPDATE SET sessions = counts.sessions + EXCLUDED.sessions
$$;

CREATE OR REPLACE FUNCTION rt_session_group_count() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('roundtable.bulk_session_writes', true) = 'on' THEN
    RETURN NULL;  -- a bulk write counts once, at its end (store.sessions.bulk_session_writes)
  END IF;
  IF TG_OP = 'INSERT' THEN
    PERFORM rt_session_group_move(NULL, NULL, NULL, NULL,
      NEW.agent_id, NEW.run_id, NEW.rt_workspace, NEW.status);
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM rt_session_group_move(OLD.agent_id, OLD.run_id, OLD.rt_workspace, OLD.status,
      NULL, NULL, NULL, NULL);
  ELSE
    PERFORM rt_session_group_move(OLD.agent_id, OLD.run_id, OLD.rt_workspace, OLD.status,
      NEW.agent_id, NEW.run_id, NEW.rt_workspace, NEW.status);
  END IF;
  RETURN NULL;
END
$$;
"""

PG_TRIGGERS = (
    "CREATE TRIGGER rt_session_group_count AFTER INSERT OR DELETE ON agent_sessions "
    "FOR EACH ROW EXECUTE FUNCTION rt_session_group_count()",
    "CREATE TRIGGER rt_session_group_move AFTER UPDATE OF status, agent_id, run_id, "
    "workspace_id, metadata_json ON agent_sessions FOR EACH ROW WHEN ("
    "OLD.status IS DISTINCT FROM NEW.status OR OLD.agent_id IS DISTINCT FROM NEW.agent_id"
    " OR OLD.run_id IS DISTINCT FROM NEW.run_id"
    " OR OLD.rt_workspace IS DISTINCT FROM NEW.rt_workspace) "
    "EXECUTE FUNCTION rt_session_group_count()",
)


def seed_counts(workspace: str) -> str:
    """Every group's count, from the sessions (after the triggers exist: on PostgreSQL creating
    a trigger locks writers out until the commit, so no change falls in between)."""
    parts = [
        f"SELECT '{grouping}', CASE WHEN {key} IS NULL THEN 0 ELSE 1 END, COALESCE({key}, ''),"
        f" status, count(*) FROM agent_sessions GROUP BY {key}, status"
        for grouping, key in (("agent", "agent_id"), ("run", "run_id"), ("workspace", workspace))
    ]
    return (
        "INSERT INTO session_group_counts (grouping, keyed, group_key, status, sessions) "
        + " UNION ALL ".join(parts)
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
        report("  workspace column of agent_sessions…")
        op.execute(
            f"ALTER TABLE agent_sessions ADD COLUMN IF NOT EXISTS {PG_STORED_WORKSPACE} text"
            f" GENERATED ALWAYS AS ({PG_WORKSPACE}) STORED"
        )
        report(f"  index {PG_INDEX} on agent_sessions…")
        op.execute(f"DROP INDEX IF EXISTS {PG_INDEX}")
        op.execute(f"CREATE INDEX {PG_INDEX} ON {PG_INDEX_TARGET}")
        op.execute(PG_FUNCTIONS)
        op.execute("DROP TRIGGER IF EXISTS rt_session_group_count ON agent_sessions")
        op.execute("DROP TRIGGER IF EXISTS rt_session_group_move ON agent_sessions")
        for trigger in PG_TRIGGERS:
            op.execute(trigger)
        workspace = PG_STORED_WORKSPACE
    else:
        for trigger in sqlite_triggers():
            op.execute(trigger)
        workspace = sqlite_workspace("")
    report("  session counts by group…")
    op.execute("DELETE FROM session_group_counts")
    op.execute(seed_counts(workspace))


def downgrade() -> None:
    raise NotImplementedError("Additive migrations are not rolled back.")
