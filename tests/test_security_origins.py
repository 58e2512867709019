"""Issue 28 point 8, against a real ``roundtable serve`` on each engine: no origin is trusted
but the server's own. A page of a development server on port 3000 (the reference's defaults)
can neither write, nor open the event WebSocket with an operator's cookie, nor sign the browser
in as someone else; ``--allow-origin`` lets the one origin given in, and only it."""

from __future__ import annotations

from pathlib import Path

import pytest
import websockets

from tests import http_calls
from tests.api_support import assert_problem
from tests.security_support import (
    WS_B,
    Browser,
    bearer,
    make_token,
    seed_two_workspaces,
    websocket,
)
from tests.serve_support import serve_refused, serving

B = f"/api/v1/workspaces/{WS_B}/sessions"
DEV = ("http://127.0.0.1:3000", "http://localhost:3000")


def test_the_references_development_origins_are_not_trusted(store_url: str, tmp_path: Path) -> None:
    seed_two_workspaces(store_url)
    ops = make_token(store_url, "ops", "operator")
    other = make_token(store_url, "eve", "viewer")
    with serving(store_url, tmp_path) as served:
        capabilities = http_calls.get(served.url + "/api/v1/security/capabilities").json()
        assert capabilities["allowed_origins"] == []
        browser = Browser(served, ops)
        cookie = "; ".join(f"{k}={v}" for k, v in browser.client.cookies.items())
        try:
            for origin in DEV:
                body = {"agent_id": "agent-b", "run_id": "r", "adapter": "codex",
                        "working_directory": "/w"}  # fmt: skip
                written = http_calls.put(
                    f"{served.url}{B}/s-dev", json=body, headers={**bearer(ops), "Origin": origin}
                )
                assert_problem(written, 403, "csrf_origin_forbidden")
                # The event socket with the operator's cookie, from that page.
                with pytest.raises(websockets.InvalidStatus) as refused:
                    websocket(served, f"/api/v1/workspaces/{WS_B}/events/ws", origin=origin,
                              headers={"Cookie": cookie})  # fmt: skip
                assert refused.value.response.status_code == 403
                assert b"csrf_origin_forbidden" in refused.value.response.body
                # Login CSRF: signing this browser in as someone else, from that page.
                signed = http_calls.post(
                    served.url + "/sign-in",
                    data={"token": other, "next": "/sessions"},
                    headers={"Origin": origin},
                )
                assert_problem(signed, 403, "csrf_origin_forbidden")
            # Its own pages write, as ever.
            own = browser.post("/fragments/bulk/pause", json={"ids": ["sess-a"]},
                               headers={"Idempotency-Key": "k", "Origin": served.url})  # fmt: skip
            assert own.status_code == 200, own.text
        finally:
            browser.close()


def test_an_allowed_origin_is_let_in_and_no_other(store_url: str, tmp_path: Path) -> None:
    seed_two_workspaces(store_url)
    ops = make_token(store_url, "ops", "operator")
    allowed = "https://console.example.com"
    with serving(store_url, tmp_path, "--allow-origin", allowed + "/") as served:
        assert http_calls.get(served.url + "/api/v1/security/capabilities").json()[
            "allowed_origins"
        ] == [allowed]
        paused = http_calls.post(
            f"{served.url}/api/v1/workspaces/ws-a/sessions/sess-a/pause",
            headers={**bearer(ops), "Origin": allowed},
        )
        assert paused.status_code == 200, paused.text
        for origin in ("https://evil.example.com", "http://console.example.com", *DEV):
            refused = http_calls.post(
                f"{served.url}/api/v1/workspaces/ws-a/sessions/sess-a/stop",
                headers={**bearer(ops), "Origin": origin},
            )
            assert_problem(refused, 403, "csrf_origin_forbidden")


def test_an_origin_that_is_none_is_refused_at_start(tmp_path: Path) -> None:
    for bad in ("*", "https://x.example/path", "javascript:alert(1)", "example.com"):
        said = serve_refused(
            tmp_path, "--allow-origin", bad, "--db", f"sqlite:///{tmp_path / 'r.db'}"
        )
        assert "is not an origin" in said, bad
