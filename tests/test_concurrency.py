"""Racing operators (no lost updates: ``docs/reference/roundtable.md#statuses-and-lifecycle``):
many OS processes act on one session at once.

Exactly one pause wins; every other racer is told why it lost; history holds one row per success.
Runs on SQLite and on PostgreSQL through the ``store_url``/``store`` fixtures.
"""

from __future__ import annotations

import itertools
import multiprocessing
import queue
import threading
import traceback
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from roundtable_console.store.db.database import Store, open_store, sqlite_url
from roundtable_console.store.db.revision import HEAD_REVISION
from roundtable_console.store.db.schema import current_revision
from roundtable_console.store.errors import IdempotencyKeyReuse, StoreError
from roundtable_console.store.reads import sessions
from roundtable_console.store.writes import agent_writes, lifecycle
from tests.conftest import FakeClock
from tests.helpers import register_session

RACERS = 8
LOSING_CODES = {"session_transition_conflict", "illegal_session_transition"}
_blank_numbers = itertools.count()


def _processes() -> Any:
    """Fresh processes, each with its own connections, forked from a server that imported this
    module once (per worker) and opened nothing: "spawn" imported the store in each racer again,
    a second of CPU apiece; "fork" would copy the pytest worker's threads and open engines."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return context


def _pause_racer(url: str, barrier: Any, results: Any, index: int) -> None:
    """One operator: read the session (as a screen would), wait for the others, then pause."""
    store = open_store(url)
    try:
        with store.read() as db:
            seen = sessions.get_session(db=db, session_id="s1").version
        barrier.wait(timeout=120)
        # Half the racers pass the version they saw, as the TUI does; half do not.
        expected = seen if index % 2 == 0 else None
        try:
            with store.write() as db:
                outcome = lifecycle.pause(
                    db=db, session_id="s1", actor=f"op-{index}", expected_version=expected
                )
            results.put((index, "ok", outcome.session.version))
        except StoreError as error:
            results.put((index, error.code, error.message))
    except Exception as error:  # reported, so the test fails with the reason
        results.put((index, f"crash: {type(error).__name__}: {error}", None))
    finally:
        store.dispose()


def _seed(store: Store, clock: FakeClock, session_id: str = "s1") -> None:
    with store.write() as db:
        register_session(db, session_id, agent_id="agent-1", run_id="run-1", clock=clock)


def _count(store: Store, query: str) -> int:
    with store.read() as db:
        return int(db.execute(text(query)).scalar_one())


def test_racing_pauses_have_exactly_one_winner(store: Store, store_url: str, clock: FakeClock):
    _seed(store, clock)
    context = _processes()
    barrier = context.Barrier(RACERS)
    results = context.Queue()
    racers = [
        context.Process(target=_pause_racer, args=(store_url, barrier, results, index))
        for index in range(RACERS)
    ]
    for racer in racers:
        racer.start()
    try:
        outcomes = [results.get(timeout=180) for _ in racers]
    finally:
        for racer in racers:
            racer.join(timeout=60)
            if racer.is_alive():
                racer.terminate()
    codes = [code for _, code, _ in outcomes]
    assert sorted(index for index, _, _ in outcomes) == list(range(RACERS))
    assert codes.count("ok") == 1, outcomes
    assert set(codes) - {"ok"} <= LOSING_CODES, outcomes
    [winner] = [index for index, code, _ in outcomes if code == "ok"]
    with store.read() as db:
        session = sessions.get_session(db=db, session_id="s1")
    assert session.status == "paused" and session.version == 1
    paused = "SELECT COUNT(*) FROM agent_session_events WHERE event_type = 'paused'"
    assert _count(store, paused) == 1
    assert _count(store, "SELECT COUNT(*) FROM events WHERE type = 'session.paused'") == 1
    with store.read() as db:
        actor = db.execute(text("SELECT actor_id FROM events")).scalar_one()
    assert actor == f"op-{winner}"


def test_one_key_raced_for_two_sessions_is_refused_not_crashed(store: Store, clock: FakeClock):
    """The second use of a key that a still-open transaction holds waits for it, then is
    refused as a reuse (on PostgreSQL the key row's unique index is where they meet)."""
    _seed(store, clock, "s1")
    _seed(store, clock, "s2")
    outcome: queue.Queue[object] = queue.Queue()

    def second() -> None:
        try:
            with store.write() as db:
                lifecycle.terminate(
                    db=db, session_id="s2", actor="bo", idempotency_key="K", clock=clock
                )
            outcome.put("applied")
        except Exception as error:  # the assertion below names it
            outcome.put(error)

    with store.write() as db:
        lifecycle.terminate(db=db, session_id="s1", actor="ann", idempotency_key="K", clock=clock)
        racer = threading.Thread(target=second)
        racer.start()
        racer.join(timeout=1.0)  # it is now waiting on our transaction
        assert racer.is_alive() or not outcome.empty()
    racer.join(timeout=30)
    result = outcome.get(timeout=1)
    assert isinstance(result, IdempotencyKeyReuse), repr(result)
    with store.read() as db:
        assert sessions.get_session(db=db, session_id="s2").status == "active"
        assert sessions.get_session(db=db, session_id="s1").status == "terminated"
    assert _count(store, "SELECT COUNT(*) FROM events WHERE type = 'session.terminated'") == 1
    assert _count(store, "SELECT COUNT(*) FROM idempotency_keys") == 1


@pytest.mark.parametrize("action", ["pause", "stop"])
def test_an_agent_heartbeat_between_read_and_write_is_not_lost(
    store: Store, clock: FakeClock, action: str
):
    """The operator saw version 0; the agent wrote since; the operator's action is refused."""
    _seed(store, clock)
    with store.read() as db:
        seen = sessions.get_session(db=db, session_id="s1").version
    with store.write() as db:
        agent_writes.heartbeat(db=db, session_id="s1", status="running", clock=clock)
    with pytest.raises(StoreError) as raised, store.write() as db:
        getattr(lifecycle, action)(db=db, session_id="s1", actor="ann", expected_version=seen)
    assert raised.value.code == "session_transition_conflict"
    with store.read() as db:
        assert sessions.get_session(db=db, session_id="s1").status == "running"


def _opener(url: str, barrier: Any, results: Any, index: int) -> None:
    try:
        barrier.wait(timeout=120)
        store = open_store(url)
        try:
            with store.read() as db:
                results.put((index, current_revision(db)))
        finally:
            store.dispose()
    except Exception as error:  # reported, so the test fails with the reason and where
        results.put((index, f"crash: {type(error).__name__}: {error}\n{traceback.format_exc()}"))


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_blank_store_opened_by_many_processes_at_once_is_migrated_once(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
):
    if backend == "sqlite":
        url = sqlite_url(tmp_path / "fresh" / "roundtable.db")
    else:
        server = request.getfixturevalue("pg_server")
        admin = create_engine(server.url(), isolation_level="AUTOCOMMIT")
        name = f"rt_blank_{next(_blank_numbers)}"
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {name}"))
        admin.dispose()
        url = server.url(name)
    context = _processes()
    openers = 4
    barrier = context.Barrier(openers)
    results = context.Queue()
    processes = [
        context.Process(target=_opener, args=(url, barrier, results, index))
        for index in range(openers)
    ]
    for process in processes:
        process.start()
    try:
        outcomes = [results.get(timeout=180) for _ in processes]
    finally:
        for process in processes:
            process.join(timeout=60)
    assert sorted(outcomes) == [(index, HEAD_REVISION) for index in range(openers)]
    store = open_store(url)
    try:
        with store.read() as db:
            assert db.execute(text("SELECT COUNT(*) FROM alembic_version")).scalar_one() == 1
    finally:
        store.dispose()


def test_an_opener_waits_for_another_process_migration_longer_than_a_write_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A first open of a big store migrates for seconds; a second opener waits for it rather than
    failing after the usual write-lock wait (which is shortened here so the test is quick)."""
    import sqlite3

    from roundtable_console.store.db import database

    monkeypatch.setattr(database, "BUSY_TIMEOUT_MS", 200)
    path = tmp_path / "roundtable.db"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("PRAGMA journal_mode = WAL")
    other.execute("BEGIN IMMEDIATE")  # the other process's migration, holding the write lock
    releaser = threading.Timer(1.0, other.execute, args=("COMMIT",))
    releaser.start()
    try:
        opened = open_store(sqlite_url(path))
    finally:
        releaser.join()
        other.close()
    try:
        with opened.read() as db:
            assert current_revision(db) == HEAD_REVISION
        # Once migrated, the connection waits the usual time again.
        with opened.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar_one() == 200
    finally:
        opened.dispose()
