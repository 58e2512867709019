"""Replies in the console (issue 30 point 5), through the real app: m on a session whose Stop hook
listens opens the reply dialog, which names the route; Enter sends the text, escape sends
nothing; where nothing can carry a reply (a permission request pending, a session that waits for
nothing) m says why and opens nothing; a read-only console sends none. The screen and the store
both checked, and a snapshot."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import text

from roundtable_console.store.clock import fixed_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.replies import listeners
from tests.conftest import FakeClock
from tests.console_ways import ConsoleWay
from tests.test_tui_requests import ask, until
from tests.test_tui_snapshots import SIZE, seed
from tests.test_tui_support import (
    FROZEN,
    SNAPSHOT_DESCRIPTION,
    console,
    notifications,
    press,
    screen_text,
    settle,
    sqlite_url,
)


def listening(db: Store, session_id: str = "sess-01", at: datetime = FROZEN) -> str:
    """``session_id``'s turn done ("Shall I deploy?") and its Stop hook listening for a reply."""
    with db.write() as conn:
        conn.execute(
            text(
                "UPDATE agent_sessions SET waiting_reason = 'finished its turn: Shall I deploy?',"
                " waiting_since = NULL WHERE id = :id"
            ),
            {"id": session_id},
        )
    record = listeners.open_listener(
        db, session_id=session_id, agent="claude-code", wait_seconds=600,
        clock=fixed_clock(at),
    )  # fmt: skip
    return record.id


def replies(db: Store, session_id: str = "sess-01") -> list[tuple[Any, str]]:
    with db.read() as conn:
        rows = conn.execute(
            text(
                "SELECT payload_json, actor FROM agent_session_events"
                " WHERE session_id = :id AND event_type = 'replied' ORDER BY id"
            ),
            {"id": session_id},
        ).all()
    return [(json.loads(row[0]), row[1]) for row in rows]


async def select(pilot: Any, session_id: str) -> None:
    for _ in range(20):
        if pilot.app.list_screen.selected_session().id == session_id:
            return
        await press(pilot, "down")
    raise AssertionError(f"{session_id} is not on the list")


async def test_m_replies_through_the_listening_hook(way: ConsoleWay) -> None:
    """On the store, and through a server (its route for a session's reply)."""
    db = way.store
    seed(db)
    listener = listening(db, at=way.moment)
    app = way.console(clock=FakeClock(FROZEN))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, "sess-01")
        await press(pilot, "m")
        await until(pilot, lambda: "Reply to the agent" in screen_text(app))
        shown = screen_text(app)
        assert "finished its turn: Shall I deploy?" in shown
        assert "through Claude Code's Stop hook, which listens until" in shown
        await press(pilot, "escape")  # sends nothing
        assert app.screen is app.list_screen
        assert listeners.read_listener(db, listener).state == "listening" and replies(db) == []

        await press(pilot, "m")
        await until(pilot, lambda: "Reply to the agent" in screen_text(app))
        await press(pilot, "enter")  # nothing typed: nothing sent
        assert "Type the reply first." in screen_text(app)
        await pilot.press(*"Now the [b]tests[/b]")
        await press(pilot, "enter")
        await until(pilot, lambda: listeners.read_listener(db, listener).state != "listening")
        await until(pilot, lambda: app.screen is app.list_screen)
        sent = listeners.read_listener(db, listener)
        assert (sent.state, sent.message, sent.replied_by) == (
            "replied",
            "Now the [b]tests[/b]",
            app.ctx.operator,
        )
        assert replies(db) == [
            ({"via": "hook", "message": "Now the [b]tests[/b]"}, app.ctx.operator)
        ]
        assert any("Replied to sess-01 through its hook." in n for n in notifications(app))

        # Its hook has the reply, and its turn is no longer done: m says so, and opens nothing.
        await press(pilot, "m")
        said = "Its agent is not waiting for a prompt or an answer."
        await until(pilot, lambda: said in notifications(app))
        assert app.screen is app.list_screen
        assert len(replies(db)) == 1


async def test_m_says_why_nothing_can_carry_a_reply(tmp_path: Path, db: Store) -> None:
    seed(db)
    listening(db)
    ask(db, "sess-01", "make deploy")  # a permission request is answered first
    app = console(sqlite_url(tmp_path), clock=FakeClock(FROZEN))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, "sess-01")
        await press(pilot, "m")
        await until(pilot, lambda: any("asks a permission" in n for n in notifications(app)))
        assert any("allow or deny that (y/n) before replying" in n for n in notifications(app))
        assert app.screen is app.list_screen
        await select(pilot, "sess-02")  # paused, waiting for nothing
        await press(pilot, "m")
        await until(pilot, lambda: any("not waiting for a prompt" in n for n in notifications(app)))
        assert app.screen is app.list_screen and replies(db) == []


async def test_a_read_only_console_sends_no_reply(tmp_path: Path, db: Store) -> None:
    seed(db)
    listener = listening(db)
    app = console(sqlite_url(tmp_path), clock=FakeClock(FROZEN), read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, "sess-01")
        await press(pilot, "m")
        assert any("read-only: it sends no reply" in n for n in notifications(app))
        assert app.screen is app.list_screen
    assert listeners.read_listener(db, listener).state == "listening"


def test_reply_dialog_snapshot(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)
    listening(db)
    app = console(sqlite_url(tmp_path), clock=FakeClock(FROZEN))
    app.ctx.description = SNAPSHOT_DESCRIPTION

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await select(pilot, "sess-01")
        await press(pilot, "m")
        await until(pilot, lambda: "Reply to the agent" in screen_text(pilot.app))
        await pilot.press(*"Now the tests, then stop.")
        pilot.app.clear_notifications()
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
