"""Issue 31 points 2, 3 and 5: a device turned on from the web console is told, by Web Push
through its own push service, when a session starts waiting on a human or an agent's turn is
done: encrypted to its keys (RFC 8291, decrypted here), signed with the store's VAPID key
(RFC 8292, verified here); only what its token may read, not while a page of that token is in
view, once per session in the cooling period; a device gone (410) is dropped; signing out or
revoking the token ends it. Webhooks (``--notify``) get the same news, retried while their
receiver is down. On both engines, through the real app in-process (the server's own
notifier, its ``tell`` called as the feed's thread calls it after the dwell)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from roundtable_console.api.app import create_app
from roundtable_console.api.context import ServerContext
from roundtable_console.api.notify.notifier import NotifySettings
from roundtable_console.store.access.tokens import revoke_token
from roundtable_console.store.db.database import Store
from roundtable_console.store.push.keys import vapid_keys
from roundtable_console.store.push.subscriptions import MAX_PER_SIGN_IN, MAX_PER_TOKEN
from roundtable_console.store.writes import agent_writes
from tests.api_support import seed_agent, seed_workspace
from tests.push_support import Device, Receiver, verify_vapid
from tests.web_support import OTHER_WORKSPACE, WORKSPACE, Web, register, tokens

CONTACT = "mailto:ops@example.org"


@pytest.fixture
def service() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture
def hook() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture
def told(store: Store, service: Receiver, hook: Receiver) -> Iterator[dict[str, Any]]:
    seed_workspace(store, WORKSPACE)
    seed_workspace(store, OTHER_WORKSPACE)
    seed_agent(store, "agent-1")
    settings = NotifySettings(
        dwell=0, cooling=60, push_services=(service.origin,), contact=CONTACT,
        webhooks=(hook.origin + "/hook/secret-path",),
    )  # fmt: skip
    ctx = ServerContext(store=store, notify=settings)
    made = tokens(store)
    with TestClient(create_app(ctx, read_only=False), base_url="http://127.0.0.1:8080") as client:
        yield {"ctx": ctx, "tokens": made, "client": client, "store": store}
    ctx.notifier.close()


def browser(told: dict[str, Any], role: str = "operator") -> Web:
    client = TestClient(told["client"].app, base_url="http://127.0.0.1:8080")
    web = Web(store=told["store"], client=client)
    assert web.sign_in(told["tokens"][role]).status_code == 303
    return web


def turn_on(web: Web, device: Device, kinds: list[str] | None = None) -> Any:
    return web.client.post(
        "/actions/push/subscribe",
        json=device.subscription(kinds),
        headers={"X-CSRF-Token": web.csrf("/notifications")},
    )


def waiting(store: Store, session_id: str, reason: str = "asks to run Bash: make deploy",
            workspace: str = WORKSPACE) -> None:  # fmt: skip
    register(store, session_id, workspace=workspace)
    with store.write() as db:
        agent_writes.heartbeat(db=db, session_id=session_id, waiting=reason)


def test_a_push_is_encrypted_to_the_device_and_signed_with_the_stores_key(
    told: dict[str, Any], service: Receiver
) -> None:
    web = browser(told)
    device = Device(service)
    answer = turn_on(web, device)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        "subscribed": True,
        "kinds": ["needs_you", "turn_done", "failed", "budget"],
    }
    waiting(told["store"], "s-wait", "asks to run Bash: make deploy token=hunter2")
    told["ctx"].notifier.tell("s-wait", "needs_you")
    delivery = service.next()
    assert delivery.path == device.path
    assert delivery.headers["ttl"] == "3600" and delivery.headers["urgency"] == "high"
    news = device.decrypt(delivery)
    assert news["title"] == "agent-1 needs you"
    assert news["body"].startswith("s-wait · asks to run Bash: make deploy token=")
    assert "hunter2" not in json.dumps(news)  # redacted as everywhere
    assert news["url"] == "/sessions/s-wait#requests"
    assert news["kind"] == "needs_you" and news["tag"] == "roundtable:s-wait"
    public = vapid_keys(store=told["store"]).public_key
    verify_vapid(delivery, public, subject=CONTACT)
    # The private key is in no page.
    page = web.client.get("/notifications").text
    assert f'data-push-key="{public}"' in page
    private = vapid_keys(store=told["store"]).private_pem
    assert private.splitlines()[1] not in page


def test_a_turn_done_is_told_to_the_devices_that_want_it(
    told: dict[str, Any], service: Receiver
) -> None:
    web = browser(told)
    wants_all, needs_only = Device(service), Device(service)
    assert turn_on(web, wants_all).status_code == 200
    assert turn_on(web, needs_only, ["needs_you"]).status_code == 200
    register(told["store"], "s-done")
    with told["store"].write() as db:
        agent_writes.heartbeat(db=db, session_id="s-done", turn_done="Tests pass.")
    told["ctx"].notifier.tell("s-done", "turn_done")
    delivery = service.next()
    assert delivery.path == wants_all.path
    news = wants_all.decrypt(delivery)
    assert (news["title"], news["url"]) == ("agent-1: turn done", "/sessions/s-done#reply")
    assert news["body"] == "s-done · Tests pass."
    assert service.none_within(0.5)  # the other device wants only "needs you"


def test_only_sessions_the_token_reads_and_never_an_agents_token(
    told: dict[str, Any], service: Receiver
) -> None:
    bound = browser(told, "bound")  # an operator of the other workspace only
    device = Device(service)
    assert turn_on(bound, device).status_code == 200
    waiting(told["store"], "s-mine")  # in WORKSPACE: out of its reach
    told["ctx"].notifier.tell("s-mine", "needs_you")
    assert service.none_within(0.5)
    waiting(told["store"], "s-other", workspace=OTHER_WORKSPACE)
    told["ctx"].notifier.tell("s-other", "needs_you")
    assert service.next().path == device.path
    agent = browser(told, "agent")
    refused = turn_on(agent, Device(service))
    assert refused.status_code == 403, refused.text


def test_no_push_while_a_page_of_that_token_is_in_view(
    told: dict[str, Any], service: Receiver
) -> None:
    phone, laptop = browser(told), browser(told)
    device = Device(service)
    assert turn_on(phone, device).status_code == 200
    csrf = laptop.csrf()
    seen = laptop.client.post("/actions/presence", json={"visible": True},
                              headers={"X-CSRF-Token": csrf})  # fmt: skip
    assert seen.status_code == 200, seen.text
    waiting(told["store"], "s-seen")
    told["ctx"].notifier.tell("s-seen", "needs_you")
    assert service.none_within(0.5)
    hidden = laptop.client.post("/actions/presence", json={"visible": False},
                                headers={"X-CSRF-Token": csrf})  # fmt: skip
    assert hidden.status_code == 200
    told["ctx"].notifier.tell("s-seen", "needs_you")
    assert service.next().path == device.path


def test_a_word_said_before_the_last_one_arrives_late_and_is_not_taken(
    told: dict[str, Any], service: Receiver
) -> None:
    """Leaving a page says "no longer in view" as the next page says "in view": whichever
    arrives last, the later word stands (a page's word without ``at`` stands as it comes)."""
    phone, laptop = browser(told), browser(told)
    device = Device(service)
    assert turn_on(phone, device).status_code == 200
    csrf = {"X-CSRF-Token": laptop.csrf()}

    def say(**word: Any) -> None:
        said = laptop.client.post("/actions/presence", json=word, headers=csrf)
        assert said.status_code == 200, said.text

    say(visible=True, at=1_700_000_000_500)  # the next page, in view
    say(visible=False, at=1_700_000_000_400)  # the page left, arriving after it
    waiting(told["store"], "s-next")
    told["ctx"].notifier.tell("s-next", "needs_you")
    assert service.none_within(0.5)
    say(visible=False, at=1_700_000_000_600)  # later: out of view
    told["ctx"].notifier.tell("s-next", "needs_you")
    assert service.next().path == device.path
    for at in ("1700000000000", -1, 0, 2**53, 1.5, True):
        refused = laptop.client.post("/actions/presence", json={"visible": True, "at": at},
                                     headers=csrf)  # fmt: skip
        assert refused.status_code == 400, at


def test_once_per_session_in_the_cooling_period_and_not_once_settled(
    told: dict[str, Any], service: Receiver
) -> None:
    web = browser(told)
    device = Device(service)
    assert turn_on(web, device).status_code == 200
    waiting(told["store"], "s-cool")
    notifier = told["ctx"].notifier
    notifier.tell("s-cool", "needs_you")
    assert service.next().path == device.path
    notifier.tell("s-cool", "needs_you")  # within the cooling period
    assert service.none_within(0.5)
    waiting(told["store"], "s-settled")
    with told["store"].write() as db:
        agent_writes.heartbeat(db=db, session_id="s-settled")  # answered within the dwell
    notifier.tell("s-settled", "needs_you")
    assert service.none_within(0.5)
    with told["store"].write() as db:  # the cooling period has passed
        db.execute(text("UPDATE push_sends SET sent_at = '2000-01-01T00:00:00.000000Z'"))
    notifier.tell("s-cool", "needs_you")
    assert service.next().path == device.path


def test_a_device_gone_is_dropped_and_sign_out_or_revocation_ends_the_rest(
    told: dict[str, Any], service: Receiver
) -> None:
    store = told["store"]
    web = browser(told)
    gone, kept = Device(service), Device(service)
    assert turn_on(web, gone).status_code == 200
    assert turn_on(web, kept).status_code == 200
    service.answers[gone.path] = 410
    waiting(store, "s-1")
    told["ctx"].notifier.tell("s-1", "needs_you")
    assert service.next().path == kept.path
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and count(store) != 1:
        time.sleep(0.05)
    assert endpoints(store) == [kept.endpoint]
    # Signing out removes what that sign-in made.
    web.client.post("/sign-out", data={"csrf": web.csrf()})
    assert count(store) == 0
    # Revoking the token ends what any of its sign-ins made: each device is told so, once.
    viewer, device = browser(told, "viewer"), Device(service)
    assert turn_on(viewer, device).status_code == 200
    assert count(store) == 1
    revoke_token(store=store, name="vic")
    waiting(store, "s-2")
    told["ctx"].notifier.tell("s-2", "needs_you")
    assert service.none_within(0.3)  # told nothing more
    told["ctx"].notifier.tidy()
    assert device.decrypt(service.next())["kind"] == "signed_out"
    assert count(store) == 0


def count(store: Store) -> int:
    return len(endpoints(store))


def endpoints(store: Store) -> list[str]:
    with store.read() as db:
        return list(db.execute(text("SELECT endpoint FROM push_subscriptions")).scalars())


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"endpoint": "http://10.0.0.5/push/x"}, "not a push service's"),
        ({"endpoint": "https://127.0.0.1/push/x"}, "not a push service's"),
        ({"endpoint": "https://localhost/push/x"}, "not a push service's"),
        ({"endpoint": "https://metadata/push/x"}, "not a push service's"),
        ({"endpoint": "https://user:pw@fcm.googleapis.com/x"}, "not a URL"),
        ({"endpoint": "https://internal.corp.example/push/x"}, "not a push service's"),
        ({"endpoint": "https://fcm.googleapis.com.evil.example/x"}, "not a push service's"),
        ({"endpoint": "https://fcm.googleapis.com:8443/x"}, "not a push service's"),
        ({"endpoint": "http://fcm.googleapis.com/fcm/send/x"}, "not a push service's"),
        ({"endpoint": "https://fcm.googleapis.com/" + "x" * 3000}, "too long"),
        # Read differently by this check and by the client that posts (an attacker's SSRF).
        ({"endpoint": "https://169.254.169.254\\.fcm.googleapis.com/x"}, "not a URL"),
        ({"endpoint": "https://evil.example%2f.fcm.googleapis.com/x"}, "not a URL"),
        ({"endpoint": "https://evil.example;.fcm.googleapis.com/x"}, "not a URL"),
        ({"endpoint": "https://evil.example%40.fcm.googleapis.com/x"}, "not a URL"),
        ({"endpoint": "https://evil.example@fcm.googleapis.com/x"}, "not a URL"),
        ({"keys": {"p256dh": "AAAA", "auth": "AAAAAAAAAAAAAAAAAAAAAA"}}, "not one a browser"),
        ({"keys": {"p256dh": "!!", "auth": "x"}}, "not base64url"),
        ({"kinds": ["everything"]}, "Unknown kinds"),
        ({"kinds": "needs_you"}, "as a list"),
    ],
)
def test_a_subscription_the_servers_may_not_post_to_is_refused(
    told: dict[str, Any], service: Receiver, change: dict[str, Any], words: str
) -> None:
    web = browser(told)
    body = {**Device(service).subscription(), **change}
    answer = web.client.post("/actions/push/subscribe", json=body,
                             headers={"X-CSRF-Token": web.csrf()})  # fmt: skip
    assert answer.status_code == 400, answer.text
    assert words in answer.json()["detail"]
    assert count(told["store"]) == 0


def test_a_sign_in_keeps_a_few_subscriptions_not_a_flood(
    told: dict[str, Any], service: Receiver
) -> None:
    web = browser(told)
    devices = [Device(service) for _ in range(MAX_PER_SIGN_IN)]
    for device in devices:
        assert turn_on(web, device).status_code == 200
    assert turn_on(web, devices[0], ["needs_you"]).status_code == 200  # the same one, again
    refused = turn_on(web, Device(service))
    assert refused.status_code == 400 and "turn one off first" in refused.json()["detail"]
    assert count(told["store"]) == MAX_PER_SIGN_IN


def test_a_token_keeps_twenty_and_another_tokens_device_is_not_taken_over(
    told: dict[str, Any], service: Receiver
) -> None:
    operators = [browser(told) for _ in range(MAX_PER_TOKEN // MAX_PER_SIGN_IN + 1)]
    for web in operators[:-1]:
        for _ in range(MAX_PER_SIGN_IN):
            assert turn_on(web, Device(service)).status_code == 200
    refused = turn_on(operators[-1], Device(service))
    assert refused.status_code == 400 and "sign out of a device" in refused.json()["detail"]
    viewer = browser(told, "viewer")
    taken = Device(service)
    assert turn_on(viewer, taken).status_code == 200
    # The operator learnt the viewer's endpoint: posting it again does not move it.
    web = browser(told, "bound")
    stolen = web.client.post(
        "/actions/push/subscribe", json={**Device(service).subscription(), "endpoint":
                                         taken.endpoint},
        headers={"X-CSRF-Token": web.csrf()},
    )  # fmt: skip
    assert stolen.status_code == 400 and "Another sign-in" in stolen.json()["detail"]
    waiting(told["store"], "s-kept")
    told["ctx"].notifier.tell("s-kept", "needs_you")
    arrived = [service.next() for _ in range(MAX_PER_TOKEN + 1)]
    mine = [delivery for delivery in arrived if delivery.path == taken.path]
    assert taken.decrypt(mine[0])["url"] == "/sessions/s-kept#requests"  # still its own keys


def test_the_push_sender_never_imports_from_the_servers_directory(
    told: dict[str, Any], service: Receiver, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "imported"
    (tmp_path / "json.py").write_text(f"open({str(marker)!r}, 'w').close()\nraise SystemExit(3)\n")
    monkeypatch.chdir(tmp_path)  # a project's directory, where serve was started
    web = browser(told)
    device = Device(service)
    assert turn_on(web, device).status_code == 200
    waiting(told["store"], "s-cwd")
    told["ctx"].notifier.tell("s-cwd", "needs_you")
    assert service.next().path == device.path
    assert not marker.exists()


def test_a_session_of_the_longest_id_is_told_within_a_pushs_size(
    told: dict[str, Any], service: Receiver
) -> None:
    web = browser(told)
    device = Device(service)
    assert turn_on(web, device).status_code == 200
    long_id = "\U0001f600" * 250
    waiting(told["store"], long_id, "asks " + "\U0001f600" * 490)
    told["ctx"].notifier.tell(long_id, "needs_you")
    delivery = service.next()
    assert len(delivery.body) <= 4096
    news = device.decrypt(delivery)
    assert news["url"] == "/requests" and len(news["tag"]) == len("roundtable:") + 64


def test_an_agent_token_is_shown_no_notifications_page(told: dict[str, Any]) -> None:
    agent = browser(told, "agent")
    page = agent.client.get("/notifications")
    assert page.status_code == 403 and "it is told nothing" in page.text
    assert "data-push-key" not in page.text


def test_of_several_servers_of_a_store_one_tells_a_session(
    told: dict[str, Any], service: Receiver
) -> None:
    web = browser(told)
    device = Device(service)
    assert turn_on(web, device).status_code == 200
    other = ServerContext(store=told["store"], notify=told["ctx"].notify)
    try:
        waiting(told["store"], "s-both")
        told["ctx"].notifier.tell("s-both", "needs_you")
        other.notifier.tell("s-both", "needs_you")  # the second server read the same change
        assert service.next().path == device.path
        assert service.none_within(1.0)
    finally:
        other.notifier.close()


def test_the_browsers_push_services_are_taken(told: dict[str, Any], service: Receiver) -> None:
    web = browser(told)
    for endpoint in ("https://fcm.googleapis.com/fcm/send/abc:APA91b",
                     "https://updates.push.services.mozilla.com/wpush/v2/gAAAA",
                     "https://web.push.apple.com/QGx1",
                     "https://wns2-by3p.notify.windows.com/w/?token=BQYAAA"):  # fmt: skip
        body = {**Device(service).subscription(), "endpoint": endpoint}
        answer = web.client.post("/actions/push/subscribe", json=body,
                                 headers={"X-CSRF-Token": web.csrf()})  # fmt: skip
        assert answer.status_code == 200, answer.text
    assert count(told["store"]) == 4


def test_posts_need_a_sign_in_and_the_pages_proof(told: dict[str, Any], service: Receiver) -> None:
    body = Device(service).subscription()
    anonymous = TestClient(told["client"].app, base_url="http://127.0.0.1:8080")
    assert anonymous.post("/actions/push/subscribe", json=body).status_code == 401
    web = browser(told)
    assert web.client.post("/actions/push/subscribe", json=body).status_code == 403
    forged = web.client.post("/actions/push/subscribe", json=body,
                             headers={"X-CSRF-Token": "0" * 64})  # fmt: skip
    assert forged.status_code == 403
    other_site = web.client.post(
        "/actions/push/subscribe", json=body,
        headers={"X-CSRF-Token": web.csrf(), "Origin": "https://evil.example"},
    )  # fmt: skip
    assert other_site.status_code == 403
    assert web.client.post("/actions/presence", json={"visible": "yes"},
                           headers={"X-CSRF-Token": web.csrf()}).status_code == 400  # fmt: skip
    assert count(told["store"]) == 0


def test_a_webhook_gets_the_same_news_and_is_retried_while_down(
    told: dict[str, Any], hook: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="roundtable.serve")
    hook.answers["/hook/secret-path"] = 503  # down
    notifier = told["ctx"].notifier
    notifier.start()
    register(told["store"], "s-hook")
    with told["store"].write() as db:  # what an agent writes, as a chat would show it
        agent_writes.heartbeat(
            db=db,
            session_id="s-hook",
            waiting="asks <!channel> <https://evil.example|Approve> @here",
        )
    started = time.monotonic()
    notifier.tell("s-hook", "needs_you")
    assert time.monotonic() - started < 1.0  # the server is never held by a webhook
    time.sleep(1.5)  # a try or two fail
    hook.answers.pop("/hook/secret-path")  # back up
    delivery = hook.next(timeout=15)
    body = json.loads(delivery.body)
    assert body["event"] == "roundtable.needs_you" and body["session_id"] == "s-hook"
    assert body["text"] == (
        "agent-1 needs you: s-hook · asks &lt;!channel&gt; "
        "&lt;https://evil.example|Approve&gt; @\u200bhere"
    )
    assert body["message"] == "s-hook · asks <!channel> <https://evil.example|Approve> @here"
    assert delivery.headers["content-type"] == "application/json"
    assert "the webhook at http://127.0.0.1 failed; retry in" in caplog.text
    assert "secret-path" not in caplog.text and str(hook.port) not in caplog.text


def test_serve_refuses_a_webhook_that_is_not_a_url_without_repeating_it() -> None:
    for option in ("--notify", "--escalate"):  # told at once, or only of waits left unanswered
        done = subprocess.run(
            [sys.executable, "-m", "roundtable_console", "serve", "--db", "sqlite://",
             option, "ftp://hooks.example/T0KEN-SECRET"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2
        assert option in done.stderr and "a webhook is an http or https URL" in done.stderr
        assert "T0KEN-SECRET" not in done.stderr + done.stdout
    contact = subprocess.run(
        [sys.executable, "-m", "roundtable_console", "serve", "--db", "sqlite://",
         "--push-contact", "https://example.org/contact"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert contact.returncode == 2 and "neither mailto:ADDRESS nor https://HOST" in contact.stderr
