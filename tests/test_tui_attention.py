"""The console opens in the attention order (issue 9 point 2): what needs a human first, a reason
on every row, the header's count, the clock moving a session up, and the quick first read."""

from __future__ import annotations

import random
import threading
import time
from datetime import timedelta
from pathlib import Path

from roundtable_console.store.clock import fixed_clock, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.writes import agent_writes
from tests.conftest import FakeClock
from tests.test_tui_support import (
    FROZEN,
    add_claim,
    add_session,
    cell,
    console,
    filter_line,
    grid,
    press,
    row_ids,
    screen_text,
    selected,
    settle,
    sqlite_url,
)


def wait_for_human(store: Store, session_id: str, reason: str, *, at: object = FROZEN) -> None:
    with store.write() as db:
        agent_writes.heartbeat(db=db, session_id=session_id, waiting=reason, clock=fixed_clock(at))


def a_fleet(db: Store) -> list[str]:
    add_session(db, "calm", at=FROZEN - timedelta(seconds=30))
    add_session(db, "gone", at=FROZEN - timedelta(minutes=50), status="ended")
    add_session(db, "broken", at=FROZEN - timedelta(minutes=3), status="failed")
    add_session(db, "quiet", at=FROZEN - timedelta(minutes=12))
    add_session(db, "held", at=FROZEN - timedelta(minutes=2), status="paused")
    add_session(db, "asks", at=FROZEN - timedelta(minutes=9))
    wait_for_human(db, "asks", "approve deleting build/", at=FROZEN - timedelta(minutes=4))
    add_claim(db, "c1", agent_id="agent-2", resource_id="src/a.py", expires_in=-timedelta(hours=1))
    add_session(db, "claimed", at=FROZEN - timedelta(seconds=10), agent_id="agent-2")
    return ["asks", "broken", "quiet", "held", "calm", "claimed", "gone"]


async def test_the_console_opens_with_what_needs_a_human_first(tmp_path: Path, db: Store) -> None:
    expected = a_fleet(db)
    app = console(sqlite_url(tmp_path), sort="attention")
    async with app.run_test(size=(200, 30)) as pilot:
        await settle(pilot)
        assert row_ids(app) == expected
        assert cell(app, "asks", "attention") == "waiting 4m: approve deleting build/"
        assert cell(app, "broken", "attention") == "status failed"
        assert cell(app, "quiet", "attention") == "stale 12m"
        assert cell(app, "held", "attention") == "paused 2m"
        assert cell(app, "claimed", "attention") == "1 claim expired"
        assert cell(app, "calm", "attention") == "—"
        shown = screen_text(app)
        assert "7 sessions · 3 need attention" in shown
        assert "sorted by attention ▲" in filter_line(app)
        # o moves to the next order, and a full cycle comes back to attention.
        await press(pilot, "o")
        assert "sorted by started ▲" in filter_line(app)
        for _ in range(4):
            await press(pilot, "o")
        assert "sorted by attention ▲" in filter_line(app)
        assert row_ids(app) == expected
        await press(pilot, "d")
        assert row_ids(app) == expected[::-1]


async def test_the_configured_sort_opens_the_list(tmp_path: Path, db: Store) -> None:
    a_fleet(db)
    app = console(sqlite_url(tmp_path), sort="started")
    async with app.run_test(size=(200, 30)) as pilot:
        await settle(pilot)
        assert "sorted by started ▲" in filter_line(app)
        assert row_ids(app)[0] == "gone"


async def test_a_session_going_stale_moves_up_with_the_clock(tmp_path: Path, db: Store) -> None:
    add_session(db, "held", at=FROZEN - timedelta(minutes=1), status="paused")
    add_session(db, "quiet", at=FROZEN - timedelta(minutes=4))
    clock = FakeClock(FROZEN)
    app = console(sqlite_url(tmp_path), sort="attention", clock=clock, refresh_seconds=0.05)
    async with app.run_test(size=(200, 30)) as pilot:
        await settle(pilot)
        assert row_ids(app) == ["held", "quiet"]
        assert "need attention" not in screen_text(app)
        clock.advance(minutes=2)  # quiet is now unseen for 6 minutes: stale
        await settle(pilot, rounds=20)
        assert row_ids(app) == ["quiet", "held"]
        assert cell(app, "quiet", "attention") == "stale 6m"
        assert "1 needs attention" in screen_text(app)


async def test_the_quick_first_read_is_in_the_attention_order(tmp_path: Path, db: Store) -> None:
    expected = a_fleet(db)
    app = console(sqlite_url(tmp_path), sort="attention", staged=True)
    async with app.run_test(size=(200, 30)) as pilot:
        await settle(pilot)
        assert row_ids(app) == expected
        assert cell(app, "claimed", "attention") == "1 claim expired"


def beat(store: Store, session_id: str, at: object) -> None:
    with store.write() as db:
        agent_writes.heartbeat(db=db, session_id=session_id, clock=fixed_clock(at))


async def test_a_cursor_left_at_the_top_stays_there_while_heartbeats_reorder_the_fleet(
    tmp_path: Path, db: Store
) -> None:
    """Stale sessions seen again move in the attention order (from the stale ones, longest
    unseen first, to the fresh ones, by start). A console left on the list shows its top, the
    cursor on whatever is first now; once the operator moves the cursor, it follows the
    session they chose."""
    fleet = [f"agent-s{number}" for number in range(5)]
    for number, session_id in enumerate(fleet):
        add_session(db, session_id, at=FROZEN - timedelta(minutes=10, seconds=50 - number))
    app = console(sqlite_url(tmp_path), sort="attention")
    async with app.run_test(size=(120, 20)) as pilot:
        await settle(pilot)
        assert row_ids(app)[:5] == fleet
        beat(db, "agent-s0", FROZEN - timedelta(seconds=5))
        await press(pilot, "ctrl+r")
        assert row_ids(app)[:5] == [*fleet[1:], "agent-s0"]
        # Not carried down with the session that was first: the top, and its new first row.
        assert selected(app) == "agent-s1"
        assert "row 1 of 5" in filter_line(app)
        await press(pilot, "down")
        assert selected(app) == "agent-s2"
        beat(db, "agent-s2", FROZEN - timedelta(seconds=4))
        await press(pilot, "ctrl+r")
        assert row_ids(app)[:5] == ["agent-s1", "agent-s3", "agent-s4", "agent-s0", "agent-s2"]
        # Chosen: the cursor went with its session, not left on what stands at its row now.
        assert selected(app) == "agent-s2"
        assert "row 5 of 5" in filter_line(app)


async def test_the_rows_in_view_hold_still_for_ten_seconds_under_fifty_agents_beating(
    tmp_path: Path, db: Store
) -> None:
    """Issue 19 point 3: fifty live sessions beat for real (the store's own heartbeat, the
    system clock, in an order that changes every round) while the console, in the attention
    order, reads the store again after each change. The rows in view stay in the same order
    throughout; what changes is the time they were seen."""
    fleet = [f"agent-{number:02d}" for number in range(50)]
    now = system_clock()
    for number, session_id in enumerate(fleet):
        add_session(db, session_id, at=now - timedelta(seconds=60 - number))
    add_session(db, "done-1", at=now - timedelta(hours=1), status="ended")
    stop = threading.Event()
    beats = 0

    def agents_beating() -> None:
        nonlocal beats
        order = list(fleet)
        shuffle = random.Random(7).shuffle
        while not stop.is_set():
            shuffle(order)
            for session_id in order:
                with db.write() as conn:
                    agent_writes.heartbeat(db=conn, session_id=session_id, clock=system_clock)
                beats += 1
            stop.wait(0.1)

    app = console(sqlite_url(tmp_path), sort="attention", clock=system_clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        in_view = grid(app).size.height - 1  # under the header row
        first = row_ids(app)[:in_view]
        assert first == fleet[: len(first)] and len(first) > 20
        seen_first = {s.id: s.last_seen_at for s in app.screen.model.sessions()}
        agents = threading.Thread(target=agents_beating, daemon=True)
        agents.start()
        try:
            deadline = time.monotonic() + 10
            samples = 0
            while time.monotonic() < deadline:
                await pilot.pause(0.5)
                assert row_ids(app)[:in_view] == first
                samples += 1
        finally:
            stop.set()
            agents.join(timeout=10)
        seen_last = {s.id: s.last_seen_at for s in app.screen.model.sessions()}
    assert samples >= 15 and beats >= 500
    # The console did read the beats meanwhile: every session in view was seen again.
    assert all(seen_last[session_id] != seen_first[session_id] for session_id in first)
