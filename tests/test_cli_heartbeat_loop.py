"""`roundtable sessions heartbeat --every SECONDS`: one process beating until it is stopped."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from roundtable_console.store.db.database import open_store
from roundtable_console.store.db.models import AgentSessionEvent
from tests.helpers import register_session

EVENTS = AgentSessionEvent.__table__  # type: ignore[attr-defined]


def _beater(url: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "roundtable_console.tui.cli",
            "sessions",
            "heartbeat",
            "--db",
            url,
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _heartbeats(url: str) -> int:
    store = open_store(url)
    try:
        with store.read() as db:
            return int(
                db.execute(
                    select(func.count())
                    .select_from(EVENTS)
                    .where(EVENTS.c.event_type == "heartbeat")
                ).scalar_one()
            )
    finally:
        store.dispose()


@pytest.fixture
def url(tmp_path: Path) -> str:
    address = f"sqlite:///{tmp_path / 'beat.db'}"
    store = open_store(address)
    with store.write() as db:
        register_session(db, "s1")
    store.dispose()
    return address


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_beats_until_signalled_then_exits_cleanly(url: str, stop_signal: int) -> None:
    beater = _beater(url, "--session", "s1", "--every", "0.1", "--json")
    deadline = time.monotonic() + 30
    while _heartbeats(url) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    beater.send_signal(stop_signal)
    stdout, stderr = beater.communicate(timeout=30)
    assert beater.returncode == 0, stderr
    assert "Traceback" not in stderr
    beats = [json.loads(line) for line in stdout.splitlines()]
    assert len(beats) >= 3
    assert {beat["id"] for beat in beats} == {"s1"}
    stamps = [beat["last_seen_at"] for beat in beats]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    assert _heartbeats(url) == len(beats)


def test_unknown_session_ends_the_loop_with_a_refusal(url: str) -> None:
    beater = _beater(url, "--session", "nope", "--every", "0.1", "--json")
    _stdout, stderr = beater.communicate(timeout=30)
    assert beater.returncode == 1
    assert json.loads(stderr.strip().splitlines()[-1])["error"]["code"] == "session_not_found"


@pytest.mark.parametrize("every", ["0", "-1", "soon"])
def test_bad_interval_is_bad_usage(url: str, every: str) -> None:
    beater = _beater(url, "--session", "s1", "--every", every)
    _stdout, stderr = beater.communicate(timeout=30)
    assert beater.returncode == 2
    assert "--every" in stderr
    assert _heartbeats(url) == 0
