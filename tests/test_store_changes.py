"""Store.change_token: the cheap "has anything changed?" the console's live refresh asks first."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading

import pytest
from sqlalchemy import select

from screens.data import StatusCounts
from store.database import Store, open_store
from store.models import AgentSession
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


def test_dispose_closes_the_watch_and_a_new_one_counts_afresh(sqlite_store: Store) -> None:
    before = sqlite_store.change_token()
    sqlite_store.dispose()
    # A new connection's data_version may repeat the old number: its identity tells them apart.
    assert sqlite_store.change_token() != before


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


def test_token_per_backend(store: Store) -> None:
    """PostgreSQL cannot tell yet (None: always re-read); SQLite can."""
    token = store.change_token()
    if store.dialect == "postgresql":
        assert token is None
        with store.write() as db:
            register_session(db, "s1")
        assert store.change_token() is None
    else:
        assert token is not None and store.change_token() == token


def test_status_counts_reread_only_when_the_token_moves(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    import screens.data

    calls: list[int] = []
    real = screens.data.store_count_by_status

    def counting(*, db):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(db=db)

    monkeypatch.setattr(screens.data, "store_count_by_status", counting)
    counts = StatusCounts()
    with store.write() as db:
        register_session(db, "s1")
    for _ in range(3):
        token = store.change_token()
        with store.read() as db:
            assert counts.read(db=db, token=token) == {"active": 1}
    unknown = store.dialect == "postgresql"
    assert len(calls) == (3 if unknown else 1)
    with store.write() as db:
        register_session(db, "s2")
    token = store.change_token()
    with store.read() as db:
        assert counts.read(db=db, token=token) == {"active": 2}
    assert len(calls) == (4 if unknown else 2)
