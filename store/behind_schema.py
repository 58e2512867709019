"""Reading a SQLite store whose schema is behind ours, without changing it (a read-only open).

A read-only open never migrates. The reference's own store, or one an older roundtable left,
lacks the columns and tables our migrations add; each connection of a read-only engine gets
temporary views under the same names that supply them (SQLite looks in ``temp`` before
``main``), computed from the reference's tables: a version of 0, no wait, counts counted, no
idempotency key, no actor or role recorded for history rows beyond what their payload says.
The views live in the connection's own temporary schema; the database file is never written.
"""

from __future__ import annotations

from typing import Any

# Columns our migrations add to the reference's tables, and the value a view gives a row of a
# store that lacks them.
ADDED_COLUMNS: dict[str, dict[str, str]] = {
    "agent_sessions": {
        "version": "0",
        "waiting_reason": "NULL",
        "waiting_since": "NULL",
    },
    "agent_session_events": {
        "actor": (
            "CASE WHEN json_valid(payload_json) AND event_type IN "
            "('paused', 'stopped', 'resuming', 'terminated', 'heartbeat') "
            "THEN json_extract(payload_json, '$.actor') END"
        ),
        "db_user": "NULL",
    },
}

_WORKSPACE = (
    "COALESCE(workspace_id, CASE WHEN json_valid(metadata_json) "
    "THEN json_extract(metadata_json, '$.workspace_id') END)"
)
# Tables of ours, as views of the reference's tables.
ADDED_TABLES: dict[str, str] = {
    "session_status_counts": (
        "SELECT status, COUNT(*) AS sessions FROM main.agent_sessions GROUP BY status"
    ),
    "session_group_counts": " UNION ALL ".join(
        f"SELECT '{grouping}' AS grouping, ({key}) IS NOT NULL AS keyed, "
        f"COALESCE({key}, '') AS group_key, status, COUNT(*) AS sessions "
        f"FROM main.agent_sessions GROUP BY 2, 3, 4"
        for grouping, key in (("agent", "agent_id"), ("run", "run_id"), ("workspace", _WORKSPACE))
    ),
    "idempotency_keys": (
        "SELECT NULL AS key, NULL AS action, NULL AS session_id, NULL AS outcome, "
        "NULL AS created_at WHERE 0"
    ),
}


def cover_missing(connection: Any) -> list[str]:
    """On a raw ``sqlite3`` connection, a temporary view for each of our tables and columns the
    database lacks. Returns what was covered (empty for a current store)."""
    tables = {
        row[0]
        for row in connection.execute("SELECT name FROM main.sqlite_master WHERE type = 'table'")
    }
    covered: list[str] = []
    for table, added in ADDED_COLUMNS.items():
        if table not in tables:
            continue
        present = {row[1] for row in connection.execute(f"PRAGMA main.table_info({table})")}
        missing = {name: value for name, value in added.items() if name not in present}
        if missing:
            extra = ", ".join(f"{value} AS {name}" for name, value in missing.items())
            connection.execute(
                f"CREATE TEMP VIEW IF NOT EXISTS {table} AS SELECT *, {extra} FROM main.{table}"
            )
            covered.extend(f"{table}.{name}" for name in missing)
    if "agent_sessions" in tables:
        for table, query in ADDED_TABLES.items():
            if table not in tables:
                connection.execute(f"CREATE TEMP VIEW IF NOT EXISTS {table} AS {query}")
                covered.append(table)
    return covered
