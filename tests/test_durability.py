"""What an operator does survives power loss; an agent's beat need not (issue 19 point 4).

On SQLite in WAL mode a commit reaches the disk only when the log is synced: with
``synchronous = NORMAL`` that happens at a checkpoint, with ``FULL`` at the commit. Proved
mechanically: the command runs under ``strace -f -y -e trace=fsync,fdatasync,write``, which
names the file of each sync, while another connection holds the store open (as a console does),
so no last connection's checkpoint at close syncs the log for it. A lifecycle action, a bulk
batch, an import, a prune batch and a token change sync the ``-wal`` file before the command
prints its outcome; an agent's register, heartbeat and end never sync it.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from roundtable_console.store.db.database import open_store
from roundtable_console.store.writes import agent_writes

ROOT = Path(__file__).resolve().parents[1]
# Debian's strace: the suite brings it (tests/provisioning.py); without it these fail, never skip.
STRACE = shutil.which("strace")
SYNC = re.compile(r"\b(fsync|fdatasync)\((\d+)<(?P<path>[^>]*)>\)")
# A write to the standard output, as strace -y shows it (the test reads it through a pipe).
STDOUT_WRITE = re.compile(r"\bwrite\(1<")


@pytest.fixture
def store_path(tmp_path: Path) -> Iterator[Path]:
    """A SQLite store with two active sessions, held open by another connection all along. Its
    log already holds their writes: the first write into a new (or restarted) log syncs the
    log's header whatever the level, as the first write after a checkpoint does."""
    path = tmp_path / "roundtable.db"
    store = open_store(f"sqlite:///{path}")
    holder = sqlite3.connect(path)
    # A connection holds the log open once it has read through it.
    holder.execute("SELECT count(*) FROM agent_sessions").fetchall()
    with store.write() as db:
        for session_id in ("s1", "s2"):
            agent_writes.register(
                db=db,
                session_id=session_id,
                agent_id="agent-1",
                run_id="run-1",
                adapter="codex",
                working_directory="/work",
            )
    store.dispose()
    assert Path(f"{path}-wal").stat().st_size > 0
    yield path
    holder.close()


def traced(argv: list[str], tmp_path: Path, *, stdin: str | None = None) -> list[str]:
    """The syncs and standard-output writes of ``argv`` and every process it starts, in order."""
    assert STRACE is not None, "strace is needed (apt-get install strace)"
    out = tmp_path / f"strace-{len(list(tmp_path.glob('strace-*')))}.txt"
    env = {key: value for key, value in os.environ.items() if not key.startswith("ROUNDTABLE_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"))
    result = subprocess.run(
        [STRACE, "-f", "-y", "-qq", "-e", "trace=fsync,fdatasync,write", "-o", str(out), *argv],
        capture_output=True,
        text=True,
        input=stdin,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return [
        line
        for line in out.read_text().splitlines()
        if SYNC.search(line) or STDOUT_WRITE.search(line)
    ]


def wal_syncs(lines: list[str], store_path: Path) -> list[int]:
    """Where in ``lines`` the store's log was synced."""
    wal = f"{store_path}-wal"
    return [
        index
        for index, line in enumerate(lines)
        if (found := SYNC.search(line)) is not None and found["path"] == wal
    ]


def first_output(lines: list[str]) -> int:
    return next(index for index, line in enumerate(lines) if STDOUT_WRITE.search(line))


def roundtable(*args: str, store_path: Path, full: bool = False) -> list[str]:
    """The console script (its quick path first, as agents run it), or with ``full`` the whole
    command line (``tui.cli``), whatever the command."""
    module = "roundtable_console.tui.cli" if full else "roundtable_console"
    return [sys.executable, "-m", module, *args, "--db", f"sqlite:///{store_path}"]


@pytest.mark.parametrize(
    "command",
    [
        ("sessions", "pause", "--session", "s1"),
        ("sessions", "stop", "--session", "s1"),
        ("sessions", "terminate", "--session", "s1", "--idempotency-key", "k1"),
        ("sessions", "heartbeat", "--session", "s1", "--session", "s2", "--operator", "olivia"),
        ("sessions", "pause", "--session", "s1", "--session", "s2"),
        ("sessions", "pause", "--all-matching", "--status", "active"),
    ],
    ids=["pause", "stop", "terminate", "operator-heartbeat", "bulk-ids", "bulk-selection"],
)
def test_an_operators_action_syncs_the_log_before_it_is_reported_done(
    command: tuple[str, ...], store_path: Path, tmp_path: Path
) -> None:
    lines = traced(roundtable(*command, store_path=store_path), tmp_path)
    synced = wal_syncs(lines, store_path)
    assert synced, "\n".join(lines)
    assert synced[0] < first_output(lines)


@pytest.mark.parametrize("full", [False, True], ids=["quick-path", "full-path"])
@pytest.mark.parametrize(
    "command",
    [
        ("sessions", "heartbeat", "--session", "s1"),
        ("sessions", "heartbeat", "--session", "s1", "--waiting", "approve the plan"),
        ("sessions", "end", "--session", "s1"),
        (
            "sessions", "register", "--id", "s3", "--agent", "a", "--run", "r",
            "--adapter", "codex", "--cwd", "/work",
        ),
    ],
    ids=["heartbeat", "waiting", "end", "register"],
)  # fmt: skip
def test_an_agents_write_leaves_the_log_to_the_next_checkpoint(
    command: tuple[str, ...], full: bool, store_path: Path, tmp_path: Path
) -> None:
    lines = traced(roundtable(*command, store_path=store_path, full=full), tmp_path)
    assert any(STDOUT_WRITE.search(line) for line in lines)  # it did run and answer
    assert wal_syncs(lines, store_path) == []


def test_an_import_and_a_prune_batch_sync_the_log(store_path: Path, tmp_path: Path) -> None:
    record = (
        '{"kind": "session", "id": "imported", "agent_id": "a", "run_id": "r", '
        '"adapter": "codex", "working_directory": "/w", "status": "active", '
        '"started_at": "2026-09-17T17:26:35Z"}\n'
    )
    imported = traced(roundtable("import", "-", store_path=store_path), tmp_path, stdin=record)
    assert wal_syncs(imported, store_path)
    assert wal_syncs(imported, store_path)[0] < first_output(imported)
    for _ in range(3):
        traced(
            roundtable("sessions", "heartbeat", "--session", "s2", store_path=store_path), tmp_path
        )
    time.sleep(1.1)  # the beats are older than the shortest age prune takes
    pruned = traced(
        roundtable("db", "prune", "--heartbeats-older-than", "1s", "--json", store_path=store_path),
        tmp_path,
    )
    assert '\\"removed\\": 2' in "".join(pruned), pruned
    assert wal_syncs(pruned, store_path)
    assert wal_syncs(pruned, store_path)[0] < first_output(pruned)


def test_a_token_change_syncs_the_log_before_it_is_reported(
    store_path: Path, tmp_path: Path
) -> None:
    created = traced(
        roundtable("tokens", "create", "--name", "ci", "--role", "viewer", store_path=store_path),
        tmp_path,
    )
    assert wal_syncs(created, store_path)
    assert wal_syncs(created, store_path)[0] < first_output(created)
    revoked = traced(
        roundtable("tokens", "revoke", "--name", "ci", store_path=store_path), tmp_path
    )
    assert wal_syncs(revoked, store_path)
    assert wal_syncs(revoked, store_path)[0] < first_output(revoked)
    listed = traced(roundtable("tokens", "list", store_path=store_path), tmp_path)
    assert any(STDOUT_WRITE.search(line) for line in listed)
    assert wal_syncs(listed, store_path) == []


# The console, headless, on the store: presses its keys, then says it is done on stdout.
CONSOLE = textwrap.dedent(
    """
    import asyncio, sys
    from tests.test_tui_support import console, press, settle

    async def main(url, keys):
        app = console(url)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            for key in keys:
                await press(pilot, key)
            await settle(pilot)
        print("console done", flush=True)

    asyncio.run(main(sys.argv[1], sys.argv[2:]))
    """
)


def test_the_consoles_action_syncs_the_log_and_browsing_does_not(
    store_path: Path, tmp_path: Path
) -> None:
    url = f"sqlite:///{store_path}"
    browsing = traced([sys.executable, "-c", CONSOLE, url, "down", "up"], tmp_path)
    assert any(STDOUT_WRITE.search(line) for line in browsing)
    assert wal_syncs(browsing, store_path) == []
    pausing = traced([sys.executable, "-c", CONSOLE, url, "p"], tmp_path)
    synced = wal_syncs(pausing, store_path)
    assert synced and synced[0] < first_output(pausing)
    with sqlite3.connect(store_path) as check:
        statuses = dict(check.execute("SELECT id, status FROM agent_sessions").fetchall())
    assert "paused" in statuses.values()


def test_a_durable_write_is_full_and_the_next_plain_write_normal_again(tmp_path: Path) -> None:
    """The level travels with the pooled connection: set before a durable write's BEGIN, and
    set back before the next plain write's."""
    store = open_store(f"sqlite:///{tmp_path / 'roundtable.db'}")
    try:
        levels = []
        for durable in (True, False, True, True, False):
            with store.write(durable=durable) as db:
                levels.append(db.exec_driver_sql("PRAGMA synchronous").scalar())
        assert levels == [2, 1, 2, 2, 1]  # FULL, NORMAL, …
    finally:
        store.dispose()
