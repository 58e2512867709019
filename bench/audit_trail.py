"""The audit trail (issue 11 point 5): the stores it is read on (the reference store with five
history rows a session, on SQLite and on PostgreSQL) and its first page, unfiltered and by each
filter, against the driver alone running the same query."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.figures import Figure, paired_medians, timed
from bench.list_reads import READ_LIMIT_SECONDS
from bench.stores import build_postgres_store, build_reference_store
from roundtable_console.store.db.database import open_store

# ------------------------------------------------------------- issue 11 point 5: the audit trail

AUDIT_HISTORY_PER_SESSION = 5  # 1M sessions → 5M history rows
# One history row in 100 is an operator's action, one more an operator's heartbeat: the rest are
# agents' heartbeats, which the audit trail passes over.
AUDIT_SQLITE_HISTORY = """
INSERT INTO agent_session_events (session_id, event_type, payload_json, created_at)
WITH RECURSIVE n(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM n WHERE x < :last)
SELECT printf('sess-%07d', x % :sessions),
  CASE WHEN x % 100 = 0 THEN (CASE (x / 100) % 4 WHEN 0 THEN 'paused' WHEN 1 THEN 'stopped'
       WHEN 2 THEN 'resuming' ELSE 'terminated' END) ELSE 'heartbeat' END,
  CASE WHEN x % 100 IN (0, 1)
       THEN '{"actor":"op-' || (x % 7) || '","previous_status":"active","status":"paused"}'
       ELSE '{"last_seen_at":"2026-09-01T00:00:00Z","status":"active"}' END,
  strftime('%Y-%m-%dT%H:%M:%SZ', '2026-09-01', '+' || (x / 2) || ' seconds')
FROM n
"""
AUDIT_POSTGRES_HISTORY = """
INSERT INTO agent_session_events (session_id, event_type, payload_json, created_at, actor)
SELECT 'sess-' || lpad((x % :sessions)::text, 7, '0'),
  CASE WHEN x % 100 = 0
       THEN (ARRAY['paused', 'stopped', 'resuming', 'terminated'])[1 + (x / 100) % 4]
       ELSE 'heartbeat' END,
  CASE WHEN x % 100 IN (0, 1)
       THEN '{"actor":"op-' || (x % 7) || '","previous_status":"active","status":"paused"}'
       ELSE '{"last_seen_at":"2026-09-01T00:00:00Z","status":"active"}' END,
  to_char(timestamp '2026-09-01' + (x / 2) * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
  CASE WHEN x % 100 IN (0, 1) THEN 'op-' || (x % 7) END
FROM generate_series(0, :last) AS x
"""
# The floor: the driver alone running the page's query.
AUDIT_FLOOR = (
    "SELECT id, created_at, actor, db_user, event_type, session_id, payload_json"
    " FROM agent_session_events WHERE actor IS NOT NULL{where} ORDER BY id DESC LIMIT 51"
)


def audit_cases(sessions: int) -> dict[str, tuple[dict[str, Any], str, tuple[Any, ...]]]:
    """Each figure: the audit filter, the floor's extra condition (``?`` for its values), and
    those values."""
    session = f"sess-{sessions // 2:07d}"
    return {
        "first page": ({}, "", ()),
        "--actor": ({"actor": "op-3"}, " AND actor = ?", ("op-3",)),
        "--action terminate": ({"action": "terminate"}, " AND event_type = ?", ("terminated",)),
        "--session": ({"session_id": session}, " AND session_id = ?", (session,)),
    }


def build_audit_sqlite(path: Path, sessions: int) -> float:
    """The reference store of ``sessions`` with ``AUDIT_HISTORY_PER_SESSION`` history rows
    each, then opened (every migration, 0009's backfill of the actors included): the seconds
    the first open took."""
    build_reference_store(path, sessions)
    raw = sqlite3.connect(path)
    rows = sessions * AUDIT_HISTORY_PER_SESSION
    raw.execute(AUDIT_SQLITE_HISTORY, {"last": rows - 1, "sessions": sessions})
    raw.commit()
    raw.close()
    return timed(lambda: open_store(f"sqlite:///{path}").dispose())


def build_audit_postgres(server: Any, sessions: int) -> str:
    from sqlalchemy import text

    url = build_postgres_store(server, sessions, "rt_bench_audit")
    store = open_store(url)
    rows = sessions * AUDIT_HISTORY_PER_SESSION
    with store.write() as db:
        db.execute(text(AUDIT_POSTGRES_HISTORY), {"last": rows - 1, "sessions": sessions})
    with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE agent_session_events"))
    store.dispose()
    return url


def bench_audit(
    url: str, label: str, sessions: int, repeats: int, floor_query: Callable[[str, tuple], Any]
) -> list[Figure]:
    """The audit trail's first page, unfiltered and by each filter, against the driver alone
    running the same query: each under 50 ms (issue 11 point 5)."""
    from roundtable_console.store.reads.audit import AuditFilter, audit_page

    store = open_store(url)
    figures: list[Figure] = []
    try:
        for name, (filters, where, values) in audit_cases(sessions).items():

            def page(filters: dict[str, Any] = filters) -> None:
                with store.read() as db:
                    assert audit_page(db=db, filters=AuditFilter(**filters)).items

            def floor(where: str = where, values: tuple[Any, ...] = values) -> None:
                assert floor_query(AUDIT_FLOOR.format(where=where), values)

            ours, base = paired_medians(page, floor, repeats)
            figures.append(
                Figure(
                    f"audit, {name} ({label})",
                    ours,
                    "driver alone, same query",
                    base,
                    limit=READ_LIMIT_SECONDS,
                    absolute=True,
                )
            )
    finally:
        store.dispose()
    return figures
