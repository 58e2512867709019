"""The GRANT statements that give a PostgreSQL role what it needs, and no more.

- A viewer connects and reads every table: the console and every read command.
- A writer reads, and acts on sessions: agents register, beat and end; operators pause, stop,
  resume, terminate. That writes the sessions, their history, the runs' events, the
  idempotency keys, and the counts the triggers on sessions keep (the triggers run with the
  writer's privileges). It deletes nothing and imports nothing (``import``, the demo and
  ``db prune`` are the owner's).
- Neither may change the schema: only its owner migrates (``roundtable db upgrade``). CREATE on
  the schema is revoked explicitly, whatever the server's defaults.

The history's ``db_user`` (migration 0009) is set by the database to the role that wrote the
row, so a writer cannot record another's name there.
"""

from __future__ import annotations

SCHEMA = "public"
KINDS = ("viewer", "writer")
# What a writer changes, table by table.
WRITER_TABLES: dict[str, str] = {
    "agent_sessions": "INSERT, UPDATE",
    "agent_session_events": "INSERT",
    "events": "INSERT",
    "idempotency_keys": "INSERT",
    "session_status_counts": "INSERT, UPDATE",
    "session_group_counts": "INSERT, UPDATE",
    "session_usage_totals": "INSERT, UPDATE",
}
# The id sequences of the history tables a writer appends to.
WRITER_SEQUENCES = ("agent_session_events_id_seq", "events_id_seq")


def quote_identifier(name: str) -> str:
    """A PostgreSQL identifier, quoted (so any role name is taken as it is)."""
    return '"' + name.replace('"', '""') + '"'


def role_name_problem(role: str) -> str | None:
    """Why ``role`` cannot name a PostgreSQL role, or None."""
    name = role.strip()
    if not name or len(name) > 63 or any(ord(char) < 32 for char in name):
        return "must name a PostgreSQL role: 1 to 63 characters, no control character."
    return None


def grant_statements(*, role: str, kind: str, database: str | None = None) -> list[str]:
    """The statements, in the order to run them, for ``kind`` (viewer or writer) ``role``;
    with ``database``, CONNECT on it too."""
    problem = role_name_problem(role)
    if problem is not None:
        raise ValueError(problem)
    if kind not in KINDS:
        raise ValueError(f"A role is a viewer or a writer, not {kind!r}.")
    name = role.strip()
    who = quote_identifier(name)
    schema = quote_identifier(SCHEMA)
    statements = []
    if database:
        statements.append(f"GRANT CONNECT ON DATABASE {quote_identifier(database)} TO {who};")
    statements += [
        f"GRANT USAGE ON SCHEMA {schema} TO {who};",
        f"REVOKE CREATE ON SCHEMA {schema} FROM {who};",
        f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {who};",
        # Tables a later migration adds: readable too (run by the owner, who creates them).
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA {schema} GRANT SELECT ON TABLES TO {who};",
        # But the calls for hosts: a moment's transcript pages and prompts, of every workspace.
        f"REVOKE SELECT ON {schema}.{quote_identifier('host_calls')} FROM {who};",
    ]
    if kind == "writer":
        statements += [
            f"GRANT {privileges} ON {schema}.{quote_identifier(table)} TO {who};"
            for table, privileges in WRITER_TABLES.items()
        ]
        statements += [
            f"GRANT USAGE ON SEQUENCE {schema}.{quote_identifier(sequence)} TO {who};"
            for sequence in WRITER_SEQUENCES
        ]
    return statements
