"""A real ``roundtable serve`` process (issue 20 points 4, 5, 6, 7): on a free loopback port,
its streams (server-sent events and the reference's WebSocket) woken by the store, resumed
without loss, its graceful stop, TLS, its refusals to be exposed, and two servers on one
PostgreSQL store behaving as one."""

from __future__ import annotations

import asyncio
import gc
import json
import queue
import signal
import sqlite3
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
import websockets

from roundtable_console.api import server
from roundtable_console.api.server import Refused, ServeOptions, check_exposure, is_loopback
from roundtable_console.store.access.tokens import create_token, revoke_token
from roundtable_console.store.db.database import Store, open_store
from roundtable_console.store.writes import agent_writes
from tests import http_calls
from tests.api_support import AGENT, HUMAN, WORKSPACE, seed_agent, seed_workspace
from tests.conftest import new_pg_database
from tests.serve_support import ROOT, EventReader, self_signed, serve_env, serving

SESSIONS = f"/api/v1/workspaces/{WORKSPACE}/sessions"


def seeded(url: str) -> Store:
    store = open_store(url)
    seed_workspace(store)
    seed_agent(store)
    return store


def beat(store: Store, session_id: str, **values: object) -> None:
    with store.write() as db:
        agent_writes.heartbeat(db=db, session_id=session_id, **values)  # type: ignore[arg-type]


def register(store: Store, session_id: str) -> None:
    with store.write() as db:
        agent_writes.register(
            db=db, session_id=session_id, agent_id=AGENT, run_id="run-1", adapter="codex",
            working_directory="/w", metadata={"workspace_id": WORKSPACE},
        )  # fmt: skip


@pytest.fixture
def live_url(store_url: str) -> str:
    seeded(store_url).dispose()
    return store_url


def test_a_real_server_keeps_the_wire_and_stops_on_sigterm_with_exit_0(
    live_url: str, tmp_path: Path
) -> None:
    with serving(live_url, tmp_path) as served:
        assert "header mode" in served.said and "127.0.0.1" in served.said
        created = http_calls.post(
            served.url + SESSIONS,
            json={"agent_id": AGENT, "run_id": "r", "adapter": "codex"},
            headers={**HUMAN, "Idempotency-Key": "c1"},
        )
        assert created.status_code == 201, created.text
        assert created.headers["x-content-type-options"] == "nosniff"
        refused = http_calls.post(served.url + SESSIONS + "/nope/pause", headers=HUMAN)
        assert refused.status_code == 404
        assert refused.headers["content-type"] == "application/problem+json; charset=utf-8"
        assert (
            http_calls.get(served.url + "/api/v1/openapi.json").json()["openapi"].startswith("3.")
        )
        code = served.stop()
    assert code == 0


def test_sigterm_lets_a_request_in_flight_finish(tmp_path: Path) -> None:
    """A pause waits for SQLite's write lock, held by another connection; SIGTERM meanwhile: the
    server finishes the pause (200), then exits 0."""
    url = f"sqlite:///{tmp_path / 'roundtable.db'}"
    store = seeded(url)
    register(store, "s1")
    store.dispose()
    with serving(url, tmp_path / "home") as served:
        holder = sqlite3.connect(tmp_path / "roundtable.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        answer: dict[str, httpx.Response] = {}
        request = threading.Thread(
            target=lambda: answer.update(
                r=http_calls.post(served.url + SESSIONS + "/s1/pause", headers=HUMAN, timeout=20)
            )
        )
        request.start()
        time.sleep(0.5)  # the pause is waiting for the lock
        served.process.send_signal(15)
        time.sleep(0.5)
        holder.execute("COMMIT")
        holder.close()
        request.join(timeout=20)
        assert answer["r"].status_code == 200, answer["r"].text
        assert answer["r"].json()["status"] == "paused"
        assert served.process.wait(timeout=15) == 0


def test_a_change_reaches_an_sse_client_within_a_second_and_a_resume_misses_nothing(
    live_url: str, tmp_path: Path
) -> None:
    store = open_store(live_url)
    register(store, "s1")
    register(store, "s2")
    try:
        with serving(live_url, tmp_path) as served:
            stream = EventReader(served.url + SESSIONS + "/changes?heartbeats=true").start()
            ready = stream.next()
            assert ready["event"] == "ready" and stream.status == 200
            took = []
            for reason in ("first", "second", "third"):
                began = time.monotonic()
                beat(store, "s1", waiting=f"approve the {reason} step")
                change = stream.next_change()
                took.append(time.monotonic() - began)
                assert change["data"]["session_id"] == "s1"
            assert max(took) < 1.0, took
            last_seen = change["id"]
            stream.close()
            # Missed while away: a heartbeat of s2, the end of s1.
            beat(store, "s2")
            with store.write() as db:
                agent_writes.end(db=db, session_id="s1")
            again = EventReader(
                served.url + SESSIONS + "/changes?heartbeats=true",
                headers={"Last-Event-ID": last_seen},
            ).start()
            assert again.next()["event"] == "ready"
            missed = [again.next_change(), again.next_change(), again.next_change()]
            kinds = [(event["data"]["session_id"], event["data"]["change"]) for event in missed]
            assert kinds == [("s2", "heartbeat"), ("s1", "waiting_stopped"), ("s1", "ended")]
            with pytest.raises(queue.Empty):
                again.next(timeout=1.0)  # nothing twice, nothing more
            again.close()
            bad = http_calls.get(served.url + SESSIONS + "/changes", headers={"Last-Event-ID": "x"})
            assert bad.status_code == 400 and bad.json()["code"] == "invalid_event_cursor"
    finally:
        store.dispose()


def test_the_reference_websocket_says_hello_replays_resyncs_and_follows(
    live_url: str, tmp_path: Path
) -> None:
    store = open_store(live_url)
    register(store, "s1")
    try:
        with serving(live_url, tmp_path) as served:
            ws_url = served.url.replace("http", "ws") + f"/api/v1/workspaces/{WORKSPACE}/events/ws"

            async def scenario() -> None:
                async with websockets.connect(ws_url + "?actor_id=watcher") as socket:
                    hello = json.loads(await socket.recv())
                    assert hello["kind"] == "hello" and hello["resumable"] is True
                    start = hello["current_sequence"]
                    paused = http_calls.post(served.url + SESSIONS + "/s1/pause", headers=HUMAN)
                    assert paused.status_code == 200
                    event = json.loads(await asyncio.wait_for(socket.recv(), 2))
                    assert event["type"] == "session.paused"
                    assert event["entity_id"] == "s1" and event["sequence"] > start
                    assert event["actor"] == "human-1"
                async with websockets.connect(
                    ws_url + f"?actor_id=w&last_event_id={start}"
                ) as socket:
                    assert json.loads(await socket.recv())["kind"] == "hello"
                    replayed = json.loads(await asyncio.wait_for(socket.recv(), 2))
                    assert replayed["type"] == "session.paused"
                async with websockets.connect(ws_url + "?actor_id=w&last_event_id=99999") as socket:
                    assert json.loads(await socket.recv())["kind"] == "hello"
                    resync = json.loads(await asyncio.wait_for(socket.recv(), 2))
                    assert resync == {
                        "kind": "resync_required",
                        "reason": "cursor_not_retained",
                        "workspace_id": WORKSPACE,
                    }
                with pytest.raises(websockets.InvalidStatus) as refused:
                    async with websockets.connect(ws_url):
                        pass
                assert refused.value.response.status_code == 401
                with pytest.raises(websockets.InvalidStatus) as bad:
                    async with websockets.connect(ws_url + "?actor_id=w&last_event_id=-1"):
                        pass
                assert bad.value.response.status_code == 400

            asyncio.run(scenario())
    finally:
        store.dispose()


def test_tls_is_served_when_given_a_certificate(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    url = f"sqlite:///{tmp_path / 'roundtable.db'}"
    seeded(url).dispose()
    with serving(url, tmp_path / "home", "--certfile", str(cert), "--keyfile", str(key),
                 scheme="https") as served:  # fmt: skip
        assert "https://127.0.0.1" in served.said
        trusted = ssl.create_default_context(cafile=cert)
        answer = http_calls.get(served.url + SESSIONS, verify=trusted)
        assert answer.status_code == 200
        store = open_store(url)
        token = create_token(store=store, name="ops", role="operator").token
        store.dispose()
        signed_in = http_calls.post(
            served.url + "/sign-in", data={"token": token, "next": "/sessions"}, verify=trusted
        )
        assert signed_in.status_code == 303, signed_in.text
        cookie = signed_in.headers["set-cookie"]
        assert "; Secure" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie


def test_exposure_is_refused_in_words_unless_safe() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert is_loopback("127.0.0.2") and not is_loopback("0.0.0.0") and not is_loopback("10.0.0.1")
    remote = ServeOptions(host="0.0.0.0")
    with pytest.raises(Refused, match="pass --allow-remote"):
        check_exposure(remote, holds_tokens=True)
    allowed = ServeOptions(host="0.0.0.0", allow_remote=True)
    with pytest.raises(Refused, match="holds no token"):
        check_exposure(allowed, holds_tokens=False)
    with pytest.raises(Refused, match="without TLS"):
        check_exposure(allowed, holds_tokens=True)
    check_exposure(
        ServeOptions(host="0.0.0.0", allow_remote=True, proxies=("10.0.0.2/32",)),
        holds_tokens=True,
    )
    check_exposure(
        ServeOptions(host="10.0.0.1", allow_remote=True, certfile="c", keyfile="k"),
        holds_tokens=True,
    )
    with pytest.raises(Refused, match="both --certfile and --keyfile"):
        check_exposure(ServeOptions(certfile="c"), holds_tokens=False)


def test_what_start_up_made_is_left_out_of_every_later_collection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full collection walks every object it tracks with the interpreter lock held: over the
    start-up heap (the modules, the app, its routes) it stopped the server for 80-240 ms. The
    server collects once and freezes that heap before it answers its first request."""
    seen: dict[str, int] = {}

    def serving_now(_server: object) -> None:
        seen.update(frozen=gc.get_freeze_count(), walked=len(gc.get_objects()))

    monkeypatch.setattr(server._Server, "run", serving_now)
    monkeypatch.setattr(signal, "signal", lambda *_args: None)  # this process keeps its own
    store = seeded(f"sqlite:///{tmp_path / 'roundtable.db'}")
    gc.unfreeze()
    try:
        assert server.run(store, ServeOptions(port=0), say=lambda _line: None) == 0
    finally:
        gc.unfreeze()
        store.dispose()
    assert seen["frozen"] > 10 * seen["walked"], seen


def test_the_serve_command_refuses_a_remote_bind_in_words(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "roundtable_console", "serve", "--host", "0.0.0.0",
         "--db", f"sqlite:///{tmp_path / 'r.db'}", "--json"],
        capture_output=True, text=True, cwd=ROOT, env=serve_env(tmp_path), timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    error = json.loads(result.stderr.strip().splitlines()[-1])["error"]
    assert "refusing non-loopback bind" in error["message"] and "--allow-remote" in error["message"]
    assert "Traceback" not in result.stderr


@pytest.mark.postgres
def test_two_servers_on_one_postgresql_store_behave_as_one(
    pg_server: object, tmp_path: Path
) -> None:
    url = new_pg_database(pg_server)  # type: ignore[arg-type]
    store = seeded(url)
    register(store, "s1")
    try:
        with serving(url, tmp_path / "a") as one, serving(url, tmp_path / "b") as two:
            stream = EventReader(two.url + SESSIONS + "/changes").start()
            assert stream.next()["event"] == "ready"
            began = time.monotonic()
            paused = http_calls.post(one.url + SESSIONS + "/s1/pause", headers=HUMAN)
            assert paused.status_code == 200
            change = stream.next_change()
            assert time.monotonic() - began < 1.0
            assert (change["data"]["change"], change["data"]["status"]) == ("status", "paused")
            stream.close()
            # A key retried on the other server replays the first outcome.
            body = {"agent_id": AGENT, "run_id": "r", "adapter": "codex"}
            key = {**HUMAN, "Idempotency-Key": "shared-1"}
            first = http_calls.post(one.url + SESSIONS, json=body, headers=key)
            retried = http_calls.post(two.url + SESSIONS, json=body, headers=key)
            assert first.status_code == retried.status_code == 201
            assert retried.json() == first.json()
            assert retried.headers["idempotent-replayed"] == "true"
            # Two operators acting on what they both saw: exactly one wins.
            resumed = http_calls.post(
                one.url + SESSIONS + "/s1/resume", headers={**HUMAN, "Idempotency-Key": "r1"}
            )
            version = resumed.json()["version"]
            outcomes: list[httpx.Response] = []
            barrier = threading.Barrier(2)

            def pause(base: str, who: str) -> None:
                barrier.wait()
                outcomes.append(
                    http_calls.post(
                        base + SESSIONS + "/s1/pause",
                        headers={
                            "X-Actor-ID": who,
                            "X-Actor-Role": "human",
                            "If-Match": str(version),
                        },
                    )
                )

            racers = [
                threading.Thread(target=pause, args=(one.url, "ann")),
                threading.Thread(target=pause, args=(two.url, "bob")),
            ]
            for racer in racers:
                racer.start()
            for racer in racers:
                racer.join(timeout=20)
            statuses = sorted(response.status_code for response in outcomes)
            assert statuses == [200, 409], [response.text for response in outcomes]
            loser = next(response for response in outcomes if response.status_code == 409)
            assert loser.json()["code"] == "session_transition_conflict"
            # A token revoked is refused at once by both servers.
            made = create_token(store=store, name="ops", role="operator")
            bearer = {"Authorization": f"Bearer {made.token}"}
            assert http_calls.get(two.url + SESSIONS, headers=bearer).status_code == 200
            revoke_token(store=store, name="ops")
            for base in (one.url, two.url):
                refused = http_calls.get(base + SESSIONS, headers=bearer)
                assert (refused.status_code, refused.json()["code"]) == (401, "invalid_token")
    finally:
        store.dispose()


def test_raw_hostile_requests_get_an_answer_and_the_server_goes_on(tmp_path: Path) -> None:
    """What no client library sends: a bare CR in a header, a header of 100 kB, garbage, a
    negative Content-Length. None gets a traceback or a 5xx (the parser's 4xx, or the server's
    own answer); the server answers the next request as ever."""
    import socket
    from urllib.parse import urlsplit

    url = f"sqlite:///{tmp_path / 'roundtable.db'}"
    seeded(url).dispose()
    with serving(url, tmp_path / "home") as served:
        address = urlsplit(served.url)
        hostile = [
            b"GET /api/v1/security/capabilities HTTP/1.1\r\nHost: x\r\nX-Request-ID: a\rb\r\n\r\n",
            b"GET /api/v1/security/capabilities HTTP/1.1\r\nHost: x\r\nX-Big: "
            + b"y" * 100_000
            + b"\r\n\r\n",
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http at all\r\n\r\n",
            b"POST " + SESSIONS.encode() + b"/s1/pause HTTP/1.1\r\nHost: x\r\n"
            b"Content-Length: -5\r\n\r\n",
        ]
        answers = []
        for request in hostile:
            with socket.create_connection((address.hostname, address.port), timeout=10) as raw:
                raw.sendall(request)
                answers.append(raw.recv(65536))
        statuses = [int(answer.split(b" ", 2)[1]) for answer in answers]
        # The bare CR: taken as part of the value, which is no request id: a new one is made.
        assert statuses[0] in (200, 400), statuses
        assert statuses[0] == 400 or b"x-request-id: req-" in answers[0]
        assert b"\rb" not in answers[0]
        assert statuses[1] < 500  # a long header is read, and answered as any request
        assert all(400 <= status < 500 for status in statuses[2:]), statuses
        assert not any(b"Traceback" in answer for answer in answers)
        assert http_calls.get(served.url + "/api/v1/security/capabilities").status_code == 200
    (log,) = (tmp_path / "home").glob("serve-*.log")
    assert "Traceback" not in log.read_text()
