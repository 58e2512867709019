"""Signing in to the web console (issue 21 point 1): a token exchanged for a browser's secret
in an HttpOnly, SameSite=Strict cookie (only hashes kept), sign-out, and who a page is; on
SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from roundtable_console.store.access.browser_secrets import csrf_holds, csrf_proof
from roundtable_console.store.access.tokens import create_token, revoke_token, token_hash
from roundtable_console.store.access.web_sessions import identify_browser, sign_in, sign_out
from roundtable_console.store.clock import fixed_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import InvalidToken
from tests.web_support import tokens, web


def test_a_sign_in_keeps_only_hashes_and_is_whoever_its_token_is(store: Store) -> None:
    made = create_token(store=store, name="olivia", role="operator", workspaces=("ws-1",))
    signed = sign_in(store=store, token=made.token)
    assert signed.secret.startswith("rtw_") and signed.secret != made.token
    with store.read() as db:
        rows = db.execute(text("SELECT * FROM api_web_sessions")).mappings().all()
        identity = identify_browser(db, signed.secret)
    assert [row["secret_hash"] for row in rows] == [token_hash(signed.secret)]
    assert rows[0]["token_hash"] == token_hash(made.token)
    assert signed.secret not in str(rows) and made.token not in str(rows)
    assert (identity.name, identity.role, identity.workspaces) == ("olivia", "operator", ("ws-1",))


def test_revoking_the_token_signs_out_its_browsers_at_once(store: Store) -> None:
    made = create_token(store=store, name="olivia", role="operator")
    signed = sign_in(store=store, token=made.token)
    revoke_token(store=store, name="olivia")
    with store.read() as db, pytest.raises(InvalidToken):
        identify_browser(db, signed.secret)


def test_a_sign_in_ends_when_it_expires_or_its_token_does(store: Store) -> None:
    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    made = create_token(store=store, name="olivia", role="operator",
                        expires_in=timedelta(hours=2), clock=fixed_clock(now))  # fmt: skip
    signed = sign_in(store=store, token=made.token, clock=fixed_clock(now))
    # Never past the token's own expiry (2 h), though a sign-in lasts 12 h.
    assert signed.expires_at.startswith("2026-12-01T14:00:00")
    with store.read() as db:
        assert identify_browser(db, signed.secret, clock=fixed_clock(now + timedelta(hours=1)))
        with pytest.raises(InvalidToken):
            identify_browser(db, signed.secret, clock=fixed_clock(now + timedelta(hours=3)))
    lasting = create_token(store=store, name="liam", role="viewer", clock=fixed_clock(now))
    long_one = sign_in(store=store, token=lasting.token, clock=fixed_clock(now))
    with store.read() as db:
        assert identify_browser(db, long_one.secret, clock=fixed_clock(now + timedelta(hours=11)))
        with pytest.raises(InvalidToken):
            identify_browser(db, long_one.secret, clock=fixed_clock(now + timedelta(hours=13)))
    # A later sign-in drops the expired ones.
    sign_in(store=store, token=lasting.token, clock=fixed_clock(now + timedelta(days=1)))
    with store.read() as db:
        assert db.execute(text("SELECT count(*) FROM api_web_sessions")).scalar_one() == 1


def test_sign_out_ends_the_sign_in_and_a_bad_token_signs_nothing_in(store: Store) -> None:
    made = create_token(store=store, name="olivia", role="operator")
    signed = sign_in(store=store, token=made.token)
    assert sign_out(store=store, secret=signed.secret) is True
    assert sign_out(store=store, secret=signed.secret) is False
    with store.read() as db, pytest.raises(InvalidToken):
        identify_browser(db, signed.secret)
    with pytest.raises(InvalidToken):
        sign_in(store=store, token="rt_not-a-token")
    with store.read() as db:
        assert db.execute(text("SELECT count(*) FROM api_web_sessions")).scalar_one() == 0


def test_the_csrf_proof_is_the_secrets_own() -> None:
    assert csrf_holds("rtw_a", csrf_proof("rtw_a"))
    assert not csrf_holds("rtw_a", csrf_proof("rtw_b"))
    assert not csrf_holds("rtw_a", None) and not csrf_holds("rtw_a", "")


def test_the_sign_in_form_gives_an_httponly_strict_cookie_and_comes_back(store: Store) -> None:
    with web(store) as site:
        made = tokens(store)
        first = site.client.get("/sessions?status=active", follow_redirects=False)
        assert first.status_code == 303
        assert first.headers["location"] == "/sign-in?next=%2Fsessions%3Fstatus%3Dactive"
        signed = site.sign_in(made["operator"], "/sessions?status=active")
        assert signed.status_code == 303 and signed.headers["location"] == "/sessions?status=active"
        cookie = signed.headers["set-cookie"]
        assert cookie.startswith("roundtable_web=rtw_")
        for attribute in ("HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=43"):
            assert attribute in cookie
        assert "Secure" not in cookie  # plain HTTP on loopback; over TLS it is Secure
        page = site.client.get("/sessions")
        assert page.status_code == 200 and "olivia" in page.text
        assert made["operator"] not in page.text
        csrf = site.csrf()
        out = site.client.post("/sign-out", data={"csrf": csrf}, follow_redirects=False)
        assert out.status_code == 303 and "Max-Age=0" in out.headers["set-cookie"]
        assert site.client.get("/sessions", follow_redirects=False).status_code == 303


def test_a_refused_token_says_why_and_too_many_are_refused_for_a_while(store: Store) -> None:
    with web(store) as site:
        tokens(store)
        refused = site.sign_in("rt_wrong")
        assert refused.status_code == 401
        assert "not valid" in refused.text and "set-cookie" not in refused.headers
        for _ in range(10):
            site.sign_in("rt_wrong")
        limited = site.sign_in("rt_wrong")
        assert limited.status_code == 429 and "retry in" in limited.text
        assert limited.headers["retry-after"].isdigit()


@pytest.mark.parametrize(
    "target", ["//evil.example/x", "https://evil.example", "/\\evil", "javascript:alert(1)"]
)
def test_sign_in_never_sends_the_browser_elsewhere(store: Store, target: str) -> None:
    with web(store) as site:
        made = tokens(store)
        signed = site.sign_in(made["viewer"], target)
        assert signed.headers["location"] == "/sessions"


def test_sign_out_needs_the_pages_proof(store: Store) -> None:
    with web(store) as site:
        made = tokens(store)
        site.sign_in(made["operator"])
        forged = site.client.post("/sign-out", data={"csrf": "x" * 64}, follow_redirects=False)
        assert forged.status_code == 403
        assert site.client.get("/sessions").status_code == 200  # still signed in


def test_the_sign_in_page_says_what_to_do_with_no_token_or_a_read_only_server(
    store: Store,
) -> None:
    with web(store) as site:
        page = site.client.get("/sign-in")
        assert "holds no token yet" in page.text and "roundtable tokens create" in page.text
        assert 'name="token"' not in page.text
    with web(store, read_only=True) as site:
        page = site.client.get("/sign-in")
        assert "read-only" in page.text and 'name="token"' not in page.text
