"""A fleet of hosts held by one server, measured (issue 41 point 2): a thousand hosts, each
with a token of its own, each holding its WebSocket to one real ``roundtable serve`` on SQLite
(``/api/v1/hosts/connect``: hello, welcome, then idle, as ``roundtable host run`` is).

- what they cost the server: its RSS and its thread count with every host connected, against
  the same server before (bounds: 100 MiB, and no thread each);
- heartbeats meanwhile: bench/paced.py's 100 agents at 200 beats/s, p99 within bench/serve.py's
  bound (the server checks every host's token again every 10 s and marks them seen every 30 s
  during it);
- every host listed online by ``GET /api/v1/hosts``, and how long that answer takes.

The hosts are WebSocket connections on an asyncio loop in a thread of this process (a host is
one idle connection; a thousand host processes would measure process starts instead).

Usage: ``python bench/hosts.py`` (1,000 hosts, 20 s of beats); ``--quick`` (CI: 100, 3 s).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[0] = str(ROOT)

from bench.figures import Figure, percentile, print_table  # noqa: E402
from bench.hook_waits import THREADS_LIMIT, threads_of  # noqa: E402
from bench.paced import RATE  # noqa: E402
from bench.serve import P99_LIMIT, fleet, paced_load, rss_mib  # noqa: E402
from roundtable_console.store.access.tokens import create_token  # noqa: E402
from roundtable_console.store.hosts.protocol import CONNECT_PATH  # noqa: E402
from tests.serve_support import serving  # noqa: E402

COST_LIMIT_MIB = 100.0
LIST_LIMIT = 0.5


class Hosts:
    """Each host's connection, said hello on and held until ``stop``."""

    def __init__(self, base: str, tokens: list[tuple[str, str]]) -> None:
        self.url = base.replace("http", "ws", 1) + CONNECT_PATH
        self.tokens = tokens
        self.welcomed = 0
        self.failures: list[str] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.stopping = asyncio.Event()

    def start(self) -> None:
        self.thread.start()
        for name, token in self.tokens:
            asyncio.run_coroutine_threadsafe(self._hold(name, token), self.loop)

    async def _hold(self, name: str, token: str) -> None:
        from websockets.asyncio.client import connect

        hello = {"kind": "hello", "name": name, "agents": [{"name": "claude-code",
                 "version": "2.1.328"}], "projects": ["/srv/api"], "tmux": "3.3a"}  # fmt: skip
        try:
            async with connect(
                self.url, additional_headers={"Authorization": f"Bearer {token}"},
                open_timeout=60, ping_interval=20, ping_timeout=20,
            ) as connection:  # fmt: skip
                await connection.send(json.dumps(hello))
                answer = json.loads(await connection.recv())
                if answer.get("kind") != "welcome":
                    self.failures.append(str(answer)[:200])
                    return
                self.welcomed += 1
                await self.stopping.wait()
        except Exception as error:  # noqa: BLE001 - counted and shown, the bench goes on
            self.failures.append(f"{type(error).__name__}: {error}")

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.stopping.set)
        time.sleep(1.0)
        self.loop.call_soon_threadsafe(self.loop.stop)


def bench_hosts(directory: Path, count: int, seconds: float) -> list[Figure]:
    url = f"sqlite:///{directory / 'hosts.db'}"
    pairs = directory / "pairs.txt"
    store = fleet(url, pairs)
    try:
        tokens = [
            (f"host-{n:04d}", create_token(store=store, name=f"host-{n:04d}", role="host").token)
            for n in range(count)
        ]
        operator = create_token(store=store, name="bench-ops", role="operator").token
        with serving(url, directory / "home", "--max-connections", str(count + 500)) as served:
            pid = served.process.pid
            paced_load(served.url, pairs, 2.0)  # warm: the server as it is with agents beating
            rss_before, threads_before = rss_mib(pid), threads_of(pid)
            hosts = Hosts(served.url, tokens)
            hosts.start()
            deadline = time.monotonic() + 120
            while hosts.welcomed + len(hosts.failures) < count and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(2.0)
            rss_held, threads_held = rss_mib(pid), threads_of(pid)
            latencies, _ok, bad = paced_load(served.url, pairs, seconds)
            rss_after = rss_mib(pid)
            started = time.perf_counter()
            listed = httpx.get(
                f"{served.url}/api/v1/hosts",
                headers={"Authorization": f"Bearer {operator}"},
                timeout=30,
            ).json()["hosts"]
            list_seconds = time.perf_counter() - started
            hosts.stop()
    finally:
        store.dispose()
    online = sum(1 for host in listed if host["online"])
    print(
        f"{count} hosts: {hosts.welcomed} welcomed, {len(hosts.failures)} failed "
        f"{hosts.failures[:3]}; {online} listed online; server RSS {rss_before:.1f} -> "
        f"{rss_held:.1f} MiB (after the beats {rss_after:.1f}), threads {threads_before} -> "
        f"{threads_held}"
    )
    return [
        Figure(f"{count} hosts connected: server RSS cost", max(rss_held, rss_after),
               "the same server before", rss_before, COST_LIMIT_MIB, unit="MiB", delta=True),
        Figure(f"{count} hosts connected: server threads", float(threads_held),
               "the same server before", float(threads_before), THREADS_LIMIT, unit="",
               delta=True),
        Figure(f"heartbeat p99 at {RATE:.0f}/s with {count} hosts connected",
               percentile(latencies, 0.99), limit=P99_LIMIT),
        Figure(f"beats refused with {count} hosts connected", float(bad), limit=0.5,
               unit=" beats", absolute=True),
        Figure(f"{count} hosts: not listed online", float(count - online), limit=0.5, unit="",
               absolute=True),
        Figure(f"GET /api/v1/hosts of {count} hosts", list_seconds, limit=LIST_LIMIT),
    ]  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (CI)")
    parser.add_argument("--hosts", type=int, help="how many hosts connect (default 1,000)")
    args = parser.parse_args()
    count, seconds = (100, 3.0) if args.quick else (1000, 20.0)
    count = args.hosts or count
    with tempfile.TemporaryDirectory(prefix="rt-hosts-bench-") as scratch:
        figures = bench_hosts(Path(scratch), count, seconds)
    print_table(figures)
    print(json.dumps({"missed": [f.name for f in figures if f.verdict() == "MISS"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
