"""The agent's quick path (``tui.quick_cli`` over ``store.writes.quick_writes``) does what the full
path (``tui.cli`` over ``store.writes.agent_writes``) does: the same rows, history, counts, output,
errors and exit codes, on SQLite and on PostgreSQL; and a store it does not take goes to the full
path.
"""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest.mock import patch

import psycopg
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roundtable_console.store.db import drivers
from roundtable_console.store.db.database import open_store, sqlite_url
from roundtable_console.store.db.drivers import postgres_dsn
from roundtable_console.store.writes import agent_writes, quick_writes
from roundtable_console.tui import quick_cli
from roundtable_console.tui.cli import cli
from roundtable_console.tui.cli.invocation import CliState
from tests.conftest import FakeClock, new_pg_database
from tests.pg_server import PostgresServer
from tests.test_reference_store import build_reference_db


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str


def run_quick(argv: Sequence[str], clock: FakeClock) -> Outcome | None:
    """``argv`` on the quick path (None: it was not taken)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = quick_cli.run(list(argv), clock=clock)
    if code is None:
        assert out.getvalue() == err.getvalue() == ""
        return None
    return Outcome(code, out.getvalue(), err.getvalue())


@contextmanager
def full_path_only() -> Iterator[None]:
    """tui.cli without the quick writes: every write through store.writes.agent_writes and
    SQLAlchemy."""

    def not_taken(*_args: Any, **_kwargs: Any) -> None:
        return None

    with patch.multiple(quick_writes, heartbeat=not_taken, end=not_taken, register=not_taken):
        yield


def run_full(argv: Sequence[str], clock: FakeClock) -> Outcome:
    with full_path_only():
        result = CliRunner().invoke(cli, list(argv), obj=CliState(clock=clock))
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return Outcome(result.exit_code, result.stdout, result.stderr)


# --------------------------------------------------------------------------- twin stores


class Twin:
    """One of two stores the same commands go to, and what it holds (ids and order of the
    history rows apart)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def _query(self, sql: str) -> list[tuple[Any, ...]]:
        dsn = postgres_dsn(self.url)
        if dsn is not None:
            with psycopg.connect(dsn) as conn:
                return [tuple(row) for row in conn.execute(sql).fetchall()]
        conn = sqlite3.connect(self.url.removeprefix("sqlite:///"))
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()

    def _run(self, *statements: str) -> None:
        dsn = postgres_dsn(self.url)
        if dsn is not None:
            with psycopg.connect(dsn) as conn:
                for statement in statements:
                    conn.execute(statement)
            return
        conn = sqlite3.connect(self.url.removeprefix("sqlite:///"), isolation_level=None)
        try:
            for statement in statements:
                conn.execute(statement)
        finally:
            conn.close()

    def empty(self) -> None:
        self._run(
            "DELETE FROM agent_session_events",
            "DELETE FROM agent_sessions",
            "DELETE FROM session_status_counts",
            "DELETE FROM session_group_counts",
        )

    def contents(self) -> dict[str, list[tuple[Any, ...]]]:
        return {
            "sessions": self._query("SELECT * FROM agent_sessions ORDER BY id"),
            "history": self._query(
                "SELECT session_id, event_type, payload_json, created_at"
                " FROM agent_session_events ORDER BY id"
            ),
            "status counts": self._query(
                "SELECT status, sessions FROM session_status_counts WHERE sessions > 0"
                " ORDER BY status"
            ),
            "group counts": self._query(
                "SELECT grouping, keyed, group_key, status, sessions FROM session_group_counts"
                " WHERE sessions > 0 ORDER BY grouping, keyed, group_key, status"
            ),
        }


@pytest.fixture(scope="module")
def twin_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("twins") / "template.db"
    open_store(sqlite_url(path)).dispose()
    return path


@pytest.fixture(params=["sqlite", "postgresql"])
def twins(request: pytest.FixtureRequest, twin_template: Path, tmp_path: Path) -> tuple[Twin, Twin]:
    if request.param == "sqlite":
        made = []
        for name in ("quick.db", "full.db"):
            shutil.copy(twin_template, tmp_path / name)
            made.append(Twin(sqlite_url(tmp_path / name)))
        return made[0], made[1]
    server: PostgresServer = request.getfixturevalue("pg_server")
    return Twin(new_pg_database(server)), Twin(new_pg_database(server))


@pytest.fixture
def user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user config with an adapter that has a resume pattern, read by both paths."""
    for name in ("ROUNDTABLE_DB", "ROUNDTABLE_OPERATOR"):
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "xdg-config" / "roundtable" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        '[adapters.custom]\nresume_pattern = "custom resume {{external_session_id}}"\n'
    )
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    return config


# --------------------------------------------------------------------------- random commands

SESSION_IDS = st.sampled_from(["s1", "s2", " s1 ", "", "   ", "s-ü"])
STATUSES = st.one_of(
    st.none(),
    st.sampled_from(
        ["", "  ", "active", "paused", "running", "ended", "failed", " running ", "x" * 65,
         "x" * 64, "bad\x01status", "stop\u202eped", "ок"]
    ),
)  # fmt: skip
WAITING = st.one_of(
    st.none(),
    st.sampled_from(
        ["", "  ", "approve deleting build/", "token=abc123 then password: hunter2",
         "Bearer sk-live-1 please", "x" * 500, "x" * 501, "two\nlines", "tab\tok"]
    ),
)  # fmt: skip
EXTERNAL = st.one_of(st.none(), st.sampled_from(["", "  ", "ext-1", "ext 2", " ext-3 "]))
METADATA = st.one_of(
    st.none(),
    st.sampled_from(
        ["", "{}", '{"a": 1}', '{"workspace_id": "w1", "api_key": "k"}', "[1, 2]", "not json",
         '{"a": NaN}', '{"nested": {"b": [1, {"c": null}]}}', '"text"']
    ),
)  # fmt: skip
TEXT = st.sampled_from(["a1", "r1", "/work", "", "  ", " padded ", "ü"])


def _option(flag: str, value: str | None) -> list[str]:
    return [] if value is None else [flag, value]


@st.composite
def commands(draw: st.DrawFn) -> list[str]:
    kind = draw(st.sampled_from(["register", "heartbeat", "heartbeat", "end"]))
    argv = ["sessions", kind]
    if kind == "register":
        argv += ["--id", draw(SESSION_IDS), "--agent", draw(TEXT), "--run", draw(TEXT)]
        argv += ["--adapter", draw(st.sampled_from(["codex", "custom", "", "generic"]))]
        argv += ["--cwd", draw(TEXT)]
        argv += _option("--external-session-id", draw(EXTERNAL))
        argv += _option("--resume-command", draw(st.one_of(st.none(), st.just("run it"))))
        argv += _option("--provider", draw(st.one_of(st.none(), TEXT)))
        argv += _option("--model", draw(st.one_of(st.none(), TEXT)))
        argv += _option("--mcp-socket", draw(st.one_of(st.none(), TEXT)))
        argv += _option("--status", draw(STATUSES))
        argv += _option("--metadata", draw(METADATA))
    elif kind == "heartbeat":
        argv += ["--session", draw(SESSION_IDS)]
        argv += _option("--status", draw(STATUSES))
        argv += _option("--external-session-id", draw(EXTERNAL))
        argv += _option("--waiting", draw(WAITING))
    else:
        argv += ["--session", draw(SESSION_IDS)]
        argv += _option("--status", draw(STATUSES))
    if draw(st.booleans()):
        argv.append("--json")
    return argv


@pytest.mark.usefixtures("user_config")
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    script=st.lists(st.tuples(commands(), st.integers(0, 90)), min_size=1, max_size=10),
)
def test_quick_and_full_paths_leave_the_same_store_and_say_the_same(
    twins: tuple[Twin, Twin], script: list[tuple[list[str], int]]
) -> None:
    quick, full = twins
    quick.empty()
    full.empty()
    quick_clock, full_clock = FakeClock(), FakeClock()
    for argv, seconds in script:
        quick_clock.advance(seconds=seconds)
        full_clock.advance(seconds=seconds)
        taken = run_quick([*argv, "--db", quick.url], quick_clock)
        assert taken is not None, argv  # the quick path took it
        expected = run_full([*argv, "--db", full.url], full_clock)
        assert taken.code == expected.code, (argv, taken, expected)
        assert taken.stdout == expected.stdout, argv
        assert taken.stderr == expected.stderr, argv
        if taken.code == 0 and "--json" in argv:
            assert json.loads(taken.stdout)["id"] == json.loads(expected.stdout)["id"]
    assert quick.contents() == full.contents()


# --------------------------------------------------------------------------- the rules, directly


@pytest.fixture
def quick_store(sqlite_template: Path, tmp_path: Path, isolated_env: None) -> str:
    target = tmp_path / "quick.db"
    shutil.copy(sqlite_template, target)
    return sqlite_url(target)


def _register(url: str, clock: FakeClock, session_id: str = "s1") -> None:
    argv = ["sessions", "register", "--id", session_id, "--agent", "a1", "--run", "r1"]
    taken = run_quick([*argv, "--adapter", "codex", "--cwd", "/w", "--db", url], clock)
    assert taken is not None and taken.code == 0, taken


def _row(url: str, session_id: str) -> dict[str, Any]:
    conn = sqlite3.connect(url.removeprefix("sqlite:///"))
    conn.row_factory = sqlite3.Row
    try:
        row = conn.execute("SELECT * FROM agent_sessions WHERE id = ?", (session_id,)).fetchone()
        return dict(row)
    finally:
        conn.close()


def test_a_waiting_heartbeat_is_redacted_kept_while_it_repeats_and_cleared_by_a_plain_one(
    quick_store: str, clock: FakeClock
) -> None:
    _register(quick_store, clock)
    waiting = ["sessions", "heartbeat", "--session", "s1", "--db", quick_store, "--json"]
    first = run_quick([*waiting, "--waiting", "approve it token=abc"], clock)
    assert first is not None and first.code == 0
    body = json.loads(first.stdout)
    assert body["waiting"] == {
        "reason": "approve it token=[REDACTED]",
        "since": body["last_seen_at"],
    }
    since = body["last_seen_at"]
    clock.advance(seconds=30)
    again = run_quick([*waiting, "--waiting", "approve it token=abc"], clock)
    assert again is not None
    assert json.loads(again.stdout)["waiting"]["since"] == since  # the same wait goes on
    clock.advance(seconds=30)
    plain = run_quick(waiting, clock)
    assert plain is not None and json.loads(plain.stdout)["waiting"] is None
    row = _row(quick_store, "s1")
    assert row["waiting_reason"] is None and row["waiting_since"] is None
    assert row["version"] == 3  # register 0, then one bump per write


def test_an_unknown_session_and_bad_input_are_refused_with_their_codes(
    quick_store: str, clock: FakeClock
) -> None:
    _register(quick_store, clock)
    base = ["sessions", "heartbeat", "--db", quick_store, "--json"]
    missing = run_quick([*base, "--session", "nope"], clock)
    assert missing is not None and missing.code == 1
    assert json.loads(missing.stderr.splitlines()[-1]) == {
        "error": {"code": "session_not_found", "message": "No session has the id 'nope'."}
    }
    long = run_quick([*base, "--session", "s1", "--waiting", "x" * 501], clock)
    assert long is not None and long.code == 2
    assert json.loads(long.stderr.splitlines()[-1])["error"]["code"] == "invalid_session"
    ended = run_quick(
        ["sessions", "end", "--session", "s1", "--status", "\x07", "--db", quick_store], clock
    )
    assert ended is not None and ended.code == 2
    assert ended.stderr == "error: A status must not contain control characters.\n"
    assert _row(quick_store, "s1")["version"] == 0  # nothing was written


def test_counts_tables_follow_the_quick_writes(quick_store: str, clock: FakeClock) -> None:
    _register(quick_store, clock, "s1")
    _register(quick_store, clock, "s2")
    assert run_quick(["sessions", "end", "--session", "s1", "--db", quick_store], clock) is not None
    conn = sqlite3.connect(quick_store.removeprefix("sqlite:///"))
    try:
        counts = dict(conn.execute("SELECT status, sessions FROM session_status_counts").fetchall())
        groups = conn.execute(
            "SELECT status, sessions FROM session_group_counts WHERE grouping = 'agent'"
            " AND sessions > 0 ORDER BY status"
        ).fetchall()
    finally:
        conn.close()
    assert counts["active"] == 1 and counts["ended"] == 1
    assert groups == [("active", 1), ("ended", 1)]


@pytest.mark.postgres
def test_a_quick_heartbeat_on_postgresql_notifies_listeners(pg_server: PostgresServer) -> None:
    url = new_pg_database(pg_server)
    clock = FakeClock()
    _register(url, clock)
    dsn = postgres_dsn(url)
    assert dsn is not None
    with psycopg.connect(dsn, autocommit=True) as listener:
        listener.execute("LISTEN roundtable_changes")
        taken = run_quick(["sessions", "heartbeat", "--session", "s1", "--db", url], clock)
        assert taken is not None and taken.code == 0
        notes = list(listener.notifies(timeout=5, stop_after=1))
    assert notes and notes[0].channel == "roundtable_changes"


def test_an_interrupted_write_says_so_as_the_full_path_does(
    quick_store: str, clock: FakeClock
) -> None:
    def interrupted(*_args: Any, **_kwargs: Any) -> None:
        raise KeyboardInterrupt

    argv = ["sessions", "end", "--session", "s1", "--db", quick_store, "--json"]
    with patch.object(quick_writes, "end", interrupted):
        taken = run_quick(argv, clock)
    with patch.object(agent_writes, "end", interrupted):
        expected = run_full(argv, clock)
    assert taken is not None
    assert (taken.code, taken.stdout, taken.stderr) == (expected.code, "", expected.stderr)
    assert json.loads(taken.stderr)["error"]["code"] == "interrupted" and taken.code == 130


def test_a_broken_config_is_said_first_by_both_paths(
    quick_store: str, clock: FakeClock, tmp_path: Path
) -> None:
    config = tmp_path / "xdg-config" / "roundtable" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("refresh_seconds = [")
    for argv in (
        ["sessions", "heartbeat", "--session", " ", "--db", quick_store, "--json"],
        ["sessions", "end", "--session", "s1", "--db", quick_store, "--json"],
    ):
        taken = run_quick(argv, clock)
        expected = run_full(argv, clock)
        assert taken is not None and (taken.code, taken.stderr) == (expected.code, expected.stderr)
    # The config comes first (it may make the store read-only), then the session id.
    blank = run_quick(["sessions", "heartbeat", "--session", " ", "--db", quick_store], clock)
    assert blank is not None and "not valid TOML" in blank.stderr and blank.code == 2
    broken = run_quick(["sessions", "end", "--session", "s1", "--db", quick_store], clock)
    assert broken is not None and "not valid TOML" in broken.stderr and broken.code == 2


# --------------------------------------------------------------------------- not taken


def test_a_store_not_yet_current_goes_to_the_full_path_which_migrates(
    tmp_path: Path, clock: FakeClock, isolated_env: None
) -> None:
    path = tmp_path / "reference.db"
    build_reference_db(path, tmp_path)
    url = sqlite_url(path)
    argv = ["sessions", "register", "--id", "s1", "--agent", "a", "--run", "r"]
    argv += ["--adapter", "codex", "--cwd", "/w", "--db", url]
    assert run_quick(argv, clock) is None
    assert run_full(argv, clock).code == 0
    assert run_quick(["sessions", "heartbeat", "--session", "s1", "--db", url], clock) is not None


@pytest.mark.parametrize(
    "url",
    [
        "sqlite:///:memory:",
        "sqlite:///{dir}/missing.db",
        "sqlite:///{dir}/db?mode=ro",
        "mysql://h/x",
    ],
)
def test_urls_the_quick_path_does_not_open_go_to_the_full_path(
    url: str, tmp_path: Path, clock: FakeClock, isolated_env: None
) -> None:
    argv = ["sessions", "heartbeat", "--session", "s1", "--db", url.format(dir=tmp_path)]
    assert run_quick(argv, clock) is None
    assert not (tmp_path / "missing.db").exists()


def test_a_file_that_is_not_a_store_is_refused_by_the_full_path_untouched(
    tmp_path: Path, clock: FakeClock, isolated_env: None
) -> None:
    path = tmp_path / "notes.db"
    path.write_text("my notes")
    argv = ["sessions", "end", "--session", "s1", "--db", sqlite_url(path), "--json"]
    assert run_quick(argv, clock) is None
    refused = run_full(argv, clock)
    assert refused.code == 1
    assert "is not a SQLite database" in refused.stderr
    assert path.read_text() == "my notes"


@pytest.mark.parametrize(
    "argv",
    [
        ["sessions", "heartbeat", "--session", "s1", "--every", "5"],
        ["sessions", "heartbeat", "--session", "s1", "--session", "s2"],
        ["sessions", "heartbeat", "--all-matching", "--status", "active"],
        ["sessions", "heartbeat", "--session", "s1", "--operator", "ann"],
        ["sessions", "heartbeat", "--session", "s1", "--dry-run"],
        ["sessions", "heartbeat", "--session", "s1", "--stale"],
        ["sessions", "heartbeat", "--session", "s1", "--status"],
        ["sessions", "heartbeat", "--session", "s1", "--status", "--json"],
        ["sessions", "heartbeat", "--session", "s1", "--json", "--json"],
        ["sessions", "heartbeat", "--session", "s1", "extra"],
        ["sessions", "heartbeat", "--session", "s1", "--help"],
        ["sessions", "heartbeat"],
        ["sessions", "end", "--session", "s1", "--waiting", "x"],
        ["sessions", "register", "--id", "s1", "--agent", "a", "--run", "r", "--adapter", "c"],
        ["sessions", "--status", "active", "heartbeat", "--session", "s1"],
        ["sessions", "--db", " ", "heartbeat", "--session", "s1"],
        ["sessions", "pause", "--session", "s1"],
        ["sessions", "list"],
        ["heartbeat", "--session", "s1"],
        ["sessions", "heartbeat", "--session", "caf\udce9"],
    ],
)
def test_forms_the_quick_path_does_not_read_go_to_tui_cli(argv: list[str]) -> None:
    assert quick_cli.parse(argv) is None


def test_read_only_mode_leaves_every_write_to_the_full_path(
    quick_store: str, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROUNDTABLE_READ_ONLY", "1")
    argv = ["sessions", "heartbeat", "--session", "s1", "--db", quick_store]
    assert quick_cli.parse(argv) is not None
    assert run_quick(argv, clock) is None


def test_forms_the_quick_path_reads() -> None:
    parsed = quick_cli.parse(
        ["sessions", "--json", "--db", "sqlite:///g.db", "heartbeat", "--session=s1",
         "--status", "running", "--waiting=a=b", "--db", "sqlite:///c.db"]
    )  # fmt: skip
    assert parsed is not None
    assert (parsed.name, parsed.db, parsed.root, parsed.json_mode) == (
        "heartbeat", "sqlite:///c.db", None, True,
    )  # fmt: skip
    assert parsed.values == {"session_id": "s1", "status": "running", "waiting": "a=b"}
    grouped = quick_cli.parse(["sessions", "--root", "/w", "end", "--session", "s1"])
    assert grouped is not None and (grouped.root, grouped.db, grouped.json_mode) == (
        "/w", None, False,
    )  # fmt: skip


# --------------------------------------------------------------------------- unavailable


def test_a_locked_store_is_unavailable_in_the_full_paths_words(
    quick_store: str, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from roundtable_console.store.db import database

    _register(quick_store, clock)
    monkeypatch.setattr(drivers, "BUSY_TIMEOUT_MS", 200)
    monkeypatch.setattr(database, "BUSY_TIMEOUT_MS", 200)
    holder = sqlite3.connect(quick_store.removeprefix("sqlite:///"), isolation_level=None)
    argv = ["sessions", "heartbeat", "--session", "s1", "--db", quick_store, "--json"]
    try:
        holder.execute("BEGIN IMMEDIATE")
        taken = run_quick(argv, clock)
        expected = run_full(argv, clock)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert taken is not None
    assert (taken.code, taken.stderr) == (expected.code, expected.stderr)
    assert json.loads(taken.stderr)["error"]["code"] == "database_unavailable"


@pytest.mark.postgres
def test_an_unreachable_server_is_unavailable_in_the_full_paths_words(
    clock: FakeClock, isolated_env: None
) -> None:
    url = "postgresql://nobody:secret@127.0.0.1:1/roundtable"
    argv = ["sessions", "end", "--session", "s1", "--db", url]
    taken = run_quick(argv, clock)
    expected = run_full(argv, clock)
    assert taken is not None
    assert (taken.code, taken.stderr) == (expected.code, expected.stderr)
    assert "secret" not in taken.stderr and "unavailable" in taken.stderr


def test_a_config_that_says_read_only_sends_the_write_to_the_full_path_which_refuses_it(
    quick_store: str, clock: FakeClock, tmp_path: Path
) -> None:
    config = tmp_path / "xdg-config" / "roundtable" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("read_only = true\n")
    argv = ["sessions", "heartbeat", "--session", "s1", "--db", quick_store, "--json"]
    assert run_quick(argv, clock) is None
    refused = run_full(argv, clock)
    assert refused.code == 1 and '"read_only"' in refused.stderr


def test_a_turns_end_withdraws_its_waits_in_the_same_write(
    quick_store: str, clock: FakeClock
) -> None:
    """``withdraw``: the beat and the withdrawal of the session's pending requests are one
    transaction (a hook's turn end opens the store once); a beat already written under its key
    withdraws nothing again."""
    from roundtable_console.store.requests.asking import open_request

    _register(quick_store, clock)
    store = open_store(quick_store)
    try:
        asked = open_request(store, session_id="s1", agent="claude-code", tool_name="Bash",
                             tool_input={"command": "ls"}, suggestions=None, reason="asks",
                             wait_seconds=60)  # fmt: skip
    finally:
        store.dispose()
    beat = {"session_id": "s1", "status": "active", "turn_done": "done", "withdraw": True}
    done = quick_writes.heartbeat(quick_store, idempotency_key="k1", **beat)
    assert done is not None
    with sqlite3.connect(quick_store.removeprefix("sqlite:///")) as db:
        state = db.execute("SELECT state FROM permission_requests WHERE id = ?", (asked.id,))
        assert state.fetchone() == ("withdrawn",)
        db.execute("UPDATE permission_requests SET state = 'pending' WHERE id = ?", (asked.id,))
    quick_writes.heartbeat(quick_store, idempotency_key="k1", **beat)
    with sqlite3.connect(quick_store.removeprefix("sqlite:///")) as db:
        state = db.execute("SELECT state FROM permission_requests WHERE id = ?", (asked.id,))
        assert state.fetchone() == ("pending",)
