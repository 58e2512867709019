"""Database URLs and engines (``docs/getting-started.md#where-the-data-lives``): SQLite settings,
refusals as ``database_unavailable``, transactions, and schema currency on both backends."""

from __future__ import annotations

import importlib
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import column, create_engine, text
from sqlalchemy.dialects import postgresql as postgresql_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect

from roundtable_console.store.db.database import (
    BUSY_TIMEOUT_MS,
    Store,
    create_store_engine,
    describe_url,
    open_store,
    sqlite_url,
    unavailable_message,
    use_wal,
)
from roundtable_console.store.db.models import AgentSession
from roundtable_console.store.db.notifications import CHANNEL
from roundtable_console.store.db.revision import HEAD_REVISION, MIGRATIONS_DIR, known_revisions
from roundtable_console.store.db.schema import current_revision, ensure_schema
from roundtable_console.store.errors import DatabaseUnavailable
from roundtable_console.store.reads.listing import PG_STORED_KEYS
from roundtable_console.store.reads.sqlfuncs import effective_workspace, ts_key
from tests.conftest import FakeClock, new_pg_database
from tests.helpers import register_session
from tests.pg_server import PostgresServer, free_port

NOT_SQLITE = b"PK\x03\x04 this is a zip file, not a database \x00\xff" * 20


def assert_clear(error: DatabaseUnavailable) -> None:
    """One sentence a person can act on: no traceback, no chained exception to print."""
    assert error.code == "database_unavailable"
    assert error.message and "\n" not in error.message
    assert "Traceback" not in error.message and 'File "' not in error.message
    assert "(Background on this error" not in error.message
    assert error.__cause__ is None


# --- SQLite -----------------------------------------------------------------------------------


def test_sqlite_connections_use_wal_busy_timeout_and_foreign_keys(sqlite_store: Store):
    with sqlite_store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == BUSY_TIMEOUT_MS == 5000
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    # Every pooled connection, not just the first.
    connections = [sqlite_store.engine.connect() for _ in range(3)]
    try:
        for conn in connections:
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 5000
    finally:
        for conn in connections:
            conn.close()


def test_foreign_keys_are_enforced(sqlite_store: Store):
    with sqlite_store.write() as db:
        db.execute(text("CREATE TABLE parent (id INTEGER PRIMARY KEY)"))
        db.execute(text("CREATE TABLE child (p INTEGER REFERENCES parent(id))"))
    with pytest.raises(Exception, match="FOREIGN KEY"), sqlite_store.write() as db:
        db.execute(text("INSERT INTO child VALUES (42)"))


def test_a_sqlite_write_takes_the_lock_at_begin(sqlite_store: Store, tmp_path: Path):
    """BEGIN IMMEDIATE: a read-then-write cannot be overtaken by another writer."""
    path = tmp_path / "roundtable.db"
    with sqlite_store.write() as db:
        db.execute(text("SELECT 1"))
        other = sqlite3.connect(path, timeout=0, isolation_level=None)
        try:
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                other.execute("BEGIN IMMEDIATE")
        finally:
            other.close()
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    other.execute("ROLLBACK")
    other.close()


def test_a_sqlite_read_does_not_block_a_writer(sqlite_store: Store, clock: FakeClock):
    with sqlite_store.read() as reader:
        reader.execute(text("SELECT COUNT(*) FROM agent_sessions")).scalar_one()
        with sqlite_store.write() as db:
            register_session(db, "s1", clock=clock)


def test_a_file_that_is_not_sqlite_is_refused_and_left_untouched(tmp_path: Path):
    path = tmp_path / "notes.db"
    path.write_bytes(NOT_SQLITE)
    with pytest.raises(DatabaseUnavailable) as raised:
        open_store(sqlite_url(path))
    assert_clear(raised.value)
    assert str(path) in raised.value.message and "not a SQLite database" in raised.value.message
    assert path.read_bytes() == NOT_SQLITE
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]


def test_a_short_file_that_is_not_sqlite_is_refused(tmp_path: Path):
    path = tmp_path / "tiny.db"
    path.write_bytes(b"hello")
    with pytest.raises(DatabaseUnavailable):
        open_store(sqlite_url(path))
    assert path.read_bytes() == b"hello"


def test_a_damaged_sqlite_file_is_refused_and_left_untouched(tmp_path: Path):
    path = tmp_path / "damaged.db"
    damaged = b"SQLite format 3\x00" + b"\xff" * 4080
    path.write_bytes(damaged)
    with pytest.raises(DatabaseUnavailable) as raised:
        open_store(sqlite_url(path))
    assert_clear(raised.value)
    assert path.read_bytes() == damaged


def test_an_empty_file_becomes_a_store(tmp_path: Path):
    path = tmp_path / "empty.db"
    path.touch()
    store = open_store(sqlite_url(path))
    try:
        with store.read() as db:
            assert current_revision(db) == HEAD_REVISION
    finally:
        store.dispose()


def test_a_directory_is_refused(tmp_path: Path):
    with pytest.raises(DatabaseUnavailable) as raised:
        open_store(sqlite_url(tmp_path))
    assert_clear(raised.value)
    assert "directory" in raised.value.message
    assert list(tmp_path.iterdir()) == []


def test_a_path_under_a_file_is_refused(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(DatabaseUnavailable) as raised:
        open_store(sqlite_url(blocker / "roundtable.db"))
    assert_clear(raised.value)
    assert blocker.read_text() == "x"


def test_missing_parent_directories_are_created(tmp_path: Path):
    path = tmp_path / "a" / "b" / ".roundtable" / "roundtable.db"
    open_store(sqlite_url(path)).dispose()
    assert path.read_bytes()[:16] == b"SQLite format 3\x00"


# --- URLs -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    ["mysql://user@localhost/db", "oracle://x", "http://example.invalid/", "not a url", ""],
)
def test_an_unsupported_url_is_refused(url: str):
    with pytest.raises(DatabaseUnavailable) as raised:
        create_store_engine(url)
    assert_clear(raised.value)


def test_the_unsupported_scheme_message_names_what_works():
    with pytest.raises(DatabaseUnavailable) as raised:
        open_store("mysql://user@localhost/db")
    assert "mysql" in raised.value.message
    assert "sqlite:///" in raised.value.message and "postgresql://" in raised.value.message


@pytest.mark.parametrize("scheme", ["postgresql", "postgres", "postgresql+psycopg"])
def test_postgres_urls_use_psycopg(scheme: str):
    engine = create_store_engine(f"{scheme}://u@127.0.0.1:1/db")
    try:
        assert engine.dialect.name == "postgresql" and engine.dialect.driver == "psycopg"
    finally:
        engine.dispose()


def test_an_unreachable_postgres_is_unavailable_with_a_clear_message():
    port = free_port()  # bound and released: nothing listens there
    url = f"postgresql://roundtable:s3cret-pw@127.0.0.1:{port}/roundtable"
    with pytest.raises(DatabaseUnavailable) as raised:
        open_store(url)
    assert_clear(raised.value)
    message = raised.value.message
    assert "unavailable" in message and str(port) in message
    assert "s3cret-pw" not in message
    assert "refused" in message.lower()


def test_a_missing_postgres_database_is_unavailable(pg_server: PostgresServer):
    with pytest.raises(DatabaseUnavailable) as raised:
        open_store(pg_server.url("no_such_database"))
    assert_clear(raised.value)
    assert "no_such_database" in raised.value.message


def test_a_postgres_connection_lost_mid_transaction_is_unavailable(
    pg_server: PostgresServer, clock: FakeClock
):
    store = open_store(new_pg_database(pg_server))
    admin = create_engine(pg_server.url(), isolation_level="AUTOCOMMIT")
    try:
        with pytest.raises(DatabaseUnavailable) as raised, store.write() as db:
            pid = db.execute(text("SELECT pg_backend_pid()")).scalar_one()
            with admin.connect() as conn:
                conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            register_session(db, "s1", clock=clock)
        assert_clear(raised.value)
        # The pool recovers: the next transaction works, and nothing was half-written.
        with store.read() as db:
            assert db.execute(text("SELECT COUNT(*) FROM agent_sessions")).scalar_one() == 0
    finally:
        admin.dispose()
        store.dispose()


def test_describe_url_hides_the_password():
    assert describe_url("postgresql://u:pw@h/db") == "postgresql://u:***@h/db"
    hidden = describe_url("postgresql://u@/db?host=/tmp&password=pw")  # libpq's own form
    assert hidden == "postgresql://u@/db?host=%2Ftmp&password=[REDACTED]"
    assert describe_url("sqlite:////tmp/x.db") == "sqlite:////tmp/x.db"


# --- both backends ----------------------------------------------------------------------------


def test_a_fresh_store_is_at_head_and_opening_again_does_nothing(store: Store, store_url: str):
    with store.read() as db:
        assert current_revision(db) == HEAD_REVISION
    assert ensure_schema(store.engine) is False
    again = open_store(store_url)
    try:
        assert ensure_schema(again.engine) is False
    finally:
        again.dispose()


def test_a_read_sees_one_snapshot(store: Store, clock: FakeClock):
    def register(session_id: str) -> None:
        with store.write() as db:
            register_session(db, session_id, clock=clock)

    register("s1")
    with store.read() as db:
        first = db.execute(text("SELECT COUNT(*) FROM agent_sessions")).scalar_one()
        writer = threading.Thread(target=register, args=("s2",))
        writer.start()
        writer.join(timeout=30)
        assert not writer.is_alive()
        second = db.execute(text("SELECT COUNT(*) FROM agent_sessions")).scalar_one()
    assert first == second == 1
    with store.read() as db:
        assert db.execute(text("SELECT COUNT(*) FROM agent_sessions")).scalar_one() == 2


def test_a_failed_write_rolls_back_everything(store: Store, clock: FakeClock):
    with pytest.raises(RuntimeError), store.write() as db:
        register_session(db, "s1", clock=clock)
        raise RuntimeError("boom")
    with store.read() as db:
        assert db.execute(text("SELECT COUNT(*) FROM agent_sessions")).scalar_one() == 0
        assert db.execute(text("SELECT COUNT(*) FROM agent_session_events")).scalar_one() == 0


def test_ensure_schema_upgrades_a_blank_database_once(tmp_path: Path):
    path = tmp_path / "new.db"
    engine = create_store_engine(sqlite_url(path))
    progress: list[str] = []
    try:
        assert ensure_schema(engine, progress=progress.append) is True
        assert len(progress) == 1 and "schema" in progress[0]
        assert ensure_schema(engine, progress=progress.append) is False
        assert len(progress) == 1
    finally:
        engine.dispose()


def test_a_store_from_a_newer_roundtable_is_refused_in_words(store: Store, store_url: str):
    with store.write() as db:
        db.execute(text("UPDATE alembic_version SET version_num = '0099_from_the_future'"))
    with pytest.raises(DatabaseUnavailable) as raised:
        open_store(store_url)
    assert_clear(raised.value)
    assert "0099_from_the_future" in raised.value.message
    assert "Upgrade roundtable" in raised.value.message
    with store.read() as db:
        assert current_revision(db) == "0099_from_the_future"


def test_every_migration_file_is_named_after_its_revision():
    versions = MIGRATIONS_DIR / "versions"
    found = {}
    for path in sorted(versions.glob("0*.py")):
        match = re.search(r'^revision = "([^"]+)"$', path.read_text(), re.MULTILINE)
        assert match is not None, path
        found[path.stem] = match.group(1)
    assert found and all(stem == revision for stem, revision in found.items())
    assert HEAD_REVISION == max(found) and set(found) == known_revisions()


def test_the_store_queries_the_expressions_migration_0002_indexed():
    """The migration holds its own copy of what it built; the queries must compile to the same
    text, or the planner cannot use the indexes. Changing either takes a new revision."""
    migration = importlib.import_module(
        "roundtable_console.store.db.migrations.versions.0002_console_additions"
    )

    def compiled(expression: Any, dialect: Any) -> str:
        return str(expression.compile(dialect=dialect))

    lite, pg = sqlite_dialect.dialect(), postgresql_dialect.dialect()
    assert compiled(effective_workspace(), lite) == migration.SQLITE_EFFECTIVE_WORKSPACE
    # On PostgreSQL migration 0008 stores the same expression as a column.
    groups = importlib.import_module(
        "roundtable_console.store.db.migrations.versions.0008_session_groups"
    )
    assert groups.PG_WORKSPACE == migration.PG_EFFECTIVE_WORKSPACE
    assert "rt_metadata_workspace(" in migration.PG_EFFECTIVE_WORKSPACE
    assert "FUNCTION rt_metadata_workspace(t text)" in migration.PG_METADATA_WORKSPACE_FUNCTION
    assert compiled(ts_key(column("started_at")), lite) == "julianday(started_at)"
    assert compiled(ts_key(column("started_at")), pg) == "rt_ts_key(started_at)"
    assert "FUNCTION rt_ts_key(t text)" in migration.PG_TS_KEY_FUNCTION


def test_the_store_queries_the_keys_migration_0006_stored():
    migration = importlib.import_module(
        "roundtable_console.store.db.migrations.versions.0006_list_positions"
    )
    sessions = AgentSession.__table__  # type: ignore[attr-defined]
    pg = postgresql_dialect.dialect()
    assert (
        migration.PG_WORKSPACE
        == importlib.import_module(
            "roundtable_console.store.db.migrations.versions.0008_session_groups"
        ).PG_WORKSPACE
    )
    for name, stored in PG_STORED_KEYS.items():
        assert name in sessions.c
        assert migration.PG_GENERATED_KEYS[stored] == f"rt_ts_key({name})"
        key = ts_key(sessions.c[name]).compile(dialect=pg)
        assert str(key) == f"agent_sessions.{stored}"


def test_the_store_queries_the_workspace_migration_0008_stored_and_indexed():
    """The workspace key: computed from a cursor's values as the index holds it, read from the
    stored column on PostgreSQL, from the indexed expression on SQLite."""
    migration = importlib.import_module(
        "roundtable_console.store.db.migrations.versions.0008_session_groups"
    )
    sessions = AgentSession.__table__  # type: ignore[attr-defined]
    lite, pg = sqlite_dialect.dialect(), postgresql_dialect.dialect()
    assert str(effective_workspace().compile(dialect=pg)) == migration.PG_STORED_WORKSPACE
    row = effective_workspace(sessions.c.workspace_id, sessions.c.metadata_json)
    assert str(row.compile(dialect=pg)) == f"agent_sessions.{migration.PG_STORED_WORKSPACE}"
    assert str(row.compile(dialect=lite)) == migration.sqlite_workspace("agent_sessions.")
    assert str(effective_workspace().compile(dialect=lite)) == migration.sqlite_workspace("")
    assert f"({migration.PG_STORED_WORKSPACE}, rt_started_key, id)" in migration.PG_INDEX_TARGET
    values = effective_workspace(column("w"), column("m"))
    assert str(values.compile(dialect=pg)) == "COALESCE(w, rt_metadata_workspace(m))"


def test_the_console_listens_on_the_channel_migration_0005_notifies():
    migration = importlib.import_module(
        "roundtable_console.store.db.migrations.versions.0005_change_notifications"
    )
    assert f"pg_notify('{CHANNEL}', '')" in migration.PG_FUNCTION


def test_a_host_on_the_store_listens_on_the_channel_migration_0020_notifies():
    from roundtable_console.store.db.notifications import HOST_CALLS_CHANNEL

    migration = importlib.import_module(
        "roundtable_console.store.db.migrations.versions.0020_host_calls"
    )
    assert f"pg_notify('{HOST_CALLS_CHANNEL}', '')" in migration.PG_FUNCTION


def test_a_store_at_the_baseline_is_brought_to_head(tmp_path: Path):
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(Path(__file__).with_name("reference_ddl.sql").read_text())
        conn.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) PRIMARY KEY)")
        conn.execute("INSERT INTO alembic_version VALUES ('0001_reference_baseline')")
    open_store(sqlite_url(path)).dispose()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [
            (HEAD_REVISION,)
        ]
        columns = [c[1] for c in conn.execute("PRAGMA table_info(agent_sessions)")]
        assert columns[-4:] == ["version", "waiting_reason", "waiting_since", "host"]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert "idempotency_keys" in tables


class LockedCursor:
    """A DB-API cursor whose first ``locked`` statements fail as SQLite fails a connection
    turning a new file to WAL while another process does the same."""

    def __init__(self, locked: int, mode: str = "delete", error: str = "database is locked"):
        self.locked = locked
        self.mode = mode
        self.error = error
        self.statements: list[str] = []

    def execute(self, statement: str) -> LockedCursor:
        self.statements.append(statement)
        if self.locked:
            self.locked -= 1
            raise sqlite3.OperationalError(self.error)
        if statement == "PRAGMA journal_mode = WAL":
            self.mode = "wal"
        return self

    def fetchone(self) -> tuple[str]:
        return (self.mode,)


def test_wal_mode_is_set_when_another_opener_held_the_file_for_a_moment():
    cursor = LockedCursor(locked=2)
    use_wal(cursor, wait_seconds=5)
    assert cursor.mode == "wal"
    assert cursor.statements[-2:] == ["PRAGMA journal_mode", "PRAGMA journal_mode = WAL"]


def test_a_file_locked_for_longer_than_the_wait_is_reported_and_other_errors_at_once():
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        use_wal(LockedCursor(locked=10_000), wait_seconds=0.05)
    broken = LockedCursor(locked=1, error="disk I/O error")
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        use_wal(broken, wait_seconds=5)
    assert broken.statements == ["PRAGMA journal_mode"]


def test_a_database_already_in_wal_mode_is_left_as_it_is():
    cursor = LockedCursor(locked=0, mode="wal")
    use_wal(cursor)
    assert cursor.statements == ["PRAGMA journal_mode"]


def test_a_file_name_with_a_nul_is_refused_in_words(tmp_path: Path):
    with pytest.raises(DatabaseUnavailable, match=r"NUL character") as refused:
        open_store(f"sqlite:///{tmp_path}/a\x00b.db")
    assert "\x00" not in refused.value.message
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "reason",
    [
        "deadlock detected",
        "could not serialize access due to concurrent update",
    ],
)
def test_a_conflict_between_transactions_is_not_called_a_missing_database(reason: str):
    message = unavailable_message("postgresql://ops@db/rt", reason)
    assert "changing the same rows at the same moment; retry" in message
    assert "check that it exists" not in message
