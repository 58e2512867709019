"""The fleet overview (O) and the detail screen's heartbeat sparkline, through the real app:
the numbers on screen are the store's, a change in the store shows, escape goes back."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from textual.widgets import Sparkline

from roundtable_console.screens.commands import session_commands
from roundtable_console.screens.fleet.bars import bar_cells, cost_words, token_words
from roundtable_console.screens.fleet.overview import OverviewScreen
from roundtable_console.screens.help import HelpScreen
from roundtable_console.screens.list.screen import SessionListScreen
from roundtable_console.screens.session.detail import SessionDetailScreen
from roundtable_console.store.clock import fixed_clock
from roundtable_console.store.db.database import Store, open_store
from roundtable_console.store.errors import DatabaseUnavailable
from roundtable_console.store.writes import agent_writes
from tests.test_tui_refresh import wait_for
from tests.test_tui_support import (
    FROZEN,
    add_session,
    console,
    press,
    screen_text,
    settle,
    sqlite_url,
)

BLOCKS = "█▏▎▍▌▋▊▉"


def usage(tokens_in: int, tokens_out: int, cost: float) -> dict[str, object]:
    return {"usage": {"input_tokens": tokens_in, "output_tokens": tokens_out, "cost_usd": cost}}


def fleet(db: Store) -> None:
    """Three agents over two runs, with usage; one waits for a human, one failed, one stale,
    one paused; two started within the last day, one two days ago."""
    hour = timedelta(hours=1)
    add_session(db, "s1", agent_id="ada", run_id="run-a", metadata=usage(1_000_000, 200_000, 12.5))
    add_session(db, "s2", agent_id="ada", run_id="run-b", metadata=usage(300_000, 0, 2.25))
    add_session(
        db,
        "s3",
        agent_id="grace",
        run_id="run-a",
        status="failed",
        metadata=usage(40_000, 2_000, 0.75),
        at=FROZEN - 2 * hour,
    )
    add_session(db, "s4", agent_id="linus", run_id="run-a", at=FROZEN - 48 * hour)  # stale
    add_session(db, "s5", agent_id="linus", run_id="run-b", status="paused")
    with db.write() as conn:
        agent_writes.heartbeat(
            db=conn, session_id="s2", waiting="approve the deploy", clock=fixed_clock(FROZEN)
        )


def bar_row(label: str, value: str, shown: str) -> bool:
    """A chart's row on screen: the label, its bar, its value."""
    return (
        re.search(rf"(?:^|\s){re.escape(label)} +[{BLOCKS}]+ +{re.escape(value)}( |$)", shown, re.M)
        is not None
    )


async def open_overview(pilot) -> None:  # type: ignore[no-untyped-def]
    await settle(pilot)
    await press(pilot, "O")


async def test_o_shows_the_fleet_in_numbers_and_escape_goes_back(tmp_path: Path, db: Store):
    fleet(db)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_overview(pilot)
        assert isinstance(app.screen, OverviewScreen)
        shown = screen_text(app)
        lines = shown.splitlines()
        assert "The fleet at a glance · 5 sessions · 1.5M tokens · $15.50" in shown
        assert "over 3 sessions with usage" in shown
        assert "Sessions by status · 5" in shown
        assert bar_row("active", "3", shown) and bar_row("paused", "1", shown)
        # Waiting (s2), unknown status (s3, failed), stale (s4): the list header's count.
        assert "Need a human · 3" in shown
        for reason, count in (
            ("waiting for a human", 1),
            ("unknown status", 1),
            ("stale (not seen)", 1),
            ("paused or stopped", 1),
        ):
            assert bar_row(reason, str(count), shown), reason
        assert "Tokens by agent · 1.5M" in shown and "Cost by run · $15.50" in shown
        ada = next(line for line in lines if line.lstrip().startswith("ada "))
        assert "1.5M" in ada and bar_cells(1, 1) in ada  # the leader's bar is full
        assert "grace" in shown and "42.0k" in shown and "$0.75" in shown
        assert "run-a" in shown and "run-b" in shown
        # s1, s2 and s5 started now, s3 two hours ago; s4 two days ago is not in the day.
        assert "Sessions started per hour, last 24 h · 4 started · busiest hour 3" in shown
        started = app.screen.query_one("#overview-started", Sparkline).data
        assert started is not None and list(started)[-1] == 3 and list(started)[-3] == 1
        await press(pilot, "escape")
        assert isinstance(app.screen, SessionListScreen)


async def test_the_overview_follows_the_store(tmp_path: Path, db: Store):
    fleet(db)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_overview(pilot)
        assert "5 sessions · 1.5M tokens" in screen_text(app)
        # Another writer adds a session with usage: it shows without ctrl+r or the timer.
        add_session(db, "s6", agent_id="turing", run_id="run-c", metadata=usage(9_000_000, 0, 40))
        await wait_for(pilot, lambda: "6 sessions" in screen_text(app), seconds=10)
        shown = screen_text(app)
        assert "6 sessions · 10.5M tokens · $55.50" in shown
        assert "turing" in shown and "9.0M" in shown and "run-c" in shown
        assert "Sessions started per hour, last 24 h · 5 started" in shown


async def test_usage_bars_sum_the_agents_beyond_the_leaders(tmp_path: Path, db: Store):
    for number in range(7):
        add_session(
            db,
            f"s{number}",
            agent_id=f"agent-{number}",
            metadata=usage(1000 * (number + 1), 0, number + 1),
        )
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_overview(pilot)
        lines = screen_text(app).splitlines()
        # The five with most tokens, then the two others summed: 1.0k + 2.0k.
        others = [line for line in lines if line.lstrip().startswith("2 others")]
        assert others and "3.0k" in others[0]
        assert any(line.lstrip().startswith("agent-6") and "7.0k" in line for line in lines)
        assert not any(line.lstrip().startswith("agent-0 ") for line in lines)


async def test_one_session_is_said_in_the_singular(tmp_path: Path, db: Store):
    add_session(db, "s1", agent_id="solo", metadata=usage(1000, 0, 1))
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_overview(pilot)
        shown = screen_text(app)
        assert "The fleet at a glance · 1 session · 1.0k tokens" in shown
        assert "over 1 session with usage" in shown


async def test_an_empty_store_says_there_is_no_usage(tmp_path: Path, db: Store):
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_overview(pilot)
        shown = screen_text(app)
        assert "No sessions yet." in shown
        assert "No agents with usage (metadata.usage) yet." in shown
        assert "Need a human · 0" in shown
        assert "0 started · busiest hour 0" in shown


async def test_a_store_that_cannot_be_read_is_said_and_retried(tmp_path: Path, db: Store):
    fleet(db)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_overview(pilot)
        store = app.ctx.store
        assert store is not None
        app.ctx.store = None  # as while the store is reopened
        await press(pilot, "ctrl+r")
        assert "The store is not open yet" in screen_text(app)
        app.ctx.store = store
        await press(pilot, "ctrl+r")
        shown = screen_text(app)
        assert "The store is not open yet" not in shown and "5 sessions" in shown


async def test_overview_is_in_the_palette_and_the_help(tmp_path: Path, db: Store):
    fleet(db)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        names = {name: callback for name, callback, _help in session_commands(app.screen)}
        assert "Overview of the fleet" in names
        names["Overview of the fleet"]()
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)
        await press(pilot, "escape", "question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert "the fleet at a glance" in screen_text(app)


async def test_d_flips_the_sort_now_that_o_opens_the_overview(tmp_path: Path, db: Store):
    add_session(db, "early", at=FROZEN - timedelta(minutes=5))
    add_session(db, "late", at=FROZEN)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "d")
        assert isinstance(app.screen, SessionListScreen)
        assert "sorted by started ▼ (o d)" in screen_text(app)


async def test_detail_shows_the_sessions_heartbeats_per_hour(tmp_path: Path, db: Store):
    add_session(db, "beating", at=FROZEN - timedelta(hours=30))
    with db.write() as conn:
        for minutes in (60 * 26, 60 * 5 + 10, 60 * 5 + 2, 30, 20, 10):
            at = FROZEN - timedelta(minutes=minutes)
            agent_writes.heartbeat(db=conn, session_id="beating", clock=fixed_clock(at))
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 50)) as pilot:
        await settle(pilot)
        await press(pilot, "enter")
        assert isinstance(app.screen, SessionDetailScreen)
        # 18:00 yesterday … 17:00 today (the clock reads 17:26).
        assert "Heartbeats per hour, last 24 h · 5 beats · busiest hour 2" in screen_text(app)
        beats = list(app.screen.query_one("#heartbeats", Sparkline).data or [])
        assert beats[-1] == 2 and beats[-2] == 1 and beats[-6] == 2 and sum(beats) == 5
        # A heartbeat from elsewhere shows as the detail reads its session again.
        with db.write() as conn:
            agent_writes.heartbeat(db=conn, session_id="beating", clock=fixed_clock(FROZEN))
        await wait_for(pilot, lambda: "6 beats" in screen_text(app), seconds=10)
        assert "6 beats · busiest hour 3" in screen_text(app)


async def test_a_session_without_heartbeats_says_so(tmp_path: Path, db: Store):
    add_session(db, "quiet")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 50)) as pilot:
        await settle(pilot)
        await press(pilot, "enter")
        assert "Heartbeats per hour, last 24 h · none in the last 24 h" in screen_text(app)


async def test_the_overview_on_each_backend(store_url: str) -> None:
    store = open_store(store_url)
    try:
        fleet(store)
        app = console(store_url)
        async with app.run_test(size=(120, 40)) as pilot:
            await open_overview(pilot)
            shown = screen_text(app)
            assert "5 sessions · 1.5M tokens · $15.50" in shown
            assert "Need a human · 3" in shown
            assert "4 started · busiest hour 3" in shown
    finally:
        store.dispose()


def test_words_for_tokens_and_cost() -> None:
    assert [token_words(v) for v in (950, 12_345, 4_500_000, 1.2e9)] == [
        "950",
        "12.3k",
        "4.5M",
        "1.2B",
    ]
    assert cost_words(1234.5) == "$1,234.50"
    assert bar_cells(0, 10) == "" and bar_cells(5, 0) == ""
    assert bar_cells(10, 10, width=4) == "████"
    assert bar_cells(1, 16, width=2) == "▏"  # an eighth of a cell at least
    assert bar_cells(5, 10, width=3) == "█▌"


async def test_heartbeats_that_cannot_be_read_say_so(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
):
    add_session(db, "beating")

    def unavailable(**_: object) -> list[int]:
        raise DatabaseUnavailable("The database is not answering; try again in a moment.")

    monkeypatch.setattr("roundtable_console.store.reads.overview.session_heartbeats", unavailable)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 50)) as pilot:
        await settle(pilot)
        await press(pilot, "enter")
        shown = screen_text(app)
        assert "Heartbeats per hour, last 24 h" in shown
        assert "Could not read the heartbeats of beating" in shown
        assert isinstance(app.screen, SessionDetailScreen)  # the rest of the detail is shown
        assert "Session beating" in shown
