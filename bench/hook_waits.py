"""Hooks waiting through the server measured (issue 41 point 1): a thousand hooks each holding a
long wait on its permission request (``GET …/requests/{id}?wait=``, asked again as each ends, as
``agents.over_server`` does) against one real ``roundtable serve`` on SQLite.

- what they cost the server: its RSS and its thread count with every wait open, against the
  same server before they opened (bounds: 50 MiB, and no thread each);
- heartbeats meanwhile: bench/paced.py's 100 agents at 200 beats/s, p99 within bench/serve.py's
  bound;
- every wait answered once its request is decided (decisions taken in the store, as the
  console takes them), and how long after the last decision the last answer came.

The waits are raw HTTP/1.1 connections on an asyncio loop in a thread of this process (a hook's
wait is one idle connection; a thousand hook processes would measure process starts instead).

Usage: ``python bench/hook_waits.py`` (1,000 waits, 20 s of beats); ``--quick`` (CI: 100, 3 s).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[0] = str(ROOT)

from bench.figures import Figure, percentile, print_table  # noqa: E402
from bench.paced import RATE, WORKSPACE  # noqa: E402
from bench.serve import P99_LIMIT, fleet, paced_load, rss_mib  # noqa: E402
from roundtable_console.api.context import WORKER_THREADS  # noqa: E402
from roundtable_console.store.access.tokens import create_token  # noqa: E402
from roundtable_console.store.db.database import Store  # noqa: E402
from roundtable_console.store.requests import asking  # noqa: E402
from roundtable_console.store.requests.deciding import decide_request  # noqa: E402
from roundtable_console.store.writes import agent_writes  # noqa: E402
from tests.serve_support import serving  # noqa: E402

WAITER = "waiting-agent"
WAITERS = 10
COST_LIMIT_MIB = 50.0
# The server's pool of store workers and its change watch, started at most: never one a wait.
THREADS_LIMIT = WORKER_THREADS + 2
_LENGTH = re.compile(rb"content-length:\s*(\d+)", re.IGNORECASE)


def threads_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise RuntimeError("no Threads")


def asked_requests(store: Store, count: int) -> list[tuple[str, str, str]]:
    """``count`` sessions, each with a pending request, of ``WAITERS`` agents with a token each
    (a machine's agents have tokens of their own; one holds at most 256 waits):
    (token, session, request)."""
    tokens = [
        create_token(store=store, name=f"waiter-{n}", role="agent", agent_id=f"{WAITER}-{n}").token
        for n in range(WAITERS)
    ]
    with store.write() as db:
        for number in range(count):
            agent_writes.register(
                db=db, session_id=f"wait-{number:04d}", agent_id=f"{WAITER}-{number % WAITERS}",
                run_id="run-1", adapter="claude-code", working_directory="/w",
                workspace_id=WORKSPACE,
            )  # fmt: skip
    return [
        (tokens[number % WAITERS], f"wait-{number:04d}", asking.open_request(
            store, session_id=f"wait-{number:04d}", agent="claude-code", tool_name="Bash",
            tool_input={"command": f"make {number}"}, suggestions=None, reason="bench",
            wait_seconds=600, hook_host="bench", hook_pid=number + 1,
        ).id)
        for number in range(count)
    ]  # fmt: skip


class Waits:
    """Each request's long wait on a connection of its own, asked again while it is pending."""

    def __init__(self, base: str, requests: list[tuple[str, str, str]]) -> None:
        match = re.match(r"http://([^:/]+):(\d+)", base)
        assert match is not None
        self.host, self.port = match.group(1), int(match.group(2))
        self.requests = requests
        self.opened = 0
        self.answers: dict[str, tuple[float, str]] = {}
        self.failures: list[str] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def start(self) -> None:
        self.thread.start()
        for token, session, request in self.requests:
            asyncio.run_coroutine_threadsafe(self._wait(token, session, request), self.loop)

    async def _wait(self, token: str, session: str, request: str) -> None:
        path = f"/api/v1/workspaces/{WORKSPACE}/sessions/{session}/requests/{request}?wait=30"
        head = (f"GET {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                f"Authorization: Bearer {token}\r\n\r\n").encode()  # fmt: skip
        try:
            reader, writer = await asyncio.open_connection(self.host, self.port)
            self.opened += 1
            while True:
                writer.write(head)
                await writer.drain()
                answer_head = await reader.readuntil(b"\r\n\r\n")
                length = _LENGTH.search(answer_head)
                body = await reader.readexactly(int(length.group(1)) if length else 0)
                if not answer_head.startswith(b"HTTP/1.1 200"):
                    self.failures.append(answer_head.split(b"\r\n")[0].decode())
                    break
                state = json.loads(body)["state"]
                if state != "pending":
                    self.answers[request] = (time.monotonic(), state)
                    break
            writer.close()
        except (OSError, asyncio.IncompleteReadError, ValueError) as error:
            self.failures.append(f"{type(error).__name__}: {error}")

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)


def bench_waits(directory: Path, count: int, seconds: float) -> list[Figure]:
    url = f"sqlite:///{directory / 'waits.db'}"
    pairs = directory / "pairs.txt"
    store = fleet(url, pairs)
    try:
        requests = asked_requests(store, count)
        with serving(url, directory / "home", "--max-connections", str(count + 500)) as served:
            pid = served.process.pid
            paced_load(served.url, pairs, 2.0)  # warm: the server as it is with agents beating
            rss_before, threads_before = rss_mib(pid), threads_of(pid)
            waits = Waits(served.url, requests)
            waits.start()
            deadline = time.monotonic() + 60
            while waits.opened < count and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(2.0)  # each wait read once and parked
            rss_waiting, threads_waiting = rss_mib(pid), threads_of(pid)
            latencies, _ok, bad = paced_load(served.url, pairs, seconds)
            rss_after = rss_mib(pid)
            for _token, _session, request in requests:
                decide_request(store=store, request_id=request, decision="allow", actor="bench")
            last_decision = time.monotonic()
            deadline = last_decision + 60
            while len(waits.answers) + len(waits.failures) < count and time.monotonic() < deadline:
                time.sleep(0.05)
            waits.stop()
    finally:
        store.dispose()
    answered = [state for _at, state in waits.answers.values()]
    last = max((at for at, _state in waits.answers.values()), default=last_decision)
    print(
        f"{count} waits: {waits.opened} opened, {len(answered)} answered "
        f"({answered.count('allowed')} allowed), {len(waits.failures)} failed "
        f"{waits.failures[:3]}; server RSS {rss_before:.1f} -> {rss_waiting:.1f} MiB "
        f"(after the beats {rss_after:.1f}), threads {threads_before} -> {threads_waiting}"
    )
    return [
        Figure(f"{count} hooks waiting: server RSS cost", max(rss_waiting, rss_after),
               "the same server before", rss_before, COST_LIMIT_MIB, unit="MiB", delta=True),
        Figure(f"{count} hooks waiting: server threads", float(threads_waiting),
               "the same server before", float(threads_before), THREADS_LIMIT, unit="",
               delta=True),
        Figure(f"heartbeat p99 at {RATE:.0f}/s with {count} hooks waiting",
               percentile(latencies, 0.99), limit=P99_LIMIT),
        Figure(f"beats refused with {count} hooks waiting", float(bad), limit=0.5,
               unit=" beats", absolute=True),
        Figure(f"{count} hooks waiting: not answered 'allowed'",
               float(count - answered.count("allowed")), limit=0.5, unit="", absolute=True),
        Figure(f"last decision -> last of {count} waits answered", last - last_decision,
               limit=1.0),
    ]  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (CI)")
    parser.add_argument("--waits", type=int, help="how many hooks wait (default 1,000)")
    args = parser.parse_args()
    count, seconds = (100, 3.0) if args.quick else (1000, 20.0)
    count = args.waits or count
    with tempfile.TemporaryDirectory(prefix="rt-waits-bench-") as scratch:
        figures = bench_waits(Path(scratch), count, seconds)
    print_table(figures)
    print(json.dumps({"missed": [f.name for f in figures if f.verdict() == "MISS"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
