"""The paced load of bench/serve.py and bench/web.py: ``AGENTS`` agents beating ``RATE`` times
a second in all, each over a keep-alive connection of its own, in a process of its own (as
``wrk`` is). Prints the latencies and the counts of 2xx and other answers as JSON.

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
        """The status of one beat's answer (0: the connection failed; the next beat opens a
        new one)."""
        try:
            return await asyncio.wait_for(self._beat(), ANSWER_SECONDS)
        except (OSError, TimeoutError, h11.ProtocolError):
            self.close()
            return 0

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
                if not data:
                    raise ConnectionResetError("the server closed the connection")
                connection.receive_data(data)
            elif isinstance(event, h11.Response):
                status = event.status_code
            elif isinstance(event, h11.EndOfMessage):
                break
        connection.start_next_cycle()
        return status

    def close(self) -> None:
        if self.streams is not None:
            self.streams[1].close()
        self.streams = None


def paced_latencies(
    base: str, pairs: list[tuple[str, str]], seconds: float
) -> tuple[list[float], int, int]:
    """Each agent beats every ``AGENTS / RATE`` seconds, the agents' beats spread evenly over
    that period; a beat that comes due while the last is unanswered goes as soon as it is
    answered. Latencies (seconds), 2xx answers, other answers."""
    latencies: list[float] = []
    counts = {"ok": 0, "bad": 0}
    period = AGENTS / RATE

    async def beating(number: int, agent: Agent) -> None:
        due = time.monotonic() + number * period / AGENTS
        end = time.monotonic() + seconds
        while due < end:
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            began = time.perf_counter()
            status = await agent.beat()
            latencies.append(time.perf_counter() - began)
            counts["ok" if 200 <= status < 300 else "bad"] += 1
            due += period
        agent.close()

    async def run() -> None:
        agents = [Agent(base, token, session) for token, session in pairs[:AGENTS]]
        await asyncio.gather(*(beating(number, agent) for number, agent in enumerate(agents)))

    uvloop.run(run())
    return latencies, counts["ok"], counts["bad"]


def read_pairs(path: Path) -> list[tuple[str, str]]:
    pairs = []
    for line in path.read_text().splitlines():
        token, session = line.split()
        pairs.append((token, session))
    return pairs


def main(argv: list[str]) -> int:
    base, pairs, seconds = argv
    gc.freeze()  # what start-up made is never walked again by a collection during the load
    latencies, ok, bad = paced_latencies(base, read_pairs(Path(pairs)), float(seconds))
    print(json.dumps({"latencies": latencies, "ok": ok, "bad": bad}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
