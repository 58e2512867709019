"""The store down while a hook waits for a human (issue 30 point 6): a PostgreSQL server of its
own is stopped under a waiting permission-request hook and a listening Stop hook. Each answers
nothing and exits 0 within its wait (one line on stderr, no traceback); the agent asks in its own
terminal. Once the server is back, the request shows as expired and the listener as expired,
though no hook could write so."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from roundtable_console.store.clock import format_ts, system_clock
from roundtable_console.store.db.database import open_store
from roundtable_console.store.replies import listeners
from roundtable_console.store.requests.reads import list_requests
from tests.hook_support import CLAUDE_ID, claude, hook, hook_started, pending_requests
from tests.pg_server import PostgresServer

pytestmark = pytest.mark.postgres

SID = f"claude-{CLAUDE_ID}"
WAIT = 8


@pytest.fixture
def own_server() -> Iterator[PostgresServer]:
    server = PostgresServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _exits_quietly(process, started: float) -> None:  # noqa: ANN001
    out, err = process.communicate(timeout=WAIT + 30)
    assert process.returncode == 0 and out == b"", (out, err)
    assert b"Traceback" not in err and len(err.decode().strip().splitlines()) <= 1, err
    assert time.monotonic() - started < WAIT + 15  # within the agent's hook timeout


def test_a_hook_waiting_when_the_store_goes_down_answers_nothing_and_exits_0(
    own_server: PostgresServer, tmp_path: Path
) -> None:
    url = own_server.url()
    options = ("--db", url, "--spool", str(tmp_path / "spool.jsonl"))
    hook("claude-code", claude("SessionStart", source="startup"), *options)
    asking = hook_started(
        "claude-code",
        claude("PermissionRequest", tool_name="Bash", tool_input={"command": "make deploy"}),
        *options, "--permission-wait", str(WAIT),
    )  # fmt: skip
    store = open_store(url)
    try:
        [request] = pending_requests(store)
        store.dispose()
        started = time.monotonic()
        own_server.stop_server()
        _exits_quietly(asking, started)
        own_server.start_server()
        time.sleep(max(0.0, WAIT - (time.monotonic() - started)) + 0.5)
        [shown] = list_requests(store=store, everything=True)
        now = format_ts(system_clock())
        assert shown.id == request.id and shown.state_at(now) == "expired"
        assert shown.to_json(now)["state"] == "expired"  # as every surface shows it
        assert list_requests(store=store) == []  # nothing pending left behind
    finally:
        store.dispose()


def test_a_stop_hook_listening_when_the_store_goes_down_exits_0(
    own_server: PostgresServer, tmp_path: Path
) -> None:
    url = own_server.url()
    options = ("--db", url, "--spool", str(tmp_path / "spool.jsonl"))
    hook("claude-code", claude("SessionStart", source="startup"), *options)
    stop = claude("Stop", stop_hook_active=False, last_assistant_message="Shall I deploy?")
    listening = hook_started("claude-code", stop, *options, "--reply-wait", str(WAIT))
    store = open_store(url)
    try:
        deadline = time.monotonic() + 30
        found = None
        while found is None and time.monotonic() < deadline:
            with store.read() as db:
                found = listeners.listening_for(db, SID, "0000")
            time.sleep(0.05)
        assert found is not None
        store.dispose()
        started = time.monotonic()
        own_server.stop_server()
        _exits_quietly(listening, started)
        own_server.start_server()
        time.sleep(max(0.0, WAIT - (time.monotonic() - started)) + 0.5)
        record = listeners.read_listener(store, found.id)
        assert record.state_at(format_ts(system_clock())) == "expired"
        with store.read() as db:
            assert listeners.listening_for(db, SID, format_ts(system_clock())) is None
    finally:
        store.dispose()
