"""Issue 28 point 1, DNS rebinding: a page of another site whose name resolves to the server's
address reaches it under that name (``Host: evil.example:PORT``) with a matching ``Origin``. A
real ``roundtable serve`` in header mode refuses it before routing, for the API, the web console
and both streams, and answers to its own names and each ``--public-name``."""

from __future__ import annotations

from pathlib import Path

import pytest
import websockets

from tests import http_calls
from tests.api_support import AGENT, WORKSPACE, assert_problem, seed_agent, seed_workspace
from tests.security_support import address, raw_exchange, status_of, websocket, with_store
from tests.serve_support import serve_refused, serving

SESSIONS = f"/api/v1/workspaces/{WORKSPACE}/sessions"
ADMIN = {"X-Actor-ID": "mallory", "X-Actor-Role": "admin"}


def _one_session(url: str) -> None:
    from roundtable_console.store.writes import agent_writes

    def seed(store):  # type: ignore[no-untyped-def]
        seed_workspace(store)
        seed_agent(store)
        with store.write() as db:
            agent_writes.register(
                db=db, session_id="s1", agent_id=AGENT, run_id="r", adapter="codex",
                working_directory="/w", metadata={"workspace_id": WORKSPACE},
            )  # fmt: skip

    with_store(url, seed)


def _status(url: str) -> str:
    from roundtable_console.store.reads.sessions import get_session

    def read(store):  # type: ignore[no-untyped-def]
        with store.read() as db:
            return get_session(db=db, session_id="s1").status

    return str(with_store(url, read))


def test_a_rebound_name_is_refused_before_anything_else(store_url: str, tmp_path: Path) -> None:
    _one_session(store_url)
    with serving(store_url, tmp_path) as served:
        _host, port = address(served)
        evil = {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"}
        paused = http_calls.post(served.url + SESSIONS + "/s1/pause", headers={**ADMIN, **evil})
        body = assert_problem(paused, 400, "host_not_allowed")
        assert "Host" in body["detail"] and "evil.example" not in body["detail"]
        assert _status(store_url) == "active"  # nothing was done
        # Every surface: the API's reads, the web console, the event stream, the document.
        for path in (SESSIONS, "/sessions", "/sign-in", SESSIONS + "/changes",
                     "/api/v1/openapi.json", "/static/app.js"):  # fmt: skip
            assert_problem(http_calls.get(served.url + path, headers=evil), 400, "host_not_allowed")
        # A name only differing in case or port is the same name; a suffix is another.
        for name in (f"EVIL.example:{port}", "evil.example", f"127.0.0.1.evil.example:{port}",
                     f"localhost.evil.example:{port}", f"[::1]evil:{port}"):  # fmt: skip
            refused = http_calls.get(served.url + SESSIONS, headers={"Host": name})
            assert_problem(refused, 400, "host_not_allowed")
        # Its own names: the address it listens on, the loopback names.
        for name in (f"127.0.0.1:{port}", f"localhost:{port}", "LOCALHOST", "127.0.0.1"):
            assert http_calls.get(served.url + SESSIONS, headers={"Host": name}).status_code == 200
        # No Host at all (HTTP/1.0 allows it) names nothing: refused too.
        answer = raw_exchange(served, f"GET {SESSIONS} HTTP/1.0\r\n\r\n".encode())
        assert status_of(answer) == 400 and b"host_not_allowed" in answer
        assert (
            http_calls.post(served.url + SESSIONS + "/s1/pause", headers=ADMIN).status_code == 200
        )


def test_a_rebound_websocket_is_refused_with_the_problem(store_url: str, tmp_path: Path) -> None:
    _one_session(store_url)
    with serving(store_url, tmp_path) as served:
        _host, port = address(served)
        path = f"/api/v1/workspaces/{WORKSPACE}/events/ws?actor_id=mallory"
        with pytest.raises(websockets.InvalidStatus) as refused:
            websocket(
                served, path, host=f"evil.example:{port}", origin=f"http://evil.example:{port}"
            )
        response = refused.value.response
        assert response.status_code == 400
        assert b'"code": "host_not_allowed"' in response.body
        with websocket(served, path) as own:  # its own name: the socket says hello
            assert '"hello"' in str(own.recv(timeout=5))


def test_a_public_name_is_answered_to(store_url: str, tmp_path: Path) -> None:
    _one_session(store_url)
    with serving(store_url, tmp_path, "--public-name", "Console.Example.COM") as served:
        assert "console.example.com" in served.said
        ok = http_calls.get(served.url + SESSIONS, headers={"Host": "console.example.com"})
        assert ok.status_code == 200
        assert (
            http_calls.get(served.url + SESSIONS, headers={"Host": "other.example.com"}).status_code
            == 400
        )


def test_a_public_name_that_is_no_name_is_refused_at_start(tmp_path: Path) -> None:
    said = serve_refused(
        tmp_path, "--public-name", "evil example/x", "--db", f"sqlite:///{tmp_path / 'r.db'}"
    )
    assert "is not a host name" in said
