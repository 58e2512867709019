"""Issue 46 point 3: budgets. A limit in tokens or dollars on what an agent, a run, a workspace
(or the fleet) spends, per UTC day or in all (``store.budgets``): counted from what the hooks
report (``usage_days``, written with the session's usage total), crossed at 80 % and at 100 %,
each crossing claimed once in the store whoever looks, seen only by those who may see it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from roundtable_console.store.access.walls import Wall
from roundtable_console.store.budgets.limits import Budget
from roundtable_console.store.budgets.spend_days import grown_by
from roundtable_console.store.budgets.standing import (
    budget_state,
    budget_states,
    cross_budgets,
    crossings_since,
    take_untold,
)
from roundtable_console.store.db.database import Store
from roundtable_console.store.writes import agent_writes
from roundtable_console.tui.config import ConfigError, load_settings

DAY_ONE = datetime(2026, 12, 6, 23, 0, tzinfo=UTC)
DAY_TWO = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def register(store: Store, session_id: str, *, agent: str = "a-1", run: str = "r-1",
             workspace: str | None = "ws-1") -> None:  # fmt: skip
    with store.write() as db:
        agent_writes.register(db=db, session_id=session_id, agent_id=agent, run_id=run,
                              adapter="codex", working_directory="/w",
                              workspace_id=workspace)  # fmt: skip


def spend(store: Store, session_id: str, clock: Clock, **usage: Any) -> None:
    """A hook's beat carrying the session's usage so far."""
    with store.write() as db:
        agent_writes.heartbeat(db=db, session_id=session_id, usage=usage, clock=clock)


def days(store: Store) -> list[tuple[Any, ...]]:
    with store.read() as db:
        return [tuple(row) for row in db.execute(text(
            "SELECT session_id, day, agent_id, run_id, workspace_id, tokens, cost_usd,"
            " unpriced_tokens FROM usage_days ORDER BY session_id, day"))]  # fmt: skip


# ----------------------------------------------------------------------------- the configuration


def test_budgets_are_read_from_the_configuration(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[[budgets]]\nname = "claude daily"\nagent = "claude-code"\ndollars = 25\n'
        'per = "day"\nstop = true\n\n'
        '[[budgets]]\nworkspace = "ws-a"\nrun = "r-9"\ntokens = 2_000_000\n\n'
        "[[budgets]]\ntokens = 10_000_000\n"
    )
    first, second, third = load_settings(config).budgets
    assert first == Budget(name="claude daily", unit="dollars", limit=25.0, per="day",
                           agent="claude-code", stop=True)  # fmt: skip
    assert (second.unit, second.limit, second.per, second.stop) == ("tokens", 2e6, "all", False)
    assert second.name == "run r-9 in workspace ws-a: 2,000,000 tokens"
    assert third.name == "every session: 10,000,000 tokens" and third.scoped() == []
    assert len({first.key, second.key, third.key}) == 3
    # A new name is the same budget (told once); a new limit is another (told anew).
    assert first._replace(name="x").key == first.key
    assert first._replace(limit=30.0).key != first.key


@pytest.mark.parametrize(
    ("toml", "said"),
    [
        ('[[budgets]]\nagent = "a"\n', "gives one limit: tokens = N or dollars = N"),
        ("[[budgets]]\ntokens = 5\ndollars = 1\n", "gives one limit"),
        ("[[budgets]]\ntokens = -5\n", "tokens is a whole number of tokens, more than 0"),
        ("[[budgets]]\ntokens = 1.5\n", "tokens is a whole number of tokens"),
        ("[[budgets]]\ndollars = nan\n", "dollars is a number of dollars"),
        ("[[budgets]]\ndollars = true\n", "dollars is a number of dollars"),
        ('[[budgets]]\ndollars = 1\nper = "week"\n', 'per is "day" or "all"'),
        ('[[budgets]]\ndollars = 1\nstop = "yes"\n', "stop is true or false"),
        ('[[budgets]]\ndollars = 1\nagnet = "a"\n', "has no key 'agnet'"),
        ("[[budgets]]\ndollars = 1\nagent = 5\n", "agent is a name, as text"),
        ('[[budgets]]\ndollars = 1\nagent = "a\\u001b[2J"\n', "agent is a name, as text"),
        ("budgets = 5\n", "budgets is a list of tables"),
        (
            '[[budgets]]\nname = "x"\ndollars = 1\n[[budgets]]\nname = "x"\ntokens = 1\n',
            "Two budgets are named 'x'",
        ),
    ],
)
def test_a_bad_budget_is_a_clear_error(tmp_path: Path, toml: str, said: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text(toml)
    with pytest.raises(ConfigError) as error:
        load_settings(config)
    assert said in str(error.value) and str(config) in str(error.value)


# ------------------------------------------------------------------------------------- spending


def test_what_a_session_spent_is_counted_on_the_day_it_grew(store: Store) -> None:
    register(store, "s-1")
    spend(
        store, "s-1", Clock(DAY_ONE), input_tokens=1000, output_tokens=100, model="claude-sonnet-4"
    )
    spend(
        store, "s-1", Clock(DAY_ONE), input_tokens=1000, output_tokens=100, model="claude-sonnet-4"
    )
    spend(
        store, "s-1", Clock(DAY_TWO), input_tokens=3000, output_tokens=300, model="claude-sonnet-4"
    )
    # An agent that counts again from zero (a restart it does not say) takes nothing back.
    spend(store, "s-1", Clock(DAY_TWO), input_tokens=10, model="claude-sonnet-4")
    rows = days(store)
    assert [row[:6] for row in rows] == [
        ("s-1", "2026-12-06", "a-1", "r-1", "ws-1", 1100),
        ("s-1", "2026-12-07", "a-1", "r-1", "ws-1", 2200),
    ]
    assert rows[0][6] == pytest.approx(0.0045) and rows[1][6] == pytest.approx(0.009)
    register(store, "s-2", agent="a-2")
    spend(store, "s-2", Clock(DAY_TWO), input_tokens=500, model="mystery")  # no known price
    assert days(store)[-1][5:] == (500, 0.0, 500)


def test_what_grew_is_measured_from_what_was_counted_never_less_than_nothing() -> None:
    assert grown_by((100, 0.5), {"total_tokens": 150, "cost_usd": 0.75}) == (50, 0.25, 0)
    assert grown_by(None, {"total_tokens": 150, "cost_basis": "unknown"}) == (150, 0.0, 150)
    assert grown_by((100, 0.5), {"total_tokens": 100, "cost_usd": 0.5}) is None
    assert grown_by((100, 0.5), {"total_tokens": 10, "cost_usd": 0.1}) is None


def test_what_the_agent_writes_in_its_metadata_never_moves_the_count(store: Store) -> None:
    """The count grows from its own rows: a register that replaces the metadata (the hook then
    tells the whole total again), a total told down then up, a baseline planted in the
    metadata, none of them counts anything twice or takes anything back."""
    register(store, "s-1")
    clock = Clock(DAY_TWO)
    spend(store, "s-1", clock, input_tokens=1000)
    for _ in range(3):  # resumed: registered again, its hook tells the total again
        register(store, "s-1")
        spend(store, "s-1", clock, input_tokens=1000)
    for _ in range(3):  # down and up again
        spend(store, "s-1", clock, input_tokens=0)
        spend(store, "s-1", clock, input_tokens=1200)
    with store.write() as db:  # a baseline planted far below zero, then a small report
        db.execute(text("UPDATE agent_sessions SET metadata_json = :m WHERE id = 's-1'"),
                   {"m": '{"usage": {"total_tokens": -4e18, "cost_usd": -1e308}}'})  # fmt: skip
    spend(store, "s-1", clock, input_tokens=1201, cost_usd=1.0)
    assert [row[5:] for row in days(store)] == [(1201, 1.0, 1200)]  # 1,200 told with no price
    register(store, "s-1", run="r-2")  # registered again under another run: counted there
    spend(store, "s-1", clock, input_tokens=1500, cost_usd=1.0)
    assert [(row[3], row[5]) for row in days(store)] == [("r-1", 1201), ("r-2", 299)]


def test_a_budget_counts_its_agent_run_or_workspace_per_day_or_in_all(store: Store) -> None:
    register(store, "s-1", agent="a-1", run="r-1", workspace="ws-1")
    register(store, "s-2", agent="a-1", run="r-2", workspace="ws-2")
    register(store, "s-3", agent="a-2", run="r-1", workspace="ws-1")
    spend(store, "s-1", Clock(DAY_ONE), input_tokens=100)
    spend(store, "s-2", Clock(DAY_TWO), input_tokens=20)
    spend(store, "s-3", Clock(DAY_TWO), input_tokens=3)
    counted = {
        Budget("agent a-1", "tokens", 1000, agent="a-1"): 120,
        Budget("agent a-1 today", "tokens", 1000, per="day", agent="a-1"): 20,
        Budget("run r-1", "tokens", 1000, run="r-1"): 103,
        Budget("ws-1 today", "tokens", 1000, per="day", workspace="ws-1"): 3,
        Budget("a-1 in ws-1", "tokens", 1000, agent="a-1", workspace="ws-1"): 100,
        Budget("fleet", "tokens", 1000): 123,
    }
    with store.read() as db:
        found = {budget: budget_state(db, budget, DAY_TWO).spent for budget in counted}
    assert found == counted
    with store.read() as db:
        state = budget_state(db, Budget("fleet", "tokens", 160), DAY_TWO)
    assert (state.left, round(state.percent), state.level) == (37.0, 77, None)
    assert state.words() == "123 tokens of 160 tokens (77 %), 37 tokens left"


def test_a_dollar_budget_says_what_it_could_not_price(store: Store) -> None:
    register(store, "s-1")
    register(store, "s-2")
    spend(store, "s-1", Clock(DAY_TWO), input_tokens=1_000_000, model="claude-sonnet-4")
    spend(store, "s-2", Clock(DAY_TWO), input_tokens=4000, model="mystery")
    with store.read() as db:
        state = budget_state(db, Budget("d", "dollars", 4.0, per="day"), DAY_TWO)
    assert state.words() == (
        "$3.00 of $4.00 (75 %), $1.00 left; 4,000 tokens of unknown price not counted today (UTC)"
    )


# ------------------------------------------------------------------------------------- crossings


def test_a_budget_is_told_once_at_80_and_once_at_100(store: Store) -> None:
    register(store, "s-1")
    budget = Budget("a-1's", "tokens", 1000, agent="a-1")
    clock = Clock(DAY_TWO)
    spend(store, "s-1", clock, input_tokens=700)
    assert cross_budgets(store, [budget], clock=clock) == []
    spend(store, "s-1", clock, input_tokens=820)
    first = cross_budgets(store, [budget], clock=clock)
    assert [(c.level, c.name, c.spent) for c in first] == [(80, "a-1's", 820)]
    assert first[0].title == "Budget a-1's at 80 %"
    assert first[0].body == "820 tokens of 1,000 tokens spent."
    assert cross_budgets(store, [budget], clock=clock) == []  # told: never again
    spend(store, "s-1", clock, input_tokens=990)
    assert cross_budgets(store, [budget], clock=clock) == []
    spend(store, "s-1", clock, input_tokens=1000)
    second = cross_budgets(store, [budget], clock=clock)
    assert [(c.level, c.title) for c in second] == [(100, "Budget a-1's reached")]
    spend(store, "s-1", clock, input_tokens=5000)
    assert cross_budgets(store, [budget, budget], clock=clock) == []
    # Another looker (a second server, a console) finds them claimed.
    assert cross_budgets(store, [budget._replace(name="renamed")], clock=clock) == []


def test_a_budget_passed_in_one_step_is_told_once_at_100(store: Store) -> None:
    register(store, "s-1")
    budget = Budget("stopper", "dollars", 1.0, per="day", stop=True)
    spend(store, "s-1", Clock(DAY_TWO), input_tokens=10, cost_usd=2.5)
    crossed = cross_budgets(store, [budget], clock=Clock(DAY_TWO))
    assert [(c.level, c.period, c.stop) for c in crossed] == [(100, "2026-12-07", True)]
    assert (
        crossed[0].body == "$2.50 of $1.00 spent on 2026-12-07 (UTC); its agents are being stopped."
    )
    with store.read() as db:
        assert db.execute(text("SELECT count(*) FROM budget_crossings")).scalar() == 2


def test_a_days_budget_starts_again_the_next_day_and_a_new_limit_is_a_new_budget(
    store: Store,
) -> None:
    register(store, "s-1")
    budget = Budget("daily", "tokens", 100, per="day")
    spend(store, "s-1", Clock(DAY_ONE), input_tokens=90)
    assert [c.period for c in cross_budgets(store, [budget], clock=Clock(DAY_ONE))] == [
        "2026-12-06"
    ]
    assert cross_budgets(store, [budget], clock=Clock(DAY_TWO)) == []  # a new day: nothing yet
    spend(store, "s-1", Clock(DAY_TWO), input_tokens=175)
    assert [(c.level, c.period) for c in cross_budgets(store, [budget], clock=Clock(DAY_TWO))] == [
        (80, "2026-12-07")
    ]
    assert [c.level for c in cross_budgets(store, [budget._replace(limit=50)],
                                           clock=Clock(DAY_TWO))] == [100]  # fmt: skip


def test_who_may_see_a_budget_and_its_crossings(store: Store) -> None:
    register(store, "s-1", workspace="ws-1")
    fleet = Budget("fleet", "tokens", 10)
    own = Budget("ws-1's", "tokens", 10, workspace="ws-1")
    other = Budget("ws-2's", "tokens", 10, workspace="ws-2")
    spend(store, "s-1", Clock(DAY_TWO), input_tokens=50)
    assert len(cross_budgets(store, [fleet, own, other], clock=Clock(DAY_TWO))) == 2
    since = "2026-12-07"
    bound = Wall.of(["ws-1"])
    with store.read() as db:
        assert sorted(c.name for c in crossings_since(db, since)) == ["fleet", "ws-1's"]
        assert [c.name for c in crossings_since(db, since, bound)] == ["ws-1's"]
        assert [c.name for c in crossings_since(db, since, Wall.of(["ws-2"]))] == []
        seen = [
            state.budget.name for state in budget_states(db, [fleet, own, other], DAY_TWO, bound)
        ]
    assert seen == ["ws-1's"]  # the fleet's sums cross walls: only an unbound token sees them


def test_a_server_takes_each_crossing_to_tell_once(store: Store) -> None:
    register(store, "s-1")
    clock = Clock(DAY_TWO)
    spend(store, "s-1", clock, input_tokens=50)
    cross_budgets(store, [Budget("b", "tokens", 10)], clock=clock)  # a console claimed it
    assert [c.level for c in take_untold(store, clock=clock)] == [100]
    assert take_untold(store, clock=clock) == []  # a second server finds nothing
    register(store, "s-2", agent="a-9")
    spend(store, "s-2", clock, input_tokens=50)
    cross_budgets(store, [Budget("old", "tokens", 10, agent="a-9")], clock=clock)
    later = Clock(DAY_TWO + timedelta(hours=2))  # a server started long after: not told now
    assert take_untold(store, clock=later) == []


def test_sessions_that_spent_before_the_migration_are_counted(store: Store, store_url: str) -> None:
    """Migration 0024 seeds ``usage_days`` from each session's usage total, on the day it was
    last seen: a store upgraded from 0023 counts what its sessions spent before."""
    from roundtable_console.store.db.database import open_store

    register(store, "s-1")
    register(store, "s-2")
    spend(store, "s-1", Clock(DAY_ONE), input_tokens=1000, output_tokens=5, cost_usd=0.5)
    with store.write() as db:
        db.execute(text("DELETE FROM usage_days"))
        db.execute(text("UPDATE agent_sessions SET metadata_json = :m WHERE id = 's-2'"),
                   {"m": '{"usage": {"input_tokens": 7, "output_tokens": 3}}'})  # fmt: skip
        for session_id, metadata in (  # what no hook could report is left out
            ("s-3", '{"usage": {"total_tokens": 1e300, "cost_usd": -5}}'),
            ("s-4", '{"usage": {"total_tokens": 1e16, "output_tokens": 4}}'),
            ("s-5", "[1, 2]"),
        ):
            agent_writes.register(db=db, session_id=session_id, agent_id="a-1", run_id="r-1",
                                  adapter="codex", working_directory="/w")  # fmt: skip
            db.execute(text("UPDATE agent_sessions SET metadata_json = :m WHERE id = :id"),
                       {"m": metadata, "id": session_id})  # fmt: skip
        db.execute(text("UPDATE alembic_version SET version_num = '0023_tool_call_events'"))
    store.dispose()
    upgraded = open_store(store_url)
    try:
        seeded = days(upgraded)
        assert [row[:1] + row[2:] for row in seeded] == [
            ("s-1", "a-1", "r-1", "ws-1", 1005, 0.5, 0),
            ("s-2", "a-1", "r-1", "ws-1", 10, 0.0, 10),
            ("s-3", "a-1", "r-1", "", 0, 0.0, 0),
            ("s-4", "a-1", "r-1", "", 4, 0.0, 4),  # its total out of bounds: its parts
        ]
        assert seeded[0][1] == "2026-12-06"
    finally:
        upgraded.dispose()


BUDGETS_TOML = """
[[budgets]]
name = "a1 daily"
agent = "a1"
tokens = 1000
per = "day"
stop = true

[[budgets]]
name = "ws-b's"
workspace = "ws-b"
dollars = 10
"""


def test_roundtable_budgets_lists_each_on_the_store_and_through_a_server(
    rt: Any, tmp_path: Path, isolated_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from roundtable_console.store.access.tokens import create_token
    from tests.serve_support import serving

    config = tmp_path / "xdg-config" / "roundtable" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(BUDGETS_TOML)
    rt.register("s1")
    rt.with_store(lambda opened: spend(opened, "s1", rt.clock, input_tokens=850))
    listed = rt("budgets")
    assert listed.exit_code == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        "a1 daily\tagent a1\tday\t1,000\t850\t150\t85\tyes",
        "ws-b's\tworkspace ws-b\tall\t$10.00\t$0.00\t$10.00\t0\t",
    ]
    first = rt.json("budgets")["budgets"][0]
    assert (first["name"], first["spent"], first["level"], first["period"]) == (
        "a1 daily", 850.0, 80, format_day(rt.clock()))  # fmt: skip
    config.write_text("")  # the command line's config no longer matters: the server's does
    served_config = tmp_path / "serve-home" / "config" / "roundtable" / "config.toml"
    served_config.parent.mkdir(parents=True)
    served_config.write_text(BUDGETS_TOML)
    bound = rt.with_store(lambda opened: create_token(
        store=opened, name="bea", role="viewer", workspaces=("ws-b",)).token)  # fmt: skip
    everyone = rt.with_store(lambda opened: create_token(
        store=opened, name="vic", role="viewer").token)  # fmt: skip
    with serving(rt.url, tmp_path / "serve-home") as served:
        for token, names in ((everyone, ["a1 daily", "ws-b's"]), (bound, ["ws-b's"])):
            monkeypatch.setenv("RT_TOKEN", token)
            found = rt("budgets", "--server", served.url, "--token-env", "RT_TOKEN", "--json",
                       db=False)  # fmt: skip
            assert found.exit_code == 0, found.stderr
            assert [b["name"] for b in json.loads(found.stdout)["budgets"]] == names
    assert rt("budgets").stdout == ""  # a pipe gets no lines (a terminal: "No budgets: …")


def format_day(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d")


def test_the_newest_crossings_are_read_however_many_came_before(store: Store) -> None:
    with store.write() as db:
        for number in range(600):
            db.execute(text(
                "INSERT INTO budget_crossings (id, budget_key, period, level, name, workspace_id,"
                " unit, limit_amount, spent, stop, crossed_at) VALUES (:id, :id, 'all', 80, :id,"
                " 'ws-2', 'tokens', 10, 9, false, :at)"),
                {"id": f"old-{number:03}", "at": f"2026-12-07T01:{number:06}Z"},
            )  # fmt: skip
        db.execute(text(
            "INSERT INTO budget_crossings (id, budget_key, period, level, name, workspace_id, unit,"
            " limit_amount, spent, stop, crossed_at) VALUES ('new', 'new', 'all', 100, 'new',"
            " 'ws-1', 'tokens', 10, 11, false, '2026-12-07T02:00:00Z')"))  # fmt: skip
    with store.read() as db:
        every = crossings_since(db, "2026-12-07")
        own = crossings_since(db, "2026-12-07", Wall.of(["ws-1"]))
        none = crossings_since(db, "2026-12-07", Wall.of([]))
    assert len(every) == 500 and every[-1].id == "new"
    assert [crossing.id for crossing in own] == ["new"] and none == []


def test_a_stop_budget_stops_each_session_it_counts_once_while_it_stays_over(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Look after look: the live sessions it counts, each asked once (a stopped one is in the
    audit; one no stop reaches is passed over); a session that starts later in its scope is
    stopped at the next look; a budget under its limit, or of another scope, stops nothing."""
    from roundtable_console.agents import budget_stops
    from roundtable_console.store import service
    from roundtable_console.store.errors import AgentNotRunning

    asked: list[str] = []

    def stop(store_: Store, session_id: str, *, actor: str, **_: Any) -> None:
        asked.append(session_id)
        if session_id.startswith("by-hand"):
            raise AgentNotRunning("started by hand")
        service.record_agent_stopped(store=store_, session_id=session_id, actor=actor,
                                     payload={"signal": "SIGINT", "exited": True})  # fmt: skip

    monkeypatch.setattr(budget_stops, "stop_session_agent", stop)
    clock = Clock(DAY_TWO)
    for session_id, agent in (("s-1", "a-1"), ("by-hand", "a-1"), ("other", "a-2")):
        register(store, session_id, agent=agent)
    register(store, "s-ended", agent="a-1")
    with store.write() as db:
        agent_writes.end(db=db, session_id="s-ended")
    budget = Budget("hard", "tokens", 100, agent="a-1", stop=True)
    stopper = budget_stops.BudgetStopper(store, clock=clock)
    spend(store, "s-1", clock, input_tokens=99)
    assert stopper.stop_due([budget]) == {} and asked == []  # under its limit
    spend(store, "s-1", clock, input_tokens=100)
    assert stopper.stop_due([budget, budget._replace(stop=False, name="x")]) == {
        "hard": (("s-1",), ("by-hand",))
    }
    assert stopper.stop_due([budget]) == {"hard": ((), ())}  # each asked once
    register(store, "s-late", agent="a-1")
    assert stopper.stop_due([budget]) == {"hard": (("s-late",), ())}
    assert sorted(asked) == ["by-hand", "s-1", "s-late"]
    with store.read() as db:
        audited = db.execute(
            text(
                "SELECT session_id, actor FROM agent_session_events"
                " WHERE event_type = 'agent_stopped' ORDER BY session_id"
            )
        )
        assert [tuple(row) for row in audited] == [
            ("s-1", "budget:hard"),
            ("s-late", "budget:hard"),
        ]


def test_a_days_stop_budget_stops_a_session_again_the_next_day(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from roundtable_console.agents import budget_stops
    from roundtable_console.store import service

    asked: list[str] = []

    def stop(store_: Store, session_id: str, *, actor: str, clock: Any, **_: Any) -> None:
        asked.append(f"{session_id}@{clock():%d}")
        service.record_agent_stopped(store=store_, session_id=session_id, actor=actor,
                                     payload={"signal": "SIGINT", "exited": False},
                                     clock=clock)  # fmt: skip

    monkeypatch.setattr(budget_stops, "stop_session_agent", stop)
    budget = Budget("daily stop", "tokens", 100, per="day", stop=True)
    register(store, "s-1")
    day_three = DAY_TWO + timedelta(days=1)
    for moment in (DAY_TWO, DAY_TWO, day_three, day_three):
        clock = Clock(moment)
        spend(store, "s-1", clock, input_tokens=150 * (moment.day - 6))
        budget_stops.BudgetStopper(store, clock=clock).stop_due([budget])
    assert asked == ["s-1@07", "s-1@08"]  # once a day while over
