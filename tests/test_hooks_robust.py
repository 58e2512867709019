"""A hook is never in its agent's way (``docs/agents.md#connect-your-agents``): it exits 0 in time
whatever happens, says what went wrong in one line on stderr, and keeps what it could not write in a
spool of its owner's only, which the next hook that can write replays in order and once. Each case
runs the hook as the agent does: ``roundtable hooks run AGENT`` as a process."""

from __future__ import annotations

import json
import socket
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from roundtable_console.store.db.database import open_store
from tests.hook_support import (
    CLAUDE_ID,
    ROOT,
    claude,
    history,
    hook_process,
    session,
)
from tests.serve_support import free_port, serve_env, serving

SID = f"claude-{CLAUDE_ID}"


@pytest.fixture
def spool(tmp_path: Path) -> Path:
    return tmp_path / "state" / "hook-spool.jsonl"


def _run(payload: object, *options: str, spool: Path, raw: bytes | None = None, env=None):
    return hook_process(
        "claude-code",
        payload,
        *options,
        raw=raw,
        env={"ROUNDTABLE_HOOK_SPOOL": str(spool), **(env or {})},
    )


def _said_one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0
    assert done.stdout == ""  # nothing the agent would read as a decision
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("roundtable hooks: "), done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        (b"{not json", "not JSON"),
        (b"[1, 2, 3]", "not a JSON object"),
        (b"", "not JSON"),
        (b"\xff\xfe\x00garbage", "not JSON"),
        (
            json.dumps(
                {"session_id": "../../etc/passwd", "hook_event_name": "SessionStart"}
            ).encode(),
            "session_id",
        ),
        (
            json.dumps({"session_id": "x\x1b[2J\x00", "hook_event_name": "SessionStart"}).encode(),
            "session_id",
        ),
        (
            json.dumps({**claude("SessionStart"), "padding": "x" * (2 * 1024 * 1024)}).encode(),
            "over 1024 KiB",
        ),
        (b"[" * 100_000, "not JSON"),
    ],
    ids=["broken", "a-list", "empty", "binary", "dotdot-id", "control-id", "2-MiB", "deep"],
)
def test_hostile_payloads_change_nothing_and_exit_0(
    sqlite_template: Path, tmp_path: Path, spool: Path, raw: bytes, said: str
) -> None:
    store = tmp_path / "rt.db"
    store.write_bytes(sqlite_template.read_bytes())
    done = _run(None, "--db", f"sqlite:///{store}", spool=spool, raw=raw)
    assert said in _said_one_line(done)
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT count(*) FROM agent_sessions").fetchone() == (0,)
    assert not spool.exists()


def test_an_unknown_agent_or_option_is_said_not_raised(spool: Path) -> None:
    done = hook_process("vim", claude("SessionStart"), env={"ROUNDTABLE_HOOK_SPOOL": str(spool)})
    assert "unknown agent" in _said_one_line(done)
    done = _run(claude("SessionStart"), "--frobnicate", "1", spool=spool)
    assert "unknown option" in _said_one_line(done)


def test_a_missing_store_spools_and_the_next_hook_replays_in_order_once(
    tmp_path: Path, spool: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'later.db'}"
    events = [
        claude("SessionStart", source="startup"),
        claude("UserPromptSubmit", prompt="go"),
        claude("PermissionRequest", tool_name="Bash", tool_input={"command": "make deploy"}),
    ]
    for payload in events:
        line = _said_one_line(_run(payload, "--db", url, spool=spool))
        assert "does not exist" in line and "kept in" in line
    assert stat.S_IMODE(spool.stat().st_mode) == 0o600
    assert stat.S_IMODE(spool.parent.stat().st_mode) == 0o700
    assert len(spool.read_text().splitlines()) == 3
    assert not (tmp_path / "later.db").exists()  # a hook never makes a store

    open_store(url).dispose()
    done = _run(claude("Stop", last_assistant_message="done"), "--db", url, spool=spool)
    assert done.returncode == 0 and done.stderr == ""
    assert spool.read_text() == ""
    kinds = [(kind, payload.get("status")) for kind, payload in history(url, SID)]
    assert kinds == [
        ("registered", "active"),
        ("heartbeat", "running"),
        ("heartbeat", "running"),
        ("heartbeat", "active"),
    ]
    # The wait was written with the event's own time, before the turn's end.
    found = session(url, SID)
    assert found.status == "active" and found.waiting is None
    assert found.turn_done == "done"  # its turn's last words, below every question


def test_a_replay_cut_short_writes_nothing_twice(tmp_path: Path, spool: Path) -> None:
    """An event written, then the hook killed before it emptied the spool: the next replay
    finds its idempotency key taken and writes it no second time."""
    from roundtable_console.agents.operations import Operation
    from roundtable_console.agents.reporting import LocalReporter

    url = f"sqlite:///{tmp_path / 'rt.db'}"
    open_store(url).dispose()
    _run(claude("SessionStart"), "--db", url, spool=spool)
    operation = Operation(
        "beat",
        SID,
        {"status": "running", "waiting": "asks: which one?", "turn": None, "start": {}},
        "2026-12-05T06:00:00.000000Z",
        "hook:cut-short",
    )
    LocalReporter(url).apply(operation)
    spool.parent.mkdir(parents=True, exist_ok=True)
    spool.write_text(json.dumps(operation.to_json()) + "\n")
    done = _run(claude("Stop"), "--db", url, spool=spool)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    waits = [p for kind, p in history(url, SID) if p.get("waiting") == "asks: which one?"]
    assert len(waits) == 1


def test_a_locked_store_is_waited_for_briefly_then_spooled(tmp_path: Path, spool: Path) -> None:
    url = f"sqlite:///{tmp_path / 'rt.db'}"
    open_store(url).dispose()
    holder = sqlite3.connect(tmp_path / "rt.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        line = _said_one_line(_run(claude("SessionStart"), "--db", url, spool=spool))
        elapsed = time.monotonic() - started
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert "kept in" in line and ("locked" in line or "unavailable" in line.lower())
    assert elapsed < 8, elapsed  # the store waited for 2 s, plus a process start
    done = _run(claude("UserPromptSubmit"), "--db", url, spool=spool)
    assert done.returncode == 0 and done.stderr == ""
    assert [kind for kind, _ in history(url, SID)] == ["registered", "heartbeat"]


def test_a_corrupt_store_is_said_and_spooled(tmp_path: Path, spool: Path) -> None:
    path = tmp_path / "rt.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\x13" * 8192)
    line = _said_one_line(_run(claude("SessionStart"), "--db", f"sqlite:///{path}", spool=spool))
    assert "kept in" in line
    assert len(spool.read_text().splitlines()) == 1


def test_a_postgresql_that_is_down_is_said_and_spooled(spool: Path) -> None:
    url = f"postgresql+psycopg://rt:pw@127.0.0.1:{free_port()}/nothing"
    started = time.monotonic()
    line = _said_one_line(_run(claude("SessionStart"), "--db", url, spool=spool))
    assert time.monotonic() - started < 10
    assert "kept in" in line and "pw" not in line  # the password is never said


def test_a_server_that_does_not_answer_is_waited_for_briefly(spool: Path) -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    port = silent.getsockname()[1]
    try:
        started = time.monotonic()
        done = _run(
            claude("SessionStart"),
            "--server",
            f"http://127.0.0.1:{port}",
            "--workspace",
            "w",
            spool=spool,
        )
        elapsed = time.monotonic() - started
    finally:
        silent.close()
    assert "did not answer" in _said_one_line(done)
    assert elapsed < 8, elapsed
    assert len(spool.read_text().splitlines()) == 1


def _token(url: str, home: Path, *arguments: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "roundtable_console", "tokens", "create", "--db", url, *arguments],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=serve_env(home),
        check=True,
    )
    return done.stdout.strip().splitlines()[0]


def test_through_the_server_with_an_agent_token(store_url: str, tmp_path: Path, spool: Path):
    """``--server``: the hooks speak to roundtable serve with an agent token, which reaches only
    its own agent's sessions; a token refused now is kept for when it is good."""
    from sqlalchemy import text

    store = open_store(store_url)
    with store.write() as db:
        db.execute(
            text(
                "INSERT INTO workspaces (id, name, root_path, default_branch, "
                "created_at, updated_at) VALUES ('ws-h', 'h', '/w', 'main', "
                "'2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')"
            )
        )
    store.dispose()
    home = tmp_path / "home"
    home.mkdir()
    token = _token(store_url, home, "--name", "hooks", "--role", "agent", "--agent", "claude-code")
    other = _token(store_url, home, "--name", "other", "--role", "agent", "--agent", "someone")
    _token(store_url, home, "--name", "ops", "--role", "operator")
    with serving(store_url, home) as served:
        options = ("--server", served.url, "--workspace", "ws-h", "--token-env", "RT_TOKEN")
        for payload in (
            claude("SessionStart"),
            claude("UserPromptSubmit"),
            claude("PermissionRequest", tool_name="Bash", tool_input={"command": "rm -rf /tmp/x"}),
        ):
            done = _run(payload, *options, spool=spool, env={"RT_TOKEN": token})
            assert done.returncode == 0 and done.stderr == "", done.stderr
        found = session(store_url, SID)
        assert found.effective_workspace_id == "ws-h"
        assert found.waiting_reason == "asks to run Bash: rm -rf /tmp/x"
        assert found.external_resume_command == f"claude --resume {CLAUDE_ID}"

        # A burst of tool events: one beat sent in 5 s (the first, which ends the wait), and
        # each of its tool calls.
        rows = len(history(store_url, SID))
        for _ in range(5):
            burst = claude("PostToolUse", tool_name="Bash", tool_input={})
            done = _run(burst, *options, spool=spool, env={"RT_TOKEN": token})
            assert done.returncode == 0 and done.stderr == "", done.stderr
        kinds = [kind for kind, _ in history(store_url, SID)[rows:]]
        assert kinds.count("heartbeat") == 1 and kinds.count("tool.call") == 5
        # Another agent's token cannot touch this session: said, and not kept (a 403 is a good
        # token refused: trying it again would only hold the spool up), nothing written.
        done = _run(claude("Stop"), *options, spool=spool, env={"RT_TOKEN": other})
        assert "not written" in _said_one_line(done) and "403" in done.stderr
        assert session(store_url, SID).turn_done is None
        assert not spool.exists() or spool.read_text() == ""
        # A revoked or wrong token (401) is kept, and written once the token is good again.
        done = _run(claude("Stop"), *options, spool=spool, env={"RT_TOKEN": "rt_not-a-token"})
        assert "401" in _said_one_line(done)
        assert len(spool.read_text().splitlines()) == 1
        done = _run(claude("SessionEnd"), *options, spool=spool, env={"RT_TOKEN": token})
        assert done.returncode == 0 and done.stderr == "", done.stderr
        assert spool.read_text() == ""
        ended = session(store_url, SID)
        assert ended.status == "ended"
        assert [kind for kind, _ in history(store_url, SID)][-2:] == ["heartbeat", "ended"]
        assert token not in served.log.read_text()


def test_parallel_hooks_of_many_sessions_lose_nothing(tmp_path: Path, spool: Path) -> None:
    url = f"sqlite:///{tmp_path / 'rt.db'}"
    open_store(url).dispose()
    ids = [f"0000000{n}-aaaa-bbbb-cccc-dddddddddddd" for n in range(6)]

    def agent(external: str) -> None:
        for event in ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"):
            done = _run({**claude(event), "session_id": external}, "--db", url, spool=spool)
            assert done.returncode == 0

    threads = [threading.Thread(target=agent, args=(external,)) for external in ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    for external in ids:
        kinds = [kind for kind, _ in history(url, f"claude-{external}")]
        assert kinds == ["registered", "heartbeat", "heartbeat", "ended"], kinds
