"""Issue 44 point 4: each kind of news distinct. A session that fails, or goes stale while its
agent holds claims, is told as ``failed`` with a title of its own, to the devices that chose
that kind; a stale session holding nothing is told nothing; the notice is closed when the
session is seen again. On both engines, the server's own notifier running (tests/
test_push_answered.py's), the pushes decrypted at the loopback push service."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import text

from roundtable_console.store.db.database import Store
from roundtable_console.store.writes import agent_writes
from tests.api_support import seed_agent
from tests.push_support import Device, Receiver
from tests.test_push import browser, turn_on
from tests.test_push_answered import device_on, receivers, serving  # noqa: F401 - a fixture
from tests.web_support import OTHER_WORKSPACE, WORKSPACE, hold_claim, register

LONG_AGO = "2000-01-01T00:00:00.000000Z"


@pytest.fixture
def told(store: Store, receivers: tuple[Receiver, Receiver]) -> Iterator[dict[str, Any]]:  # noqa: F811
    yield from serving(store, *receivers, again=0)


def claim_in(store: Store, agent: str, workspace: str, claim_id: str) -> None:
    hold_claim(store, agent, claim_id)
    with store.write() as db:
        db.execute(text("UPDATE claims SET workspace_id = :w WHERE id = :id"),
                   {"w": workspace, "id": claim_id})  # fmt: skip


def unseen_since_long_ago(store: Store, session_id: str) -> None:
    with store.write() as db:
        db.execute(text("UPDATE agent_sessions SET last_seen_at = :at WHERE id = :id"),
                   {"at": LONG_AGO, "id": session_id})  # fmt: skip


def test_a_failed_session_is_told_to_the_devices_that_chose_it(
    told: dict[str, Any],
    receivers: tuple[Receiver, Receiver],  # noqa: F811
) -> None:
    service, hook = receivers
    store = told["store"]
    web = browser(told)
    every, waits_only = Device(service), Device(service)
    answer = turn_on(web, every)
    assert answer.json()["kinds"] == ["needs_you", "turn_done", "failed", "budget"]
    assert turn_on(web, waits_only, ["needs_you"]).status_code == 200
    register(store, "s-fail")
    with store.write() as db:
        agent_writes.end(db=db, session_id="s-fail", status="failed")
    told["ctx"].notifier.tell("s-fail", "failed")
    delivery = service.next()
    assert delivery.path == every.path and delivery.headers["urgency"] == "high"
    news = every.decrypt(delivery)
    assert (news["kind"], news["title"], news["body"], news["url"]) == (
        "failed", "agent-1 failed", "s-fail · failed", "/sessions/s-fail"
    )  # fmt: skip
    assert service.none_within(0.5)  # the other device chose "needs you" alone
    body = json.loads(hook.next().body)
    assert (body["event"], body["title"]) == ("roundtable.failed", "agent-1 failed")


def test_stale_is_news_only_while_the_agent_holds_claims_and_ends_when_seen_again(
    told: dict[str, Any],
    receivers: tuple[Receiver, Receiver],  # noqa: F811
) -> None:
    service, hook = receivers
    store = told["store"]
    device = device_on(told, service)
    seed_agent(store, "agent-2")
    register(store, "s-quiet", agent="agent-2")
    unseen_since_long_ago(store, "s-quiet")
    told["ctx"].notifier.tell("s-quiet", "failed")
    assert service.none_within(0.5)  # stale, but nobody waits on what it holds

    register(store, "s-held")
    unseen_since_long_ago(store, "s-held")
    claim_in(store, "agent-1", OTHER_WORKSPACE, "claim-elsewhere")
    told["ctx"].notifier.tell("s-held", "failed")
    assert service.none_within(0.5)  # another workspace's claim: not this workspace's news
    claim_in(store, "agent-1", WORKSPACE, "claim-here")
    told["ctx"].notifier.tell("s-held", "failed")
    news = device.decrypt(service.next())
    assert (news["title"], news["body"]) == (
        "agent-1 went stale", "s-held · went stale holding 1 claim"
    )  # fmt: skip
    hook.next()
    with store.write() as db:  # seen again: the notice is closed
        agent_writes.heartbeat(db=db, session_id="s-held")
    closed = device.decrypt(service.next())
    assert (closed["kind"], closed["answered"], closed["tag"]) == (
        "answered", "failed", "roundtable:s-held"
    )  # fmt: skip
    assert json.loads(hook.next().body)["how"] == "the agent went on"
