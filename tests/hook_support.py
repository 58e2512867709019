"""Helpers of the hooks' tests: payloads as the agents send them
(``docs/reference/agent-facts.md#the-payload-fields-we-read``), and a hook run in-process or as the
process an agent starts."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from roundtable_console.agents.hook_run import main as run_hook
from roundtable_console.store.db.database import open_store

ROOT = Path(__file__).resolve().parents[1]
CLAUDE_ID = "3f0c8a52-7c1e-4b8e-9a57-2f1d7c0e9b11"
CODEX_ID = "019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b"
GEMINI_ID = "b7e3c9d1-2a4f-4c6e-8b0d-1f3a5c7e9b2d"


def claude(event: str, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": CLAUDE_ID,
        "cwd": "/work/project",
        "hook_event_name": event,
        "transcript_path": f"/home/u/.claude/projects/-work-project/{CLAUDE_ID}.jsonl",
        "permission_mode": "default",
        **fields,
    }


def codex(event: str, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": CODEX_ID,
        "cwd": "/work/project",
        "hook_event_name": event,
        "model": "gpt-5-codex",
        "permission_mode": "default",
        "transcript_path": f"/home/u/.codex/sessions/2026/12/05/rollout-x-{CODEX_ID}.jsonl",
        **fields,
    }


def gemini(event: str, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": GEMINI_ID,
        "cwd": "/work/project",
        "hook_event_name": event,
        "timestamp": "2026-12-05T06:00:00.000Z",
        "transcript_path": "/home/u/.gemini/tmp/project/chats/session-x.jsonl",
        **fields,
    }


def hook(agent: str, payload: Any, *options: str, raw: bytes | None = None) -> None:
    """One hook event, in this process (the same code the agent's process runs)."""
    data = raw if raw is not None else json.dumps(payload).encode()
    assert run_hook([agent, *options], stdin=io.BytesIO(data)) == 0


def hook_process(
    agent: str,
    payload: Any,
    *options: str,
    env: dict[str, str] | None = None,
    raw: bytes | None = None,
    timeout: float = 30,
) -> subprocess.CompletedProcess[str]:
    """One hook event as the agent runs it: ``roundtable hooks run AGENT`` in a process."""
    data = raw if raw is not None else json.dumps(payload).encode()
    base = {k: v for k, v in os.environ.items() if not k.startswith("ROUNDTABLE_")}
    done = subprocess.run(
        [sys.executable, "-m", "roundtable_console", "hooks", "run", agent, *options],
        input=data,
        capture_output=True,
        timeout=timeout,
        cwd=ROOT,
        env={**base, **(env or {})},
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


def session(url: str, session_id: str) -> Any:
    from roundtable_console.store.service import read_session

    store = open_store(url)
    try:
        return read_session(store=store, session_id=session_id)
    except Exception:  # noqa: BLE001 - not found
        return None
    finally:
        store.dispose()


def history(url: str, session_id: str) -> list[tuple[str, dict[str, Any]]]:
    from sqlalchemy import text

    store = open_store(url)
    try:
        with store.engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT event_type, payload_json FROM agent_session_events "
                    "WHERE session_id = :s ORDER BY id"
                ),
                {"s": session_id},
            ).all()
    finally:
        store.dispose()
    return [(row[0], json.loads(row[1] or "{}")) for row in rows]


def hook_started(
    agent: str, payload: Any, *options: str, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """A hook process the agent started and has not yet heard from (a permission request that
    waits for a human): its stdin given and closed, its answer to be read."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("ROUNDTABLE_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "roundtable_console", "hooks", "run", agent, *options],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**base, **(env or {})},
    )
    assert process.stdin is not None
    process.stdin.write(json.dumps(payload).encode())
    process.stdin.close()
    process.stdin = None  # given: communicate() only reads
    return process


def pending_requests(store: Any, *, count: int = 1, seconds: float = 30) -> list[Any]:
    """The pending permission requests of ``store``, once there are ``count`` (bounded)."""
    import time

    from roundtable_console.store.requests.reads import list_requests

    deadline = time.monotonic() + seconds
    while True:
        found = list_requests(store=store)
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.05)
