"""What needs the agent's machine, through its host (issue 41 point 4), measured on loopback: a
real ``roundtable serve`` on SQLite and a real ``roundtable host run`` holding its link.

- a transcript page (50 entries of a 300-turn Claude Code transcript) read through the host,
  against the same page read by the server from its own disk (a session of a machine that runs
  no host), in turns: the median within 30 ms, p95 reported;
- the same page through a second server of the same store, which relays the call through the
  store to the server holding the host: within 1 s;
- a reply typed into the pane the host started (``POST …/launch``, then ``POST …/reply``):
  from the reply's request until its text is on the agent's screen (read with tmux, every
  5 ms), the median within 0.5 s.

The agent is a stand-in on the host's PATH (``claude``: it answers ``--version`` and then runs
``cat``, which echoes what is typed).

Usage: ``python bench/host_calls.py`` (40 pages, 10 replies); ``--quick`` (CI: 8, 3).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from sqlalchemy import text

ROOT = Path(__file__).resolve().parents[1]
sys.path[0] = str(ROOT)

from bench.figures import Figure, percentile, print_table  # noqa: E402
from roundtable_console.store.access.tokens import create_token  # noqa: E402
from roundtable_console.store.db.database import open_store  # noqa: E402
from roundtable_console.store.hosts import protocol  # noqa: E402
from roundtable_console.store.writes import agent_writes  # noqa: E402
from tests.api_support import seed_workspace  # noqa: E402
from tests.hosts_support import host_started  # noqa: E402
from tests.serve_support import serving  # noqa: E402

PAGE_LIMIT = 0.030
REPLY_LIMIT = 0.5
RELAYED_LIMIT = 1.0
CLAUDE_ID = "3f0c8a52-7c1e-4b8e-9a57-2f1d7c0e9b11"
STAND_IN = '#!/bin/sh\nif [ "$1" = "--version" ]; then echo "2.1.0 (Claude Code)"; exit 0; fi\n' \
    "exec cat\n"  # fmt: skip


def transcript(home: Path, turns: int) -> Path:
    path = home / ".claude" / "projects" / "-w" / f"{CLAUDE_ID}.jsonl"
    path.parent.mkdir(parents=True)
    with path.open("w") as out:
        for n in range(turns):
            for role in ("user", "assistant"):
                line = {"type": role, "message": {"role": role, "content": f"{role} turn {n}"}}
                out.write(json.dumps(line) + "\n")
    return path


def bench_host_calls(directory: Path, pages: int, replies: int) -> list[Figure]:
    url = f"sqlite:///{directory / 'calls.db'}"
    home = directory / "laptop-home"
    path = transcript(home, 300)
    store = open_store(url)
    seed_workspace(store, "ws-1")
    with store.write() as db:
        for session_id, host in (("through-host", "laptop"), ("here", None)):
            agent_writes.register(
                db=db, session_id=session_id, agent_id="a", run_id="r", adapter="claude",
                working_directory=str(home), external_session_id=CLAUDE_ID, host=host,
                workspace_id="ws-1", resume_command=f"claude --resume {CLAUDE_ID}",
                metadata={"hooks": "claude-code", "transcript_path": str(path)},
            )  # fmt: skip
    host_token = create_token(store=store, name="laptop", role="host").token
    ops = {
        "Authorization": f"Bearer {create_token(store=store, name='ops', role='operator').token}"
    }
    bin_dir = directory / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text(STAND_IN)
    (bin_dir / "claude").chmod(0o755)
    tmux_dir = tempfile.mkdtemp(prefix="rt-bench-", dir="/tmp")  # a socket's path is short
    machine = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "TMUX_TMPDIR": tmux_dir}
    try:
        with serving(url, directory / "server-home") as served:
            base = f"{served.url}/api/v1/workspaces/ws-1/sessions"
            host = host_started(
                directory / "server-home", "--name", "laptop", "--server", served.url,
                "--project", str(home), token=host_token, env=machine,
            )  # fmt: skip
            try:
                with httpx.Client(headers=ops, timeout=30) as client:
                    online(client, served.url)
                    through, here = page_times(client, base, pages)
                    with serving(url, directory / "second-home") as second:
                        other = f"{second.url}/api/v1/workspaces/ws-1/sessions"
                        relayed = relayed_times(client, other, max(3, pages // 4))
                    typed = reply_times(client, base, store, machine, replies)
            finally:
                host.terminate()
                host.wait(30)
    finally:
        subprocess.run(["tmux", "-L", protocol.TMUX_LABEL, "kill-server"],
                       env={**os.environ, **machine}, capture_output=True, check=False)  # fmt: skip
        shutil.rmtree(tmux_dir, ignore_errors=True)
        store.dispose()
    return [
        Figure(
            "transcript page through its host (median)",
            statistics.median(through),
            "the same page read by the server",
            statistics.median(here),
            limit=PAGE_LIMIT,
            absolute=True,
        ),  # fmt: skip
        Figure(
            "transcript page through its host (p95)",
            percentile(through, 0.95),
            "the same page read by the server",
            percentile(here, 0.95),
        ),  # fmt: skip
        Figure(
            "the page through another server of the store (median)",
            statistics.median(relayed),
            limit=RELAYED_LIMIT,
        ),  # fmt: skip
        Figure(
            "reply typed into a host's pane (median)", statistics.median(typed), limit=REPLY_LIMIT
        ),  # fmt: skip
    ]


def online(client: httpx.Client, server: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        hosts = client.get(f"{server}/api/v1/hosts").json()["hosts"]
        if any(host["name"] == "laptop" and host["online"] for host in hosts):
            return
        time.sleep(0.05)
    raise SystemExit("the host did not come online within 60 s")


def page_times(client: httpx.Client, base: str, rounds: int) -> tuple[list[float], list[float]]:
    """Each read ``rounds`` times, in turns, after a warm read of each."""
    times: dict[str, list[float]] = {"through-host": [], "here": []}
    for round_number in range(rounds + 1):
        for session_id, seen in times.items():
            started = time.perf_counter()
            page = client.get(f"{base}/{session_id}/transcript", params={"limit": 50}).json()
            took = time.perf_counter() - started
            if not page["available"] or len(page["items"]) != 50:
                raise SystemExit(f"{session_id}: {page.get('reason')}")
            if round_number:
                seen.append(took)
    return times["through-host"], times["here"]


def relayed_times(client: httpx.Client, base: str, rounds: int) -> list[float]:
    """The page read through a second server of the store, which does not hold the host: the
    call goes through the store to the first (SQLite: each side looks every 0.2 s)."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        page = client.get(f"{base}/through-host/transcript", params={"limit": 50}).json()
        if not page["available"]:
            raise SystemExit(f"relayed: {page.get('reason')}")
        times.append(time.perf_counter() - started)
    return times


def reply_times(
    client: httpx.Client, base: str, store: object, machine: dict[str, str], rounds: int
) -> list[float]:
    with store.write() as db:  # type: ignore[attr-defined]
        db.execute(text("UPDATE agent_sessions SET status = 'stopped' WHERE id = 'through-host'"))
    started = client.post(f"{base}/through-host/launch", headers={"Idempotency-Key": "bench"})
    if started.status_code != 200:
        raise SystemExit(f"launch: {started.text}")
    pane = ["tmux", "-L", protocol.TMUX_LABEL, "capture-pane", "-p", "-t",
            f"={protocol.tmux_session_name('through-host')}:"]  # fmt: skip
    env = {**os.environ, **machine}
    times = []
    for number in range(rounds):
        with store.write() as db:  # type: ignore[attr-defined]
            db.execute(text(
                "UPDATE agent_sessions SET status = 'active', waiting_since = NULL,"
                " waiting_reason = 'its turn is done' WHERE id = 'through-host'"
            ))  # fmt: skip
        words = f"reply number {number}"
        began = time.perf_counter()
        answer = client.post(f"{base}/through-host/reply", json={"message": words},
                             headers={"Idempotency-Key": f"reply-{number}"})  # fmt: skip
        if answer.status_code != 200:
            raise SystemExit(f"reply: {answer.text}")
        while words not in subprocess.run(pane, capture_output=True, text=True, env=env).stdout:
            if time.perf_counter() - began > 10:
                shown = subprocess.run(pane, capture_output=True, text=True, env=env)
                raise SystemExit(f"a reply did not reach the pane within 10 s: {shown}")
            time.sleep(0.005)
        times.append(time.perf_counter() - began)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="CI: fewer rounds")
    options = parser.parse_args()
    pages, replies = (8, 3) if options.quick else (40, 10)
    with tempfile.TemporaryDirectory(prefix="rt-host-calls-") as directory:
        figures = bench_host_calls(Path(directory), pages, replies)
    print_table(figures)
    print(json.dumps({"missed": [f.name for f in figures if f.verdict() == "MISS"]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
