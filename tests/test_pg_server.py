"""The suite's own PostgreSQL server starts even when its port is taken between being picked and
being bound, as when pytest-xdist's workers each start one at the same moment."""

from __future__ import annotations

import shutil
import socket

import pytest
from sqlalchemy import create_engine, text

from tests.pg_server import PortTaken, PostgresServer

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
