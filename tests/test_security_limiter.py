"""Issue 28 point 6, against a real ``roundtable serve`` on each engine: failed authentications
are limited without locking out anyone else. Stale tokens from one host never refuse a valid
token from it; behind a proxy the client is the nearest hop the proxy does not vouch for, so a
forged leftmost ``X-Forwarded-For`` neither dodges the limit nor locks a victim out."""

from __future__ import annotations

from pathlib import Path

from tests import http_calls
from tests.api_support import assert_problem
from tests.security_support import WS_B, bearer, make_token, seed_two_workspaces
from tests.serve_support import serve_refused, serving

SESSIONS = f"/api/v1/workspaces/{WS_B}/sessions"
STALE = bearer("rt_stale-token-of-a-retired-agent")


def _fail(url: str, times: int, **headers: str) -> list[int]:
    return [
        http_calls.get(url + SESSIONS, headers={**STALE, **headers}).status_code
        for _ in range(times)
    ]


def test_others_failures_never_refuse_a_valid_token(store_url: str, tmp_path: Path) -> None:
    seed_two_workspaces(store_url)
    agent = make_token(store_url, "bot", "agent", agent_id="agent-b")
    with serving(store_url, tmp_path) as served:
        assert _fail(served.url, 10) == [401] * 10
        limited = http_calls.get(served.url + SESSIONS, headers=STALE)
        assert_problem(limited, 429, "too_many_requests")
        assert 1 <= int(limited.headers["retry-after"]) <= 60
        # The valid token from the same address: answered, however many failed before it.
        for _ in range(3):
            assert http_calls.get(served.url + SESSIONS, headers=bearer(agent)).status_code == 200
        # And signing in to the web console with it works too.
        signed_in = http_calls.post(
            served.url + "/sign-in", data={"token": agent, "next": "/sessions"}
        )
        assert signed_in.status_code == 303
        refused = http_calls.post(served.url + "/sign-in", data={"token": "rt_guess", "next": "/"})
        assert refused.status_code == 429


def test_behind_a_proxy_the_client_is_the_nearest_untrusted_hop(
    store_url: str, tmp_path: Path
) -> None:
    """The test is the proxy (127.0.0.1, trusted): it appends the address it saw, as nginx's
    ``$proxy_add_x_forwarded_for`` does, after whatever the client sent."""
    seed_two_workspaces(store_url)
    token = make_token(store_url, "ops", "operator")
    with serving(store_url, tmp_path, "--behind-proxy", "127.0.0.1") as served:
        attacker = "203.0.113.66"
        # A new forged leftmost value each time: the limit holds all the same.
        statuses = [
            http_calls.get(
                served.url + SESSIONS,
                headers={**STALE, "X-Forwarded-For": f"10.0.0.{n}, {attacker}"},
            ).status_code
            for n in range(11)
        ]
        assert statuses == [401] * 10 + [429]
        # The attacker named its victim's address leftmost all along: the victim, coming
        # through the proxy from that address, is not locked out.
        victim = "198.51.100.7"
        _fail(served.url, 10, **{"X-Forwarded-For": f"{victim}, {attacker}"})
        mistyped = http_calls.get(
            served.url + SESSIONS, headers={**STALE, "X-Forwarded-For": victim}
        )
        assert_problem(mistyped, 401, "invalid_token")
        ok = http_calls.get(
            served.url + SESSIONS, headers={**bearer(token), "X-Forwarded-For": attacker}
        )
        assert ok.status_code == 200


def test_forwarding_headers_are_believed_only_from_the_proxy(
    store_url: str, tmp_path: Path
) -> None:
    """A server that trusts a proxy elsewhere takes its direct callers' X-Forwarded-For for
    nothing: each forged value is still this caller's address, and the limit holds."""
    seed_two_workspaces(store_url)
    make_token(store_url, "ops", "operator")
    with serving(store_url, tmp_path, "--behind-proxy", "10.9.9.9") as served:
        statuses = [
            http_calls.get(
                served.url + SESSIONS, headers={**STALE, "X-Forwarded-For": f"192.0.2.{n}"}
            ).status_code
            for n in range(11)
        ]
        assert statuses == [401] * 10 + [429]


def test_a_proxy_address_that_is_none_is_refused_at_start(tmp_path: Path) -> None:
    for bad in ("*", "10.0.0.300", "proxy.example"):
        said = serve_refused(
            tmp_path, "--behind-proxy", bad, "--db", f"sqlite:///{tmp_path / 'r.db'}"
        )
        assert "is not an address or a network" in said
