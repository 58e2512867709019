"""Issue 28 point 9, against a real ``roundtable serve``: nothing told before it is asked. An
unavailable store is a 503 that names neither the store nor the driver's words (the log has
them); with tokens, the OpenAPI document is for token holders and the capabilities say only
what the reference's say; over TLS (the server's or a trusted proxy's) browsers are told to keep
to it; revealing a masked field is an audited read; a token rides in a URL only to a WebSocket,
and is never logged."""

from __future__ import annotations

import json
import queue
import sqlite3
import ssl
from pathlib import Path

import pytest
import websockets

from roundtable_console.store.reads.audit import audit_page
from roundtable_console.store.writes import agent_writes
from tests import http_calls
from tests.api_support import assert_problem
from tests.pg_server import PostgresServer
from tests.security_support import (
    AGENT_B,
    WS_B,
    Browser,
    bearer,
    make_token,
    seed_two_workspaces,
    websocket,
    with_store,
)
from tests.serve_support import EventReader, self_signed, serving

B = f"/api/v1/workspaces/{WS_B}/sessions"
REFERENCE_CAPABILITIES = {"authentication", "agent_boundary", "csrf", "default_bind", "roles",
                          "allowed_origins"}  # fmt: skip


def _register(url: str, session_id: str = "sess-b", **values: object) -> None:
    def register(store):  # type: ignore[no-untyped-def]
        with store.write() as db:
            agent_writes.register(
                db=db, session_id=session_id, agent_id=AGENT_B, run_id="r", adapter="codex",
                working_directory="/w", metadata={"workspace_id": WS_B}, **values,
            )  # fmt: skip

    with_store(url, register)


def _says_nothing_of_the_store(detail: str, *secrets: str) -> None:
    for secret in (*secrets, "sqlite", "postgres", "psycopg", "locked", "refused", "127.0.0.1"):
        assert secret.lower() not in detail.lower(), (secret, detail)


def test_a_locked_sqlite_store_is_a_503_that_names_nothing(tmp_path: Path) -> None:
    where = tmp_path / "the-secret-place"
    where.mkdir()
    url = f"sqlite:///{where / 'roundtable.db'}"
    seed_two_workspaces(url)
    _register(url)
    with serving(url, tmp_path / "home") as served:
        holder = sqlite3.connect(where / "roundtable.db", isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            refused = http_calls.post(f"{served.url}{B}/sess-b/heartbeat", timeout=30)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        body = assert_problem(refused, 503, "store_unavailable")
        _says_nothing_of_the_store(body["detail"], "the-secret-place", "roundtable.db")
        assert "log" in body["detail"]
    log = served.log.read_text() if served.log else ""
    assert "the-secret-place" in log and "locked" in log  # the operator learns why


@pytest.mark.postgres
def test_an_unreachable_postgresql_store_is_a_503_that_names_nothing(tmp_path: Path) -> None:
    cluster = PostgresServer()
    cluster.start()
    try:
        url = cluster.url()
        seed_two_workspaces(url)
        token = make_token(url, "ops", "operator")
        with serving(url, tmp_path) as served:
            assert http_calls.get(served.url + B, headers=bearer(token)).status_code == 200
            cluster.stop_server()
            refused = http_calls.get(served.url + B, headers=bearer(token), timeout=30)
            body = assert_problem(refused, 503, "store_unavailable")
            _says_nothing_of_the_store(body["detail"], str(cluster.port))
            # A stranger learns not even that: refused before the store is asked.
            stranger = http_calls.get(served.url + B, timeout=30)
            assert_problem(stranger, 401, "authentication_required")
        log = served.log.read_text() if served.log else ""
        assert str(cluster.port) in log  # the operator learns where
    finally:
        cluster.stop()


def test_with_tokens_the_document_is_for_token_holders(store_url: str, tmp_path: Path) -> None:
    seed_two_workspaces(store_url)
    with serving(store_url, tmp_path) as served:
        assert (
            http_calls.get(served.url + "/api/v1/openapi.json").json()["openapi"].startswith("3.")
        )
        viewer = make_token(store_url, "vic", "viewer")
        assert_problem(
            http_calls.get(served.url + "/api/v1/openapi.json"), 401, "authentication_required"
        )
        assert_problem(
            http_calls.get(served.url + "/api/v1/openapi.json", headers=bearer("rt_guess")),
            401, "invalid_token",
        )  # fmt: skip
        document = http_calls.get(served.url + "/api/v1/openapi.json", headers=bearer(viewer))
        assert (
            document.status_code == 200
            and "/api/v1/workspaces/{workspace_id}/sessions" in (document.json()["paths"])
        )
        capabilities = http_calls.get(served.url + "/api/v1/security/capabilities").json()
        assert set(capabilities) == REFERENCE_CAPABILITIES
        assert capabilities["authentication"] == "bearer-token"
        assert "vic" not in json.dumps(capabilities)


def test_over_tls_browsers_are_told_to_keep_to_it(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    url = f"sqlite:///{tmp_path / 'roundtable.db'}"
    seed_two_workspaces(url)
    trusted = ssl.create_default_context(cafile=cert)
    with serving(url, tmp_path / "tls", "--certfile", str(cert), "--keyfile", str(key),
                 scheme="https") as served:  # fmt: skip
        for path in (B, "/sign-in", "/nowhere"):
            answer = http_calls.get(served.url + path, verify=trusted)
            assert answer.headers["strict-transport-security"] == "max-age=31536000", path
    make_token(url, "ops", "operator")
    with serving(url, tmp_path / "plain") as served:
        assert "strict-transport-security" not in http_calls.get(served.url + "/sign-in").headers
    with serving(url, tmp_path / "proxied", "--behind-proxy", "127.0.0.1") as served:
        proxied = http_calls.get(served.url + "/sign-in", headers={"X-Forwarded-Proto": "https"})
        assert proxied.headers["strict-transport-security"] == "max-age=31536000"
    with serving(url, tmp_path / "elsewhere", "--behind-proxy", "10.9.9.9") as served:
        forged = http_calls.get(served.url + "/sign-in", headers={"X-Forwarded-Proto": "https"})
        assert "strict-transport-security" not in forged.headers


def test_revealing_a_masked_field_is_an_audited_read(store_url: str, tmp_path: Path) -> None:
    seed_two_workspaces(store_url)
    _register(store_url, resume_command="codex resume the-hidden-id", status="active")
    ops = make_token(store_url, "olivia", "operator")
    with serving(store_url, tmp_path) as served:
        browser = Browser(served, ops)
        stream = EventReader(served.url + B + "/changes?heartbeats=true", headers=bearer(ops))
        stream.start()
        try:
            assert stream.next()["event"] == "ready"
            page = browser.get("/sessions/sess-b").text
            assert "the-hidden-id" not in page  # masked until asked
            shown = browser.get("/fragments/sessions/sess-b/reveal/external_resume_command")
            assert shown.json() == {"value": "codex resume the-hidden-id"}
            audit = browser.get("/audit").text
            assert "reveal" in audit and "external_resume_command" in audit and "olivia" in audit
            # A read, not a change of the session: the change stream tells nothing of it.
            with pytest.raises(queue.Empty):
                stream.next(timeout=1.5)
        finally:
            stream.close()
            browser.close()

    def entries(store):  # type: ignore[no-untyped-def]
        with store.read() as db:
            return audit_page(db=db).items

    (entry,) = with_store(store_url, entries)
    assert (entry.action, entry.actor, entry.session_id, entry.field) == (
        "reveal", "olivia", "sess-b", "external_resume_command",
    )  # fmt: skip


def test_a_token_rides_in_a_url_only_to_a_websocket_and_is_never_logged(
    store_url: str, tmp_path: Path
) -> None:
    seed_two_workspaces(store_url)
    viewer = make_token(store_url, "vic", "viewer")
    with serving(store_url, tmp_path) as served:
        for path in (B, B + "/changes", "/api/v1/openapi.json"):
            assert_problem(
                http_calls.get(f"{served.url}{path}?access_token={viewer}"),
                401, "authentication_required",
            )  # fmt: skip
        with websocket(served, f"/api/v1/workspaces/{WS_B}/events/ws?access_token={viewer}") as ws:
            assert json.loads(ws.recv(timeout=5))["kind"] == "hello"
        # Refusals too, which might echo what they carried: a socket to a workspace the token
        # does not name, a page that is not, a forged name.
        with pytest.raises(websockets.InvalidStatus):
            websocket(served, f"/api/v1/workspaces/ws-nowhere/events/ws?access_token={viewer}")
        http_calls.get(f"{served.url}/nowhere?access_token={viewer}")
        http_calls.get(f"{served.url}{B}", headers={"Host": f"evil.example?access_token={viewer}"})
    log = served.log.read_text() if served.log else ""
    assert viewer not in log and viewer[3:20] not in log
