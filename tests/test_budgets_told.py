"""Issue 46 points 3 and 4: a budget crossed is told once at 80 % and once at 100 % — by the
console (on its store, and through a real ``roundtable serve``), and by a server to the devices
that chose budget news (the push decrypted at a loopback push service) and to its webhooks — and
a ``stop`` budget at 100 % stops the agents of its live sessions as ``stop-agent`` does, audited
as the budget's."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import text

from roundtable_console.api.notify.budget_watch import LOOK_EVERY
from roundtable_console.store import service
from roundtable_console.store.budgets.limits import Budget
from roundtable_console.store.db.database import Store
from roundtable_console.store.writes import agent_writes
from roundtable_console.tui.budget_news import LOOK_SECONDS as CONSOLE_LOOK
from tests.console_ways import ConsoleWay
from tests.push_support import Device, Receiver
from tests.test_agent_stop import AGENT, pane_running
from tests.test_push import browser, turn_on
from tests.test_push_answered import receivers, serving  # noqa: F401 - a fixture
from tests.test_tui_support import screen_text, settle
from tests.web_support import OTHER_WORKSPACE, WORKSPACE, register

BUDGET_TOML = '[[budgets]]\nname = "agent-x budget"\nagent = "agent-x"\ntokens = 1000\n'
TICK = 0.05


def beat(store: Store, session_id: str, tokens: int) -> None:
    """The session's hook reports what it spent so far."""
    with store.write() as db:
        agent_writes.heartbeat(db=db, session_id=session_id, usage={"input_tokens": tokens})


def crossings(store: Store) -> list[tuple[str, int]]:
    with store.read() as db:
        rows = db.execute(text("SELECT name, level FROM budget_crossings ORDER BY level"))
        return [(str(name), int(level)) for name, level in rows]


async def wait_for(pilot: Any, done: Callable[[], bool], seconds: float = 20.0) -> bool:
    for _ in range(int(seconds / TICK)):
        await pilot.pause(TICK)
        if done():
            return True
    return done()


async def test_the_console_tells_a_budget_once_at_80_and_once_at_100(way: ConsoleWay) -> None:
    store = way.store
    with store.write() as db:
        agent_writes.register(db=db, session_id="s-x", agent_id="agent-x", run_id="r-1",
                              adapter="codex", working_directory="/w")  # fmt: skip
    app = way.console(config=BUDGET_TOML)

    def told() -> list[tuple[str, str]]:
        return [(title, message) for title, message in app.notified if "Budget" in title]

    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        beat(store, "s-x", 850)
        assert await wait_for(pilot, lambda: len(told()) == 1), app.notified
        assert told() == [("Budget agent-x budget at 80 %",
                           "850 tokens of 1,000 tokens spent. Press O for the overview's "
                           "budgets.")]  # fmt: skip
        beat(store, "s-x", 900)
        beat(store, "s-x", 1200)
        assert await wait_for(pilot, lambda: len(told()) == 2), app.notified
        assert told()[1][0] == "Budget agent-x budget reached"
        assert told()[1][1].startswith("1,200 tokens of 1,000 tokens spent.")
        beat(store, "s-x", 5000)
        await pilot.pause(CONSOLE_LOOK + 1)  # another look at least: nothing more is told
        assert len(told()) == 2
        await pilot.press("O")
        assert await wait_for(
            pilot, lambda: "1,000 tokens (500 %), 0 tokens left" in screen_text(app)
        )
        assert "agent-x budget" in screen_text(app)
    assert crossings(store) == [("agent-x budget", 80), ("agent-x budget", 100)]


@pytest.fixture
def told(store: Store, receivers: tuple[Receiver, Receiver]) -> Iterator[dict[str, Any]]:  # noqa: F811
    budgets = (
        Budget("agent-1 budget", "tokens", 1000, agent="agent-1"),
        Budget("other workspace", "tokens", 1000, workspace=OTHER_WORKSPACE),
    )
    yield from serving(store, *receivers, budgets=budgets, again=0)


def test_a_server_tells_the_devices_and_webhooks_once_at_80_and_once_at_100(
    told: dict[str, Any],
    receivers: tuple[Receiver, Receiver],  # noqa: F811
) -> None:
    service_, hook = receivers
    store = told["store"]
    every = Device(service_)
    assert turn_on(browser(told), every).status_code == 200
    waits_only = Device(service_)
    assert turn_on(browser(told), waits_only, ["needs_you"]).status_code == 200
    bound = Device(service_)  # a token of the other workspace: not the fleet's agent's budget
    assert turn_on(browser(told, "bound"), bound).status_code == 200
    register(store, "s-1", workspace=WORKSPACE)
    beat(store, "s-1", 820)
    pushed = every.decrypt(service_.next())
    posted = json.loads(hook.next().body)
    assert (pushed["kind"], pushed["title"]) == ("budget", "Budget agent-1 budget at 80 %")
    assert pushed["body"] == "820 tokens of 1,000 tokens spent."
    assert pushed["url"] == "/overview#budgets" and pushed["tag"].startswith("roundtable:budget:")
    assert posted["event"] == "roundtable.budget"
    assert posted["text"] == "Budget agent-1 budget at 80 %: 820 tokens of 1,000 tokens spent."
    # Told once, to one device: nothing more at the next look (every LOOK_EVERY seconds).
    assert service_.none_within(LOOK_EVERY + 0.5) and hook.none_within(0.1)
    beat(store, "s-1", 1100)
    pushed_again = service_.next()
    assert pushed_again.path == every.path
    assert every.decrypt(pushed_again)["title"] == "Budget agent-1 budget reached"
    assert json.loads(hook.next().body)["title"] == "Budget agent-1 budget reached"
    beat(store, "s-1", 3000)
    assert service_.none_within(LOOK_EVERY + 0.5) and hook.none_within(0.1)
    # A budget of the other workspace: told to its token's device too (and to every workspace's).
    register(store, "s-2", workspace=OTHER_WORKSPACE)
    beat(store, "s-2", 900)
    deliveries = [service_.next(), service_.next()]
    assert {delivery.path for delivery in deliveries} == {every.path, bound.path}
    said = bound.decrypt(next(d for d in deliveries if d.path == bound.path))
    assert said["title"] == "Budget other workspace at 80 %"


def test_a_stop_budget_stops_its_agents_audited_as_the_budgets(
    store: Store,
    receivers: tuple[Receiver, Receiver],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At 100 % the agent of each live session is sent SIGINT where it runs (here: a process
    the pane stands for), recorded with the budget as its actor; a session whose agent was
    started by hand is left (nothing can reach it) and still told."""
    agent = subprocess.Popen([sys.executable, "-c", AGENT], stdout=subprocess.PIPE)
    assert agent.stdout is not None and agent.stdout.readline() == b"ready\n"
    pane_running(monkeypatch, agent)
    budget = Budget("hard stop", "dollars", 1.0, agent="agent-1", stop=True)
    try:
        for ready in serving(store, *receivers, budgets=(budget,), again=0):
            register(store, "s-launched", workspace=WORKSPACE)
            register(store, "s-by-hand", workspace=WORKSPACE)
            service.record_launch(store=store, session_id="s-launched", tmux_pane="%1",
                                  tmux_socket="/tmp/none", actor="olivia",
                                  tmux_server_pid="1", machine="here")  # fmt: skip
            with store.write() as db:
                agent_writes.heartbeat(db=db, session_id="s-by-hand",
                                       usage={"input_tokens": 10, "cost_usd": 1.5})  # fmt: skip
            assert agent.wait(timeout=30) < 0  # SIGINT ended it
            deadline = time.monotonic() + 15
            while not stopped_rows(store) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert stopped_rows(store) == [("s-launched", "budget:hard stop")]
            assert ready["ctx"].budgets == (budget,)
    finally:
        if agent.poll() is None:
            agent.kill()


def stopped_rows(store: Store) -> list[tuple[str, str]]:
    with store.read() as db:
        rows = db.execute(text("SELECT session_id, actor FROM agent_session_events"
                               " WHERE event_type = 'agent_stopped'"))  # fmt: skip
        return [(str(session), str(actor)) for session, actor in rows]
