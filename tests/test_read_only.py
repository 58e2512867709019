"""Read-only opens (issue 11 point 2): every writing command refused with ``read_only``, nothing
written; a read-only open never migrates, reads a schema that is behind when it can, and
refuses in words when it cannot."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text

from roundtable_console.store.db.database import open_store
from roundtable_console.store.errors import ReadOnly
from tests.conftest import FakeClock
from tests.helpers import Cli, register_session

PROJECT = Path(__file__).resolve().parent.parent

WRITING: tuple[tuple[str, ...], ...] = (
    ("sessions", "register", "--id", "s9", "--agent", "a", "--run", "r", "--adapter", "codex",
     "--cwd", "/w"),
    ("sessions", "heartbeat", "--session", "s1"),
    ("sessions", "heartbeat", "--session", "s1", "--session", "s2"),
    ("sessions", "end", "--session", "s1"),
    ("sessions", "pause", "--session", "s1"),
    ("sessions", "stop", "--all-matching", "--status", "active"),
    ("sessions", "resume", "--session", "s1", "--idempotency-key", "k"),
    ("sessions", "terminate", "--session", "s1", "--idempotency-key", "k"),
    ("demo", "--sessions", "3"),
    ("db", "upgrade"),
    ("import", "-"),
    ("host", "run", "--name", "laptop"),
)  # fmt: skip


def _error(result: object) -> dict[str, str]:
    stderr = result.stderr  # type: ignore[attr-defined]
    return json.loads(stderr.strip().splitlines()[-1])["error"]  # type: ignore[no-any-return]


def _fingerprint(path: Path) -> dict[str, str]:
    """Every file of the store (the database, its WAL and shared memory), by content."""
    return {
        item.name: hashlib.sha256(item.read_bytes()).hexdigest()
        for item in sorted(path.parent.iterdir())
        if item.name.startswith(path.name)
    }


@pytest.fixture
def both(store_url: str, clock: FakeClock) -> Cli:
    """The CLI on a store of each backend, with two active sessions."""
    cli = Cli(url=store_url, clock=clock)
    cli.register("s1")
    cli.register("s2")
    return cli


@pytest.mark.parametrize("argv", WRITING, ids=lambda argv: " ".join(argv[:2]))
def test_every_writing_command_is_refused_read_only(both: Cli, argv: tuple[str, ...]) -> None:
    before = both.dump()
    result = both(*argv, "--read-only", "--json", input='{"kind": "agent"}\n')
    assert result.exit_code == 1, result.stderr
    error = _error(result)
    assert error["code"] == "read_only"
    assert "--read-only" in error["message"] and "nothing was done" in error["message"]
    assert result.stdout == ""
    assert both.dump() == before


def test_reads_and_a_dry_run_work_read_only(both: Cli) -> None:
    listed = both.json("sessions", "--read-only")
    assert [item["id"] for item in listed["items"]] == ["s1", "s2"]
    assert both.json("sessions", "show", "--session", "s1", "--read-only")["id"] == "s1"
    assert both.json("audit", "--read-only")["items"] == []
    dry = both("sessions", "pause", "--session", "s1", "--session", "s2", "--dry-run",
               "--read-only", "--json")  # fmt: skip
    assert dry.exit_code == 0, dry.stderr
    assert json.loads(dry.stdout)["done"] == 2
    assert both.session("s1").status == "active"


def test_the_sessions_group_option_counts_for_its_subcommand(both: Cli) -> None:
    result = both("sessions", "--read-only", "pause", "--session", "s1", "--json")
    assert result.exit_code == 1
    assert _error(result)["code"] == "read_only"


def test_the_environment_and_the_config_make_it_read_only(
    both: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, isolated_env: None
) -> None:
    monkeypatch.setenv("ROUNDTABLE_READ_ONLY", "1")
    by_env = both("sessions", "pause", "--session", "s1", "--json")
    assert _error(by_env)["code"] == "read_only"
    assert "$ROUNDTABLE_READ_ONLY" in _error(by_env)["message"]
    monkeypatch.setenv("ROUNDTABLE_READ_ONLY", "0")
    config = tmp_path / "xdg-config" / "roundtable" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("read_only = true\n")
    by_config = both("sessions", "pause", "--session", "s1", "--json")
    assert _error(by_config)["code"] == "read_only"
    assert "read_only = true in" in _error(by_config)["message"]
    config.write_text("read_only = false\n")
    assert both("sessions", "pause", "--session", "s1").exit_code == 0


def test_a_bad_read_only_setting_is_bad_usage(
    both: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, isolated_env: None
) -> None:
    monkeypatch.setenv("ROUNDTABLE_READ_ONLY", "maybe")
    result = both("sessions", "--json")
    assert result.exit_code == 2
    assert "ROUNDTABLE_READ_ONLY" in _error(result)["message"]
    monkeypatch.delenv("ROUNDTABLE_READ_ONLY")
    config = tmp_path / "xdg-config" / "roundtable" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('read_only = "yes"\n')
    result = both("sessions", "--json")
    assert result.exit_code == 2
    assert "read_only must be true or false" in _error(result)["message"]


def test_the_database_itself_refuses_a_read_only_stores_writes(store_url: str) -> None:
    """Not only the CLI's check: a read-only store's connections cannot write at all."""
    with open_store(store_url).write() as db:
        register_session(db, "s1")
    store = open_store(store_url, read_only=True)
    try:
        with pytest.raises(ReadOnly, match="open read-only"), store.write():
            pass
        with pytest.raises(ReadOnly, match="refused"), store.read() as db:
            db.execute(text("UPDATE agent_sessions SET status = 'x'"))
        with store.read() as db:
            assert db.execute(text("SELECT status FROM agent_sessions")).scalar_one() == "active"
    finally:
        store.dispose()


def _reference_store(path: Path) -> None:
    """The reference's own store: its DDL, a session, a pause with its actor in the payload."""
    raw = sqlite3.connect(path)
    raw.executescript((PROJECT / "tests" / "reference_ddl.sql").read_text())
    raw.execute(
        "INSERT INTO agent_sessions (id, agent_id, run_id, adapter, working_directory, status,"
        " started_at) VALUES ('ref-1', 'a', 'r', 'codex', '/w', 'paused', '2026-09-17 10:00:00')"
    )
    raw.execute(
        "INSERT INTO agent_session_events (session_id, event_type, payload_json, created_at)"
        ' VALUES (\'ref-1\', \'paused\', \'{"status":"paused","actor":"ref-op"}\','
        " '2026-09-17 10:05:00')"
    )
    raw.execute(
        "INSERT INTO agent_session_events (session_id, event_type, payload_json, created_at)"
        " VALUES ('ref-1', 'heartbeat', 'not json', '2026-09-17 10:06:00')"
    )
    raw.commit()
    raw.close()


def test_a_reference_store_is_read_and_never_migrated(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "reference.db"
    _reference_store(path)
    before = _fingerprint(path)
    cli = Cli(url=f"sqlite:///{path}", clock=clock)
    listed = cli.json("sessions", "--read-only")
    assert [(item["id"], item["status"]) for item in listed["items"]] == [("ref-1", "paused")]
    assert cli.json("sessions", "logs", "--session", "ref-1", "--read-only")["items"]
    audit = cli.json("audit", "--read-only")["items"]
    assert [(item["actor"], item["action"], item["db_user"]) for item in audit] == [
        ("ref-op", "pause", None)
    ]
    human = cli("sessions", "--read-only")
    assert human.exit_code == 0 and "ref-1" in human.stdout
    refused = cli("sessions", "resume", "--session", "ref-1", "--idempotency-key", "k",
                  "--read-only", "--json")  # fmt: skip
    assert _error(refused)["code"] == "read_only"
    assert _fingerprint(path) == before
    tables = {row[0] for row in sqlite3.connect(path).execute("SELECT name FROM sqlite_master")}
    assert "alembic_version" not in tables


def test_a_store_without_the_tables_a_read_needs_is_refused_in_words(
    tmp_path: Path, clock: FakeClock
) -> None:
    path = tmp_path / "other.db"
    raw = sqlite3.connect(path)
    raw.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY)")
    raw.commit()
    raw.close()
    before = _fingerprint(path)
    result = Cli(url=f"sqlite:///{path}", clock=clock)("sessions", "--read-only", "--json")
    assert result.exit_code == 1
    error = _error(result)
    assert error["code"] == "database_unavailable"
    assert "no agent_sessions or agent_session_events table" in error["message"]
    assert "without --read-only" in error["message"]
    assert _fingerprint(path) == before


def test_a_missing_file_is_not_created_read_only(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "nowhere" / "roundtable.db"
    result = Cli(url=f"sqlite:///{path}", clock=clock)("sessions", "--read-only", "--json")
    assert result.exit_code == 1
    assert "creates nothing" in _error(result)["message"]
    assert not path.parent.exists()


def test_a_behind_sqlite_store_of_ours_is_read_as_it_is(
    tmp_path: Path, clock: FakeClock, sqlite_template: Path
) -> None:
    """A store an older roundtable left (here: before migration 0009) is read, not upgraded."""
    path = tmp_path / "older.db"
    raw = sqlite3.connect(path)
    raw.executescript((PROJECT / "tests" / "reference_ddl.sql").read_text())
    raw.commit()
    raw.close()
    open_store(f"sqlite:///{path}").dispose()  # now current
    raw = sqlite3.connect(path)
    raw.execute("UPDATE alembic_version SET version_num = '0008_session_groups'")
    raw.execute("DROP INDEX ix_agent_session_events_audit")
    raw.commit()
    raw.close()
    cli = Cli(url=f"sqlite:///{path}", clock=clock)
    assert cli.json("sessions", "--read-only")["items"] == []
    version = sqlite3.connect(path).execute("SELECT version_num FROM alembic_version")
    assert version.fetchone()[0] == "0008_session_groups"


def _one_revision_behind(store_url: str) -> None:
    """The store as it was before migration 0009: no actor or db_user column."""
    store = open_store(store_url)
    try:
        with store.write() as db:
            for index in (
                "ix_agent_session_events_audit",
                "ix_agent_session_events_audit_actor",
                "ix_agent_session_events_audit_type",
            ):
                db.execute(text(f"DROP INDEX {index}"))
            if store.dialect == "postgresql":
                for trigger in ("rt_history_db_user_insert", "rt_history_db_user_update"):
                    db.execute(text(f"DROP TRIGGER {trigger} ON agent_session_events"))
            db.execute(text("ALTER TABLE agent_session_events DROP COLUMN actor"))
            db.execute(text("ALTER TABLE agent_session_events DROP COLUMN db_user"))
            db.execute(text("DROP TABLE hosts"))  # migration 0019's, long after
            db.execute(text("UPDATE alembic_version SET version_num = '0008_session_groups'"))
    finally:
        store.dispose()


def test_a_store_one_revision_behind_is_read_on_both_backends(both: Cli) -> None:
    assert both("sessions", "pause", "--session", "s1", "--operator", "ann").exit_code == 0
    _one_revision_behind(both.url)
    listed = both.json("sessions", "--read-only")
    assert [(item["id"], item["status"]) for item in listed["items"]] == [
        ("s1", "paused"),
        ("s2", "active"),
    ]
    audit = both.json("audit", "--read-only")["items"]
    assert [(item["actor"], item["action"], item["db_user"]) for item in audit] == [
        ("ann", "pause", None)
    ]
    assert both.json("sessions", "logs", "--session", "s1", "--read-only")["items"]
    assert both.json("hosts", "--read-only")["items"] == []
    store = open_store(both.url, upgrade=False)
    try:
        with store.read() as db:
            version = db.execute(text("SELECT version_num FROM alembic_version")).scalar_one()
    finally:
        store.dispose()
    assert version == "0008_session_groups"  # read, never migrated


def test_a_postgresql_store_further_behind_is_refused_in_words(pg_store: object) -> None:
    from roundtable_console.store.db.database import Store

    assert isinstance(pg_store, Store)
    with pg_store.write() as db:
        db.execute(text("UPDATE alembic_version SET version_num = '0007_waiting_attention'"))
    url = pg_store.engine.url.render_as_string(hide_password=False)
    result = Cli(url=url, clock=FakeClock())("sessions", "--read-only", "--json")
    assert result.exit_code == 1
    error = _error(result)
    assert error["code"] == "database_unavailable"
    assert "0007_waiting_attention" in error["message"] and "db upgrade" in error["message"]
