"""Store.change_token: the cheap "has anything changed?" the console's live refresh asks first."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, select, text

from roundtable_console.store.db.database import Store, open_store
from roundtable_console.store.db.models import AgentSession
from roundtable_console.store.window.rows import StatusCounts
from tests.helpers import register_session


def _database_path(store: Store) -> str:
    database = store.engine.url.database
    assert database is not None
    return database


def test_token_is_stable_without_writes(sqlite_store: Store) -> None:
    first = sqlite_store.change_token()
    assert first is not None
    with sqlite_store.read() as db:
        db.execute(select(AgentSession.id)).all()  # type: ignore[call-overload]
    assert sqlite_store.change_token() == first
    assert sqlite_store.change_token() == first


def test_our_own_write_changes_the_token(sqlite_store: Store) -> None:
    before = sqlite_store.change_token()
    with sqlite_store.write() as db:
        register_session(db, "s1")
    after = sqlite_store.change_token()
    assert after != before
    assert sqlite_store.change_token() == after


def test_a_rolled_back_write_leaves_the_token(sqlite_store: Store) -> None:
    before = sqlite_store.change_token()
    with pytest.raises(RuntimeError), sqlite_store.write() as db:
        register_session(db, "s1")
        raise RuntimeError("changed my mind")
    assert sqlite_store.change_token() == before


def test_a_commit_from_another_process_changes_the_token(sqlite_store: Store) -> None:
    before = sqlite_store.change_token()
    script = (
        "import sqlite3, sys\n"
        "raw = sqlite3.connect(sys.argv[1])\n"
        "raw.execute(\"UPDATE agent_sessions SET status = 'x' WHERE 0\")\n"
        "raw.execute('CREATE TABLE scratch (n INTEGER)')\n"
        "raw.commit()\n"
    )
    subprocess.run([sys.executable, "-c", script, _database_path(sqlite_store)], check=True)
    assert sqlite_store.change_token() != before


def test_a_commit_from_another_connection_changes_the_token(sqlite_store: Store) -> None:
    before = sqlite_store.change_token()
    other = sqlite3.connect(_database_path(sqlite_store))
    try:
        other.execute("CREATE TABLE scratch (n INTEGER)")
        other.commit()
    finally:
        other.close()
    assert sqlite_store.change_token() != before


def test_token_is_read_safely_from_worker_threads(sqlite_store: Store) -> None:
    tokens: list[object | None] = []
    errors: list[BaseException] = []

    def read_tokens() -> None:
        try:
            tokens.extend(sqlite_store.change_token() for _ in range(50))
        except BaseException as error:  # noqa: BLE001 - reported by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=read_tokens) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(tokens) == 200 and len(set(map(repr, tokens))) == 1


def test_a_disposed_store_never_opens_its_watch_again(tmp_path: Path) -> None:
    """The console disposes its store as it closes while its watcher thread may still be
    waiting: the thread's next question gets "cannot tell" and opens no connection, so SQLite
    makes no file where the store was (a temporary directory being removed, say)."""
    store = open_store(f"sqlite:///{tmp_path / 'gone.db'}")
    assert store.change_token() is not None
    store.dispose()
    for left in tmp_path.iterdir():
        left.unlink()
    assert store.change_token() is None
    assert store.wait_for_change(None, timeout=0.05) is None
    assert sorted(tmp_path.iterdir()) == []


def test_the_watch_does_not_hold_a_pooled_connection(sqlite_store: Store) -> None:
    sqlite_store.change_token()
    with sqlite_store.read() as db:
        assert db.execute(select(AgentSession.id)).all() == []  # type: ignore[call-overload]
    assert sqlite_store.engine.pool.checkedout() == 0  # type: ignore[attr-defined]


def test_in_memory_sqlite_cannot_tell() -> None:
    memory = open_store("sqlite:///:memory:")
    try:
        assert memory.change_token() is None
    finally:
        memory.dispose()


def settled_token(store: Store, since: object | None = None) -> object | None:
    """The token once our last write has been told: at once on SQLite; on PostgreSQL when its
    notification has arrived (it travels after the commit)."""
    if store.dialect == "postgresql":
        return store.wait_for_change(since, timeout=10)
    return store.change_token()


def test_token_is_stable_without_writes_on_both_backends(store: Store) -> None:
    token = store.change_token()
    assert token is not None
    with store.read() as db:
        db.execute(select(AgentSession.id)).all()  # type: ignore[call-overload]
    assert store.wait_for_change(token, timeout=0.6) == token
    assert store.change_token() == token


def test_our_write_moves_the_token_on_both_backends(store: Store) -> None:
    before = store.change_token()
    with store.write() as db:
        register_session(db, "s1")
    after = settled_token(store, before)
    assert after is not None and after != before
    assert store.wait_for_change(after, timeout=0.6) == after


def test_a_rolled_back_write_tells_nothing_on_both_backends(store: Store) -> None:
    before = store.change_token()
    with pytest.raises(RuntimeError), store.write() as db:
        register_session(db, "s1")
        raise RuntimeError("changed my mind")
    assert store.wait_for_change(before, timeout=0.6) == before


def test_waiting_wakes_on_a_commit_from_another_process(store: Store) -> None:
    """The waiter is woken by the change itself (PostgreSQL: its notification; SQLite: the data
    version), well before the timeout."""
    before = store.change_token()
    url = str(store.engine.url.render_as_string(hide_password=False))
    script = (
        "import sys, time\n"
        "from sqlalchemy import create_engine, text\n"
        "time.sleep(0.3)\n"
        "engine = create_engine(sys.argv[1])\n"
        "with engine.begin() as conn:\n"
        '    conn.execute(text("INSERT INTO agent_sessions (id, agent_id, run_id, adapter,'
        " working_directory) VALUES ('other', 'a', 'r', 'codex', '/w')\"))\n"
    )
    writer = subprocess.Popen([sys.executable, "-c", script, url])
    try:
        started = time.monotonic()
        after = store.wait_for_change(before, timeout=30)
        waited = time.monotonic() - started
    finally:
        writer.wait(timeout=60)
    assert after != before
    assert waited < 29  # woken by the change, not by the timeout


def test_a_sqlite_store_in_memory_waits_out_the_timeout() -> None:
    memory = open_store("sqlite:///:memory:")
    try:
        started = time.monotonic()
        assert memory.wait_for_change(None, timeout=0.3) is None
        assert time.monotonic() - started >= 0.3
    finally:
        memory.dispose()


def test_a_broken_listening_connection_is_replaced_and_the_token_starts_afresh(
    pg_store: Store,
) -> None:
    store = pg_store
    before = store.change_token()
    assert before is not None
    with store.write() as db:
        db.execute(
            text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE query LIKE 'LISTEN%' AND datname = current_database()"
            )
        )
    # The listener notices within its wait slice; until it reconnects the token is unknown.
    deadline = time.monotonic() + 10
    while store.change_token() == before and time.monotonic() < deadline:
        time.sleep(0.05)
    again = store.change_token()
    assert again is not None and again != before
    with store.write() as db:
        register_session(db, "s1")
    assert settled_token(store, again) != again


class CountedCondition(threading.Condition):
    """A condition that counts its ``notify_all`` calls: the listening thread's wake-ups."""

    def __init__(self) -> None:
        super().__init__()
        self.wakes = 0

    def notify_all(self) -> None:
        self.wakes += 1
        super().notify_all()


def test_a_stream_of_notifications_is_counted_in_a_few_wakes(pg_store: Store) -> None:
    """A fleet's heartbeats: 200 notifications over about half a second. Every one is counted
    (the token moves by 200), in far fewer wakes of the listening thread than 200."""
    store = pg_store
    counted = CountedCondition()
    store._listener._arrived = counted  # before the first token starts the thread
    before = store.change_token()
    assert before is not None
    url = store.engine.url.render_as_string(hide_password=False)
    sender = create_engine(url, isolation_level="AUTOCOMMIT")
    with sender.connect() as connection:
        for number in range(200):
            connection.execute(
                text("SELECT pg_notify('roundtable_changes', :n)"), {"n": str(number)}
            )
            time.sleep(0.0025)
    sender.dispose()
    identity, received = before
    deadline = time.monotonic() + 10
    while store.change_token() != (identity, received + 200) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store.change_token() == (identity, received + 200)
    assert 1 <= counted.wakes <= 40, counted.wakes


def test_dispose_stops_listening(pg_store: Store) -> None:
    store = pg_store
    assert store.change_token() is not None
    listening = [t for t in threading.enumerate() if t.name == "roundtable-listen"]
    assert listening
    store.dispose()
    for thread in listening:
        thread.join(timeout=5)
    assert not any(thread.is_alive() for thread in listening)
    assert store.change_token() is None


def test_an_unreachable_server_cannot_tell(pg_server: Any) -> None:
    unreachable = open_store(pg_server.url(), upgrade=False)
    unreachable.engine.dispose()
    unreachable.engine = create_engine("postgresql+psycopg://postgres@127.0.0.1:1/none")
    try:
        assert unreachable.change_token() is None
        started = time.monotonic()
        assert unreachable.wait_for_change(None, timeout=0.3) is None
        assert time.monotonic() - started >= 0.3
    finally:
        unreachable.dispose()


def test_status_counts_reread_only_when_the_token_moves(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from roundtable_console.store.window import rows as list_reads

    calls: list[int] = []
    real = list_reads.count_by_status

    def counting(*, db):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(db=db)

    monkeypatch.setattr(list_reads, "count_by_status", counting)
    counts = StatusCounts()
    with store.write() as db:
        register_session(db, "s1")
    token = settled_token(store)
    for _ in range(3):
        assert store.change_token() == token
        with store.read() as db:
            assert counts.read(db=db, token=token) == {"active": 1}
    assert len(calls) == 1
    with store.write() as db:
        register_session(db, "s2")
    token = settled_token(store, token)
    with store.read() as db:
        assert counts.read(db=db, token=token) == {"active": 2}
    assert len(calls) == 2
