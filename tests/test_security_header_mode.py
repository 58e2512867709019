"""Issue 28 point 2: header mode (a caller is whoever ``X-Actor-ID`` says) only for a lone
loopback server whose store holds no token. ``--behind-proxy`` or ``--allow-remote`` without a
token is refused at start; a request that came through a proxy never gets header mode; and a
server started with tokens never falls back to it, even once every token is deleted behind it."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import delete

from roundtable_console.store.db.models import ApiToken
from tests import http_calls
from tests.api_support import WORKSPACE, assert_problem, seed_agent, seed_workspace
from tests.security_support import bearer, make_token, with_store
from tests.serve_support import serve_refused, serving

SESSIONS = f"/api/v1/workspaces/{WORKSPACE}/sessions"
ADMIN = {"X-Actor-ID": "mallory", "X-Actor-Role": "admin"}


def _seed(url: str) -> None:
    def seed(store):  # type: ignore[no-untyped-def]
        seed_workspace(store)
        seed_agent(store)

    with_store(url, seed)


@pytest.mark.parametrize(
    "flags",
    [("--behind-proxy",), ("--behind-proxy", "127.0.0.1"), ("--allow-remote",)],
    ids=["behind-proxy", "behind-proxy-address", "allow-remote"],
)
def test_no_token_behind_a_proxy_or_open_to_others_is_refused_at_start(
    store_url: str, tmp_path: Path, flags: tuple[str, ...]
) -> None:
    _seed(store_url)
    said = serve_refused(tmp_path, "--db", store_url, *flags)
    assert "holds no token" in said and "roundtable tokens create" in said


@pytest.mark.parametrize(
    "forwarded",
    [{"X-Forwarded-For": "203.0.113.9"}, {"Forwarded": "for=203.0.113.9"},
     {"Via": "1.1 proxy"}, {"X-Forwarded-Host": "evil.example"}, {"X-Real-IP": "203.0.113.9"}],
    ids=["x-forwarded-for", "forwarded", "via", "x-forwarded-host", "x-real-ip"],
)  # fmt: skip
def test_a_request_through_a_proxy_never_gets_header_mode(
    store_url: str, tmp_path: Path, forwarded: dict[str, str]
) -> None:
    _seed(store_url)
    with serving(store_url, tmp_path) as served:
        assert "header mode" in served.said
        refused = http_calls.post(served.url + SESSIONS, headers={**ADMIN, **forwarded})
        body = assert_problem(refused, 401, "authentication_required")
        assert "proxy" in body["detail"] and "tokens create" in body["detail"]
        assert_problem(
            http_calls.get(served.url + SESSIONS, headers=forwarded), 401, "authentication_required"
        )
        assert http_calls.get(served.url + SESSIONS).status_code == 200  # a lone local caller


def test_a_server_with_tokens_never_falls_back_when_they_are_all_deleted(
    store_url: str, tmp_path: Path
) -> None:
    _seed(store_url)
    token = make_token(store_url, "ops", "operator")
    with serving(store_url, tmp_path) as served:
        assert "callers need one of the store's tokens" in served.said
        assert http_calls.get(served.url + SESSIONS, headers=bearer(token)).status_code == 200

        def delete_every_token(store):  # type: ignore[no-untyped-def]
            with store.write() as db:
                db.execute(delete(ApiToken.__table__))  # type: ignore[attr-defined]

        with_store(store_url, delete_every_token)
        for headers in (ADMIN, {}):
            refused = http_calls.get(served.url + SESSIONS, headers=headers)
            assert_problem(refused, 401, "authentication_required")
        capabilities = http_calls.get(served.url + "/api/v1/security/capabilities").json()
        assert capabilities["authentication"] == "bearer-token"


def test_header_mode_ends_for_good_once_a_token_appears(store_url: str, tmp_path: Path) -> None:
    _seed(store_url)
    with serving(store_url, tmp_path) as served:
        assert http_calls.get(served.url + SESSIONS, headers=ADMIN).status_code == 200
        token = make_token(store_url, "ops", "operator")
        assert_problem(
            http_calls.get(served.url + SESSIONS, headers=ADMIN), 401, "authentication_required"
        )

        def revoke(store):  # type: ignore[no-untyped-def]
            from roundtable_console.store.access.tokens import revoke_token

            revoke_token(store=store, name="ops")

        with_store(store_url, revoke)
        assert_problem(
            http_calls.get(served.url + SESSIONS, headers=bearer(token)), 401, "invalid_token"
        )
        assert_problem(
            http_calls.get(served.url + SESSIONS, headers=ADMIN), 401, "authentication_required"
        )
