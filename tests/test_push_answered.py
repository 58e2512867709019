"""Issue 44 points 1 and 3: a notice is gone when answered, and told again when ignored.

The server's own notifier runs (its feed's thread, woken by the store's changes) on both
engines; the devices' pushes arrive at a loopback push service and are decrypted here; the
webhooks are loopback receivers. A request decided, a wait ended by the agent, a turn followed
by another: each device told of it gets an "answered" push with the notice's tag (its service
worker closes that notice: tests/test_web_pwa.py), each webhook a follow-up saying by whom and
how; once, whatever the number of servers. A wait nobody answers is told once more after the
notify-again period, and then to the escalation webhooks; never a third time."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from roundtable_console.api.app import create_app
from roundtable_console.api.context import ServerContext
from roundtable_console.api.notify.notifier import NotifySettings
from roundtable_console.api.notify.webhook_words import chat_text
from roundtable_console.store.db.database import Store
from roundtable_console.store.push.subscriptions import takes_silent_pushes
from roundtable_console.store.reads.changes import ChangeFeed, ChangeFilter, FeedPosition
from roundtable_console.store.records import Change
from roundtable_console.store.requests import asking
from roundtable_console.store.requests.deciding import decide_request
from roundtable_console.store.writes import agent_writes
from tests.api_support import seed_agent, seed_workspace
from tests.push_support import Device, Receiver
from tests.test_push import CONTACT, browser, turn_on, waiting
from tests.web_support import OTHER_WORKSPACE, WORKSPACE, register, tokens

HOOK = "/hook/secret-path"
ESCALATION = "/escalate/on-call"


@pytest.fixture
def receivers() -> Iterator[tuple[Receiver, Receiver]]:
    service, hook = Receiver(), Receiver()
    yield service, hook
    service.close()
    hook.close()


def serving(
    store: Store, service: Receiver, hook: Receiver, budgets: tuple[Any, ...] = (), **settings: Any
) -> Iterator[Any]:
    seed_workspace(store, WORKSPACE)
    seed_workspace(store, OTHER_WORKSPACE)
    seed_agent(store, "agent-1")
    notify = NotifySettings(
        dwell=0, cooling=60, push_services=(service.origin,), contact=CONTACT,
        webhooks=(hook.origin + HOOK,), **settings,
    )  # fmt: skip
    ctx = ServerContext(store=store, notify=notify, budgets=budgets)
    made = tokens(store)
    with TestClient(create_app(ctx, read_only=False), base_url="http://127.0.0.1:8080") as client:
        ctx.notifier.start()
        yield {"ctx": ctx, "tokens": made, "client": client, "store": store}
    ctx.notifier.close()


@pytest.fixture
def told(store: Store, receivers: tuple[Receiver, Receiver]) -> Iterator[dict[str, Any]]:
    yield from serving(store, *receivers, again=0)


@pytest.fixture
def told_again(store: Store, receivers: tuple[Receiver, Receiver]) -> Iterator[dict[str, Any]]:
    service, hook = receivers
    yield from serving(store, service, hook, again=1.0, escalate=(hook.origin + ESCALATION,))


def device_on(told: dict[str, Any], service: Receiver) -> Device:
    """A device an operator turned on, of every kind."""
    device = Device(service)
    assert turn_on(browser(told), device).status_code == 200
    return device


def ask(store: Store, session_id: str, command: str = "make deploy") -> str:
    return asking.open_request(
        store, session_id=session_id, agent="claude-code", tool_name="Bash",
        tool_input={"command": command}, suggestions=None, reason=f"asks to run Bash: {command}",
        wait_seconds=120,
    ).id  # fmt: skip


def read_changes(store: Store) -> list[Change]:
    """Every change the feed reads from the first row: as a second server would."""
    feed = ChangeFeed(filters=ChangeFilter(heartbeats=True), stale_after_seconds=300)
    with store.read() as db:
        feed.resume(db=db, position=FeedPosition(0, None, datetime.now(UTC)))
        return feed.read(db=db)


def told_rows(store: Store, session_id: str) -> list[tuple[str, str | None, str | None]]:
    with store.read() as db:
        rows = db.execute(
            text("SELECT receiver, again_at, answered_how FROM push_told"
                 " WHERE session_id = :s ORDER BY receiver"), {"s": session_id},
        ).all()  # fmt: skip
    return [(receiver.split(":")[0], again, how) for receiver, again, how in rows]


def test_a_decision_closes_the_devices_notice_and_tells_the_webhook_by_whom(
    told: dict[str, Any], receivers: tuple[Receiver, Receiver]
) -> None:
    service, hook = receivers
    store = told["store"]
    device = device_on(told, service)
    waiting(store, "s-ask")
    request_id = ask(store, "s-ask")
    told["ctx"].notifier.tell("s-ask", "needs_you")
    notice = device.decrypt(service.next())
    assert (notice["kind"], notice["tag"]) == ("needs_you", "roundtable:s-ask")
    assert json.loads(hook.next().body)["event"] == "roundtable.needs_you"
    assert told_rows(store, "s-ask") == [("push", None, None), ("webhook", None, None)]

    decide_request(store=store, request_id=request_id, decision="allow", actor="olivia")
    answered = device.decrypt(service.next())
    assert answered == {"kind": "answered", "answered": "needs_you", "how": "allowed by olivia",
                        "tag": "roundtable:s-ask", "at": answered["at"]}  # fmt: skip
    follow_up = json.loads(hook.next().body)
    assert follow_up["event"] == "roundtable.answered" and follow_up["kind"] == "answered"
    assert (follow_up["answered"], follow_up["by"], follow_up["how"]) == (
        "needs_you", "olivia", "allowed"
    )  # fmt: skip
    assert follow_up["text"] == "agent-1: answered: s-ask · allowed by olivia"
    assert told_rows(store, "s-ask") == [("push", None, "allowed by olivia"),
                                         ("webhook", None, "allowed by olivia")]  # fmt: skip
    # Closed once: another server (or a later change) finds nothing open.
    told["ctx"].notifier.follow_up.answer(read_changes(store))
    with store.write() as db:
        agent_writes.heartbeat(db=db, session_id="s-ask")
    assert service.none_within(0.5) and hook.none_within(0.1)


def test_the_agent_going_on_or_its_next_turn_closes_it_too(
    told: dict[str, Any], receivers: tuple[Receiver, Receiver]
) -> None:
    """A wait the human answered in the agent's own terminal, and a turn followed by another:
    the agent's next heartbeat closes the notice."""
    service, hook = receivers
    store = told["store"]
    device = device_on(told, service)
    waiting(store, "s-term")
    told["ctx"].notifier.tell("s-term", "needs_you")
    assert device.decrypt(service.next())["kind"] == "needs_you"
    hook.next()
    with store.write() as db:
        agent_writes.heartbeat(db=db, session_id="s-term", status="running")
    closed = device.decrypt(service.next())
    assert (closed["kind"], closed["how"]) == ("answered", "the agent went on")
    follow_up = json.loads(hook.next().body)
    assert (follow_up["by"], follow_up["how"]) == (None, "the agent went on")

    register(store, "s-turn")
    with store.write() as db:
        agent_writes.heartbeat(db=db, session_id="s-turn", turn_done="Tests pass.")
    told["ctx"].notifier.tell("s-turn", "turn_done")
    assert device.decrypt(service.next())["kind"] == "turn_done"
    hook.next()
    with store.write() as db:  # the human's prompt: the agent works again
        agent_writes.heartbeat(db=db, session_id="s-turn", status="running")
    closed = device.decrypt(service.next())
    assert (closed["kind"], closed["answered"], closed["tag"]) == (
        "answered", "turn_done", "roundtable:s-turn"
    )  # fmt: skip


def test_news_still_held_is_not_closed(
    told: dict[str, Any], receivers: tuple[Receiver, Receiver]
) -> None:
    """A heartbeat that keeps the same wait, or an operator's look, answers nothing; a decision
    with another request pending moves the wait to it: the notice stays until that one is
    answered too."""
    service, hook = receivers
    store = told["store"]
    device = device_on(told, service)
    waiting(store, "s-held")
    first, second = ask(store, "s-held"), ask(store, "s-held", "make test")
    told["ctx"].notifier.tell("s-held", "needs_you")
    service.next()
    hook.next()
    with store.write() as db:
        agent_writes.heartbeat(db=db, session_id="s-held", waiting="asks to run Bash: make deploy")
    decide_request(store=store, request_id=first, decision="deny", actor="olivia")
    assert service.none_within(1.0)
    decide_request(store=store, request_id=second, decision="deny", actor="olivia")
    assert device.decrypt(service.next())["how"] == "denied by olivia"


def test_a_wait_ignored_is_told_once_more_then_to_the_escalation_webhooks_never_a_third_time(
    told_again: dict[str, Any], receivers: tuple[Receiver, Receiver]
) -> None:
    service, hook = receivers
    store = told_again["store"]
    device = device_on(told_again, service)
    waiting(store, "s-late")
    request_id = ask(store, "s-late")
    told_again["ctx"].notifier.tell("s-late", "needs_you")
    assert device.decrypt(service.next())["title"] == "agent-1 needs you"
    first = hook.next()
    assert first.path == HOOK
    again = device.decrypt(service.next(timeout=30))
    assert (again["title"], again["tag"]) == ("agent-1 still needs you", "roundtable:s-late")
    paths = sorted(hook.next().path for _ in range(2))
    assert paths == sorted([HOOK, ESCALATION])
    assert service.none_within(2.5) and hook.none_within(0.1)  # never a third time
    rows = told_rows(store, "s-late")
    assert len(rows) == 3 and all(again_at is not None for _, again_at, _ in rows)

    decide_request(store=store, request_id=request_id, decision="allow", actor="olivia")
    assert device.decrypt(service.next())["kind"] == "answered"
    follow_ups = sorted(hook.next().path for _ in range(2))
    assert follow_ups == sorted([HOOK, ESCALATION])  # the on-call hears it is over too


def test_a_stop_read_late_does_not_close_a_wait_told_after_it(
    told: dict[str, Any], receivers: tuple[Receiver, Receiver]
) -> None:
    """Of two servers, one reading behind the other sees a wait that stopped before the other
    told the next one: that wait is still open, and stays so."""
    service, hook = receivers
    store = told["store"]
    device_on(told, service)
    waiting(store, "s-late-read")
    told["ctx"].notifier.tell("s-late-read", "needs_you")
    service.next()
    hook.next()
    earlier = Change(at="2000-01-01T00:00:00.000000Z", session_id="s-late-read",
                     change="waiting_stopped", status="active", previous_status="active",
                     actor=None, reason=None)  # fmt: skip
    told["ctx"].notifier.follow_up.answer([earlier])
    assert service.none_within(0.5) and told_rows(store, "s-late-read")[0][2] is None


def test_what_a_webhook_says_pings_no_room_and_apple_gets_no_silent_push() -> None:
    assert chat_text("@ALL @Here @channel @everyone @allison") == (
        "@\u200bALL @\u200bHere @\u200bchannel @\u200beveryone @allison"
    )
    assert not takes_silent_pushes("https://web.push.apple.com/QGuQyavXutnMH")
    assert takes_silent_pushes("https://fcm.googleapis.com/fcm/send/abc")
