"""The console's bulk pause of many sessions against one perform_action a session, on the
stores it fills (issue 9 point 4)."""

from __future__ import annotations

import statistics
from collections.abc import Callable

from bench.figures import Figure, timed
from roundtable_console.store.db.database import Store, open_store

# ------------------------------------------------------------ issue 9 point 4: bulk actions

# The bound: 10,000 sessions paused in at most 10 s, on either backend.
BULK_SECONDS_PER_SESSION = 10 / 10_000
# The floor pauses this many sessions one perform_action each, scaled to the figure's size.
BULK_FLOOR_SAMPLE = 1000


def fill_sessions(url: str, sessions: int) -> None:
    """``sessions`` active sessions (bulk-000000 …, a second apart, seven agents) written in one
    statement, the status counts kept."""
    from sqlalchemy import insert

    from roundtable_console.store.db.session_rows import SESSIONS
    from roundtable_console.store.writes.agent_writes import bulk_session_writes

    rows = [
        {
            "id": f"bulk-{n:06d}",
            "agent_id": f"agent-{n % 7}",
            "run_id": "run-1",
            "adapter": "codex",
            "working_directory": "/w",
            "status": "active",
            "started_at": f"2026-09-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z",
            "version": 0,
        }
        for n in range(sessions)
    ]
    store = open_store(url)
    try:
        with store.write() as db, bulk_session_writes(db=db):
            db.execute(insert(SESSIONS), rows)
    finally:
        store.dispose()


def bulk_pause(store: Store, sessions: int, run_key: str) -> None:
    """What the console's bulk pause does: every session (a filter, read a page at a time), a
    key for each derived from the run's, batched transactions (store.writes.bulk_run.run_bulk)."""
    from roundtable_console.store.reads.listing import FilterSelection, Selection, SessionFilter
    from roundtable_console.store.writes.bulk_run import run_bulk

    outcome = run_bulk(
        store=store,
        action="pause",
        selection=Selection(by_filter=(FilterSelection(SessionFilter()),)),
        actor="bench",
        run_key=run_key,
        keep=0,
    )
    assert outcome.tally.counts == {"done": sessions, "skipped": 0, "failed": 0}, outcome


def floor_pause(store: Store, sessions: int, run_key: str) -> None:
    """The same pauses one at a time, as `roundtable sessions pause --session S` does each:
    one perform_action (its own transaction) a session, each with its own key."""
    from roundtable_console.store.service import perform_action

    for n in range(sessions):
        perform_action(
            store=store,
            action="pause",
            session_id=f"bulk-{n:06d}",
            actor="bench",
            idempotency_key=f"{run_key}-{n}",
        )


def timed_pause(
    url: str, sessions: int, pause: Callable[[Store, int, str], None], run_key: str
) -> float:
    """Seconds ``pause`` takes over a store at ``url`` filled with ``sessions`` sessions."""
    fill_sessions(url, sessions)
    store = open_store(url)
    try:
        return timed(lambda: pause(store, sessions, run_key))
    finally:
        store.dispose()


def bench_bulk(new_url: Callable[[], str], label: str, sessions: int, rounds: int) -> list[Figure]:
    """A bulk pause of ``sessions`` fresh active sessions (store.writes.bulk_run.run_bulk), against
    the same pauses one perform_action each (of a sample of ``BULK_FLOOR_SAMPLE``, scaled): must
    take at most 10 s for 10,000 (issue 9 point 4), scaled to the size."""
    sample = min(sessions, BULK_FLOOR_SAMPLE)
    mine, theirs = [], []
    for round_number in range(rounds):
        key = f"bench-{round_number}"
        mine.append(timed_pause(new_url(), sessions, bulk_pause, key))
        theirs.append(timed_pause(new_url(), sample, floor_pause, key) * sessions / sample)
    return [
        Figure(
            f"bulk pause of {sessions:,} sessions{label}",
            statistics.median(mine),
            f"perform_action each ({sample:,}, scaled)",
            statistics.median(theirs),
            limit=round(BULK_SECONDS_PER_SESSION * sessions, 3),
            absolute=True,
        )
    ]
