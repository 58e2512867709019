"""The session log (history, following new rows) and the briefing screen (c, w, v)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable, Markdown

from roundtable_console.screens.session.briefing import BriefingScreen
from roundtable_console.screens.session.log import SessionLogScreen
from roundtable_console.store.db.database import Store
from roundtable_console.store.resume.adapters import AdapterConfig
from roundtable_console.store.writes import agent_writes, lifecycle
from tests.conftest import FakeClock
from tests.test_tui_support import (
    FROZEN,
    add_agent,
    add_session,
    console,
    footer_keys,
    notifications,
    press,
    screen_text,
    settle,
    sqlite_url,
)

CODEX = {
    "codex": AdapterConfig(
        name="codex", resume_pattern="codex resume {{external_session_id}} --yolo"
    )
}


def log_rows(app) -> list[list[str]]:  # type: ignore[no-untyped-def]
    table = app.screen.query_one("#log", DataTable)
    return [[cell.plain for cell in table.get_row_at(index)] for index in range(table.row_count)]


async def test_log_shows_history_with_redacted_payloads(tmp_path: Path, db: Store) -> None:
    add_session(db, "s1")
    with db.write() as conn:
        lifecycle.terminate(
            db=conn,
            session_id="s1",
            actor="ops",
            idempotency_key="k1",
            impact_details="rotate password=hunter2 [bold]now[/]",
            clock=FakeClock(FROZEN),
        )
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "l")
        assert isinstance(app.screen, SessionLogScreen)
        rows = log_rows(app)
        assert [row[2] for row in rows] == ["registered", "terminated"]
        assert rows[1][3] == "ops"
        shown = screen_text(app)
        assert "2 events shown · following new events" in shown
        # The highlighted (newest) event's whole payload, pretty-printed below the table.
        assert '"impact_details": "rotate password=[REDACTED] [bold]now[/]"' in shown
        assert "hunter2" not in shown
        await press(pilot, "escape")
        assert not isinstance(app.screen, SessionLogScreen)


async def test_log_follows_new_rows_as_they_arrive(tmp_path: Path, db: Store) -> None:
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path), refresh_seconds=0.2)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "l")
        assert len(log_rows(app)) == 1
        with db.write() as conn:
            for _ in range(3):
                agent_writes.heartbeat(db=conn, session_id="s1", clock=FakeClock(FROZEN))
        for _ in range(30):
            await pilot.pause(0.1)
            if len(log_rows(app)) == 4:
                break
        assert [row[2] for row in log_rows(app)] == ["registered"] + ["heartbeat"] * 3
        table = app.screen.query_one("#log", DataTable)
        assert table.cursor_row == 3  # the newest row, at the bottom
        await press(pilot, "F")
        assert "paused (F follows again)" in screen_text(app)


async def test_briefing_renders_markdown_and_plan_with_masked_id(tmp_path: Path, db: Store) -> None:
    add_session(db, "s1", agent_id="ada", run_id="run-9", external_session_id="ext-777")
    app = console(sqlite_url(tmp_path), adapters=CODEX)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "b")
        assert isinstance(app.screen, BriefingScreen)
        shown = screen_text(app)
        assert "Roundtable Resume Briefing" in shown
        assert "ada" in shown and "run-9" in shown
        assert "Resume plan: resumable" in shown
        assert "codex resume •••••• --yolo <briefing:" in shown
        assert "ext-777" not in shown
        await press(pilot, "v")
        assert "codex resume ext-777 --yolo" in screen_text(app)
        markdown = app.screen.view.briefing.markdown
        await press(pilot, "c")
        assert app.clipboard == markdown
        assert "Briefing copied" in notifications(app)[-1]


async def test_briefing_write_says_where_and_never_overwrites(tmp_path: Path, db: Store) -> None:
    add_session(db, "sess/../1")
    app = console(sqlite_url(tmp_path))
    app.ctx.export_dir = tmp_path / "out"
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "b")
        assert "not resumable" in screen_text(app)
        assert "reveal" not in footer_keys(app)  # nothing to reveal without an external id
        await press(pilot, "w", "w")
        first = tmp_path / "out" / "briefing-sess_.._1.md"
        second = tmp_path / "out" / "briefing-sess_.._1-1.md"
        assert first.read_text() == app.screen.view.briefing.markdown
        assert second.exists()
        assert notifications(app)[-2:] == [
            f"Briefing written to {first}",
            f"Briefing written to {second}",
        ]


async def test_briefing_of_a_missing_session_says_why(tmp_path: Path, db: Store) -> None:
    add_session(db, "s1")
    add_agent(db, "agent-1")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        with db.write() as conn:
            conn.exec_driver_sql("DELETE FROM agent_sessions")
        await press(pilot, "b")
        assert "[session_not_found]" in screen_text(app)
        assert "copy" not in footer_keys(app)
        assert app.screen.query_one("#briefing", Markdown).source == ""
