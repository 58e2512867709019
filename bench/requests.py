"""Permission requests measured (issue 30 point 6): a human's decision -> the agent's hook answers.

Each request is a real hook process (``roundtable hooks run claude-code --permission-wait``) that
records the request and waits on the store's change signal; the decision is taken the way the
console and the CLI take it (``decide_request``) and over HTTP from a real ``roundtable serve``
with an operator token; a third path has the hook ask through that server (``--server`` with an
agent token: issue 41). The time is from the decision's call to the hook's answer read on its
stdout: median and p95 against the issue's bounds (0.5 s, 1 s), on SQLite and PostgreSQL (a
throwaway cluster). Then 50 agents asking at once: every request recorded, every
decision delivered once, and each to its own agent.

Usage: ``python bench/requests.py`` (20 decisions per path, 50 agents); ``--quick`` (CI).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[0] = str(ROOT)

from bench.figures import Figure, percentile, print_table, roundtable_command  # noqa: E402
from roundtable_console.store.db.database import Store, open_store  # noqa: E402
from roundtable_console.store.requests.deciding import decide_request  # noqa: E402
from roundtable_console.store.requests.reads import list_requests  # noqa: E402

SESSION = "9d3c1a52-7c1e-4b8e-9a57-2f1d7c0e9b11"


def _payload(external: str, event: str, cwd: Path, **fields: object) -> bytes:
    return json.dumps(
        {"session_id": external, "cwd": str(cwd), "hook_event_name": event, **fields}
    ).encode()


def _start(
    url: str, external: str, directory: Path, command: str, through: Served | None = None
) -> subprocess.Popen[bytes]:
    """A hook asking, on the store at ``url`` or (``through``) through a server."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUNDTABLE_")}
    env["ROUNDTABLE_HOOK_SPOOL"] = str(directory / "spool.jsonl")
    where = ["--db", url]
    if through is not None:
        where = ["--server", through.url, "--token-env", "RT_BENCH_TOKEN"]
        env["RT_BENCH_TOKEN"] = through.agent_token
    hook = [*roundtable_command(), "hooks", "run", "claude-code", *where,
            "--workspace", "ws-bench"]  # fmt: skip
    subprocess.run(hook, input=_payload(external, "SessionStart", directory), env=env,
                   check=True, capture_output=True)  # fmt: skip
    process = subprocess.Popen(
        [*hook, "--permission-wait", "60"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    asked = _payload(external, "PermissionRequest", directory, tool_name="Bash",
                     tool_input={"command": command})  # fmt: skip
    assert process.stdin is not None
    process.stdin.write(asked)
    process.stdin.close()
    process.stdin = None  # given: communicate() only reads
    return process


def _pending(store: Store, count: int, seconds: float = 120) -> list:  # noqa: ANN401
    deadline = time.monotonic() + seconds
    while True:
        found = list_requests(store=store)
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def decision_latencies(
    url: str, directory: Path, rounds: int, decide: object, through: Served | None = None
) -> list[float]:
    """``rounds`` requests one after another: from the decision to the hook's answer."""
    store = open_store(url)
    seconds = []
    try:
        for index in range(rounds):
            process = _start(url, SESSION, directory, f"make step-{index}", through)
            [request] = _pending(store, 1)
            started = time.monotonic()
            decide(store, request)  # type: ignore[operator]
            assert process.stdout is not None
            answer = process.stdout.read()
            seconds.append(time.monotonic() - started)
            process.wait(30)
            assert json.loads(answer)["hookSpecificOutput"]["decision"]["behavior"] == "allow"
    finally:
        store.dispose()
    return seconds


def in_store(store: Store, request: object) -> None:
    decide_request(store=store, request_id=request.id, decision="allow", actor="bench")  # type: ignore[attr-defined]


def over_http(base: str, token: str) -> object:
    import httpx

    client = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"})

    def decide(store: Store, request: object) -> None:
        path = (f"/api/v1/workspaces/ws-bench/sessions/{request.session_id}"  # type: ignore[attr-defined]
                f"/requests/{request.id}/decision")  # type: ignore[attr-defined]  # fmt: skip
        answer = client.post(path, json={"decision": "allow"},
                             headers={"Idempotency-Key": request.id})  # type: ignore[attr-defined]  # fmt: skip
        answer.raise_for_status()

    return decide


def many_at_once(url: str, directory: Path, agents: int) -> tuple[int, int, float]:
    """``agents`` agents asking at once, decided alternately: (recorded, delivered to its own
    agent, seconds from the first decision to the last answer)."""
    store = open_store(url)
    try:
        processes = [
            _start(url, f"00000000-0000-4000-8000-{index:012d}", directory, f"job {index}")
            for index in range(agents)
        ]
        found = _pending(store, agents)
        started = time.monotonic()
        for request in found:
            index = int(request.tool_input["command"].split()[1])
            decision = "deny" if index % 2 else "allow"
            message = f"not job {index}" if index % 2 else None
            decide_request(store=store, request_id=request.id, decision=decision,
                           actor="bench", message=message)  # fmt: skip
        right = 0
        for index, process in enumerate(processes):
            out, _ = process.communicate(timeout=120)
            decision = json.loads(out)["hookSpecificOutput"]["decision"]
            expected = ({"behavior": "deny", "message": f"not job {index}"} if index % 2
                        else {"behavior": "allow"})  # fmt: skip
            right += decision == expected
        elapsed = time.monotonic() - started
        asked = {request.id for request in found}
        delivered = [r for r in list_requests(store=store, everything=True)
                     if r.id in asked and r.delivered_at]  # fmt: skip
        assert len(delivered) == agents
        return len(found), right, elapsed
    finally:
        store.dispose()


def figures_for(engine: str, url: str, directory: Path, rounds: int, agents: int,
                served: Served) -> list[Figure]:  # fmt: skip
    out: list[Figure] = []
    paths = [
        ("console/CLI", in_store, None),
        ("API", served.decide, None),
        ("API, hook through serve", served.decide, served),
    ]
    for name, decide, through in paths:
        seconds = decision_latencies(url, directory, rounds, decide, through)
        out.append(Figure(f"decision -> hook answers, {name} ({engine}) p50",
                          statistics.median(seconds), limit=0.5))  # fmt: skip
        out.append(Figure(f"decision -> hook answers, {name} ({engine}) p95",
                          percentile(seconds, 95), limit=1.0))  # fmt: skip
    recorded, right, elapsed = many_at_once(url, directory, agents)
    print(f"{engine}: {agents} agents at once: {recorded} recorded, {right} decisions delivered "
          f"to their own agent, all answered {elapsed:.2f} s after the first decision")  # fmt: skip
    out.append(Figure(f"{agents} agents: wrong or missing answers ({engine})",
                      float(agents - right), unit="", limit=0.0, absolute=True))  # fmt: skip
    return out


@dataclass
class Served:
    """A real ``roundtable serve`` on the bench's store: its URL, a decision over HTTP with an
    operator token, and the agent token of hooks that ask through it."""

    url: str
    decide: object
    agent_token: str


@contextmanager
def served_decisions(url: str, directory: Path) -> Iterator[Served]:
    """A real ``roundtable serve`` on the store, for the workspace the bench's hooks register
    their sessions in."""
    from roundtable_console.store.access.tokens import create_token
    from tests.api_support import seed_workspace
    from tests.serve_support import serving

    store = open_store(url)
    seed_workspace(store, "ws-bench")
    token = create_token(store=store, name="bench-ops", role="operator").token
    agent = create_token(store=store, name="bench-hooks", role="agent", agent_id="claude-code")
    store.dispose()
    home = directory / f"home-{len(list(directory.glob('home-*')))}"
    home.mkdir(exist_ok=True)
    with serving(url, home) as served:
        yield Served(served.url, over_http(served.url, token), agent.token)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (CI)")
    args = parser.parse_args()
    rounds, agents = (3, 6) if args.quick else (20, 50)
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="rt-requests-bench-") as scratch:
        directory = Path(scratch)
        url = f"sqlite:///{directory / 'requests.db'}"
        open_store(url).dispose()
        with served_decisions(url, directory) as served:
            figures += figures_for("SQLite", url, directory, rounds, agents, served)
        from bench.serve import postgres_url

        with postgres_url(directory) as pg:
            open_store(pg).dispose()
            with served_decisions(pg, directory) as served:
                figures += figures_for("PostgreSQL", pg, directory, rounds, agents, served)
    print_table(figures)
    print(json.dumps({"missed": [f.name for f in figures if f.verdict() == "MISS"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
