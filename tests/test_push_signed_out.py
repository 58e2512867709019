"""Issue 44 point 2: a device whose sign-in ends is told so, once ("Signed out: open the app to
keep being told"), whatever ended it: the sign-in expired or was revoked, or its token was. The
server's own notifier tidies (``Notifier.tidy``); the pushes arrive at a loopback push service
and are decrypted here. Device sign-ins themselves: tests/test_device_sign_ins.py."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import text

from roundtable_console.store.access.devices import list_devices, revoke_device
from roundtable_console.store.access.tokens import revoke_token
from tests.push_support import Device
from tests.test_device_sign_ins import AppKey, app_signs_in
from tests.test_push import (  # noqa: F401 - fixtures
    browser,
    count,
    hook,
    service,
    told,
    turn_on,
    waiting,
)
from tests.web_support import Web


def test_a_device_whose_sign_in_ends_is_told_so_once(
    told: dict[str, Any],  # noqa: F811 - the fixture
    service: Any,  # noqa: F811 - the fixture
) -> None:
    store = told["store"]
    phone = browser(told)
    key = AppKey()
    app = Web(store=store, client=TestClient(told["client"].app, base_url="http://127.0.0.1:8080"))
    assert app_signs_in(app, told["tokens"]["operator"], key).status_code == 303
    tab_device, app_device = Device(service), Device(service)
    assert turn_on(phone, tab_device).status_code == 200
    assert turn_on(app, app_device).status_code == 200
    # The app proves its use: its sign-in's secret is renewed, and its subscription goes with it.
    csrf = {"X-CSRF-Token": app.csrf("/notifications")}
    challenge = app.client.post("/actions/device/challenge", json={}, headers=csrf).json()
    proof = {"signature": key.sign(challenge["challenge"])}
    assert app.client.post("/actions/device/proof", json=proof, headers=csrf).status_code == 200
    told["ctx"].notifier.tidy()
    assert service.none_within(0.3)  # both sign-ins hold: nothing to say
    waiting(store, "s-1")
    told["ctx"].notifier.tell("s-1", "needs_you")
    paths = {service.next().path, service.next().path}
    assert paths == {app_device.path, tab_device.path}  # both still told
    (device,) = list_devices(store=store)
    revoke_device(store=store, device_id=device.id)
    # The tab's sign-in expires (12 hours gone by).
    with store.write() as db:
        db.execute(text("UPDATE api_web_sessions SET expires_at = '2000-01-01T00:00:00Z'"))
    told["ctx"].notifier.tidy()
    news = {}
    for _ in range(2):
        delivery = service.next()
        target = app_device if delivery.path == app_device.path else tab_device
        news[target.path] = target.decrypt(delivery)
    assert set(news) == {app_device.path, tab_device.path}
    for said in news.values():
        assert said["kind"] == "signed_out" and said["tag"] == "roundtable:signed-out"
        assert said["body"] == "Signed out: open the app to keep being told."
        assert said["url"] == "/sign-in?next=%2Fnotifications"
    assert count(store) == 0
    told["ctx"].notifier.tidy()
    assert service.none_within(0.5)  # once


def test_a_device_of_a_revoked_token_is_free_at_once_for_another(
    told: dict[str, Any],  # noqa: F811 - the fixture
    service: Any,  # noqa: F811 - the fixture
) -> None:
    """Its subscription waits for the tidy to be told it is signed out, but holds nothing: the
    next person to sign in on that browser turns it on at once."""
    device = Device(service)
    assert turn_on(browser(told, "viewer"), device).status_code == 200
    revoke_token(store=told["store"], name="vic")
    assert turn_on(browser(told), device).status_code == 200
    told["ctx"].notifier.tidy()
    assert service.none_within(0.3)  # it is olivia's now: nothing ended
