"""Fixtures shared by the whole suite: a store on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import gc
import itertools
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from roundtable_console.store.db.database import Store, open_store
from tests.pg_server import PostgresServer, clear_stale_clusters
from tests.provisioning import CannotProvision, provision

# Hypothesis checks what is true, not how fast: no deadline on an example (a loaded 2-core
# machine took 380 ms over one of 0.03 ms, and failed a correct test). Speed is the benches'.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

if TYPE_CHECKING:
    from tests.api_support import Api
    from tests.console_ways import ConsoleWay
    from tests.helpers import Cli

TEMPLATE_DB = "rt_template"
_database_numbers = itertools.count()


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 9, 17, 17, 26, 35, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """One cluster per process: each pytest-xdist worker starts its own (tests/pg_server.py)."""
    server = PostgresServer()
    server.start()
    admin = create_engine(server.url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {TEMPLATE_DB}"))
    admin.dispose()
    open_store(server.url(TEMPLATE_DB)).dispose()
    try:
        yield server
    finally:
        server.stop()


# The databases the running test made, dropped when it ends (drop_test_databases).
_made_databases: list[tuple[PostgresServer, str]] = []


def new_pg_database(server: PostgresServer) -> str:
    """A fresh, already-migrated database copied from the template, file by file (half the time
    of PostgreSQL 15's default, which writes the copy to the WAL too), for the running test."""
    name = f"rt_test_{next(_database_numbers)}"
    admin = create_engine(server.url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE_DB} STRATEGY FILE_COPY"))
    admin.dispose()
    _made_databases.append((server, name))
    return server.url(name)


@pytest.fixture(autouse=True)
def drop_test_databases() -> Iterator[None]:
    """A test's PostgreSQL databases go with it: kept, a worker's cluster grew to 2.4 GB in
    memory (its directory is under TMPDIR, on tmpfs) and five of them filled the machine."""
    yield
    while _made_databases:
        server, name = _made_databases.pop()
        admin = create_engine(server.url(), isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as conn:
                conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        except OperationalError:
            pass  # the test stopped its server for good: the cluster goes with the session
        finally:
            admin.dispose()


def new_sqlite_store(template: Path, path: Path) -> str:
    """A fresh, already-migrated SQLite store at ``path``, copied from the template (a tenth of
    the time migrating it again takes), as ``new_pg_database`` does on PostgreSQL."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(template, path)
    return f"sqlite:///{path}"


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty, migrated store URL on each backend."""
    if request.param == "sqlite":
        return new_sqlite_store(
            request.getfixturevalue("sqlite_template"), tmp_path / "roundtable.db"
        )
    return new_pg_database(request.getfixturevalue("pg_server"))


def _console_way(way: str, url: str, tmp_path: Path) -> Iterator[ConsoleWay]:
    from tests.console_ways import ConsoleWay

    chosen = ConsoleWay(way, url, tmp_path / "serve-home")
    try:
        yield chosen
    finally:
        chosen.close()


@pytest.fixture(params=["store-sqlite", "server-sqlite", "server-postgresql"])
def way(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ConsoleWay]:
    """The console on a SQLite store, and through a real ``roundtable serve`` on each engine:
    ``way.console(...)`` builds it (tests/console_ways.py). A console test on the store's
    SQLite alone runs through a server on both engines too."""
    kind, engine = request.param.split("-")
    if engine == "sqlite":
        url = new_sqlite_store(request.getfixturevalue("sqlite_template"), tmp_path / "rt.db")
    else:
        url = new_pg_database(request.getfixturevalue("pg_server"))
    yield from _console_way(kind, url, tmp_path)


@pytest.fixture(params=["store", "server"])
def every_way(
    request: pytest.FixtureRequest, store_url: str, tmp_path: Path
) -> Iterator[ConsoleWay]:
    """``way`` on the store's both engines too: for a console test that ran on each before."""
    yield from _console_way(request.param, store_url, tmp_path)


@pytest.fixture
def tmux_server(tmp_path: Path) -> Iterator[tuple[list[str], Path]]:
    """A tmux server of the test's own (its socket in the test's directory), killed after it:
    the command that reaches it, and its socket."""
    import subprocess

    tmux = shutil.which("tmux")
    assert tmux is not None, "the pane replies need tmux (Debian's tmux package)"
    socket = tmp_path / "tmux.sock"
    server = [tmux, "-S", str(socket), "-f", "/dev/null"]
    yield server, socket
    subprocess.run([*server, "kill-server"], timeout=30, check=False)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = open_store(store_url)
    try:
        yield opened
    finally:
        opened.dispose()


@pytest.fixture
def api(store: Store) -> Iterator[Api]:
    """The HTTP server in-process on ``store`` (each engine), seeded with the reference's
    workspace and agent (tests/api_support.py)."""
    from tests.api_support import seeded_api

    with seeded_api(store) as made:
        yield made


@pytest.fixture
def pg_store(pg_server: PostgresServer) -> Iterator[Store]:
    """An empty, migrated store on PostgreSQL alone, for what only PostgreSQL does."""
    opened = open_store(new_pg_database(pg_server))
    try:
        yield opened
    finally:
        opened.dispose()


@pytest.fixture
def empty_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A second empty store on the same backend as ``store``."""
    backend = request.node.callspec.params["store_url"]
    if backend == "sqlite":
        url = new_sqlite_store(request.getfixturevalue("sqlite_template"), tmp_path / "other.db")
    else:
        url = new_pg_database(request.getfixturevalue("pg_server"))
    opened = open_store(url)
    try:
        yield opened
    finally:
        opened.dispose()


@pytest.fixture
def sqlite_store(sqlite_template: Path, tmp_path: Path) -> Iterator[Store]:
    opened = open_store(new_sqlite_store(sqlite_template, tmp_path / "roundtable.db"))
    try:
        yield opened
    finally:
        opened.dispose()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty, migrated SQLite store made once: a copy is much faster than migrating again."""
    path = tmp_path_factory.mktemp("template") / "roundtable.db"
    open_store(f"sqlite:///{path}").dispose()
    return path


@pytest.fixture
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No ROUNDTABLE_* variable from outside; user config and data under tmp_path."""
    for name in ("ROUNDTABLE_DB", "ROUNDTABLE_OPERATOR", "ROUNDTABLE_SERVER", "ROUNDTABLE_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))


@pytest.fixture
def rt(sqlite_template: Path, tmp_path: Path, clock: FakeClock) -> Cli:
    """The CLI in-process against a fresh SQLite store of its own."""
    from tests.helpers import Cli

    return Cli(url=new_sqlite_store(sqlite_template, tmp_path / "store" / "roundtable.db"),
               clock=clock)  # fmt: skip


@pytest.fixture
def db(sqlite_store: Store) -> Store:
    """The TUI tests' store: they write rows through it, and open the console on the same file
    (``tests.test_tui_support.sqlite_url(tmp_path)``)."""
    return sqlite_store


# Where the suite's files go when the machine has a memory file system: its SQLite stores, its
# PostgreSQL clusters and its browsers' profiles sync often, and on this machine kind a disk's
# syncs left a third of the run waiting on I/O. The syncs are still made (tests/
# test_durability.py counts them); only their cost goes. pytest keeps its last three runs there.
MEMORY_SCRATCH = Path("/dev/shm")


def keep_scratch_in_memory() -> None:
    if "TMPDIR" in os.environ or not os.access(MEMORY_SCRATCH, os.W_OK):
        return
    scratch = MEMORY_SCRATCH / f"roundtable-tests-{os.getuid()}"
    # Readable by the postgres user the suite runs its clusters as (under root): its own dirs
    # inside are private.
    scratch.mkdir(exist_ok=True)
    os.chmod(scratch, 0o755)  # whoever made it (a process of a killed run, making its own dirs)
    os.environ["TMPDIR"] = str(scratch)
    tempfile.tempdir = None  # read TMPDIR again


# Python's cyclic collector, at its default thresholds, ran every 700 allocations and walked
# every live object of Textual, SQLAlchemy and the suite: a fifth of a TUI test worker's CPU
# (9.3 of 43.7 s over 93 console tests; 47.1 → 39.1 s of machine CPU with these). Collections
# still run, rarer; what was imported and collected is frozen out of them.
YOUNG_COLLECTION_EVERY = (50_000, 50, 100)


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.collect()
    gc.freeze()


def pytest_configure(config: pytest.Config) -> None:
    """Bring what the suite drives for real (tests/provisioning.py), once, before any worker
    starts; what cannot be brought ends the run here, in one sentence."""
    gc.set_threshold(*YOUNG_COLLECTION_EVERY)
    if hasattr(config, "workerinput") or config.option.collectonly:
        return
    # Where PYTHONDONTWRITEBYTECODE is set (this machine kind sets it), every worker would rewrite
    # every test module's asserts again (7 s of CPU each), and every process the tests start (a
    # server, a hook, the CLI) would compile the package again. The workers and what they start
    # come after this, and write Python's caches as it does by default.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False
    keep_scratch_in_memory()
    clear_stale_clusters()
    try:
        provision()
    except CannotProvision as refusal:
        pytest.exit(str(refusal), returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.hookimpl(optionalhook=True)  # xdist's hook: -p no:xdist runs without it
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` (pyproject's addopts): twice the cores and one, as a TUI test spends much of its
    time waiting for the app to be idle and a server test for its server (on two cores, the
    whole suite: 500 s with three, 394 s with four, 388 s with five). PYTEST_XDIST_AUTO_NUM_WORKERS
    still decides when set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return 2 * len(os.sched_getaffinity(0)) + 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_postgres = callspec is not None and callspec.params.get("store_url") == "postgresql"
        if on_postgres or "pg_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.postgres)
