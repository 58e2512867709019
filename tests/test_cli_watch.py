"""`roundtable watch`: a real process printing one line per change within a second of it, on
SQLite and on PostgreSQL; text and --json lines; filters; going stale; SIGINT/SIGTERM end it with
exit 0; a PostgreSQL restart is said on stderr and nothing written meanwhile is missed."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from sqlalchemy import create_engine, text

from roundtable_console.store.db.database import Store, open_store
from roundtable_console.store.service import perform_action
from roundtable_console.store.writes import agent_writes
from tests.helpers import Cli, register_session
from tests.pg_server import PostgresServer

JSON_KEYS = ["at", "session_id", "change", "status", "previous_status", "actor", "reason"]
# The promise: a line within a second of the change.
WITHIN = 1.0
# How long a test waits for a line it expects before calling it missing.
PATIENCE = 15.0


class Watch:
    """``roundtable watch`` in a child process, its stdout and stderr read by threads."""

    def __init__(self, url: str, *extra: str, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "roundtable_console.tui.cli", "watch", "--db", url, *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.errors: queue.Queue[str] = queue.Queue()
        self.stderr: list[str] = []
        for stream, into in ((self.process.stdout, self.lines), (self.process.stderr, self.errors)):
            threading.Thread(target=self._pump, args=(stream, into), daemon=True).start()
        try:
            self.expect_stderr("watching")
        except AssertionError:
            self.kill()  # a watch that never started must not outlive the test
            raise

    @staticmethod
    def _pump(stream: IO[str] | None, into: queue.Queue[str]) -> None:
        assert stream is not None
        for line in stream:
            into.put(line.rstrip("\n"))

    def line(self, timeout: float = PATIENCE) -> str:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no line within {timeout} s; stderr: {self.stderr}") from None

    def json_line(self, timeout: float = PATIENCE) -> dict[str, Any]:
        found = json.loads(self.line(timeout))
        assert list(found) == JSON_KEYS
        return dict(found)

    def no_line(self, seconds: float) -> None:
        try:
            extra = self.lines.get(timeout=seconds)
        except queue.Empty:
            return
        raise AssertionError(f"unexpected line: {extra}")

    def expect_stderr(self, words: str, timeout: float = PATIENCE) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.errors.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                break
            self.stderr.append(line)
            if words in line:
                return line
        raise AssertionError(f"stderr never said {words!r}: {self.stderr}")

    def stop(self, sig: int = signal.SIGINT) -> int:
        self.process.send_signal(sig)
        self.process.wait(timeout=30)
        return self.process.returncode

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)


@pytest.fixture
def watching(store: Store) -> Iterator[list[Watch]]:
    started: list[Watch] = []
    yield started
    for watch in started:
        watch.kill()


def timed(write: Any, watch: Watch) -> tuple[dict[str, Any], float]:
    """Write, then the line it gives and how long after the commit it came."""
    write()
    committed = time.monotonic()
    found = watch.json_line()
    return found, time.monotonic() - committed


def test_each_change_is_a_json_line_within_a_second(
    store: Store, store_url: str, watching: list[Watch]
) -> None:
    watch = Watch(store_url, "--json")
    watching.append(watch)

    def register() -> None:
        with store.write() as db:
            register_session(db, "s1", agent_id="agent-1")

    def wait() -> None:
        with store.write() as db:
            agent_writes.heartbeat(db=db, session_id="s1", waiting="Approve the plan?")

    def pause() -> None:
        perform_action(store=store, action="pause", session_id="s1", actor="alice")

    def fail() -> None:
        with store.write() as db:
            agent_writes.end(db=db, session_id="s1", status="failed")

    lines, delays = [], []
    for write in (register, wait, pause, fail):
        found, delay = timed(write, watch)
        lines.append(found)
        delays.append(delay)
        if write is pause:  # the pause ended the wait too: two lines
            lines.append(watch.json_line())
    assert [(line["change"], line["previous_status"], line["status"]) for line in lines] == [
        ("registered", None, "active"),
        ("waiting_started", "active", "active"),
        ("waiting_stopped", "active", "paused"),
        ("status", "active", "paused"),
        ("ended", "paused", "failed"),
    ]
    assert lines[1]["reason"] == "Approve the plan?"
    assert [line["actor"] for line in lines] == ["agent-1", "agent-1", "alice", "alice", "agent-1"]
    assert {line["session_id"] for line in lines} == {"s1"}
    assert all(line["at"].endswith("Z") for line in lines)
    print(f"watch delays on {store.dialect}: {[round(d, 3) for d in delays]}")
    assert max(delays) < WITHIN, delays
    assert watch.stop() == 0


def test_text_lines_are_printable_and_redacted(sqlite_store: Store, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'roundtable.db'}"
    with sqlite_store.write() as db:
        register_session(db, "s\x1b[2J1")
    watch = Watch(url)
    try:
        # Agents cannot send control characters, but history may come from an import.
        payload = {"status": "active", "waiting": "need token=abc123 \x1b]0;pwned\x07 now"}
        with sqlite_store.write() as db:
            db.execute(
                text(
                    "INSERT INTO agent_session_events (session_id, event_type, payload_json,"
                    " created_at) VALUES (:id, 'heartbeat', :payload, '2026-09-17T17:26:35Z')"
                ),
                {"id": "s\x1b[2J1", "payload": json.dumps(payload)},
            )
        line = watch.line()
        assert "\x1b" not in line and "\x07" not in line
        assert "s\\e[2J1" in line
        assert "waiting for a human: need token=[REDACTED] \\e]0;pwned\\x07 now" in line
        assert "abc123" not in line
        perform_action(store=sqlite_store, action="stop", session_id="s\x1b[2J1", actor="bob")
        assert "no longer waiting (stopped) by bob" in watch.line()
        assert "status active → stopped by bob" in watch.line()
        assert watch.stop(signal.SIGTERM) == 0
    finally:
        watch.kill()


def test_filters_and_heartbeats(sqlite_store: Store, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'roundtable.db'}"
    with sqlite_store.write() as db:
        register_session(db, "mine", agent_id="x", run_id="r1")
        register_session(db, "other", agent_id="y", run_id="r2")
    by_agent = Watch(url, "--json", "--agent", "x", "--heartbeats")
    by_status = Watch(url, "--json", "--status", "paused")
    try:
        for session_id in ("other", "mine"):
            with sqlite_store.write() as db:
                agent_writes.heartbeat(db=db, session_id=session_id)
        perform_action(store=sqlite_store, action="pause", session_id="other", actor="alice")
        found = by_agent.json_line()
        assert (found["session_id"], found["change"]) == ("mine", "heartbeat")
        by_agent.no_line(1.0)
        found = by_status.json_line()
        assert (found["session_id"], found["status"]) == ("other", "paused")
        by_status.no_line(1.0)
    finally:
        by_agent.kill()
        by_status.kill()


def test_going_stale_is_told_without_any_write(sqlite_store: Store, tmp_path: Path) -> None:
    config = tmp_path / "xdg" / "roundtable"
    config.mkdir(parents=True)
    (config / "config.toml").write_text("stale_after_seconds = 1.5\n")
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    url = f"sqlite:///{tmp_path / 'roundtable.db'}"
    watch = Watch(url, "--json", env=env)
    try:
        with sqlite_store.write() as db:
            register_session(db, "quiet")
        registered = time.monotonic()
        assert watch.json_line()["change"] == "registered"
        found = watch.json_line(timeout=PATIENCE)
        late = time.monotonic() - registered - 1.5
        print(f"stale told {late:.3f} s after the deadline")
        assert late < WITHIN
        assert (found["session_id"], found["change"], found["reason"]) == (
            "quiet",
            "stale",
            "not seen for 1s",
        )
        watch.no_line(2.0)  # stale once, not again
    finally:
        watch.kill()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_it_with_exit_0(sqlite_store: Store, tmp_path: Path, sig: int) -> None:
    watch = Watch(f"sqlite:///{tmp_path / 'roundtable.db'}")
    try:
        assert watch.stop(sig) == 0
        assert watch.process.stderr is not None
        assert "Traceback" not in "\n".join(watch.stderr)
    finally:
        watch.kill()


def test_an_unreachable_database_is_refused_in_words(rt: Cli) -> None:
    result = rt("watch", "--db", "postgresql://127.0.0.1:1/nothing", "--json", db=False)
    assert result.exit_code == 1
    error = json.loads(result.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "database_unavailable"


def test_bad_usage_exits_2(rt: Cli) -> None:
    result = rt("watch", "--stale")
    assert result.exit_code == 2
    assert "No such option" in result.stderr
    result = rt("watch", "--status", " ", "--json")
    assert result.exit_code == 2
    error = json.loads(result.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "usage_error" and "--status" in error["message"]


@pytest.fixture
def own_server() -> Iterator[PostgresServer]:
    """A throwaway cluster of this test's own: restarting the suite's would cut other tests."""
    server = PostgresServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.postgres
def test_a_postgresql_restart_is_said_and_nothing_is_missed(own_server: PostgresServer) -> None:
    admin = create_engine(own_server.url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text("CREATE DATABASE watched"))
    admin.dispose()
    url = own_server.url("watched")
    store = open_store(url)
    watch = Watch(url, "--json")
    try:
        with store.write() as db:
            register_session(db, "s1")
        assert watch.json_line()["change"] == "registered"
        own_server.stop_server()
        watch.expect_stderr("lost")
        own_server.start_server()
        # Written at once, before the watch has had time to listen again: read all the same.
        store.engine.dispose()
        with store.write() as db:
            agent_writes.heartbeat(db=db, session_id="s1", waiting="after the restart")
        watch.expect_stderr("reconnected")
        found = watch.json_line()
        assert (found["change"], found["reason"]) == ("waiting_started", "after the restart")
        # And it listens again: the next change is a line within the second.
        found, delay = timed(
            lambda: perform_action(store=store, action="pause", session_id="s1", actor="alice"),
            watch,
        )
        assert found["change"] == "waiting_stopped"
        assert delay < WITHIN
        assert watch.stop() == 0
    finally:
        watch.kill()
        store.dispose()
