"""``roundtable serve`` measured (issue 20 point 8), ratios against floors taken in the same run.

- a page of 50 sessions of a workspace, over HTTP from a real server, on a store of a million
  sessions against one of ten (first page, and a page deep in the list after a cursor), and the
  server's RSS after it;
- heartbeats over HTTP, each agent with its own agent token (real identities), on SQLite and on
  PostgreSQL (a durable throwaway cluster, as load.py's):
  - at saturation: ``wrk`` with 100 keep-alive connections, against the same beats through the
    store's functions called in-process (the ones the route calls: the token, the workspace and
    the beat in one transaction; and the bare agent's heartbeat), and against a ``roundtable
    sessions heartbeat`` process per beat;
  - at 200 beats/s from 100 agents, each with a keep-alive connection of its own
    (bench/paced.py): p50 and p99;
  - no beat lost: the heartbeat history rows written equal the beats acknowledged (a beat still
    in flight when ``wrk`` stops may be written unacknowledged: at most one a connection);
- a change -> on a server-sent events client.

Usage: ``python bench/serve.py`` (the issue's sizes: 1,000,000 sessions, 30 s loads, both
engines); ``--quick`` (a smoke run for CI); ``--big N``, ``--seconds S``, ``--engine``.
Needs Debian's ``wrk`` (the test suite brings it as it starts).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[0] = str(ROOT)

import httpx  # noqa: E402
from sqlalchemy import text  # noqa: E402

from bench.figures import Figure, compiled_env, percentile, print_table, roundtable_command  # noqa: E402
from bench.paced import AGENTS, RATE, WORKSPACE  # noqa: E402
from bench.stores import build_reference_store  # noqa: E402
from roundtable_console.store.access.tokens import create_token, identify  # noqa: E402
from roundtable_console.store.db.database import Store, open_store  # noqa: E402
from roundtable_console.store.reads.workspaces import get_workspace  # noqa: E402
from roundtable_console.store.writes import agent_writes  # noqa: E402
from tests.serve_support import EventReader, serving  # noqa: E402

PAGE_LIMIT = 1.3
P99_LIMIT = 0.050
SATURATION_LIMIT = 0.4
PROCESS_LIMIT = 20.0
CHANGE_LIMIT = 1.0
RSS_LIMIT_MIB = 150.0

WRK_SCRIPT = """
local pairs = {}
for line in io.lines("%(pairs)s") do
  local token, session = line:match("([^ ]+) ([^ ]+)")
  pairs[#pairs + 1] = {token, session}
end
local counter = 0
request = function()
  counter = counter + 1
  local pair = pairs[(counter %% #pairs) + 1]
  return wrk.format("POST", "/api/v1/workspaces/%(workspace)s/sessions/" .. pair[2] .. "/heartbeat",
    {["Authorization"] = "Bearer " .. pair[1], ["Content-Length"] = "0"})
end
"""


def add_workspace(store: Store, workspace: str = WORKSPACE) -> None:
    with store.write() as db:
        db.execute(
            text(
                "INSERT INTO workspaces (id, name, root_path, created_at, updated_at)"
                " VALUES (:id, :id, :root, '2026-09-17T00:00:00Z', '2026-09-17T00:00:00Z')"
                " ON CONFLICT DO NOTHING"
            ),
            {"id": workspace, "root": f"/srv/{workspace}"},
        )


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


# ------------------------------------------------------------------------------ pages


def page_time(base: str, limit: int, repeats: int, *, deep: bool) -> float:
    """Median seconds of a page of ``limit`` sessions of the workspace: its first page, or
    (``deep``) the page after a cursor ten pages in when there are that many."""
    url = f"{base}/api/v1/workspaces/{WORKSPACE}/sessions"
    with httpx.Client(timeout=30) as client:
        cursor = None
        for _ in range(10 if deep else 0):
            page = client.get(url, params={"limit": limit, "cursor": cursor}).json()
            cursor = page["next_cursor"] or cursor
        params = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        for _ in range(5):  # warm
            client.get(url, params=params)
        times = []
        for _ in range(repeats):
            began = time.perf_counter()
            assert client.get(url, params=params).status_code == 200
            times.append(time.perf_counter() - began)
    return statistics.median(times)


def page_store(directory: Path, size: int, *, one_workspace: bool) -> str:
    """A reference store of ``size`` sessions (``one_workspace``: all of them the bench's
    workspace's, so a small store fills the page it is compared with), opened once."""
    path = directory / f"pages-{size}.db"
    build_reference_store(path, size)
    if one_workspace:
        with sqlite3.connect(path) as raw:
            raw.execute("UPDATE agent_sessions SET workspace_id = ?", (WORKSPACE,))
    url = f"sqlite:///{path}"
    store = open_store(url)  # the first open migrates: not what is measured
    add_workspace(store)
    store.dispose()
    return url


def bench_pages(directory: Path, big: int, repeats: int) -> list[Figure]:
    """A page costs the page: at ``big`` sessions against a store of 10 (pages of 10, which
    that store fills) and of 50 (pages of 50), each page first and deep in the list."""
    label = f"{big:,} sessions"
    figures: list[Figure] = []
    with serving(
        page_store(directory, big, one_workspace=False), directory / "home-big"
    ) as big_server:
        for small_size in (10, 50):
            url = page_store(directory, small_size, one_workspace=True)
            with serving(url, directory / f"home-{small_size}") as small_server:
                for deep in (False, True):
                    where = "after 10 pages" if deep else "first"
                    name = f"GET a page of {small_size}, {where} ({label})"
                    large = page_time(big_server.url, small_size, repeats, deep=deep)
                    small = page_time(small_server.url, small_size, repeats, deep=deep)
                    figures.append(Figure(name, large, f"the same, {small_size} sessions",
                                          small, PAGE_LIMIT))  # fmt: skip
        rss = rss_mib(big_server.process.pid)
    figures.append(Figure(f"server RSS after the pages ({label})", rss, "-", None,
                          RSS_LIMIT_MIB, unit="MiB"))  # fmt: skip
    return figures


# ------------------------------------------------------------------------------ heartbeats


def fleet(url: str, pairs_file: Path) -> Store:
    """``AGENTS`` sessions of the workspace, each agent with a token of its own."""
    store = open_store(url)
    add_workspace(store)
    lines = []
    with store.write() as db:
        for number in range(AGENTS):
            agent_writes.register(
                db=db, session_id=f"beat-{number:03d}", agent_id=f"agent-{number:03d}",
                run_id="run-1", adapter="codex", working_directory="/w", workspace_id=WORKSPACE,
            )  # fmt: skip
    for number in range(AGENTS):
        made = create_token(
            store=store, name=f"agent-{number:03d}", role="agent", agent_id=f"agent-{number:03d}"
        )
        lines.append(f"{made.token} beat-{number:03d}")
    pairs_file.write_text("\n".join(lines) + "\n")
    return store


def beat_rows(store: Store) -> int:
    with store.read() as db:
        return int(
            db.execute(
                text("SELECT count(*) FROM agent_session_events WHERE event_type = 'heartbeat'")
            ).scalar_one()
        )


def in_process_rates(store: Store, tokens: list[str], beats: int) -> tuple[float, float]:
    """Beats a second through the store's functions called here: those the route calls (the
    token, the workspace, the beat of the workspace's session, one transaction), and the bare
    agent's heartbeat."""

    def routed(number: int) -> None:
        with store.write() as db:
            identity = identify(db, tokens[number % AGENTS])
            get_workspace(db=db, workspace_id=WORKSPACE)
            agent_writes.beat_in_workspace(
                db=db, session_id=f"beat-{number % AGENTS:03d}", workspace_id=WORKSPACE,
                agent_id=identity.agent_id,
            )  # fmt: skip

    def bare(number: int) -> None:
        with store.write() as db:
            agent_writes.heartbeat(db=db, session_id=f"beat-{number % AGENTS:03d}")

    rates = []
    for beat in (routed, bare):
        for number in range(50):
            beat(number)  # warm
        began = time.perf_counter()
        for number in range(beats):
            beat(number)
        rates.append(beats / (time.perf_counter() - began))
    return rates[0], rates[1]


def process_rate(url: str, directory: Path, repeats: int) -> float:
    argv = [*roundtable_command(), "sessions", "heartbeat", "--session", "beat-000", "--db", url]
    env = compiled_env(directory)
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - began)
    return 1 / statistics.median(times)


def wrk_saturation(
    base: str, pairs_file: Path, seconds: float, directory: Path
) -> tuple[float, int]:
    """Requests a second at saturation, and how many were answered 2xx."""
    script = directory / "beat.lua"
    script.write_text(WRK_SCRIPT % {"pairs": pairs_file, "workspace": WORKSPACE})
    done = subprocess.run(
        ["wrk", "-t1", "-c100", f"-d{max(int(seconds), 1)}s", "-s", str(script), base],
        check=True, capture_output=True, text=True, timeout=seconds + 60,
    )  # fmt: skip
    rate = float(_field(done.stdout, "Requests/sec:"))
    total = int(_between(done.stdout, "  ", " requests in"))
    failed = int(_field(done.stdout, "Non-2xx or 3xx responses:") or 0)
    return rate, total - failed


def _field(output: str, label: str) -> str:
    for line in output.splitlines():
        if label in line:
            return line.split(label)[1].strip().split()[0]
    return ""


def _between(output: str, start: str, end: str) -> str:
    for line in output.splitlines():
        if end in line:
            return line.split(end)[0].strip()
    raise RuntimeError(output)


def paced_load(base: str, pairs: Path, seconds: float) -> tuple[list[float], int, int]:
    """bench/paced.py's agents beating ``RATE`` times a second in all, from a process of its
    own, as ``wrk`` is: latencies, 2xx answers, other answers."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "paced.py"), base, str(pairs), str(seconds)],
        capture_output=True, text=True, timeout=seconds + 120,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"the paced load failed: {done.stderr[-2000:]}")
    found = json.loads(done.stdout)
    return found["latencies"], found["ok"], found["bad"]


def change_latencies(base: str, store: Store, rounds: int) -> list[float]:
    stream = EventReader(
        f"{base}/api/v1/workspaces/{WORKSPACE}/sessions/changes",
        headers={"Authorization": "Bearer " + OPERATOR_TOKEN[0]},
    ).start()
    stream.next()  # ready
    took = []
    for round_number in range(rounds):
        began = time.monotonic()
        with store.write() as db:
            agent_writes.heartbeat(db=db, session_id="beat-001", waiting=f"approve {round_number}")
        stream.next_change(timeout=10)
        took.append(time.monotonic() - began)
    stream.close()
    return took


OPERATOR_TOKEN: list[str] = []


def bench_beats(url: str, label: str, directory: Path, seconds: float, beats: int) -> list[Figure]:
    pairs = directory / f"pairs-{label}.txt"
    store = fleet(url, pairs)
    tokens = [line.split()[0] for line in pairs.read_text().splitlines()]
    OPERATOR_TOKEN[:] = [create_token(store=store, name="bench-operator", role="operator").token]
    try:
        routed, bare = in_process_rates(store, tokens, beats)
        per_process = process_rate(url, directory, 9)
        before = beat_rows(store)
        with serving(url, directory / f"home-{label}") as served:
            saturated, acknowledged = wrk_saturation(served.url, pairs, seconds, directory)
            latencies, paced_ok, paced_bad = paced_load(served.url, pairs, seconds)
            changes = change_latencies(served.url, store, 10)
        written = beat_rows(store) - before - len(changes)
    finally:
        store.dispose()
    acked = acknowledged + paced_ok
    lost = max(acked - written, 0)
    return [
        Figure(f"heartbeats over HTTP at saturation ({label})", saturated,
               "the route's store functions in-process", routed, SATURATION_LIMIT, rate=True),
        Figure(f"heartbeats over HTTP at saturation ({label})", saturated,
               "agent_writes.heartbeat in-process", bare, rate=True),
        Figure(f"heartbeats over HTTP at saturation ({label})", saturated,
               "a roundtable process a beat", per_process, PROCESS_LIMIT, rate=True),
        Figure(f"heartbeat p50 at {RATE:.0f}/s, 100 clients ({label})", percentile(latencies, 0.5)),
        Figure(f"heartbeat p99 at {RATE:.0f}/s, 100 clients ({label})",
               percentile(latencies, 0.99), limit=P99_LIMIT),
        Figure(f"beats lost of {acked:,} acknowledged ({label})", float(lost), limit=0.5,
               unit=" beats", absolute=True),
        Figure(f"beats refused at {RATE:.0f}/s ({label})", float(paced_bad), limit=0.5,
               unit=" beats", absolute=True),
        Figure(f"change -> SSE client, max of 10 ({label})", max(changes), limit=CHANGE_LIMIT),
    ]  # fmt: skip


# Figures are rates here: Figure's rate flag compares the floor's rate with ours; make "ours" the
# server's rate by inverting both into seconds per beat.
def _as_seconds(figures: list[Figure]) -> list[Figure]:
    out = []
    for figure in figures:
        if figure.name.startswith("heartbeats over HTTP at saturation"):
            out.append(Figure(figure.name, 1 / figure.value, figure.base_name,
                              1 / figure.base if figure.base else None, figure.limit,
                              rate=figure.rate))  # fmt: skip
        else:
            out.append(figure)
    return out


@contextmanager
def postgres_url(directory: Path) -> Iterator[str]:
    from tests.pg_server import PostgresServer

    server = PostgresServer(durable=True)
    server.start()
    try:
        admin = __import__("sqlalchemy").create_engine(server.url(), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text("CREATE DATABASE bench_serve"))
        admin.dispose()
        yield server.url("bench_serve")
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (CI)")
    parser.add_argument("--big", type=int, help="sessions in the large store (1,000,000)")
    parser.add_argument("--seconds", type=float, help="each load's length (30)")
    parser.add_argument("--engine", choices=("sqlite", "pg", "both"), default="both")
    args = parser.parse_args()
    big = args.big or (5_000 if args.quick else 1_000_000)
    seconds = args.seconds or (2.0 if args.quick else 30.0)
    beats = 300 if args.quick else 3000
    if shutil.which("wrk") is None:
        print("serve.py needs wrk (apt-get install wrk)", file=sys.stderr)
        return 2
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="rt-serve-bench-") as scratch:
        directory = Path(scratch)
        figures += bench_pages(directory, big, 20 if args.quick else 200)
        if args.engine in ("sqlite", "both"):
            url = f"sqlite:///{directory / 'beats.db'}"
            figures += _as_seconds(bench_beats(url, "SQLite", directory, seconds, beats))
        if args.engine in ("pg", "both"):
            with postgres_url(directory) as url:
                figures += _as_seconds(bench_beats(url, "PostgreSQL", directory, seconds, beats))
    print_table(figures)
    print(json.dumps({"missed": [f.name for f in figures if f.verdict() == "MISS"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
