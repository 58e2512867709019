"""The list's live refresh reads the store only when it changed; the clock still moves the rows."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import LoadingIndicator

from roundtable_console.screens import context
from roundtable_console.screens.list import reading as list_reading
from roundtable_console.screens.list.screen import SessionListScreen
from roundtable_console.store.db.database import Store
from roundtable_console.store.window import rows as list_reads
from tests.conftest import FakeClock
from tests.test_tui_support import (
    FROZEN,
    add_claim,
    add_session,
    cell,
    console,
    press,
    row_ids,
    screen_text,
    settle,
    sqlite_url,
)

ROOT = Path(__file__).parent.parent
TICK = 0.1


class Spy:
    """Counts the calls to the store functions the list reads through list_reads."""

    READS = ("sessions_at", "list_sessions", "list_sessions_before")

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: dict[str, int] = {}
        for name in (*self.READS, "count_by_status"):
            real = getattr(list_reads, name)
            monkeypatch.setattr(list_reads, name, self._counting(name, real))

    def _counting(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def counting(**kwargs: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            return real(**kwargs)

        return counting

    @property
    def lists(self) -> int:
        return sum(self.calls.get(name, 0) for name in self.READS)

    @property
    def counts(self) -> int:
        return self.calls.get("count_by_status", 0)

    def reset(self) -> None:
        self.calls.clear()


def count_tokens(app: Any) -> list[object | None]:
    """Every change token the list takes (one per refresh, timed or not)."""
    store = app.ctx.store
    taken: list[object | None] = []
    real = store.change_token

    def spying() -> object | None:
        taken.append(real())
        return taken[-1]

    store.change_token = spying
    return taken


async def wait_for(pilot: Any, done: Callable[[], bool], seconds: float = 5.0) -> None:
    for _ in range(int(seconds / TICK)):
        await pilot.pause(TICK)
        if done():
            break
    await settle(pilot)


async def test_timed_refresh_without_change_reads_nothing(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_session(db, "s1")
    spy = Spy(monkeypatch)
    app = console(sqlite_url(tmp_path), refresh_seconds=TICK)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert row_ids(app) == ["s1"]
        assert spy.lists >= 1 and spy.counts == 1
        spy.reset()
        tokens = count_tokens(app)
        await wait_for(pilot, lambda: len(tokens) >= 5)
        assert len(tokens) >= 5, "the timer did not refresh"
        assert spy.lists == 0 and spy.counts == 0
        assert row_ids(app) == ["s1"]


async def test_a_write_from_another_process_shows_at_the_next_refresh(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_session(db, "first")
    spy = Spy(monkeypatch)
    app = console(sqlite_url(tmp_path), refresh_seconds=TICK)
    script = (
        "from roundtable_console.store.db.database import open_store\n"
        "from roundtable_console.store.writes import agent_writes\n"
        f"store = open_store({sqlite_url(tmp_path)!r})\n"
        "with store.write() as db:\n"
        "    agent_writes.register(db=db, session_id='from-outside', agent_id='a', run_id='r',"
        " adapter='codex', working_directory='/w')\n"
        "    agent_writes.end(db=db, session_id='first', status='ended')\n"
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.pause(3 * TICK)
        spy.reset()
        subprocess.run([sys.executable, "-c", script], check=True, cwd=ROOT)
        await wait_for(pilot, lambda: "from-outside" in row_ids(app))
        assert row_ids(app) == ["first", "from-outside"]
        assert "2 sessions · active 1 · ended 1" in screen_text(app)
        assert spy.lists >= 1 and spy.counts == 1


async def test_our_own_action_is_read_back_by_the_timer(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path), refresh_seconds=TICK)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        spy = Spy(monkeypatch)
        add_session(db, "s2", at=FROZEN + timedelta(seconds=1))  # through store.write()
        await wait_for(pilot, lambda: "s2" in row_ids(app))
        assert row_ids(app) == ["s1", "s2"]
        assert spy.counts == 1
        assert "2 sessions · active 2" in screen_text(app)


async def test_ctrl_r_always_reads_the_list(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_session(db, "s1")
    spy = Spy(monkeypatch)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        spy.reset()
        await press(pilot, "ctrl+r")
        assert spy.lists == 1
        await press(pilot, "ctrl+r")
        assert spy.lists == 2
        # The counts by status are the same store's: kept until the store changes.
        assert spy.counts == 0
        add_session(db, "s2", at=FROZEN + timedelta(seconds=1))
        await press(pilot, "ctrl+r")
        # ctrl+r's read, and the read the change itself may have set off meanwhile; the counts
        # of the new token are read once, by whichever came first.
        assert spy.lists in (3, 4) and spy.counts == 1
        assert row_ids(app) == ["s1", "s2"]


async def test_filters_read_rows_but_reuse_counts_of_an_unchanged_store(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_session(db, "s1")
    add_session(db, "s2", status="paused")
    spy = Spy(monkeypatch)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        spy.reset()
        await press(pilot, "f", "f")  # status starting, then active
        assert row_ids(app) == ["s1"]
        await press(pilot, "o")
        assert spy.lists == 3 and spy.counts == 0
        assert "2 sessions · active 1 · paused 1" in screen_text(app)


async def test_relative_times_and_stale_marking_advance_on_a_skipped_refresh(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_session(db, "s1")
    clock = FakeClock(FROZEN)
    spy = Spy(monkeypatch)
    app = console(sqlite_url(tmp_path), clock=clock, refresh_seconds=TICK)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert cell(app, "s1", "seen") == "0s ago"
        assert "stale" not in cell(app, "s1", "status")
        spy.reset()
        clock.advance(minutes=6)
        await wait_for(pilot, lambda: cell(app, "s1", "seen") == "6m ago")
        assert cell(app, "s1", "seen") == "6m ago"
        assert "stale" in cell(app, "s1", "status")
        assert spy.lists == 0 and spy.counts == 0


async def test_claims_expiring_by_the_clock_show_on_a_skipped_refresh(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_session(db, "s1", agent_id="agent-a")
    add_claim(db, "c1", agent_id="agent-a", resource_id="a.py", expires_in=timedelta(minutes=1))
    clock = FakeClock(FROZEN)
    spy = Spy(monkeypatch)
    app = console(sqlite_url(tmp_path), clock=clock, refresh_seconds=TICK)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert cell(app, "s1", "claims") == "1"
        spy.reset()
        clock.advance(minutes=2)
        await wait_for(pilot, lambda: cell(app, "s1", "claims") == "0 +1")
        assert cell(app, "s1", "claims") == "0 +1"
        assert spy.lists == 0 and spy.counts == 0


async def test_the_stale_filter_is_read_again_as_the_clock_moves(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_session(db, "s1")
    clock = FakeClock(FROZEN)
    app = console(sqlite_url(tmp_path), clock=clock, refresh_seconds=TICK)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "S")
        assert row_ids(app) == []
        spy = Spy(monkeypatch)
        clock.advance(minutes=6)
        await wait_for(pilot, lambda: row_ids(app) == ["s1"])
        assert row_ids(app) == ["s1"]
        assert spy.lists >= 1 and spy.counts == 0


REGISTER_FROM_OUTSIDE = (
    "import sys\n"
    "from roundtable_console.store.db.database import open_store\n"
    "from roundtable_console.store.writes import agent_writes\n"
    "store = open_store(sys.argv[1])\n"
    "with store.write() as db:\n"
    "    agent_writes.register(db=db, session_id='from-outside', agent_id='a', run_id='r',"
    " adapter='codex', working_directory='/w')\n"
    "store.dispose()\n"
)


async def test_a_change_shows_at_once_without_the_timer(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The timer is an hour away: the other process's commit still shows, because the store
    says it changed (PostgreSQL: a notification; SQLite: its data version); and one change
    costs one read of the window, not a stream of them."""
    add_session(store, "first")
    url = store.engine.url.render_as_string(hide_password=False)
    spy = Spy(monkeypatch)
    app = console(url, refresh_seconds=3600)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert row_ids(app) == ["first"]
        spy.reset()
        subprocess.run([sys.executable, "-c", REGISTER_FROM_OUTSIDE, url], check=True, cwd=ROOT)
        await wait_for(pilot, lambda: "from-outside" in row_ids(app), seconds=10)
        assert row_ids(app) == ["first", "from-outside"]
        assert "2 sessions · active 2" in screen_text(app)
        await pilot.pause(1.0)
        await settle(pilot)
        assert 1 <= spy.lists <= 2 and spy.counts <= 2


async def test_an_idle_console_reads_nothing_on_postgresql(
    pg_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL too, a timed refresh of an unchanged store reads no table: the listening
    connection has heard of no change."""
    add_session(pg_store, "s1")
    url = pg_store.engine.url.render_as_string(hide_password=False)
    spy = Spy(monkeypatch)
    app = console(url, refresh_seconds=TICK)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.pause(0.5)  # our own first reads' notifications, if any, have arrived
        await settle(pilot)
        spy.reset()
        tokens = count_tokens(app)
        await wait_for(pilot, lambda: len(tokens) >= 5)
        assert len(tokens) >= 5 and all(token is not None for token in tokens)
        assert spy.lists == 0 and spy.counts == 0
        assert row_ids(app) == ["s1"]


async def test_a_read_never_covers_the_list_with_a_loading_indicator(tmp_path: Path, db: Store):
    """Textual's ``loading`` on a widget replaces it with a loading indicator: the list's own
    "a read is under way" is another attribute, so a refresh (every few seconds) repaints rows,
    not the whole screen twice."""
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionListScreen)
        screen.reload()
        assert screen.model.in_flight
        assert not screen.loading
        await pilot.pause()
        assert not screen.query(LoadingIndicator)
        await settle(pilot)
        assert not screen.model.in_flight
        assert "s1" in screen_text(app)


async def test_the_attention_order_is_read_again_only_once_the_clock_moves_a_session(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh session goes stale at a known time: until then a timed refresh of an unchanged
    store reads nothing; from then on the list is read again and the session moves up."""
    add_session(db, "held", at=FROZEN - timedelta(minutes=1), status="paused")
    add_session(db, "quiet", at=FROZEN - timedelta(minutes=3))  # stale in 2 minutes
    clock = FakeClock(FROZEN)
    spy = Spy(monkeypatch)
    app = console(sqlite_url(tmp_path), refresh_seconds=TICK, clock=clock, sort="attention")
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        assert row_ids(app) == ["held", "quiet"]
        spy.reset()
        tokens = count_tokens(app)
        clock.advance(seconds=100)  # still fresh
        await wait_for(pilot, lambda: len(tokens) >= 5)
        assert len(tokens) >= 5, "the timer did not refresh"
        assert spy.lists == 0
        clock.advance(seconds=30)  # unseen for 5m10s: stale
        await wait_for(pilot, lambda: row_ids(app) == ["quiet", "held"])
        assert row_ids(app) == ["quiet", "held"]
        assert spy.lists >= 1


async def test_a_change_read_waits_while_the_operator_moves_through_the_list(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys first: a change that arrives while the operator presses keys is read once they
    pause (here for two seconds), not between their key presses."""
    for number in range(10):
        add_session(db, f"s{number:02d}")
    monkeypatch.setattr(context, "INPUT_QUIET_SECONDS", 2.0)
    monkeypatch.setattr(list_reading, "INPUT_HOLD_SECONDS", 60.0)
    spy = Spy(monkeypatch)
    app = console(sqlite_url(tmp_path), refresh_seconds=3600)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        spy.reset()
        await pilot.press("down", "up")  # keys already going when the change arrives
        add_session(db, "from-outside")
        for _ in range(10):  # about two seconds of keys, far apart enough to hear the change
            await pilot.press("down", "up")
            await pilot.pause(0.2)
        assert spy.lists == 0 and "from-outside" not in row_ids(app)
        quiet_from = time.monotonic()
        await wait_for(pilot, lambda: "from-outside" in row_ids(app))
        assert "from-outside" in row_ids(app) and spy.lists >= 1
        assert time.monotonic() - quiet_from >= 0.5  # read once the keys paused, not before


async def test_keys_hold_a_change_read_back_only_so_long(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However long the operator keeps pressing keys, a change shows within the hold."""
    for number in range(10):
        add_session(db, f"s{number:02d}")
    monkeypatch.setattr(context, "INPUT_QUIET_SECONDS", 60.0)
    monkeypatch.setattr(list_reading, "INPUT_HOLD_SECONDS", 0.5)
    app = console(sqlite_url(tmp_path), refresh_seconds=3600)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        add_session(db, "from-outside")
        pressed = 0
        started = time.monotonic()
        while "from-outside" not in row_ids(app) and pressed < 100:
            await pilot.press("down", "up")
            await pilot.pause(0.05)
            pressed += 1
        assert "from-outside" in row_ids(app), "the keys held the change back for good"
        # It was held while the keys went on: for the hold's time, however slowly the machine
        # got through the key presses meanwhile (a count of them would measure the machine).
        assert time.monotonic() - started >= 0.4, pressed
