"""The app around the screens: demo adapters, q under a dialog, themes, the command palette's
theme switcher and NO_COLOR."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from textual.widgets import TextArea

from roundtable_console.screens.dialogs.confirm import ConfirmActionDialog
from roundtable_console.screens.dialogs.terminate import TerminateDialog
from roundtable_console.screens.list.screen import SessionListScreen
from roundtable_console.screens.session.briefing import BriefingScreen
from roundtable_console.store.db.database import Store, open_store
from roundtable_console.store.resume.adapters import AdapterConfig
from roundtable_console.tui.app import DEMO_ADAPTERS
from tests.helpers import history, session_row
from tests.test_tui_support import (
    FROZEN,
    add_claim,
    add_session,
    cell,
    console,
    notifications,
    press,
    screen_text,
    settle,
    sqlite_url,
)

DEFAULT_THEME = "textual-dark"


# --- demo adapters ---------------------------------------------------------------------------


async def test_demo_supplies_codex_and_claude_resume_patterns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_home = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config_home))
    db = open_store(sqlite_url(tmp_path))
    try:
        add_session(db, "demo-codex", adapter="codex", external_session_id="codex-1234")
    finally:
        db.dispose()
    app = console(sqlite_url(tmp_path), demo=True)
    assert app.ctx.adapters["codex"].resume_pattern == "codex resume {{external_session_id}}"
    assert app.ctx.adapters["claude"].resume_pattern == "claude --resume {{external_session_id}}"
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, rounds=6)
        assert cell(app, "demo-codex", "resume") == "yes"
        await press(pilot, "b")
        assert isinstance(app.screen, BriefingScreen)
        shown = screen_text(app)
        assert "Resume plan: resumable" in shown
        assert "codex resume •••••• <briefing:" in shown
        await press(pilot, "v")
        assert "codex resume codex-1234 <briefing:" in screen_text(app)
    # Nothing was written to the user's configuration.
    assert not config_home.exists()


async def test_a_configured_adapter_wins_over_the_demo_one(tmp_path: Path) -> None:
    mine = AdapterConfig(name="codex", resume_pattern="my-codex --resume {{external_session_id}}")
    app = console(sqlite_url(tmp_path), demo=True, adapters={"codex": mine})
    assert app.ctx.adapters["codex"] is mine
    assert app.ctx.adapters["claude"] == DEMO_ADAPTERS["claude"]


async def test_without_demo_no_adapter_is_made_up(tmp_path: Path, db: Store) -> None:
    add_session(db, "s1", adapter="codex", external_session_id="codex-1234")
    app = console(sqlite_url(tmp_path))
    assert dict(app.ctx.adapters) == {}
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert cell(app, "s1", "resume") == "no"
        await press(pilot, "b")
        assert "not resumable" in screen_text(app)
        assert "'codex' is not configured" in screen_text(app)


# --- closing ------------------------------------------------------------------------------------


async def test_once_closed_the_console_makes_no_file_where_its_store_was(tmp_path: Path) -> None:
    """The console's watcher thread may still be waiting as the console closes (it is not
    joined, so quitting is not held up): when it wakes it opens nothing, so a folder removed
    after the console (a temporary one, as docs/screenshot.py's) is not made anew."""
    folder = tmp_path / "store"
    folder.mkdir()
    store = open_store(sqlite_url(folder))
    try:
        add_session(store, "s1")
    finally:
        store.dispose()
    app = console(sqlite_url(folder))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert cell(app, "s1", "status") == "active"
        watcher = app.change_watcher
        assert watcher is not None
    for left in folder.iterdir():
        left.unlink()
    watcher.join(timeout=5)  # its last wait ends within a quarter of a second
    assert sorted(folder.iterdir()) == []


# --- q under a dialog --------------------------------------------------------------------------


async def test_q_does_not_quit_under_the_confirm_dialog(tmp_path: Path, db: Store) -> None:
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "s", "q")
        assert isinstance(app.screen, ConfirmActionDialog)
        assert app.is_running and app.return_code is None
        assert any("Answer first" in text for text in notifications(app))
        await press(pilot, "y")
        assert isinstance(app.screen, SessionListScreen)
        assert session_row(db, "s1")["status"] == "stopped"
        await press(pilot, "q")  # no dialog now: q quits
        assert app.return_code == 0
    assert [event for event, _ in history(db, "s1")] == ["registered", "stopped"]


async def test_q_is_text_in_the_terminate_dialog(tmp_path: Path, db: Store) -> None:
    add_session(db, "s1")
    add_claim(db, "c1", agent_id="agent-1", resource_id="src/a.py", expires_in=timedelta(hours=1))
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "t", "q", "u", "i", "t", "space", "q")
        assert isinstance(app.screen, TerminateDialog)
        assert app.screen.query_one("#impact", TextArea).text == "quit q"
        assert app.is_running and app.return_code is None
        # Focus elsewhere in the dialog: q still does not quit.
        app.screen.query_one("#terminate-body").focus()
        await press(pilot, "q")
        assert isinstance(app.screen, TerminateDialog) and app.return_code is None
        await press(pilot, "ctrl+s")
        assert isinstance(app.screen, SessionListScreen)
    assert session_row(db, "s1")["status"] == "terminated"
    event, payload = history(db, "s1")[-1]
    assert event == "terminated" and payload["impact_details"] == "quit q"


# --- themes ---------------------------------------------------------------------------------


async def test_the_configured_theme_is_applied_at_start(tmp_path: Path, db: Store) -> None:
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path), theme="nord")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.theme == "nord"
        assert "s1" in screen_text(app)


async def test_an_unknown_theme_is_reported_and_the_default_used(tmp_path: Path, db: Store) -> None:
    app = console(sqlite_url(tmp_path), theme="no-such-theme")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.theme == DEFAULT_THEME
        assert "Unknown theme 'no-such-theme'; using the default." in notifications(app)


async def test_the_palette_switches_the_theme(tmp_path: Path, db: Store) -> None:
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.theme == DEFAULT_THEME
        await press(pilot, "ctrl+p")
        await pilot.press(*"theme")
        await pilot.pause(0.5)
        await press(pilot, "enter")
        await pilot.press(*"gruvbox")
        await pilot.pause(0.5)
        await press(pilot, "enter")
        assert app.theme == "gruvbox"
        assert isinstance(app.screen, SessionListScreen)
        # Session actions are still in the same palette.
        await press(pilot, "ctrl+p")
        await pilot.press(*"pause s1")
        await pilot.pause(0.5)
        await press(pilot, "enter")
    assert session_row(db, "s1")["status"] == "paused"


# --- NO_COLOR --------------------------------------------------------------------------------


async def test_no_color_keeps_status_words(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    add_session(db, "s-paused", status="paused")
    add_session(db, "s-stale", at=FROZEN.replace(hour=10))
    add_session(db, "s-done", status="terminated")
    app = console(sqlite_url(tmp_path))
    assert app.no_color
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        lines = {line.split()[0]: line for line in screen_text(app).splitlines() if " s-" in line}
        assert "paused" in lines["s-paused"]
        assert "active ⚠ stale" in lines["s-stale"]
        assert "terminated" in lines["s-done"]
        await press(pilot, "p")
        assert "Paused s-stale" in notifications(app)[-1]
    assert session_row(db, "s-stale")["status"] == "paused"
