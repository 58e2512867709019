"""The paced load of bench/serve.py and bench/web.py: ``AGENTS`` agents beating ``RATE`` times
a second in all, each over a keep-alive connection of its own, in a process of its own (as
``wrk`` is). Prints the latencies and the counts of 2xx and other answers (or none) as JSON.

Usage: ``python bench/paced.py BASE_URL PAIRS_FILE SECONDS`` (PAIRS_FILE: a line per agent,
its token and its session, as bench/serve.py's ``fleet`` writes it).

It shares a core with the server it measures, so it is kept light: each agent has its own
connection, spoken with h11 (the HTTP/1.1 state machine httpx itself uses) on uvloop, and the
process imports nothing else. It took 0.08 cpu-s/s at 200 beats/s. One httpx client shared by
the 100 agents took 0.3-0.6 cpu-s/s, as much as the server: its pool walks all its connections
for each of them at every request and answer. On the server's core that load made the
multi-second p99 tails of bench/web.py's 20 open pages.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import h11
import uvloop

WORKSPACE = "ws-0"
AGENTS = 100
RATE = 200.0
ANSWER_SECONDS = 30.0


class Agent:
    """One agent's keep-alive connection: a beat sent, its answer's status read."""

    def __init__(self, base: str, token: str, session: str) -> None:
        self.address = urlsplit(base)
        if self.address.scheme != "http" or self.address.port is None:
            raise SystemExit(f"paced.py speaks plain HTTP to an explicit port, not {base!r}")
        path = f"/api/v1/workspaces/{WORKSPACE}/sessions/{session}/heartbeat"
        headers = [
            ("Host", self.address.netloc),
            ("Authorization", f"Bearer {token}"),
            ("Content-Length", "0"),
        ]
        self.request = h11.Request(method="POST", target=path, headers=headers)
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self.connection = h11.Connection(h11.CLIENT)

    async def beat(self) -> int:
        """The status of one beat's answer (0: no answer came; the next beat opens a new
        connection). A connection the server closed while it was idle is opened again and
        the beat sent once more: the server never saw it."""
        try:
            return await asyncio.wait_for(self._beat_once_more_if_closed(), ANSWER_SECONDS)
        except (OSError, TimeoutError, h11.ProtocolError):
            self.close()
            return 0

    async def _beat_once_more_if_closed(self) -> int:
        reused = self.streams is not None
        try:
            return await self._beat()
        except ClosedIdle:
            if not reused:
                raise
            self.close()
            return await self._beat()

    async def _beat(self) -> int:
        if self.streams is None:
            self.streams = await asyncio.open_connection(self.address.hostname, self.address.port)
            self.connection = h11.Connection(h11.CLIENT)
        reader, writer = self.streams
        connection = self.connection
        writer.write(connection.send(self.request) + connection.send(h11.EndOfMessage()))
        status = 0
        while True:
            event = connection.next_event()
            if event is h11.NEED_DATA:
                data = await reader.read(65536)
                if not data and status == 0:
                    raise ClosedIdle()
                connection.receive_data(data)  # b"" is the end: h11 says what that means
            elif isinstance(event, h11.Response):
                status = event.status_code
            elif isinstance(event, h11.EndOfMessage):
                break
        if connection.our_state is h11.DONE and connection.their_state is h11.DONE:
            connection.start_next_cycle()
        else:
            self.close()  # the answer said "Connection: close": counted, then a new one
        return status

    def close(self) -> None:
        if self.streams is not None:
            self.streams[1].close()
        self.streams = None


class ClosedIdle(ConnectionResetError):
    """The server closed the connection before answering a byte."""


def paced_latencies(
    base: str, pairs: list[tuple[str, str]], seconds: float
) -> tuple[list[float], dict[int, int]]:
    """Each agent beats every ``AGENTS / RATE`` seconds, the agents' beats spread evenly over
    that period; a beat that comes due while the last is unanswered goes as soon as it is
    answered (its latency is from when it went). Latencies (seconds), and how many answers
    had each status (0: none came)."""
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    period = AGENTS / RATE

    async def beating(number: int, agent: Agent) -> None:
        due = time.monotonic() + number * period / AGENTS
        end = time.monotonic() + seconds
        while due < end:
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            began = time.perf_counter()
            status = await agent.beat()
            latencies.append(time.perf_counter() - began)
            statuses[status] = statuses.get(status, 0) + 1
            due += period
        agent.close()

    async def run() -> None:
        agents = [Agent(base, token, session) for token, session in pairs[:AGENTS]]
        await asyncio.gather(*(beating(number, agent) for number, agent in enumerate(agents)))

    uvloop.run(run())
    return latencies, statuses


def read_pairs(path: Path) -> list[tuple[str, str]]:
    pairs = []
    for line in path.read_text().splitlines():
        token, session = line.split()
        pairs.append((token, session))
    return pairs


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    base, pairs, seconds = argv
    gc.freeze()  # what start-up made is never walked again by a collection during the load
    latencies, statuses = paced_latencies(base, read_pairs(Path(pairs)), float(seconds))
    ok = sum(count for status, count in statuses.items() if 200 <= status < 300)
    bad = sum(statuses.values()) - ok
    print(json.dumps({"latencies": latencies, "ok": ok, "bad": bad}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
