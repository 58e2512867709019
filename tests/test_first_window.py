"""The quick first read (``store.reads.first_window``, ``sqlite3`` alone) equals the store's own
reads.

For generated stores (timestamps in every form the reference writes, unreadable ones, NULLs,
ties) and for a store built with the reference's DDL, the first window is ``list_sessions``'
first page, field by field, and ``claim_counts``' counts. Anything but a current SQLite store
gives None, so the console takes its normal path.
"""

from __future__ import annotations

import atexit
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roundtable_console.store.clock import format_ts
from roundtable_console.store.db.database import describe_url, open_store, sqlite_url
from roundtable_console.store.db.models import AgentSession
from roundtable_console.store.db.revision import HEAD_REVISION
from roundtable_console.store.reads.claims import claim_counts
from roundtable_console.store.reads.first_window import (
    FirstWindow,
    describe,
    is_current,
    read_first_window,
    sqlite_file,
)
from roundtable_console.store.reads.listing import DEFAULT_ORDER, SessionOrder
from roundtable_console.store.reads.sessions import list_sessions
from roundtable_console.store.records import SESSION_COLUMNS, SessionRecord
from tests.test_reference_store import build_reference_db

BASE = datetime(2026, 9, 17, 17, 0, tzinfo=UTC)
PLUS_TWO = timezone(timedelta(hours=2))
UNREADABLE = ("yesterday", "", "2026-13-40 25:00:00")
ORDERS = [
    SessionOrder(column, descending)
    for column in ("started", "status", "agent")
    for descending in (False, True)
] + [
    SessionOrder("attention", descending).at(BASE + timedelta(seconds=stale))
    for descending in (False, True)
    for stale in (-1, 3)
]


@cache
def template_database() -> Path:
    """One migrated SQLite file, copied for each example (migrating costs more than copying)."""
    directory = tempfile.mkdtemp(prefix="rt-first-")
    atexit.register(shutil.rmtree, directory, True)
    path = Path(directory) / "template.db"
    open_store(sqlite_url(path)).dispose()
    return path


def timestamp_text(seconds: int, nanos: int, form: int) -> str:
    """One instant in one of the forms the reference writes (or ours)."""
    moment = BASE + timedelta(seconds=seconds, microseconds=nanos // 1000)
    if form == 0:
        return format_ts(moment)
    if form == 1:  # CURRENT_TIMESTAMP
        return moment.strftime("%Y-%m-%d %H:%M:%S")
    if form == 2:  # RFC 3339 with nanoseconds
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{nanos:09d}Z"
    return moment.astimezone(PLUS_TWO).isoformat()  # another zone


# Few distinct seconds, so ties (same instant, other form) are common.
TIMESTAMPS = st.one_of(
    st.builds(
        timestamp_text,
        st.integers(0, 5),
        st.sampled_from([0, 500_000_000, 123_456_789]),
        st.integers(0, 3),
    ),
    st.sampled_from(UNREADABLE),
)
SESSION = st.fixed_dictionaries(
    {
        "agent_id": st.sampled_from(["a1", "a2", "a3"]),
        "status": st.sampled_from(["active", "paused", "ended", "Running", "custom state"]),
        "started_at": TIMESTAMPS,
        "last_seen_at": st.none() | TIMESTAMPS,
        "metadata_json": st.sampled_from([None, '{"workspace_id": "ws-9"}', "not json"]),
        "workspace_id": st.sampled_from([None, "ws-1"]),
        "version": st.integers(0, 3),
        "waiting_since": st.none() | TIMESTAMPS,
    }
)
SESSIONS = st.dictionaries(st.text(alphabet="abz09-", min_size=1, max_size=3), SESSION, max_size=9)
CLAIMS = st.lists(
    st.tuples(
        st.sampled_from(["a1", "a2", "a3", "a4"]),
        st.sampled_from(["active", "active", "released"]),
        TIMESTAMPS,
    ),
    max_size=8,
)
PROPOSALS = st.lists(
    st.tuples(
        st.sampled_from(["a1", "a2", "a4"]),
        st.sampled_from(["pending", "accepted", "rejected", "draft"]),
    ),
    max_size=5,
)


def insert_rows(
    path: Path,
    sessions: dict[str, dict[str, Any]],
    claims: list[Any],
    proposals: list[tuple[str, str]] = (),  # type: ignore[assignment]
) -> None:
    """Rows as another writer leaves them: plain sqlite3, any text in the timestamp columns."""
    with sqlite3.connect(path) as conn:
        conn.executemany(
            "INSERT INTO agent_sessions (id, agent_id, run_id, adapter, working_directory,"
            " status, started_at, last_seen_at, metadata_json, workspace_id, version,"
            " waiting_reason, waiting_since)"
            " VALUES (:id, :agent_id, 'run-1', 'codex', '/w', :status, :started_at,"
            " :last_seen_at, :metadata_json, :workspace_id, :version, 'r', :waiting_since)",
            [{"id": key, "waiting_since": None, **values} for key, values in sessions.items()],
        )
        conn.executemany(
            "INSERT INTO claims (id, resource_id, agent_id, task_id, claim_type, status,"
            " expires_at) VALUES (?, 'src/x.py', ?, 'task-1', 'edit', ?, ?)",
            [(f"claim-{n}", *claim) for n, claim in enumerate(claims)],
        )
        conn.executemany(
            "INSERT INTO proposals (id, task_id, agent_id, title, summary_md, patch_path, status)"
            " VALUES (?, 'task-1', ?, 't', 's', 'p', ?)",
            [(f"proposal-{n}", *proposal) for n, proposal in enumerate(proposals)],
        )
    conn.close()


def store_reads(url: str, limit: int, now: datetime, order: SessionOrder) -> FirstWindow:
    """The same window through the store (SQLAlchemy): list_sessions and claim_counts."""
    store = open_store(url)
    try:
        with store.read() as db:
            page = list_sessions(db=db, limit=limit, order=order)
            claims = claim_counts(db=db, agent_ids=[s.agent_id for s in page.items], now=now)
    finally:
        store.dispose()
    records = [SessionRecord(item.column_values()) for item in page.items]
    return FirstWindow(sessions=records, has_more=page.next_cursor is not None, claims=claims)


def assert_same_window(quick: FirstWindow | None, store: FirstWindow) -> None:
    assert quick is not None
    assert [s.column_values() for s in quick.sessions] == [
        s.column_values() for s in store.sessions
    ]
    assert quick.has_more == store.has_more
    assert quick.claims == store.claims


@pytest.fixture
def current_db(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "roundtable.db"
    shutil.copyfile(template_database(), path)
    yield path


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sessions=SESSIONS,
    claims=CLAIMS,
    proposals=PROPOSALS,
    limit=st.integers(1, 6),
    now_seconds=st.integers(-3, 8),
    order=st.sampled_from(ORDERS),
)
def test_the_first_window_is_the_stores_first_page_and_claim_counts(
    sessions: dict[str, dict[str, Any]],
    claims: list[Any],
    proposals: list[tuple[str, str]],
    limit: int,
    now_seconds: int,
    order: SessionOrder,
) -> None:
    directory = Path(tempfile.mkdtemp(prefix="rt-first-"))
    try:
        path = directory / "roundtable.db"
        shutil.copyfile(template_database(), path)
        insert_rows(path, sessions, claims, proposals)
        now = BASE + timedelta(seconds=now_seconds)
        url = sqlite_url(path)
        quick = read_first_window(url, limit=limit, now=now, order=order)
        assert_same_window(quick, store_reads(url, limit, now, order))
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_a_reference_store_reads_the_same_both_ways(tmp_path: Path) -> None:
    """The reference's DDL, its three timestamp forms in one table, NULLs, a default
    CURRENT_TIMESTAMP row and a claim far in the future; migrated once by opening it."""
    root = tmp_path / "workspace"
    root.mkdir()
    path = tmp_path / "reference.db"
    build_reference_db(path, root)
    url = sqlite_url(path)
    assert not is_current(url)  # as the reference leaves it: the normal path migrates it
    open_store(url).dispose()
    assert is_current(url)
    with sqlite3.connect(path) as conn:  # one claim expired, one unreadable, one released
        conn.executemany(
            "INSERT INTO claims (id, resource_id, agent_id, task_id, claim_type, status,"
            " expires_at) VALUES (?, 'r', ?, 'task-1', 'edit', ?, ?)",
            [
                ("c-old", "agent-a", "active", "2026-09-17 17:00:00"),
                ("c-bad", "agent-a", "active", "soon"),
                ("c-gone", "agent-b", "released", "2099-01-01T00:00:00Z"),
            ],
        )
    conn.close()
    for limit in range(1, 9):
        now = datetime(2026, 9, 17, 17, 26, 35, tzinfo=UTC)
        quick = read_first_window(url, limit=limit, now=now)
        store = store_reads(url, limit, now, DEFAULT_ORDER)
        assert_same_window(quick, store)
    assert quick is not None and not quick.has_more
    assert quick.claims["agent-a"].expired == 1 and quick.claims["agent-a"].live == 1
    assert quick.claims["agent-b"].live == 1


def test_an_empty_current_store_has_an_empty_window(current_db: Path) -> None:
    url = sqlite_url(current_db)
    assert is_current(url)
    window = read_first_window(url, limit=50, now=BASE)
    assert window == FirstWindow(sessions=[], has_more=False, claims={})


def test_a_store_at_another_revision_is_not_read(current_db: Path) -> None:
    one = {
        "agent_id": "a1",
        "status": "active",
        "started_at": "2026-09-17 17:00:00",
        "last_seen_at": None,
        "metadata_json": None,
        "workspace_id": None,
        "version": 0,
    }
    insert_rows(current_db, {"s1": one}, [])
    url = sqlite_url(current_db)
    assert read_first_window(url, limit=5, now=BASE) is not None
    for revision in ("0002_console_additions", "0099_from_the_future"):
        with sqlite3.connect(current_db) as conn:
            conn.execute("UPDATE alembic_version SET version_num = ?", (revision,))
        conn.close()
        assert not is_current(url)
        assert read_first_window(url, limit=5, now=BASE) is None
    with sqlite3.connect(current_db) as conn:
        conn.execute("DELETE FROM alembic_version")
    conn.close()
    assert not is_current(url) and read_first_window(url, limit=5, now=BASE) is None


def test_missing_tables_or_columns_give_none(tmp_path: Path) -> None:
    bare = tmp_path / "bare.db"
    sqlite3.connect(bare).close()  # a SQLite file with no tables at all
    assert not is_current(sqlite_url(bare))
    assert read_first_window(sqlite_url(bare), limit=5, now=BASE) is None
    odd = tmp_path / "odd.db"
    with sqlite3.connect(odd) as conn:  # at head by its word, but without our tables
        conn.execute("CREATE TABLE alembic_version (version_num TEXT)")
        conn.execute("INSERT INTO alembic_version VALUES (?)", (HEAD_REVISION,))
        conn.execute("CREATE TABLE agent_sessions (id TEXT, started_at TEXT)")
    conn.close()
    assert is_current(sqlite_url(odd))
    assert read_first_window(sqlite_url(odd), limit=5, now=BASE) is None


def test_files_that_are_not_stores_give_none_and_stay_untouched(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    for path in (notes, tmp_path, tmp_path / "missing.db"):
        url = sqlite_url(path)
        assert not is_current(url)
        assert read_first_window(url, limit=5, now=BASE) is None
    assert notes.read_text() == "hello"
    assert not (tmp_path / "missing.db").exists()  # never created: the normal path does that


def test_only_plain_sqlite_file_urls_are_read_quickly(current_db: Path) -> None:
    plain = sqlite_url(current_db)
    assert sqlite_file(plain) == current_db
    assert sqlite_file(f"sqlite+pysqlite:///{current_db}") == current_db
    others = [
        "sqlite://",
        "sqlite:///:memory:",
        f"sqlite:///{current_db}?mode=ro",
        f"sqlite:///file:{current_db}",
        f"postgresql://user:secret@localhost/{current_db.name}",
        f"postgresql+psycopg:///{current_db}",
        f"mysql:///{current_db}",
        str(current_db),
    ]
    for url in others:
        assert sqlite_file(url) is None, url
        assert not is_current(url), url
        assert read_first_window(url, limit=5, now=BASE) is None, url


def test_an_unreachable_postgresql_server_takes_the_normal_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nothing answers there: run_console opens the store first, and reports it before the
    screen is taken over."""
    from roundtable_console.store.db import database
    from roundtable_console.store.errors import DatabaseUnavailable
    from roundtable_console.tui.app import run_console
    from roundtable_console.tui.config import Settings

    opened: list[str] = []

    def refuse(url: str, **_: Any) -> None:
        opened.append(url)
        raise DatabaseUnavailable("no server here")

    monkeypatch.setattr(database, "open_store", refuse)
    url = "postgresql://user:secret@127.0.0.1:1/roundtable"
    assert not is_current(url)
    assert read_first_window(url, limit=5, now=BASE) is None
    code = run_console(url=url, settings=Settings(), operator="o", adapters={}, demo=False)
    assert code == 1 and opened == [url]


SESSION_ROW = {
    "agent_id": "a1",
    "status": "active",
    "started_at": "2026-09-17T17:00:00Z",
    "last_seen_at": None,
    "metadata_json": None,
    "workspace_id": None,
    "version": 0,
}


def pg_insert(
    url: str,
    sessions: dict[str, dict[str, Any]],
    claims: list[Any],
    proposals: list[tuple[str, str]] = (),  # type: ignore[assignment]
) -> None:
    """Rows as another writer leaves them, written with psycopg directly."""
    import psycopg

    dsn = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn) as conn:
        conn.cursor().executemany(
            "INSERT INTO agent_sessions (id, agent_id, run_id, adapter, working_directory,"
            " status, started_at, last_seen_at, metadata_json, workspace_id, version,"
            " waiting_reason, waiting_since)"
            " VALUES (%(id)s, %(agent_id)s, 'run-1', 'codex', '/w', %(status)s, %(started_at)s,"
            " %(last_seen_at)s, %(metadata_json)s, %(workspace_id)s, %(version)s, 'r',"
            " %(waiting_since)s)",
            [{"id": key, "waiting_since": None, **values} for key, values in sessions.items()],
        )
        conn.cursor().executemany(
            "INSERT INTO claims (id, resource_id, agent_id, task_id, claim_type, status,"
            " expires_at) VALUES (%s, 'src/x.py', %s, 'task-1', 'edit', %s, %s)",
            [(f"claim-{n}", *claim) for n, claim in enumerate(claims)],
        )
        conn.cursor().executemany(
            "INSERT INTO proposals (id, task_id, agent_id, title, summary_md, patch_path, status)"
            " VALUES (%s, 'task-1', %s, 't', 's', 'p', %s)",
            [(f"proposal-{n}", *proposal) for n, proposal in enumerate(proposals)],
        )


def test_postgresql_is_read_quickly_and_the_same_as_the_store(pg_server: Any) -> None:
    """psycopg alone reads the same first page and claim counts as the store does."""
    from tests.conftest import new_pg_database

    examples = [
        (
            {
                f"s{n}": {
                    "agent_id": f"a{n % 3}",
                    "status": ("active", "paused", "Running", "custom state")[n % 4],
                    "started_at": timestamp_text(n % 4, (0, 500_000_000)[n % 2], n % 4),
                    "last_seen_at": None if n % 5 == 0 else timestamp_text(n % 3, 0, 1),
                    "metadata_json": None,
                    "workspace_id": None,
                    "version": 0,
                    "waiting_since": timestamp_text(n % 2, 0, 0) if n % 3 == 1 else None,
                }
                for n in range(13)
            },
            [("a0", "active", timestamp_text(1, 0, 2)), ("a1", "active", "soon")],
            [("a0", "pending"), ("a2", "draft"), ("a1", "accepted")],
        ),
        ({}, [], []),
    ]
    for sessions, claims, proposals in examples:
        url = new_pg_database(pg_server)
        assert is_current(url)
        pg_insert(url, sessions, claims, proposals)
        for order in ORDERS:
            for limit in (1, 5, 13, 14):
                now = BASE + timedelta(seconds=2)
                quick = read_first_window(url, limit=limit, now=now, order=order)
                assert_same_window(quick, store_reads(url, limit, now, order))


def test_a_child_process_reads_the_same_window_and_gets_the_url_out_of_sight(
    pg_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    from roundtable_console.store.reads.first_window import PREFETCH_VARIABLE, prefetch

    url = pg_store.engine.url.render_as_string(hide_password=False)
    pg_insert(url, {"s1": dict(SESSION_ROW), "s2": dict(SESSION_ROW, agent_id="a2")}, [])
    started: list[Any] = []
    real_popen = subprocess.Popen

    def watching(*args: Any, **kwargs: Any) -> Any:
        started.append((args, kwargs))
        return real_popen(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", watching)
    attention = SessionOrder("attention", descending=True).at(BASE)
    early = prefetch(url, limit=5, now=BASE, order=attention)
    assert early is not None
    assert early.result() == read_first_window(url, limit=5, now=BASE, order=attention)
    ((argv, options),) = started
    assert url not in " ".join(argv[0])  # never on the command line
    assert url in options["env"][PREFETCH_VARIABLE]
    # sqlite3 is free to import
    assert prefetch("sqlite:///x.db", limit=5, now=BASE, order=attention) is None
    gone = prefetch("postgresql://u@127.0.0.1:1/nothing", limit=5, now=BASE, order=attention)
    assert gone is not None and gone.result() is None


def test_a_postgresql_store_at_another_revision_is_not_read(pg_server: Any) -> None:
    import psycopg

    from tests.conftest import new_pg_database

    url = new_pg_database(pg_server)
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '0005_change_notifications'")
    assert not is_current(url)
    assert read_first_window(url, limit=5, now=BASE) is None


def test_the_limit_is_the_stores_limit(current_db: Path) -> None:
    from roundtable_console.store.errors import InvalidLimit

    for bad in (0, 201):
        with pytest.raises(InvalidLimit):
            read_first_window(sqlite_url(current_db), limit=bad, now=BASE)


def test_an_order_with_a_nullable_lead_is_left_to_the_store(current_db: Path) -> None:
    url = sqlite_url(current_db)
    assert read_first_window(url, limit=5, now=BASE, order=SessionOrder("last_seen")) is None


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab/ .-_%@:#+~éあ", min_size=1, max_size=12))
def test_the_header_shows_the_url_as_the_store_would(path: str) -> None:
    url = f"sqlite:///{path}"
    assert describe(url) == describe_url(url)


def test_describe_leaves_other_urls_to_the_store() -> None:
    assert describe("mysql://user:secret@host/db") is None
    assert describe("sqlite:///x.db?timeout=3") is None


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://user:secret@host/db",
        "postgresql+psycopg://ops@db.internal:5433/roundtable",
        "postgresql+psycopg://postgres@127.0.0.1:47819/rt_bench_big",
        "postgresql://u:p@h:1/d?sslmode=require",
        "postgresql://host/db",
        "postgresql:///db?host=/tmp",
        "postgresql://u@/db?host=/tmp&password=secret",
        "postgresql://u:p@[::1]:5/d%20b?b=2&a=1",
    ],
)
def test_a_postgresql_url_shows_as_the_store_would_password_hidden(url: str) -> None:
    assert describe(url) == describe_url(url)
    assert "secret" not in (describe(url) or "")


def test_session_columns_are_the_tables() -> None:
    assert tuple(AgentSession.__table__.columns.keys()) == SESSION_COLUMNS  # type: ignore[attr-defined]


def test_a_record_behaves_as_the_table_row_with_the_same_values() -> None:
    values = {
        "id": "s1",
        "agent_id": "a",
        "run_id": "r",
        "adapter": "codex",
        "provider": None,
        "model": "m",
        "external_session_id": "ext",
        "external_resume_command": None,
        "working_directory": "/w",
        "mcp_socket": None,
        "status": "running",
        "started_at": "2026-09-17 17:00:00",
        "last_seen_at": None,
        "ended_at": None,
        "metadata_json": '{"workspace_id": "ws-2", "branch": "main"}',
        "workspace_id": None,
        "version": 4,
        "waiting_reason": "approve",
        "waiting_since": "2026-09-17 17:05:00",
        "host": "laptop-7",
    }
    record, row = SessionRecord(values), AgentSession(**values)
    assert record.to_json() == row.to_json()
    assert record.to_json()["waiting"] == {"reason": "approve", "since": "2026-09-17 17:05:00"}
    assert record.column_values() == row.column_values() == values
    assert (record.effective_workspace_id, record.is_active) == ("ws-2", True)
    now = BASE + timedelta(minutes=10)
    for after in (timedelta(minutes=5), timedelta(minutes=15)):
        assert record.is_stale(now, after) == row.is_stale(now, after)
    assert record.is_stale(now, timedelta(minutes=5)) is True
    assert record == SessionRecord(dict(values)) and record != SessionRecord(
        {**values, "version": 5}
    )
    with pytest.raises(AttributeError):
        record.extra = 1  # type: ignore[attr-defined]
