"""The console through ``roundtable serve`` against the same console on the same store opened
directly (issue 42 point 3), side by side in one run: whole processes until the first rows are
painted (``first_paint.py server URL`` against ``console URL``, in turns, medians: within
``FIRST_PAINT_LIMIT``), and key press -> its last frame through the server (p90 within
``KEY_P90_LIMIT`` times the bare app's, as on the store). A read of the list is one request (the
server's ``POST /api/v1/console/rows``): the requests each page down sends are counted (the most
of any: within ``PAGE_REQUESTS_LIMIT``). And a session committed to the store shows on the
console through the server within ``CHANGE_LIMIT_SECONDS``, as on the store (the server's
stream of changes, not a poll)."""

from __future__ import annotations

import json
import statistics
import subprocess
import tempfile
from pathlib import Path

from bench.console import bench_change_latency, first_paint_command, key_figures, key_timings
from bench.figures import Figure, run_process, timed
from roundtable_console.store.access.tokens import create_token
from roundtable_console.store.db.database import open_store
from tests.serve_support import serving

FIRST_PAINT_LIMIT = 1.3
PAGE_REQUESTS_LIMIT = 2
PAGE_DOWNS = 12


def bench_console_through_server(
    store: tuple[str, str], repeats: int, downs: int, pagedowns: int, env: dict[str, str]
) -> list[Figure]:
    opened = open_store(store[1])
    try:
        token = create_token(store=opened, name="bench-console", role="viewer").token
    finally:
        opened.dispose()
    with (
        tempfile.TemporaryDirectory(prefix="rt-bench-serve-") as tmp,
        serving(store[1], Path(tmp)) as served,
    ):
        through = {**env, "ROUNDTABLE_TOKEN": token}
        commands = {
            "store": (first_paint_command("console", store[1]), env),
            "server": (first_paint_command("server", served.url), through),
        }
        for argv, with_env in commands.values():  # once untimed: bytecode, caches
            run_process(argv, with_env)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(repeats):
            for name, (argv, with_env) in commands.items():
                times[name].append(timed(lambda a=argv, e=with_env: run_process(a, e)))
        on_store, on_server = (statistics.median(times[name]) for name in commands)
        label = f"{store[0]}, through serve"
        figures = [
            Figure(
                f"tui first rows ({label})",
                on_server,
                f"the console on the store, {store[0]}",
                on_store,
                FIRST_PAINT_LIMIT,
            ),  # fmt: skip
        ]
        ours = key_timings(downs, pagedowns, "server", served.url, env=through)
        floor = key_timings(downs, pagedowns, "bare")
        figures += key_figures(label, ours, floor)
        sent = page_requests(served.url, through)
        figures.append(Figure(f"requests per page down, most of {len(sent)} ({label})",
                              max(sent), limit=PAGE_REQUESTS_LIMIT, unit=" req",
                              absolute=True))  # fmt: skip
        operator = {**env, "ROUNDTABLE_TOKEN": operator_token(store[1])}
        figures += bench_change_latency(store[1], label, 5, served.url, operator)
    return figures


def operator_token(url: str) -> str:
    opened = open_store(url)
    try:
        return create_token(store=opened, name="bench-latency", role="operator").token
    finally:
        opened.dispose()


def page_requests(server: str, env: dict[str, str]) -> list[int]:
    """The requests each of ``PAGE_DOWNS`` page downs sent to the server (first_paint.py)."""
    done = subprocess.run(
        first_paint_command("pages", str(PAGE_DOWNS), "server", server),
        check=True, capture_output=True, text=True, env=env,
    )  # fmt: skip
    return [int(count) for count in json.loads(done.stdout.splitlines()[-1])]
