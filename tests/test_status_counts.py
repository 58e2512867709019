"""The counts by status the header shows come from ``session_status_counts``, which triggers keep
true whoever writes (issue 4 point 4): our operations, an import, and a writer that knows nothing
of the table (the reference system, raw SQL)."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from roundtable_console.store.db.database import Store, open_store
from roundtable_console.store.reads import keyset
from roundtable_console.store.writes import agent_writes, lifecycle
from roundtable_console.store.writes.transfer import export_records, import_records
from roundtable_console.tui.config import sqlite_url
from tests.helpers import register_session
from tests.test_reference_store import build_reference_db, raw


def counted(store: Store) -> dict[str, int]:
    with store.read() as db:
        return keyset.count_by_status(db=db)


def grouped(store: Store) -> dict[str, int]:
    """The counts as a scan of the table gives them: what the kept counts must equal."""
    with store.read() as db:
        rows = db.execute(text("SELECT status, count(*) FROM agent_sessions GROUP BY status"))
        return {status: int(number) for status, number in rows}


def test_counts_follow_our_operations(store: Store) -> None:
    assert counted(store) == {}
    with store.write() as db:
        for number in range(4):
            register_session(db, f"s{number}", agent_id=f"a{number}")
    assert counted(store) == {"active": 4}
    with store.write() as db:
        lifecycle.pause(db=db, session_id="s0", actor="op")
        lifecycle.stop(db=db, session_id="s1", actor="op")
        agent_writes.end(db=db, session_id="s2")
        # A heartbeat that keeps the status changes no count; one naming another status does.
        agent_writes.heartbeat(db=db, session_id="s3")
    assert counted(store) == {"paused": 1, "stopped": 1, "ended": 1, "active": 1}
    with store.write() as db:
        agent_writes.heartbeat(db=db, session_id="s3", status="running")
        lifecycle.terminate(
            db=db, session_id="s0", actor="op", idempotency_key="k1", impact_details=None
        )
    assert counted(store) == {"terminated": 1, "stopped": 1, "ended": 1, "running": 1}
    assert counted(store) == grouped(store)


def test_registering_again_moves_the_session_between_statuses(store: Store) -> None:
    with store.write() as db:
        register_session(db, "s1", status="paused")
        register_session(db, "s1", status="active")
        register_session(db, "s1", status="active")
    assert counted(store) == {"active": 1}


def test_a_status_whose_sessions_are_gone_is_not_counted(store: Store) -> None:
    with store.write() as db:
        register_session(db, "s1")
        register_session(db, "s2", status="paused")
        db.execute(text("DELETE FROM agent_sessions WHERE id = 's2'"))
    assert counted(store) == {"active": 1}


def test_counts_follow_a_writer_that_knows_nothing_of_them(store: Store) -> None:
    """Raw SQL, as the reference system writes: inserts, updates of many rows, deletes."""
    insert = text(
        "INSERT INTO agent_sessions (id, agent_id, run_id, adapter, working_directory, status,"
        " started_at) VALUES (:id, 'a', 'r', 'codex', '/w', :status, '2026-01-01 00:00:00')"
    )
    with store.write() as db:
        for number in range(30):
            db.execute(insert, {"id": f"s{number:02}", "status": ("active", "idle")[number % 2]})
    assert counted(store) == {"active": 15, "idle": 15}
    with store.write() as db:
        db.execute(text("UPDATE agent_sessions SET status = 'done' WHERE id < 's10'"))
        db.execute(text("UPDATE agent_sessions SET last_seen_at = '2026-01-02 00:00:00'"))
        db.execute(text("DELETE FROM agent_sessions WHERE id >= 's25'"))
    assert counted(store) == grouped(store) == {"done": 10, "active": 8, "idle": 7}


def test_a_rolled_back_write_leaves_the_counts(store: Store) -> None:
    with store.write() as db:
        register_session(db, "s1")
    with pytest.raises(RuntimeError), store.write() as db:
        register_session(db, "s2")
        lifecycle.pause(db=db, session_id="s1", actor="op")
        raise RuntimeError("changed my mind")
    assert counted(store) == {"active": 1}


def test_an_import_is_counted(store: Store, empty_store: Store) -> None:
    with store.write() as db:
        register_session(db, "s1")
        register_session(db, "s2", status="paused")
        register_session(db, "s3", status="weird")
    lines: list[str] = []
    with store.read() as db:
        export_records(db=db, write=lines.append)
    with empty_store.write() as db:
        import_records(db=db, lines=lines)
        import_records(db=db, lines=lines)  # again: the same sessions, nothing counted twice
    assert counted(empty_store) == {"active": 1, "paused": 1, "weird": 1}


def test_after_a_bulk_write_the_next_writes_are_counted_again(
    store: Store, empty_store: Store
) -> None:
    """An import counts once at its end; the setting that made the triggers stand aside ends
    with its transaction, so the same pooled connection counts the next write row by row."""
    with store.write() as db:
        for number in range(5):
            register_session(db, f"s{number}", status=("active", "paused")[number % 2])
    lines: list[str] = []
    with store.read() as db:
        export_records(db=db, write=lines.append)
    with empty_store.write() as db:
        import_records(db=db, lines=lines)
    assert counted(empty_store) == {"active": 3, "paused": 2}
    for _ in range(3):
        with empty_store.write() as db:
            register_session(db, "later", status="stopped")
            agent_writes.end(db=db, session_id="s0", status="ended")
        assert counted(empty_store) == grouped(empty_store)
    assert counted(empty_store) == {"active": 2, "paused": 2, "stopped": 1, "ended": 1}


def test_opening_a_reference_store_counts_its_sessions_once(tmp_path: Path) -> None:
    reference_path = tmp_path / "roundtable.db"
    build_reference_db(reference_path, tmp_path)
    with sqlite3.connect(reference_path) as conn:
        conn.executemany(
            "INSERT INTO agent_sessions (id, agent_id, run_id, adapter, working_directory, status)"
            " VALUES (?, 'a', 'r', 'codex', '/w', ?)",
            [(f"more-{n}", ("active", "paused", "ended")[n % 3]) for n in range(10)],
        )
    before = dict(raw(reference_path, "SELECT status, count(*) FROM agent_sessions GROUP BY 1"))
    assert sum(before.values()) > 10
    store = open_store(sqlite_url(reference_path))
    try:
        assert counted(store) == before
        open_store(sqlite_url(reference_path)).dispose()  # a later open seeds nothing again
        assert counted(store) == before
    finally:
        store.dispose()


def test_an_import_and_a_status_change_at_once_both_finish(
    store: Store, empty_store: Store
) -> None:
    """An import writes sessions of several statuses in one transaction. A status change made
    meanwhile waits for it, instead of taking one status's count first and waiting for another
    the import holds while the import waits for the first (PostgreSQL would then abort one as a
    deadlock)."""
    with store.write() as db:
        register_session(db, "p1", status="paused")
        register_session(db, "a1", status="active")
    lines: list[str] = []
    with store.read() as db:
        export_records(db=db, write=lines.append)
    paused_lines = [line for line in lines if '"p1"' in line]
    active_lines = [line for line in lines if '"a1"' in line]
    with empty_store.write() as db:
        register_session(db, "z", status="active")
    import_holds_paused = threading.Event()
    errors: list[BaseException] = []

    def move_z() -> None:
        import_holds_paused.wait(timeout=10)
        try:
            with empty_store.write() as db:
                lifecycle.pause(db=db, session_id="z", actor="op")
        except BaseException as error:  # noqa: BLE001 - reported by the assertion below
            errors.append(error)

    mover = threading.Thread(target=move_z)
    mover.start()
    with empty_store.write() as db:
        import_records(db=db, lines=paused_lines)
        import_holds_paused.set()
        time.sleep(0.5)  # the pause is now waiting on the import
        import_records(db=db, lines=active_lines)
    mover.join(timeout=30)
    assert not mover.is_alive()
    assert errors == []
    assert counted(empty_store) == grouped(empty_store) == {"paused": 2, "active": 1}
