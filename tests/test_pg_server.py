"""The suite's own PostgreSQL server starts even when its port is taken between being picked and
being bound, as when pytest-xdist's workers each start one at the same moment; a test's databases
go with it; a cluster a killed run left is cleared by the next."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.conftest import new_pg_database
from tests.pg_server import STALE_CLUSTER_SECONDS, PortTaken, PostgresServer, clear_stale_clusters

pytestmark = pytest.mark.postgres


def test_a_server_whose_port_is_taken_starts_on_another() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = int(squatter.getsockname()[1])
        server = PostgresServer()
        server.port = taken
        try:
            server.start()
            assert server.port != taken
            engine = create_engine(server.url())
            with engine.connect() as conn:
                assert conn.execute(text("SHOW port")).scalar_one() == str(server.port)
            engine.dispose()
        finally:
            server.stop()


def test_a_server_that_fails_for_another_reason_is_not_retried() -> None:
    server = PostgresServer()  # no initdb: there is no cluster to start
    try:
        with pytest.raises(RuntimeError, match="PostgreSQL did not start") as refused:
            server.start_server()
        assert not isinstance(refused.value, PortTaken)
    finally:
        shutil.rmtree(server.base, ignore_errors=True)


def test_only_the_clusters_nobody_runs_are_cleared(tmp_path: Path) -> None:
    def cluster(name: str, pid: int | None, age: float = 0) -> Path:
        base = tmp_path / f"rt-pg-{name}"
        (base / "data").mkdir(parents=True)
        then = time.time() - age
        if pid is not None:
            (base / "data" / "postmaster.pid").write_text(f"{pid}\n/data\n")
            os.utime(base / "data" / "postmaster.pid", (then, then))
        os.utime(base, (then, then))
        return base

    dead = subprocess.Popen(["true"])  # a pid that has exited
    dead.wait()
    killed = cluster("killed", dead.pid, age=STALE_CLUSTER_SECONDS + 60)
    # initdb's single-user steps leave a pid file of a process that has exited between them.
    between_steps = cluster("between-steps", dead.pid)
    running = cluster("running", os.getpid())
    starting = cluster("starting", None)
    left = cluster("left", None, age=STALE_CLUSTER_SECONDS + 60)
    other = tmp_path / "pytest-of-someone"
    other.mkdir()
    assert sorted(clear_stale_clusters(tmp_path)) == sorted([killed, left])
    assert running.exists() and starting.exists() and other.exists() and between_steps.exists()
    assert not killed.exists() and not left.exists()


def test_a_tests_databases_are_dropped_when_it_ends(pg_server: PostgresServer) -> None:
    engine = create_engine(pg_server.url())
    with engine.connect() as conn:
        before = conn.execute(text("SELECT count(*) FROM pg_database")).scalar_one()
    engine.dispose()
    new_pg_database(pg_server)
    new_pg_database(pg_server)
    engine = create_engine(pg_server.url())
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM pg_database")).scalar_one() == before + 2
    engine.dispose()


def test_a_test_begins_with_no_database_of_an_earlier_one(pg_server: PostgresServer) -> None:
    """Whichever worker runs it, after whichever tests: theirs were dropped as they ended."""
    engine = create_engine(pg_server.url())
    with engine.connect() as conn:
        names = conn.execute(text("SELECT datname FROM pg_database")).scalars().all()
    engine.dispose()
    assert not [name for name in names if name.startswith("rt_test_")]
