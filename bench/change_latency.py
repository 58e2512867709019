"""One process: the console headless at 120×40 on a store; once its first rows are shown, another
connection commits a new session (at the top of the list) ``ROUNDS`` times, and each time the
seconds from that commit to the row on screen are taken. Prints them as a JSON list.

The console's timed refresh is set an hour away, so what brings the row is the store's own
change signal: on PostgreSQL a notification on the console's listening connection, on SQLite
its data version (issue 4 point 5: "a change shows within 0.5 s without polling the table").

With ``--server SERVE_URL`` (the token in $ROUNDTABLE_TOKEN), the console reads through that
``roundtable serve`` of the same store, as ``roundtable tui --server`` does: what brings the row is
the server's stream of changes (issue 42 point 2), while the commits still go to the store.

Usage: ``change_latency.py URL [ROUNDS] [--server SERVE_URL]``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from textual.pilot import Pilot  # noqa: E402

from roundtable_console.store.db.database import open_store  # noqa: E402
from roundtable_console.store.writes import agent_writes  # noqa: E402
from roundtable_console.tui.app import build_app  # noqa: E402
from roundtable_console.tui.config import Settings  # noqa: E402
from roundtable_console.tui.console_link import open_link  # noqa: E402

SIZE = (120, 40)
ROUNDS = 5
# Earlier than every session the bench's stores hold, and each earlier than the last, so each
# new one lists first: it waits for a human since then (the console's attention order) and
# started then (the reference order).
EARLY = "2000-01-01T00:00:{second:02d}Z"
# A row that has not shown by then counts as this late, and the rounds end.
GIVE_UP_SECONDS = 10.0


def shown_ids(pilot: Pilot[Any]) -> set[str]:
    """The sessions the list holds (its first rows: each new session lists first)."""
    model = getattr(pilot.app.screen, "model", None)
    return set() if model is None else {session.id for session in model.rows}


def commit_session(url: str, session_id: str, second: int) -> float:
    """Register a session from a connection of its own; the time of its commit."""
    store = open_store(url)
    try:
        with store.write() as db:
            agent_writes.register(
                db=db,
                session_id=session_id,
                agent_id="bench-latency",
                run_id="run-latency",
                adapter="codex",
                working_directory="/tmp",
            )
            early = EARLY.format(second=59 - second)
            db.exec_driver_sql(
                "UPDATE agent_sessions SET started_at = ?, waiting_reason = 'bench',"
                " waiting_since = ? WHERE id = ?"
                if db.dialect.name == "sqlite"
                else "UPDATE agent_sessions SET started_at = %s, waiting_reason = 'bench',"
                " waiting_since = %s WHERE id = %s",
                (early, early, session_id),
            )
        return time.perf_counter()
    finally:
        store.dispose()


def main(argv: list[str]) -> None:
    server = None
    if "--server" in argv:
        at = argv.index("--server")
        server, argv = argv[at + 1], argv[:at] + argv[at + 2 :]
    url = argv[0]
    rounds = int(argv[1]) if len(argv) > 1 else ROUNDS
    latencies: list[float] = []
    settings = Settings(refresh_seconds=3600)
    if server is None:
        app = build_app(url=url, settings=settings, operator="bench", adapters={})
    else:
        link = open_link(server, os.environ["ROUNDTABLE_TOKEN"])
        app = build_app(url=server, settings=settings, operator="bench", adapters={}, link=link)

    def commit_into(committed: list[float], session_id: str, second: int) -> None:
        committed.append(commit_session(url, session_id, second))

    async def measure(pilot: Pilot[Any]) -> None:
        while not shown_ids(pilot):
            await asyncio.sleep(0.005)
        await pilot.pause(0.5)
        for number in range(rounds):
            session_id = f"latency-{time.time_ns()}-{number}"
            committed: list[float] = []
            writer = threading.Thread(target=commit_into, args=(committed, session_id, number))
            writer.start()
            deadline = time.perf_counter() + GIVE_UP_SECONDS
            while session_id not in shown_ids(pilot) and time.perf_counter() < deadline:
                await asyncio.sleep(0.002)
            seen = time.perf_counter()
            writer.join()
            latencies.append(seen - committed[0])
            if seen >= deadline:
                break
            await pilot.pause(0.3)
        pilot.app.exit()

    app.run(headless=True, size=SIZE, auto_pilot=measure)
    print(json.dumps(latencies))


if __name__ == "__main__":
    main(sys.argv[1:])
