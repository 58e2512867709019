"""A fleet's load, with the console open (issue 12 point 3).

N agents beat for a fixed time through the product's own heartbeat
(``store.writes.agent_writes.heartbeat`` in a write transaction of ``Store.write``, what
``roundtable sessions heartbeat --every`` runs), as threads spread over a few worker processes, on a
store of its own: SQLite in a temporary directory, PostgreSQL in a throwaway cluster on the loopback
interface (``tests.pg_server``, started durable for this: fsync and synchronous commit on, unlike
the test suite's). While they beat, the console is opened on the same store three times in turn,
each as the bench's other scripts open it (headless, 120×40):

- idle, for ``CPU_SECONDS``: the CPU time its process used (every thread: the change watcher and
  the workers included) over that wall time, and how many SQL statements it ran per second;
- pressing keys (``first_paint.py keys``): key -> the frame showing its result (the cursor
  moved, the rows in view read), p90, against the same console's idle figure measured on the
  same store just before the load started. Downs are judged together (every down pressed) and
  apart: those within the view and those that moved it a row ("down-scrolls", which draw every
  row in view again). Under load the list's re-reads may move the cursor's session (in the
  attention order a session moves when it changes segment: a stale one seen again); once a key
  has moved the cursor it follows its session, the view with it, and more or fewer of the downs
  scroll than on the idle store: the classes compare like with like. The
  last frame before the app settles, the figure of the idle bench, is printed too but not judged
  here: under load it also counts the frames that the store's changes repaint, which the press
  did not cause;
- committing new sessions from another connection (``change_latency.py``): commit -> on screen.

Then it counts the heartbeat history rows of the agents' sessions, which must equal the beats
acknowledged (no beat lost), and prints one table (bench.py's) for both engines.

Usage: ``python bench/load.py`` (both engines, the issue's sizes: PostgreSQL 100 agents × 2
beats/s, SQLite 50 agents × 1 beat/s, 60 s each); ``--quick`` (a smoke run for CI: few agents,
a few seconds, no console); ``--engine sqlite|pg``; ``--agents``, ``--rate``, ``--seconds``
override the sizes. Internal modes: ``agents URL FIRST COUNT RATE SECONDS START`` (one worker
process) and ``console-cpu URL SECONDS`` (the idle console).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# The repository, not this script's directory, first on the path: here ``bench`` is the package
# of the bench's scripts, not bench.py.
sys.path[0] = str(ROOT)

from bench.console import KEY_P90_LIMIT, SCROLLING_DOWN, Timings, key_timings  # noqa: E402
from bench.figures import Figure, compiled_env, percentile, print_table  # noqa: E402

BEAT_P99_LIMIT_SECONDS = 0.050
CHANGE_UNDER_LOAD_LIMIT_SECONDS = 1.0
CPU_LIMIT = 0.30  # of one core
CPU_SECONDS = 15.0
AGENTS_PER_WORKER = 25
# Agents start beating this long after the workers are spawned, so every worker has imported
# and connected by then and the beats start in step.
START_DELAY_SECONDS = 4.0
SESSION_PREFIX = "load-"
# Finished sessions beside the agents', so the keys pressed have pages of rows to move over.
FINISHED_SESSIONS = 1000


@dataclass
class Engine:
    name: str
    agents: int
    rate: float
    seconds: float


@dataclass
class BeatTally:
    """What the agents of one or more workers saw."""

    acknowledged: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    late: int = 0

    def add(self, other: dict[str, Any]) -> None:
        self.acknowledged += other["acknowledged"]
        self.refused.update(other["refused"])
        self.latencies += other["latencies"]
        self.late += other["late"]


# ----------------------------------------------------------------------------- agents


def run_agents(url: str, first: int, count: int, rate: float, seconds: float, start: float) -> None:
    """One worker process: ``count`` agents, each beating ``rate`` times a second from the wall
    time ``start`` for ``seconds``, through the store's heartbeat. Prints its tally as JSON."""
    from roundtable_console.store.db.database import open_store
    from roundtable_console.store.errors import StoreError
    from roundtable_console.store.writes import agent_writes

    store = open_store(url, upgrade=False)
    tally = BeatTally()
    lock = threading.Lock()
    interval = 1.0 / rate
    end = start + seconds

    def agent(number: int) -> None:
        session_id = f"{SESSION_PREFIX}{number:05d}"
        # Spread the agents over the interval, so beats arrive evenly rather than in bursts.
        due = start + interval * ((number - first) / count)
        mine = BeatTally()
        while due < end:
            delay = due - time.time()
            if delay > 0:
                time.sleep(delay)
            elif delay < -interval:
                mine.late += 1
            began = time.perf_counter()
            try:
                with store.write() as db:
                    agent_writes.heartbeat(db=db, session_id=session_id)
            except StoreError as error:
                mine.refused[error.code] += 1
            except Exception as error:  # noqa: BLE001 - a bench reports every failure, by kind
                mine.refused[type(error).__name__] += 1
            else:
                mine.acknowledged += 1
                mine.latencies.append(time.perf_counter() - began)
            due += interval
        with lock:
            tally.add(mine.__dict__)

    threads = [threading.Thread(target=agent, args=(n,)) for n in range(first, first + count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    store.dispose()
    print(json.dumps(tally.__dict__))


def spawn_agents(url: str, engine: Engine) -> tuple[list[subprocess.Popen[str]], float]:
    start = time.time() + START_DELAY_SECONDS
    workers = []
    for first in range(0, engine.agents, AGENTS_PER_WORKER):
        count = min(AGENTS_PER_WORKER, engine.agents - first)
        argv = [sys.executable, __file__, "agents", url, str(first), str(count)]
        argv += [str(engine.rate), str(engine.seconds), str(start)]
        workers.append(subprocess.Popen(argv, stdout=subprocess.PIPE, text=True))
    return workers, start


def collect_agents(workers: list[subprocess.Popen[str]]) -> BeatTally:
    tally = BeatTally()
    for worker in workers:
        out, _ = worker.communicate()
        if worker.returncode != 0:
            raise RuntimeError(f"an agent worker failed (exit {worker.returncode})")
        tally.add(json.loads(out.splitlines()[-1]))
    return tally


# ---------------------------------------------------------------------------- the console


def console_cpu(url: str, seconds: float) -> None:
    """The console headless on ``url``: once its first rows are shown and its store is open,
    the CPU time its process uses over ``seconds`` of wall time, and the SQL statements it runs
    meanwhile. Prints ``{"cpu": fraction of one core, "statements_per_second": n}``."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine as SqlEngine

    from bench.first_paint import wait_until_ready
    from roundtable_console.tui.app import build_app
    from roundtable_console.tui.config import Settings

    statements = 0

    def count(*_args: Any) -> None:
        nonlocal statements
        statements += 1

    event.listen(SqlEngine, "before_cursor_execute", count)
    result: dict[str, float] = {}
    app = build_app(url=url, settings=Settings(), operator="bench", adapters={})

    async def measure(pilot: Any) -> None:
        await wait_until_ready(pilot)
        nonlocal statements
        statements = 0
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.sleep(seconds)
        wall = time.perf_counter() - wall
        result["cpu"] = (time.process_time() - cpu) / wall
        result["statements_per_second"] = statements / wall
        pilot.app.exit()

    app.run(headless=True, size=(120, 40), auto_pilot=measure)
    print(json.dumps(result))


def run_json(argv: list[str]) -> Any:
    done = subprocess.run(argv, check=True, capture_output=True, text=True, env=ENV)
    return json.loads(done.stdout.splitlines()[-1])


def change_latencies(url: str, rounds: int) -> list[float]:
    script = str(ROOT / "bench" / "change_latency.py")
    latencies: list[float] = run_json([sys.executable, script, url, str(rounds)])
    return latencies


def key_p90(url: str) -> dict[tuple[str, str], tuple[float, int]]:
    """Per key (``KEY_P90_KEYS``) and part (the frame showing the press's result, the last
    frame before the app settled): the p90 in seconds, and how many presses it is of."""
    return key_p90_of(key_timings(DOWNS, PAGEDOWNS, "console", url))


def key_p90_of(timings: Timings) -> dict[tuple[str, str], tuple[float, int]]:
    """``key_p90`` of one process's timings: every down together, and each key (a down within
    the view, one that moved it, a pagedown, a pageup) apart; a key never pressed is left out."""
    downs = [timings.get(key, {}) for key in ("down", SCROLLING_DOWN)]
    every_down = {
        part: [time for kind in downs for time in kind.get(part, [])]
        for part in ("result_frame_ms", "frame_ms")
    }
    timings = {**timings, ALL_DOWNS: every_down}
    return {
        (key, part): (percentile(timings[key][part], 0.9) / 1000, len(timings[key][part]))
        for key in KEY_P90_KEYS
        for part in ("result_frame_ms", "frame_ms")
        if timings.get(key, {}).get(part)
    }


# Presses timed per console (first_paint.py adds the downs that scroll): a p90 of a dozen is
# the second slowest, which one scheduling hiccup on a shared machine moves.
DOWNS, PAGEDOWNS = 30, 24
ALL_DOWNS = "every down"
KEY_P90_KEYS = (ALL_DOWNS, "down", SCROLLING_DOWN, "pagedown", "pageup")
ENV = compiled_env(Path(tempfile.gettempdir()) / "rt-load-pycache")


# ------------------------------------------------------------------------------ a store


def prepare(url: str, agents: int) -> None:
    """The agents' sessions, registered, plus some others so the list has more than a page."""
    from roundtable_console.store.db.database import open_store
    from roundtable_console.store.writes import agent_writes

    store = open_store(url)
    with store.write() as db:
        for number in range(agents):
            agent_writes.register(
                db=db,
                session_id=f"{SESSION_PREFIX}{number:05d}",
                agent_id=f"agent-{number}",
                run_id=f"run-{number % 5}",
                adapter="codex",
                working_directory="/tmp",
            )
        for number in range(FINISHED_SESSIONS):
            agent_writes.register(
                db=db,
                session_id=f"done-{number:05d}",
                agent_id=f"agent-{number % 50}",
                run_id=f"run-{number % 5}",
                adapter="codex",
                working_directory="/tmp",
                status="ended",
            )
    store.dispose()


def heartbeat_rows(url: str) -> int:
    from sqlalchemy import text

    from roundtable_console.store.db.database import open_store

    store = open_store(url, upgrade=False)
    with store.read() as db:
        rows = db.execute(
            text(
                "SELECT count(*) FROM agent_session_events"
                " WHERE event_type = 'heartbeat' AND session_id LIKE :prefix"
            ),
            {"prefix": f"{SESSION_PREFIX}%"},
        ).scalar_one()
    store.dispose()
    return int(rows)


def measure(url: str, engine: Engine, console: bool) -> list[Figure]:
    label = f"{engine.name}, {engine.agents} agents x {engine.rate:g}/s"
    prepare(url, engine.agents)
    idle = key_p90(url) if console else {}
    workers, start = spawn_agents(url, engine)
    under_load: dict[str, Any] = {}
    if console:
        time.sleep(max(0.0, start - time.time()) + 2.0)
        under_load["cpu"] = run_json(
            [sys.executable, __file__, "console-cpu", url, str(CPU_SECONDS)]
        )
        under_load["keys"] = key_p90(url)
        under_load["change"] = change_latencies(url, 5)
        if time.time() > start + engine.seconds:
            print(
                f"warning ({engine.name}): the console's figures outlasted the load",
                file=sys.stderr,
            )
    tally = collect_agents(workers)
    history = heartbeat_rows(url)
    beats = engine.agents * engine.rate * engine.seconds
    print(
        f"{label}: {tally.acknowledged:,} beats acknowledged of {beats:,.0f} scheduled,"
        f" refused {dict(tally.refused) or 0}, late {tally.late}; heartbeat history rows"
        f" {history:,}",
        file=sys.stderr,
    )
    figures = [
        Figure(
            f"beats lost: |history rows - acknowledged| ({label})",
            abs(history - tally.acknowledged),
            f"{tally.acknowledged:,} acknowledged",
            0,
            0,
            unit="",
            delta=True,
        ),
        Figure(
            f"beats refused ({label})",
            sum(tally.refused.values()),
            "none",
            0,
            0,
            unit="",
            delta=True,
        ),
        Figure(
            f"beat latency p50 ({label})",
            statistics.median(tally.latencies) if tally.latencies else float("inf"),
        ),
        Figure(
            f"beat latency p99 ({label})",
            percentile(tally.latencies, 0.99) if tally.latencies else float("inf"),
            limit=BEAT_P99_LIMIT_SECONDS,
        ),
    ]
    if console:
        for key in KEY_P90_KEYS:
            if (key, "frame_ms") not in idle or (key, "frame_ms") not in under_load["keys"]:
                print(f"warning: no {key} press to compare ({label})", file=sys.stderr)
                continue
            for part, what, limit in (
                ("result_frame_ms", "its result's frame", KEY_P90_LIMIT),
                ("frame_ms", "last frame before settled", None),
            ):
                (loaded, presses), (floor, idle_presses) = (
                    under_load["keys"][key, part],
                    idle[key, part],
                )
                figures.append(
                    Figure(
                        f"{key} -> {what} p90, under load, {presses}x ({label})",
                        loaded,
                        f"the same console, idle, {idle_presses}x",
                        floor,
                        limit,
                    )
                )
        change = under_load["change"]
        figures.append(
            Figure(
                f"change on screen, max under load ({label})",
                max(change),
                limit=CHANGE_UNDER_LOAD_LIMIT_SECONDS,
            )
        )
        cpu = under_load["cpu"]
        figures.append(
            Figure(
                f"console CPU, % of one core ({label})",
                cpu["cpu"] * 100,
                limit=CPU_LIMIT * 100,
                unit="%",
            )
        )
        figures.append(
            Figure(
                f"console SQL statements a second ({label})", cpu["statements_per_second"], unit=""
            )
        )
    return figures


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "agents":
        url, first, count, rate, seconds, start = sys.argv[2:8]
        run_agents(url, int(first), int(count), float(rate), float(seconds), float(start))
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "console-cpu":
        console_cpu(sys.argv[2], float(sys.argv[3]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run: few agents, no console")
    parser.add_argument("--engine", choices=("sqlite", "pg", "both"), default="both")
    parser.add_argument("--agents", type=int, help="agents (default: the issue's, per engine)")
    parser.add_argument("--rate", type=float, help="beats a second per agent")
    parser.add_argument("--seconds", type=float, help="how long the agents beat")
    args = parser.parse_args()
    sizes = {
        "sqlite": Engine("SQLite", 50, 1.0, 60.0),
        "pg": Engine("PostgreSQL", 100, 2.0, 60.0),
    }
    if args.quick:
        sizes = {name: Engine(e.name, 6, e.rate, 3.0) for name, e in sizes.items()}
    for engine in sizes.values():
        engine.agents = args.agents or engine.agents
        engine.rate = args.rate or engine.rate
        engine.seconds = args.seconds or engine.seconds
    chosen = ("sqlite", "pg") if args.engine == "both" else (args.engine,)
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="rt-load-") as tmp:
        if "sqlite" in chosen:
            url = f"sqlite:///{Path(tmp) / 'load.db'}"
            figures += measure(url, sizes["sqlite"], console=not args.quick)
        if "pg" in chosen:
            from tests.pg_server import PostgresServer

            server = PostgresServer(durable=True)
            server.start()
            try:
                figures += measure(server.url(), sizes["pg"], console=not args.quick)
            finally:
                server.stop()
    print_table(figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
