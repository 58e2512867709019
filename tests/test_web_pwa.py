"""Issue 31 points 1, 3 and 5 in a real browser: the web console is an installable app
(Chromium's own installability check, through the DevTools protocol, finds nothing missing),
its service worker keeps the shell and shows an honest offline page, and a push the real
``roundtable serve`` sent (caught by the suite's push service on loopback, decrypted with the
device's keys) is shown by the service worker (``ServiceWorker.deliverPushMessage``), its title
and body read back; tapping it (a ``notificationclick`` dispatched in the worker) opens the
session with Allow and Deny at hand. A page in view keeps the pushes away; the permission to
notify is asked only on the notifications page's button.

Chromium runs with a profile of its own (a persistent context): an incognito context is never
installable."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import BrowserContext, Page, expect, sync_playwright
from sqlalchemy import text

from roundtable_console.store.access.tokens import create_token
from roundtable_console.store.clock import format_ts
from roundtable_console.store.db.database import open_store
from roundtable_console.store.push.keys import vapid_keys
from roundtable_console.store.push.telling import signed_out_payload
from roundtable_console.store.requests.asking import open_request
from roundtable_console.store.requests.deciding import decide_request
from roundtable_console.store.writes import agent_writes
from tests.api_support import seed_agent, seed_workspace
from tests.push_support import Device, Receiver, verify_vapid
from tests.serve_support import serving
from tests.web_support import WORKSPACE, register

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
PHONE = {"width": 390, "height": 844}
CONTACT = "mailto:ops@example.org"
DWELL = 0.5


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    assert Path(CHROMIUM).exists(), "Chromium is needed (apt-get install chromium)"
    home = tmp_path_factory.mktemp("web-pwa")
    url = f"sqlite:///{home / 'roundtable.db'}"
    store = open_store(url)
    seed_workspace(store, WORKSPACE)
    seed_agent(store, "agent-1")
    token = create_token(store=store, name="olivia", role="operator").token
    # Pages of another operator: their being in view keeps pushes from their own devices only.
    other = create_token(store=store, name="oscar", role="operator").token
    service = Receiver()
    extra = ("--push-service", service.origin, "--notify-dwell", str(DWELL),
             "--push-contact", CONTACT)  # fmt: skip
    try:
        with serving(url, home, *extra) as served, sync_playwright() as playwright:
            yield {"store": store, "served": served, "token": token, "other": other,
                   "service": service,
                   "playwright": playwright, "home": home}  # fmt: skip
    finally:
        service.close()
        store.dispose()


# In the service worker: the notification of ``tag`` once shown (within 2 s), tapped.
CLICK = """async (tag) => {
  for (let i = 0; i < 20; i++) {
    const shown = (await self.registration.getNotifications()).find((n) => n.tag === tag);
    if (shown) {
      self.dispatchEvent(new NotificationEvent("notificationclick", {notification: shown}));
      return true;
    }
    await new Promise((go) => setTimeout(go, 100));
  }
  return false;
}"""


def in_view(store: Any, seconds: float = 10.0) -> None:
    """Until the store holds a page's latest word, "in view" (its post is the page's first)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with store.read() as db:
            said = db.execute(
                text("SELECT visible_until FROM push_presence ORDER BY said_at DESC LIMIT 1")
            ).scalar()
        if said is not None and said > format_ts(datetime.now(UTC)):
            return
        time.sleep(0.05)
    raise AssertionError("the page never said it was in view")


def app(site: dict[str, Any], name: str) -> BrowserContext:
    """Chromium with a profile of its own, on a phone's screen."""
    return site["playwright"].chromium.launch_persistent_context(
        str(site["home"] / f"profile-{name}"), executable_path=CHROMIUM,
        args=["--no-sandbox"], viewport=PHONE,
    )  # fmt: skip


def sign_in(context: BrowserContext, site: dict[str, Any], token: str = "other") -> Page:
    page = context.pages[0] if context.pages else context.new_page()
    page.set_default_timeout(10_000)
    page.goto(site["served"].url + "/sessions")
    page.fill("#token", site[token])
    page.click("button[type=submit]")
    page.wait_for_url("**/sessions")
    assert page.evaluate("navigator.serviceWorker.ready.then(() => true)")
    return page


def subscribed_device(site: dict[str, Any]) -> Device:
    """A device the operator turned on, as its page posts it."""
    device = Device(site["service"])
    client = httpx.Client(base_url=site["served"].url)
    client.post("/sign-in", data={"token": site["token"], "next": "/sessions"})
    page = client.get("/notifications").text
    csrf = page.split('name="csrf-token" content="')[1].split('"')[0]
    answer = client.post("/actions/push/subscribe", json=device.subscription(),
                         headers={"X-CSRF-Token": csrf})  # fmt: skip
    assert answer.status_code == 200, answer.text
    return device


def test_the_console_is_an_installable_app_with_an_offline_page(site: dict[str, Any]) -> None:
    context = app(site, "install")
    try:
        page = sign_in(context, site)
        cdp = context.new_cdp_session(page)
        assert cdp.send("Page.getInstallabilityErrors") == {"installabilityErrors": []}
        manifest = cdp.send("Page.getAppManifest")
        assert manifest["errors"] == [] and manifest["url"].endswith("/manifest.webmanifest")
        declared = json.loads(manifest["data"])
        assert (declared["display"], declared["start_url"]) == ("standalone", "/sessions")
        expect(page.locator("#install")).to_be_visible()  # the browser offered it
        page.reload()
        assert page.evaluate("navigator.serviceWorker.controller !== null")
        kept = page.evaluate(
            "caches.keys().then(names => caches.open(names[0]))"
            ".then(cache => cache.keys()).then(keys => keys.map(k => new URL(k.url).pathname))"
        )
        assert "/offline" in kept and all(p.startswith("/static/") or p == "/offline"
                                          for p in kept)  # fmt: skip
        context.set_offline(True)
        page.goto(site["served"].url + "/sessions")
        expect(page.locator("h1")).to_have_text("The server cannot be reached")
        context.set_offline(False)
        page.goto(site["served"].url + "/sessions")
        expect(page.locator("h1")).not_to_have_text("The server cannot be reached")
    finally:
        context.close()


def test_a_push_from_the_server_is_shown_and_opens_the_request(site: dict[str, Any]) -> None:
    store, service = site["store"], site["service"]
    device = subscribed_device(site)
    register(store, "s-phone")
    with store.write() as db:  # as the agent's hook records it: the session waits, then asks
        agent_writes.heartbeat(db=db, session_id="s-phone", waiting="asks to run Bash: make deploy")
    asked = open_request(
        store, session_id="s-phone", agent="claude-code", tool_name="Bash",
        tool_input={"command": "make deploy"}, suggestions=None,
        reason="asks to run Bash: make deploy",
        wait_seconds=600,
    )  # fmt: skip
    delivery = service.next(timeout=15)
    assert delivery.path == device.path
    verify_vapid(delivery, vapid_keys(store=store).public_key, subject=CONTACT)
    news = device.decrypt(delivery)
    assert news["title"] == "agent-1 needs you"
    assert news["body"] == "s-phone · asks to run Bash: make deploy"

    context = app(site, "push")
    try:
        context.grant_permissions(["notifications"], origin=site["served"].url)
        page = sign_in(context, site, "token")
        cdp = context.new_cdp_session(page)
        found: list[dict[str, Any]] = []
        cdp.on("ServiceWorker.workerRegistrationUpdated", lambda event: found.append(event))
        cdp.send("ServiceWorker.enable")
        page.wait_for_function("() => true")
        for _ in range(50):
            if found:
                break
            page.wait_for_timeout(100)
        registration = next(
            entry["registrationId"] for event in found for entry in event["registrations"]
            if not entry["isDeleted"]
        )  # fmt: skip
        # A function, not an expression: polling an expression evals it, which the CSP refuses.
        page.wait_for_function("() => navigator.serviceWorker.controller !== null")
        shown: list[list[str]] = []
        for _ in range(5):  # a worker busy starting may miss one: the same tag replaces it
            cdp.send("ServiceWorker.deliverPushMessage", {
                "origin": site["served"].url, "registrationId": registration,
                "data": json.dumps(news),
            })  # fmt: skip
            shown = page.evaluate(
                "(async () => { const r = await navigator.serviceWorker.ready;"
                " for (let i = 0; i < 20; i++) { const n = await r.getNotifications();"
                " if (n.length) return n.map(x => [x.title, x.body, x.tag, x.data.url]);"
                " await new Promise(go => setTimeout(go, 100)); } return []; })()"
            )
            if shown:
                break
        assert shown == [["agent-1 needs you", "s-phone · asks to run Bash: make deploy",
                          "roundtable:s-phone", "/sessions/s-phone#requests"]]  # fmt: skip
        worker = context.service_workers[0]
        assert worker.evaluate(CLICK, "roundtable:s-phone")
        page.wait_for_url("**/sessions/s-phone#requests")
        card = page.locator("#requests")
        expect(card.get_by_role("button", name="Allow")).to_be_visible()
        expect(card.get_by_role("button", name="Deny")).to_be_visible()
        assert (
            page.evaluate(
                "navigator.serviceWorker.ready.then(r => r.getNotifications()).then(n => n.length)"
            )
            == 0
        )  # tapped: closed

        # A push naming another site opens the console's own list (never that site).
        for number, target in enumerate(("/\t/evil.example/x", "//evil.example/x",
                                         "javascript:alert(1)")):  # fmt: skip
            tag = f"hostile-{number}"
            for _ in range(5):  # as above: a worker busy starting may miss one
                cdp.send("ServiceWorker.deliverPushMessage", {
                    "origin": site["served"].url, "registrationId": registration,
                    "data": json.dumps({**news, "url": target, "tag": tag}),
                })  # fmt: skip
                if worker.evaluate(CLICK, tag):
                    break
            page.wait_for_url(site["served"].url + "/sessions")
            page.goto(site["served"].url + "/sessions/s-phone")

        # Answered elsewhere (issue 44): the server's "answered" push closes the notice of that
        # session, and shows none in its place.
        tags = ("(async () => { const r = await navigator.serviceWorker.ready;"
                " return (await r.getNotifications()).map(n => n.tag); })()")  # fmt: skip
        for _ in range(5):
            cdp.send("ServiceWorker.deliverPushMessage", {
                "origin": site["served"].url, "registrationId": registration,
                "data": json.dumps(news),
            })  # fmt: skip
            page.wait_for_timeout(300)
            if page.evaluate(tags) == ["roundtable:s-phone"]:
                break
        assert page.evaluate(tags) == ["roundtable:s-phone"]
        decide_request(store=store, request_id=asked.id, decision="allow", actor="olivia")
        answered = device.decrypt(service.next(timeout=15))
        assert (answered["kind"], answered["tag"]) == ("answered", "roundtable:s-phone")
        for _ in range(5):
            cdp.send("ServiceWorker.deliverPushMessage", {
                "origin": site["served"].url, "registrationId": registration,
                "data": json.dumps(answered),
            })  # fmt: skip
            page.wait_for_timeout(300)
            if page.evaluate(tags) == []:
                break
        assert page.evaluate(tags) == []

        # While this page is in view, the operator is not pushed (once it has said so).
        page.wait_for_function("() => document.visibilityState === 'visible'")
        in_view(store)
        register(store, "s-seen")
        with store.write() as db:
            agent_writes.heartbeat(db=db, session_id="s-seen", waiting="asks a question")
        assert service.none_within(DWELL + 2.0)

        # What this device was told, kept by its service worker a day (issue 44 point 4): the
        # session's notice, answered, and each of the others; the same notice delivered twice
        # is one line. The kinds it is told of are its own choice, kept as it left them.
        page.goto(site["served"].url + "/notifications")
        told = page.locator("#push-told li")
        expect(told).to_have_count(4)
        expect(told.filter(has_text="agent-1 needs you")).to_have_count(4)
        expect(told.filter(has_text="answered: allowed by olivia")).to_have_count(1)
        expect(told.filter(has_text="open")).to_have_count(3)
        link = told.filter(has_text="answered").get_by_role("link", name="agent-1 needs you")
        assert link.get_attribute("href") == "/sessions/s-phone#requests"
        assert told.locator('a[href*="evil"]').count() == 0
        expect(page.locator("#push-told-none")).to_be_hidden()
        failed = page.locator('#push-kinds input[value="failed"]')
        expect(failed).to_be_checked()
        failed.uncheck()
        page.reload()
        expect(page.locator('#push-kinds input[value="failed"]')).not_to_be_checked()
        expect(page.locator('#push-kinds input[value="needs_you"]')).to_be_checked()

        # Signed out, the list is forgotten: the next person to sign in on this browser does not
        # read what the last one was told.
        page.get_by_role("button", name="Sign out").click()
        page.wait_for_url("**/sign-in**")
        page = sign_in(context, site, "token")
        page.goto(site["served"].url + "/notifications")
        expect(page.locator("#push-told-none")).to_be_visible()

        # The sign-in ended elsewhere (expired, revoked): the device is told so, with a notice
        # that opens the sign-in, and what it was told (that sign-in's) is forgotten.
        for _ in range(5):  # as above: a worker busy starting may miss one
            cdp.send("ServiceWorker.deliverPushMessage", {
                "origin": site["served"].url, "registrationId": registration,
                "data": json.dumps(news),
            })  # fmt: skip
            page.reload()
            try:
                expect(page.locator("#push-told li")).to_have_count(1, timeout=2000)
                break
            except AssertionError:
                continue
        expect(page.locator("#push-told li")).to_have_count(1)
        ended = signed_out_payload(format_ts(datetime.now(UTC)))
        for _ in range(5):
            cdp.send("ServiceWorker.deliverPushMessage", {
                "origin": site["served"].url, "registrationId": registration, "data": ended,
            })  # fmt: skip
            page.wait_for_timeout(300)
            if "roundtable:signed-out" in page.evaluate(tags):
                break
        assert "roundtable:signed-out" in page.evaluate(tags)
        page.reload()
        expect(page.locator("#push-told-none")).to_be_visible()
        expect(page.locator("#push-told li")).to_have_count(0)
    finally:
        context.close()


def test_the_permission_is_asked_only_on_the_button(site: dict[str, Any]) -> None:
    context = app(site, "permission")
    # Every page counts the asking, from before its own scripts run.
    context.add_init_script(
        "window.asked = 0; const ask = Notification.requestPermission.bind(Notification);"
        "Notification.requestPermission = (...given) => {"
        " window.asked += 1; return ask(...given); };"
    )
    try:
        page = sign_in(context, site)
        page.goto(site["served"].url + "/notifications")
        expect(page.locator("#push-on")).to_be_visible()
        expect(page.locator("#push-state")).to_have_text("Notifications are off for this device.")
        assert page.evaluate("[window.asked, Notification.permission]") == [0, "default"]
        page.click("#push-on")
        # Headless Chromium answers no prompt: the page says nothing was turned on.
        expect(page.locator("#push-state")).to_have_text(
            "Notifications were not allowed; nothing was turned on."
        )
        assert page.evaluate("window.asked") >= 1
    finally:
        context.close()


# The installed app, as Chromium shows it: what the page's script asks of display-mode answers
# "standalone" (headless Chromium installs no app, and emulates no display-mode).
INSTALLED = """
const asked = window.matchMedia.bind(window);
window.matchMedia = (query) => query.includes("display-mode: standalone")
  ? {matches: true, media: query, onchange: null, addListener() {}, removeListener() {},
     addEventListener() {}, removeEventListener() {}, dispatchEvent() { return false; }}
  : asked(query);
"""
# The device's key as the page keeps it: its public half (SPKI, base64url) and whether its private
# half can be taken out of the browser. The first page after signing in makes the key kept aside
# the device's (a round trip to the server): it is waited for.
KEPT_KEY = """async () => {
  const kept = () => new Promise((done, failed) => {
    const opening = indexedDB.open("roundtable-device", 1);
    opening.onerror = () => failed(opening.error);
    opening.onsuccess = () => {
      const asking = opening.result.transaction("keys").objectStore("keys").get("device");
      asking.onsuccess = () => { opening.result.close(); done(asking.result); };
    };
  });
  let pair = await kept();
  for (let i = 0; !pair && i < 100; i++) {
    await new Promise((go) => setTimeout(go, 100));
    pair = await kept();
  }
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", pair.publicKey));
  const text = btoa(String.fromCharCode(...spki));
  return [text.replace(/\\+/g, "-").replace(/\\//g, "_").replace(/=+$/, ""),
          pair.privateKey.extractable];
}"""


def device_sign_in(store: Any) -> dict[str, Any] | None:
    with store.read() as db:
        row = (
            db.execute(text("SELECT * FROM api_web_sessions WHERE device_id IS NOT NULL"))
            .mappings()
            .first()
        )
    return dict(row) if row is not None else None


def test_the_installed_app_stays_signed_in_by_proving_its_devices_key(
    site: dict[str, Any],
) -> None:
    context = app(site, "installed")
    context.add_init_script(INSTALLED)
    try:
        page = context.pages[0] if context.pages else context.new_page()
        page.set_default_timeout(10_000)
        page.goto(site["served"].url + "/sign-in?next=/notifications")
        expect(page.locator("#device-fields")).to_be_visible()
        expect(page.locator("#device-name")).to_have_value("Linux: the Roundtable app")
        expect(page.locator("#device-key")).not_to_have_value("")
        page.fill("#device-name", "Olivia's <b>phone</b>")
        page.fill("#token", site["token"])
        page.click("button[type=submit]")
        page.wait_for_url("**/notifications")
        row = device_sign_in(site["store"])
        assert row is not None and row["device_name"] == "Olivia's <b>phone</b>"
        public, extractable = page.evaluate(KEPT_KEY)
        assert row["device_key"] == public and extractable is False
        (cookie,) = [c for c in context.cookies() if c["name"] == "roundtable_web"]
        assert cookie["httpOnly"] and 29.9 * 86400 < cookie["expires"] - time.time() <= 30 * 86400
        # The page lists it, as this device, its name shown as text.
        mine = page.locator("#devices tr", has_text="this device")
        expect(mine).to_contain_text("Olivia's <b>phone</b>")
        # An hour on, a page proves the device's use: the server checks the browser's signature
        # and draws a new challenge.
        page.evaluate("localStorage.removeItem('roundtable.device.proved')")
        page.reload()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            now = device_sign_in(site["store"])
            if now is not None and now["device_nonce"] != row["device_nonce"]:
                break
            time.sleep(0.1)
        assert now is not None and now["device_nonce"] != row["device_nonce"]
        assert now["expires_at"] >= row["expires_at"]
        # The proof renewed the sign-in's secret: the browser holds the new cookie, and the page
        # goes on (its live stream opened again, its writes carrying the new CSRF proof).
        renewed = [c for c in context.cookies() if c["name"] == "roundtable_web"]
        assert renewed and renewed[0]["value"] != cookie["value"]
        assert now["secret_hash"] != row["secret_hash"]
        page.wait_for_timeout(3000)  # past the servers' check of open streams (2 s)
        expect(page.locator("#live-state")).to_have_text("Live")
        expect(page.locator("#notice")).not_to_contain_text("sign-in ended")
        # Revoked from its own page (after a confirmation): signed out at once.
        page.once("dialog", lambda dialog: dialog.accept())
        mine.get_by_role("button", name="Revoke").click()
        page.wait_for_url("**/sign-in")
        assert device_sign_in(site["store"]) is None
    finally:
        context.close()
