"""Reading a store whose schema is behind ours, without changing it (a read-only open).

A read-only open never migrates. The reference's own store, or one an older roundtable left,
lacks the columns and tables our migrations add; each connection of a read-only engine gets
temporary views under the same names that supply them (SQLite looks in ``temp`` before
``main``, PostgreSQL in ``pg_temp`` before the schema), computed from the reference's tables:
a version of 0, no wait, counts counted, no idempotency key, no actor or role recorded for
history rows beyond what their payload says. The views live in the connection's own temporary
schema; the database is never written.

On PostgreSQL only the last migration's columns are covered this way (a store one revision
behind, ``POSTGRES_READABLE_BEHIND``): older ones miss functions and generated columns the reads
use, and are refused in words (``store.db.schema.check_readable``).
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
        "host": "NULL",
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
# A store older than migration 0012 holds no token: a server on it answers in header mode.
_NO_TOKENS = (
    "SELECT NULL AS name, NULL AS role, NULL AS token_hash, NULL AS workspaces_json, "
    "NULL AS agent_id, NULL AS created_at, NULL AS expires_at, NULL AS revoked_at WHERE 1 = 0"
)
# Nor a signed-in browser (migration 0013).
_NO_BROWSERS = (
    "SELECT NULL AS secret_hash, NULL AS token_hash, NULL AS created_at, NULL AS expires_at "
    "WHERE 1 = 0"
)
# Nor a permission request (migration 0014).
_NO_REQUESTS = (
    "SELECT NULL AS id, NULL AS session_id, NULL AS agent, NULL AS tool_name, "
    "NULL AS tool_input_json, 0 AS input_cut, 0 AS input_hidden, NULL AS suggestions_json, "
    "NULL AS answers, "
    "NULL AS reason, NULL AS asked_at, NULL AS expires_at, NULL AS state, NULL AS decided_by, "
    "NULL AS decided_at, NULL AS message, NULL AS accepted_suggestion, NULL AS delivered_at, "
    "NULL AS hook_host, NULL AS hook_pid WHERE 1 = 0"
)
_NO_LISTENERS = (
    "SELECT NULL AS id, NULL AS session_id, NULL AS agent, NULL AS opened_at, "
    "NULL AS expires_at, NULL AS state, NULL AS message, NULL AS replied_by, "
    "NULL AS replied_at, NULL AS delivered_at, NULL AS ended_at, NULL AS hook_host, "
    "NULL AS hook_pid WHERE 1 = 0"
)
# Nor a host (migration 0019).
_NO_HOSTS = (
    "SELECT NULL AS name, NULL AS connection_id, NULL AS connected_at, NULL AS last_seen_at, "
    "NULL AS first_seen_at, NULL AS agents_json, NULL AS projects_json, NULL AS tmux, "
    "NULL AS version, NULL AS platform WHERE 1 = 0"
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
    "api_tokens": _NO_TOKENS,
    "api_web_sessions": _NO_BROWSERS,
    "permission_requests": _NO_REQUESTS,
    "reply_listeners": _NO_LISTENERS,
    "hosts": _NO_HOSTS,
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


# The revisions a PostgreSQL store may be at and still be read, through the views below (0011
# adds only indexes).
POSTGRES_READABLE_BEHIND = frozenset(
    {
        "0008_session_groups",
        "0009_audit_trail",
        "0010_usage_totals",
        "0011_calm_attention",
        "0012_api_tokens",
        "0013_web_sign_ins",
        "0014_permission_requests",
        "0015_reply_listeners",
        "0016_web_push",
        "0017_presence_order",
        "0018_session_host",
        "0019_hosts",
    }
)
# Tables of ours a PostgreSQL store behind may lack, as views.
POSTGRES_ADDED_TABLES: dict[str, str] = {
    "api_tokens": _NO_TOKENS,
    "api_web_sessions": _NO_BROWSERS,
    "permission_requests": _NO_REQUESTS,
    "reply_listeners": _NO_LISTENERS,
    "hosts": _NO_HOSTS,
}
# Our compact payloads ({"actor":"…", …}) name the actor so; a view may not fail on a payload
# that is not JSON, so it is read as text.
POSTGRES_ADDED_COLUMNS: dict[str, dict[str, str]] = {
    "agent_sessions": {"host": "NULL::text"},
    "agent_session_events": {
        "actor": (
            "CASE WHEN event_type IN "
            "('paused', 'stopped', 'resuming', 'terminated', 'heartbeat') "
            'THEN substring(payload_json from \'"actor":"([^"]*)"\') END'
        ),
        "db_user": "NULL::text",
    },
}


def cover_missing_postgres(connection: Any) -> list[str]:
    """On a raw psycopg connection (in a transaction the caller commits), a temporary view for
    each table of ``POSTGRES_ADDED_COLUMNS`` that lacks a column. Returns what was covered."""
    covered: list[str] = []
    with connection.cursor() as cursor:
        for table, added in POSTGRES_ADDED_COLUMNS.items():
            cursor.execute(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_schema = current_schema() AND table_name = %s",
                (table,),
            )
            present = {row[0] for row in cursor.fetchall()}
            missing = {name: value for name, value in added.items() if name not in present}
            if not present or not missing:
                continue
            extra = ", ".join(f"{value} AS {name}" for name, value in missing.items())
            cursor.execute(
                f"CREATE TEMP VIEW {table} AS SELECT *, {extra}"
                f" FROM {_quoted_schema(cursor)}.{table}"
            )
            covered.extend(f"{table}.{name}" for name in missing)
        for table, query in POSTGRES_ADDED_TABLES.items():
            cursor.execute(
                "SELECT 1 FROM information_schema.tables"
                " WHERE table_schema = current_schema() AND table_name = %s",
                (table,),
            )
            if cursor.fetchone() is None:
                cursor.execute(f"CREATE TEMP VIEW {table} AS {query}")
                covered.append(table)
    return covered


def _quoted_schema(cursor: Any) -> str:
    cursor.execute("SELECT quote_ident(current_schema())")
    return str(cursor.fetchone()[0])
