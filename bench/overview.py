"""The fleet overview (issue 10 point 4): its read against the list's first page and under 1 s,
one session's heartbeat sparkline over a long history, and what summing the usage from the
sessions' JSON would cost."""

from __future__ import annotations

from bench.figures import Figure, median_seconds, paired_medians, timed
from roundtable_console.store.clock import format_ts, system_clock
from roundtable_console.store.db.database import open_store

# ------------------------------------------------ issue 10 point 4: the fleet at a glance

OVERVIEW_LIMIT_SECONDS = 1.0
# The overview's read against the list's first page, read in turns.
OVERVIEW_RATIO_LIMIT = 20
SPARKLINE_HISTORY = 100_000
# A session beating every second has 86,400 heartbeats in its day, each counted: the detail
# screen reads them in a worker, one read at a time.
SPARKLINE_LIMIT_SECONDS = 0.25


def bench_overview(url: str, label: str, repeats: int) -> list[Figure]:
    """The overview's read (every aggregate it shows, in one snapshot) on the big store whose
    every session has usage: against the list's first page read in turns, and under the
    issue's 1 s. Then one session's heartbeat sparkline over a history of 100,000 heartbeats,
    and, once, what summing the usage from the sessions' JSON would cost (the scan the totals
    table avoids)."""
    from datetime import timedelta

    from sqlalchemy import text

    from roundtable_console.store.reads.overview import fleet_overview, session_heartbeats
    from roundtable_console.store.reads.sessions import list_sessions

    store = open_store(url)
    stale_after = timedelta(seconds=300)
    figures: list[Figure] = []
    try:

        def overview() -> None:
            shown = fleet_overview(store=store, now=system_clock(), stale_after=stale_after)
            assert shown.usage["agent", "tokens"].total.sessions > 0

        def first_page() -> None:
            with store.read() as db:
                assert list_sessions(db=db, limit=50).items

        ours, floor = paired_medians(overview, first_page, repeats)
        figures += [
            Figure(
                f"overview open ({label})",
                ours,
                "list's first page",
                floor,
                limit=OVERVIEW_RATIO_LIMIT,
            ),
            Figure(f"overview open, absolute ({label})", ours, limit=OVERVIEW_LIMIT_SECONDS),
        ]
        session_id = "sess-0000042"
        with store.write() as db:
            now = system_clock()
            db.execute(
                text(
                    "INSERT INTO agent_session_events (session_id, event_type, payload_json,"
                    " created_at) VALUES (:session, 'heartbeat', '{}', :at)"
                ),
                [
                    {"session": session_id, "at": format_ts(now - timedelta(seconds=beat))}
                    for beat in range(SPARKLINE_HISTORY, 0, -1)
                ],
            )

        if store.engine.dialect.name == "postgresql":  # at rest, as autovacuum leaves it
            with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text("VACUUM ANALYZE agent_session_events"))

        def sparkline() -> None:
            beats = session_heartbeats(store=store, session_id=session_id, now=system_clock())
            assert sum(beats) > 80_000

        seconds = median_seconds(sparkline, repeats)
        history = f"{SPARKLINE_HISTORY:,}-beat history"
        name = f"heartbeat sparkline, {history} ({label})"
        figures.append(Figure(name, seconds, limit=SPARKLINE_LIMIT_SECONDS, absolute=True))
        json_sum = (
            "SELECT agent_id, sum(json_extract(metadata_json, '$.usage.input_tokens'))"
            " FROM agent_sessions GROUP BY agent_id"
            if store.engine.dialect.name == "sqlite"
            else "SELECT agent_id, sum(((metadata_json::jsonb) -> 'usage' ->> 'input_tokens')"
            "::float) FROM agent_sessions GROUP BY agent_id"
        )

        def scan() -> None:
            with store.read() as db:
                assert db.execute(text(json_sum)).all()

        figures.append(Figure(f"usage summed from the JSON, once ({label})", timed(scan)))
    finally:
        store.dispose()
    return figures
