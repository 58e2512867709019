"""Issue 44 point 2: an installed app's sign-in is kept while the device is.

The app signs in with its device's name and the public half of a P-256 key pair its browser
keeps (``store.access.devices``). Its sign-in then lasts 30 days after the last proof of use (a
signature over the server's challenge by that key), never past its token; a cookie copied to
another device cannot make it last longer. Device sign-ins are listed and revoked on the
notifications page, through the API and with ``roundtable tokens`` (a device whose sign-in ends
is told so once: tests/test_push_signed_out.py). The keys here are made by ``cryptography`` as
a browser's WebCrypto makes them (tests/test_web_pwa.py signs in with Chromium's own)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from fastapi.testclient import TestClient
from sqlalchemy import text

from roundtable_console.store.access.browser_secrets import csrf_proof
from roundtable_console.store.access.devices import (
    CHALLENGE_PREFIX,
    PREVIOUS_SECONDS,
    device_challenge,
    device_key_of,
    list_devices,
    prove_device,
    revoke_device,
)
from roundtable_console.store.access.tokens import create_token, revoke_token
from roundtable_console.store.access.web_sessions import (
    csrf_holds_now,
    identify_browser,
    sign_in,
    sign_out,
)
from roundtable_console.store.clock import fixed_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import DeviceNotFound, InvalidDevice, InvalidToken
from roundtable_console.store.push.keys import b64url, b64url_bytes
from tests.helpers import Cli, last_stderr_line
from tests.web_support import ORIGIN, Web, tokens, web

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
SPKI = serialization.PublicFormat.SubjectPublicKeyInfo


class AppKey:
    """What the installed app keeps: a P-256 pair; it gives the public half and signs."""

    def __init__(self) -> None:
        self.private = ec.generate_private_key(ec.SECP256R1())

    @property
    def public(self) -> str:
        der = self.private.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return b64url(der)

    def sign(self, challenge: str) -> str:
        """As WebCrypto signs: r then s, 32 bytes each (not DER)."""
        der = self.private.sign((CHALLENGE_PREFIX + challenge).encode(), ec.ECDSA(hashes.SHA256()))
        r, s = decode_dss_signature(der)
        return b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def at(moment: datetime) -> Any:
    return fixed_clock(moment)


def device_row(store: Store) -> dict[str, Any]:
    with store.read() as db:
        (row,) = db.execute(
            text("SELECT * FROM api_web_sessions WHERE device_id IS NOT NULL")
        ).mappings()
    return dict(row)


# -- the store's rules --------------------------------------------------------------------------


def test_a_device_sign_in_lasts_thirty_days_from_each_proof_and_a_tab_twelve_hours(
    store: Store,
) -> None:
    made = create_token(store=store, name="olivia", role="operator", clock=at(NOW))
    key = AppKey()
    device = device_key_of("Olivia's phone", key.public)
    phone = sign_in(store=store, token=made.token, device=device, clock=at(NOW))
    tab = sign_in(store=store, token=made.token, clock=at(NOW))
    assert phone.expires_at.startswith("2026-12-31T12:00:00")
    assert tab.expires_at.startswith("2026-12-02T00:00:00")
    row = device_row(store)
    assert row["device_key"] == key.public and row["device_name"] == "Olivia's phone"
    assert row["device_id"].startswith("dev_") and row["device_nonce"]
    # Proven used on day 20: it lasts to day 50; unproven, it would have ended on day 30.
    day20 = NOW + timedelta(days=20)
    asked = device_challenge(store=store, secret=phone.secret, clock=at(day20))
    assert asked is not None and (asked.nonce, asked.key) == (row["device_nonce"], key.public)
    challenge = asked.nonce
    proven = prove_device(store=store, secret=phone.secret, signature=key.sign(challenge),
                          clock=at(day20))  # fmt: skip
    assert proven.expires_at.startswith("2027-01-20T12:00:00")
    with store.read() as db:
        day45, day51 = at(NOW + timedelta(days=45)), at(NOW + timedelta(days=51))
        assert identify_browser(db, proven.secret, clock=day45).name == "olivia"
        with pytest.raises(InvalidToken):
            identify_browser(db, proven.secret, clock=day51)
        with pytest.raises(InvalidToken):  # the secret the proof came with is worth nothing now
            identify_browser(db, phone.secret, clock=at(day20 + timedelta(minutes=3)))
        with pytest.raises(InvalidToken):  # the tab's ended after 12 hours
            identify_browser(db, tab.secret, clock=at(NOW + timedelta(hours=13)))
    assert device_row(store)["last_used_at"].startswith("2026-12-21T12:00:00")
    # Unused for 30 days, it is over: nothing to prove any more.
    with pytest.raises(InvalidDevice):
        device_challenge_or_refused(store, proven.secret, key, NOW + timedelta(days=51))


def test_the_secret_a_proof_renewed_is_taken_a_short_while_then_never(store: Store) -> None:
    made = create_token(store=store, name="olivia", role="operator", clock=at(NOW))
    key = AppKey()
    phone = sign_in(store=store, token=made.token, device=device_key_of("phone", key.public),
                    clock=at(NOW))  # fmt: skip
    asked = device_challenge(store=store, secret=phone.secret, clock=at(NOW))
    assert asked is not None
    proven = prove_device(store=store, secret=phone.secret, signature=key.sign(asked.nonce),
                          clock=at(NOW))  # fmt: skip
    old_proof = csrf_proof(phone.secret)
    within = at(NOW + timedelta(seconds=PREVIOUS_SECONDS - 1))
    past = at(NOW + timedelta(seconds=PREVIOUS_SECONDS + 1))
    with store.read() as db:
        assert identify_browser(db, phone.secret, clock=within).name == "olivia"
        # A page not yet told of the new secret writes with the old proof and the new cookie.
        assert csrf_holds_now(db, proven.secret, old_proof, clock=within)
        assert not csrf_holds_now(db, proven.secret, old_proof, clock=past)
        assert not csrf_holds_now(db, proven.secret, "0" * 64, clock=within)
        assert csrf_holds_now(db, proven.secret, csrf_proof(proven.secret), clock=past)
        with pytest.raises(InvalidToken):
            identify_browser(db, phone.secret, clock=past)
        assert identify_browser(db, proven.secret, clock=past).name == "olivia"
    # Signing out with the old cookie, meanwhile, ends the sign-in itself.
    assert sign_out(store=store, secret=phone.secret, clock=within)
    with store.read() as db, pytest.raises(InvalidToken):
        identify_browser(db, proven.secret, clock=within)


def device_challenge_or_refused(store: Store, secret: str, key: AppKey, moment: datetime) -> None:
    asked = device_challenge(store=store, secret=secret, clock=at(moment))
    challenge = asked.nonce if asked is not None else "none"
    prove_device(store=store, secret=secret, signature=key.sign(challenge), clock=at(moment))


def test_a_cookie_taken_elsewhere_cannot_make_the_sign_in_last(store: Store) -> None:
    made = create_token(store=store, name="olivia", role="operator", clock=at(NOW))
    key = AppKey()
    phone = sign_in(store=store, token=made.token, device=device_key_of("phone", key.public),
                    clock=at(NOW))  # fmt: skip
    later = NOW + timedelta(days=10)
    asked = device_challenge(store=store, secret=phone.secret, clock=at(later))
    assert asked is not None
    challenge = asked.nonce
    before = device_row(store)
    thief = AppKey()  # the cookie, without the device's key
    wrong = (thief.sign(challenge), "", "not base64!", b64url(b"x" * 64), b64url(b"x" * 10),
             None, 12, key.sign(challenge)[:-4])  # fmt: skip
    for signature in wrong:
        with pytest.raises(InvalidDevice):
            prove_device(store=store, secret=phone.secret, signature=signature, clock=at(later))
    assert device_row(store) == before  # nothing moved
    proof = key.sign(challenge)
    proven = prove_device(store=store, secret=phone.secret, signature=proof, clock=at(later))
    moved = device_row(store)
    # The device's proof renewed its secret: the copy taken elsewhere is signed out with it
    # (once what was under way as the proof was made has gone through).
    with store.read() as db, pytest.raises(InvalidToken):
        identify_browser(db, phone.secret, clock=at(later + timedelta(minutes=3)))
    # A proof seen once (on the wire, in a log) does not serve again: the challenge changed.
    with pytest.raises(InvalidDevice, match="not its challenge"):
        prove_device(store=store, secret=proven.secret, signature=proof, clock=at(later))
    assert device_row(store) == moved and moved["device_nonce"] != challenge
    # A tab's sign-in has nothing to prove.
    tab = sign_in(store=store, token=made.token, clock=at(NOW))
    assert device_challenge(store=store, secret=tab.secret, clock=at(NOW)) is None
    with pytest.raises(InvalidDevice, match="not a device's"):
        prove_device(store=store, secret=tab.secret, signature=proof, clock=at(NOW))


def test_a_device_sign_in_never_outlasts_its_token(store: Store) -> None:
    brief = create_token(store=store, name="liam", role="viewer", expires_in=timedelta(days=3),
                         clock=at(NOW))  # fmt: skip
    key = AppKey()
    phone = sign_in(store=store, token=brief.token, device=device_key_of("phone", key.public),
                    clock=at(NOW))  # fmt: skip
    assert phone.expires_at.startswith("2026-12-04T12:00:00")
    asked = device_challenge(store=store, secret=phone.secret, clock=at(NOW))
    challenge = asked.nonce if asked is not None else ""
    proven = prove_device(store=store, secret=phone.secret, signature=key.sign(challenge),
                          clock=at(NOW + timedelta(days=1)))  # fmt: skip
    assert proven.expires_at.startswith("2026-12-04T12:00:00")
    # An agent's token signs in as a tab does, whatever its page gives.
    agent = create_token(store=store, name="bot", role="agent", agent_id="a1", clock=at(NOW))
    robot = sign_in(store=store, token=agent.token, device=device_key_of("bot", key.public),
                    clock=at(NOW))  # fmt: skip
    assert robot.expires_at.startswith("2026-12-02T00:00:00")
    assert device_challenge(store=store, secret=robot.secret, clock=at(NOW)) is None
    lasting = create_token(store=store, name="olivia", role="operator", clock=at(NOW))
    other = AppKey()
    kept = sign_in(store=store, token=lasting.token, device=device_key_of("tablet", other.public),
                   clock=at(NOW))  # fmt: skip
    revoke_token(store=store, name="olivia", clock=at(NOW))
    with store.read() as db, pytest.raises(InvalidToken):
        identify_browser(db, kept.secret, clock=at(NOW))
    assert device_challenge(store=store, secret=kept.secret, clock=at(NOW)) is None
    assert [item.name for item in list_devices(store=store, clock=at(NOW))] == ["phone"]


@pytest.mark.parametrize(
    ("name", "public_key", "words"),
    [
        ("", None, "Name the device"),
        ("x" * 61, None, "Name the device"),
        ("phone\x1b[2J", None, "Name the device"),
        ("phone\u202egnp.exe", None, "Name the device"),
        (12, None, "Name the device"),
        ("phone", "", "missing"),
        ("phone", "A" * 300, "missing"),
        ("phone", "not base64url!", "not a public key"),
        ("phone", b64url(b"\x30\x03\x02\x01\x00"), "not a public key"),
        # A key of another curve, of a curve nobody knows, or not an elliptic curve's.
        ("phone", "p384", "not a P-256"),
        ("phone", "unknown curve", "not a public key"),
        ("phone", "ed25519", "not a P-256"),
    ],
)
def test_what_an_app_gives_is_checked(name: Any, public_key: str | None, words: str) -> None:
    if public_key is None:
        public_key = AppKey().public
    elif public_key == "p384":
        der = (
            ec.generate_private_key(ec.SECP384R1())
            .public_key()
            .public_bytes(
                serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        public_key = b64url(der)
    elif public_key == "unknown curve":  # P-256's object id, its last number changed
        der = b64url_bytes(AppKey().public)
        public_key = b64url(der.replace(bytes.fromhex("2a8648ce3d030107"),
                                        bytes.fromhex("2a8648ce3d030163")))  # fmt: skip
    elif public_key == "ed25519":
        other = ed25519.Ed25519PrivateKey.generate().public_key()
        public_key = b64url(other.public_bytes(serialization.Encoding.DER, SPKI))
    with pytest.raises(InvalidDevice, match=words):
        device_key_of(name, public_key)


# -- through the web console --------------------------------------------------------------------


@pytest.fixture
def site(store: Store) -> Iterator[tuple[Web, dict[str, str]]]:
    with web(store) as page:
        yield page, tokens(store)


def app_signs_in(page: Web, token: str, key: AppKey, name: str = "Olivia's phone") -> Any:
    return page.client.post(
        "/sign-in",
        data={"token": token, "next": "/notifications", "device_name": name,
              "device_key": key.public},
        follow_redirects=False,
    )  # fmt: skip


def max_age(answer: Any) -> int:
    found = re.search(r"Max-Age=(\d+)", answer.headers["set-cookie"])
    assert found is not None
    return int(found.group(1))


def test_the_app_signs_in_as_a_device_proves_its_use_and_its_cookie_lasts(
    site: tuple[Web, dict[str, str]],
) -> None:
    page, made = site
    key = AppKey()
    signed = app_signs_in(page, made["operator"], key)
    assert signed.status_code == 303
    assert 30 * 86400 - 60 < max_age(signed) <= 30 * 86400
    assert "HttpOnly" in signed.headers["set-cookie"]
    csrf = {"X-CSRF-Token": page.csrf("/notifications")}
    asked = page.client.post("/actions/device/challenge", json={}, headers=csrf)
    assert asked.status_code == 200 and asked.json()["device"] is True
    assert asked.json()["key"] == key.public  # the app signs with that key only
    copied = Web(store=page.store, client=TestClient(page.client.app, base_url=ORIGIN))
    copied.client.cookies.update(page.client.cookies)  # a copy of the cookie, taken elsewhere
    assert copied.client.get("/notifications", follow_redirects=False).status_code == 200
    proven = page.client.post("/actions/device/proof", headers=csrf,
                              json={"signature": key.sign(asked.json()["challenge"])})  # fmt: skip
    assert proven.status_code == 200, proven.text
    assert proven.json()["proven"] is True and 30 * 86400 - 60 < max_age(proven)
    # The cookie is the sign-in's new secret, and its pages' writes carry the new secret's proof.
    # The old secret and its proof are still taken for a while (what was under way as the proof
    # was made goes through); past it, the copy is signed out (the store's test above).
    assert page.client.get("/notifications", follow_redirects=False).status_code == 200
    assert page.csrf("/notifications") == proven.json()["csrf"] != csrf["X-CSRF-Token"]
    assert copied.client.get("/notifications", follow_redirects=False).status_code == 200
    late = page.client.post("/actions/device/challenge", json={}, headers=csrf)
    assert late.status_code == 200
    forged = page.client.post("/actions/device/challenge", json={},
                              headers={"X-CSRF-Token": "0" * 64})  # fmt: skip
    assert forged.status_code == 403
    renewed = {"X-CSRF-Token": proven.json()["csrf"]}
    # The same proof again is refused: its challenge is gone.
    again = page.client.post("/actions/device/proof", headers=renewed,
                             json={"signature": key.sign(asked.json()["challenge"])})  # fmt: skip
    assert again.status_code == 400 and again.json()["code"] == "invalid_device"
    cross = page.client.post("/actions/device/challenge", json={})
    assert cross.status_code == 403
    # A tab's sign-in stays a tab's: 12 hours, nothing to prove.
    tab = Web(store=page.store, client=TestClient(page.client.app, base_url=ORIGIN))
    plain = tab.sign_in(made["operator"])
    assert 12 * 3600 - 60 < max_age(plain) <= 12 * 3600
    answer = tab.client.post("/actions/device/challenge", json={},
                             headers={"X-CSRF-Token": tab.csrf()})  # fmt: skip
    assert answer.json() == {"device": False, "challenge": None, "key": None}


def test_a_sign_in_with_a_bad_device_key_is_refused_in_words(
    site: tuple[Web, dict[str, str]],
) -> None:
    page, made = site
    bad = page.client.post("/sign-in", data={"token": made["operator"], "device_name": "phone",
                                             "device_key": "not a key"})  # fmt: skip
    assert bad.status_code == 400
    assert "not a public key" in bad.text and "set-cookie" not in bad.headers
    with page.store.read() as db:
        assert db.execute(text("SELECT count(*) FROM api_web_sessions")).scalar_one() == 0


def test_the_notifications_page_lists_the_tokens_devices_and_revokes_them(
    site: tuple[Web, dict[str, str]],
) -> None:
    page, made = site
    mine, hostile = AppKey(), AppKey()
    assert app_signs_in(page, made["operator"], mine).status_code == 303
    other = Web(store=page.store, client=TestClient(page.client.app, base_url=ORIGIN))
    assert (
        app_signs_in(other, made["operator"], hostile, "<script>alert(1)</script>").status_code
        == 303
    )
    viewer = Web(store=page.store, client=TestClient(page.client.app, base_url=ORIGIN))
    assert app_signs_in(viewer, made["viewer"], AppKey(), "Vic's tablet").status_code == 303
    listed = page.client.get("/notifications").text
    assert "Olivia&#39;s phone" in listed and "this device" in listed
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in listed and "<script>alert" not in listed
    assert "Vic&#39;s tablet" not in listed  # another token's
    devices = list_devices(store=page.store, token="olivia")
    theirs = [device for device in list_devices(store=page.store) if device.token == "vic"]
    csrf = {"X-CSRF-Token": page.csrf("/notifications")}
    # Another token's device is not found, and stays.
    refused = page.client.post("/actions/device/revoke", headers=csrf,
                               json={"device_id": theirs[0].id})  # fmt: skip
    assert refused.status_code == 404 and refused.json()["code"] == "device_not_found"
    hostile_one = next(device for device in devices if device.name.startswith("<script>"))
    gone = page.client.post("/actions/device/revoke", headers=csrf,
                            json={"device_id": hostile_one.id})  # fmt: skip
    assert gone.status_code == 200 and gone.json()["revoked"]["id"] == hostile_one.id
    assert other.client.get("/notifications", follow_redirects=False).status_code == 303
    assert len(list_devices(store=page.store)) == 2


def test_the_api_lists_and_revokes_the_callers_own_devices(
    site: tuple[Web, dict[str, str]],
) -> None:
    page, made = site
    assert app_signs_in(page, made["operator"], AppKey()).status_code == 303
    viewer = Web(store=page.store, client=TestClient(page.client.app, base_url=ORIGIN))
    assert app_signs_in(viewer, made["viewer"], AppKey(), "Vic's tablet").status_code == 303
    api = TestClient(page.client.app, base_url=ORIGIN)
    as_olivia = {"Authorization": f"Bearer {made['operator']}"}
    listed = api.get("/api/v1/devices", headers=as_olivia)
    assert listed.status_code == 200
    (item,) = listed.json()["items"]
    assert (item["name"], item["signed_in_as"], item["this_device"]) == (
        "Olivia's phone",
        "olivia",
        False,
    )
    assert set(item) == {"id", "name", "signed_in_as", "created_at", "last_used_at", "expires_at",
                         "this_device"}  # fmt: skip
    vics = list_devices(store=page.store, token="vic")[0].id
    as_agent = {"Authorization": f"Bearer {made['agent']}"}
    assert api.get("/api/v1/devices", headers=as_agent).status_code == 403
    assert api.post(f"/api/v1/devices/{vics}/revoke", headers=as_olivia).status_code == 404
    assert api.post("/api/v1/devices/dev_nope/revoke", headers=as_olivia).status_code == 404
    revoked = api.post(f"/api/v1/devices/{item['id']}/revoke", headers=as_olivia)
    assert revoked.status_code == 200 and revoked.json()["id"] == item["id"]
    assert page.client.get("/notifications", follow_redirects=False).status_code == 303
    assert api.get("/api/v1/devices", headers=as_olivia).json() == {"items": []}
    assert [device.token for device in list_devices(store=page.store)] == ["vic"]


# -- roundtable tokens ---------------------------------------------------------------------------


def test_the_command_line_lists_and_revokes_device_sign_ins(rt: Cli) -> None:
    made = rt.json("tokens", "create", "--name", "ops", "--role", "operator")
    rt.json("tokens", "create", "--name", "vic", "--role", "viewer")
    assert rt.json("tokens", "devices") == {"items": []}
    phone = device_key_of("ops phone", AppKey().public)

    def sign_ins(store: Store) -> None:
        sign_in(store=store, token=made["token"], device=phone, clock=rt.clock)
        sign_in(store=store, token=made["token"], clock=rt.clock)  # a tab: not listed

    rt.with_store(sign_ins)
    listed = rt.json("tokens", "devices")
    (item,) = listed["items"]
    assert (item["signed_in_as"], item["this_device"]) == ("ops", False)
    table = rt("tokens", "devices", "--token", "ops")
    assert table.exit_code == 0 and item["id"] in table.stdout
    assert rt.json("tokens", "devices", "--token", "vic") == {"items": []}
    missing = rt("tokens", "revoke-device", "dev_nobody", "--json")
    assert missing.exit_code == 1
    assert '"device_not_found"' in last_stderr_line(missing)
    revoked = rt("tokens", "revoke-device", item["id"])
    assert revoked.exit_code == 0 and f"({item['id']}, token ops)" in revoked.stdout
    assert rt.json("tokens", "devices") == {"items": []}
    with pytest.raises(DeviceNotFound):
        rt.with_store(lambda store: revoke_device(store=store, device_id=item["id"]))
