"""The console on each backend (SQLite and the suite's PostgreSQL server), and the demo store."""

from __future__ import annotations

from pathlib import Path

from roundtable_console.store.db.database import open_store
from roundtable_console.tui.app import build_app
from roundtable_console.tui.config import Settings
from tests.conftest import FakeClock
from tests.helpers import history, session_row
from tests.test_tui_support import (
    FROZEN,
    add_session,
    console,
    notifications,
    press,
    row_ids,
    screen_text,
    settle,
    sqlite_url,
)


async def test_console_lists_and_acts_on_each_backend(store_url: str) -> None:
    store = open_store(store_url)
    try:
        add_session(store, "s1", at=FROZEN)
        add_session(store, "s2", status="paused", at=FROZEN)
        app = console(store_url)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            assert row_ids(app) == ["s1", "s2"]
            assert "2 sessions · active 1 · paused 1" in screen_text(app)
            await press(pilot, "p")
            assert "Paused s1 (active → paused)." in notifications(app)[-1]
            await press(pilot, "enter", "2")
            assert "paused" in screen_text(app)
        assert session_row(store, "s1")["status"] == "paused"
        assert history(store, "s1")[-1][0] == "paused"
    finally:
        store.dispose()


async def test_demo_seeds_an_empty_store_once(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    settings = Settings(refresh_seconds=3600)
    app = build_app(
        url=url, settings=settings, operator="o", adapters={}, clock=FakeClock(FROZEN), demo=True
    )
    app.ctx.cursor_blink = False
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, rounds=8)
        rows = app.screen.model.row_count
        assert rows > 10
        assert any("Seeded the demo store" in text for text in notifications(app))
        assert "— demo · o @ sqlite" in screen_text(app).splitlines()[0]
    again = build_app(
        url=url, settings=settings, operator="o", adapters={}, clock=FakeClock(FROZEN), demo=True
    )
    async with again.run_test(size=(120, 40)) as pilot:
        await settle(pilot, rounds=8)
        assert again.screen.model.row_count == rows
        assert not any("Seeded" in text for text in notifications(again))
