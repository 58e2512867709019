"""The session list through the real app: columns, counts, filters, paging, refresh, banners."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import DatabaseUnavailable
from roundtable_console.tui.app import run_console
from roundtable_console.tui.config import Settings
from tests.conftest import FakeClock
from tests.test_tui_support import (
    FROZEN,
    add_claim,
    add_session,
    cell,
    console,
    filter_line,
    grid,
    notifications,
    press,
    row_ids,
    screen_text,
    selected,
    settle,
    sqlite_url,
)


async def hold(pilot, key: str, times: int) -> None:  # type: ignore[no-untyped-def]
    """A key held down: presses arrive faster than pages are read."""
    for _ in range(times):
        await pilot.press(key)
    await settle(pilot, rounds=8)


async def test_list_shows_columns_counts_and_stale_marking(tmp_path: Path, db: Store) -> None:
    add_session(db, "sess-old", at=FROZEN - timedelta(minutes=20), provider="openai", model="gpt-5")
    add_session(db, "sess-new", at=FROZEN - timedelta(seconds=12), agent_id="agent-2")
    add_session(db, "sess-done", at=FROZEN - timedelta(minutes=1), status="stopped")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot)
        shown = screen_text(app)
        assert "12 sessions" not in shown
        assert "3 sessions · 1 needs attention · active 2 · stopped 1" in shown
        assert row_ids(app) == ["sess-old", "sess-done", "sess-new"]
        lines = {line.split()[0]: line for line in shown.splitlines() if "sess-" in line}
        assert "active ⚠ stale" in lines["sess-old"]
        assert "openai/gpt-5" in lines["sess-old"]
        assert "20m ago" in lines["sess-old"]
        assert "12s ago" in lines["sess-new"] and "stale" not in lines["sess-new"]
        assert "stopped" in lines["sess-done"] and "stale" not in lines["sess-done"]
        assert "09-17 17:06" in lines["sess-old"]


async def test_claim_counts_per_agent_with_expired_apart(tmp_path: Path, db: Store) -> None:
    add_session(db, "sess-a", agent_id="agent-a")
    add_session(db, "sess-b", agent_id="agent-b")
    add_claim(db, "c1", agent_id="agent-a", resource_id="src/a.py", expires_in=timedelta(hours=1))
    add_claim(db, "c2", agent_id="agent-a", resource_id="src/b.py", expires_in=timedelta(hours=1))
    add_claim(db, "c3", agent_id="agent-a", resource_id="src/c.py", expires_in=-timedelta(hours=1))
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert cell(app, "sess-a", "claims") == "2 +1"
        assert cell(app, "sess-b", "claims") == "0"


async def test_text_filter_narrows_and_escape_clears(tmp_path: Path, db: Store) -> None:
    add_session(db, "alpha-1", agent_id="builder")
    add_session(db, "beta-2", agent_id="reviewer")
    add_session(db, "gamma-3", agent_id="builder-2")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "slash", "b", "u", "i")
        assert row_ids(app) == ["alpha-1", "gamma-3"]
        assert "text 'bui'" in screen_text(app)
        await press(pilot, "enter")
        assert app.focused is grid(app)
        await press(pilot, "escape")
        assert row_ids(app) == ["alpha-1", "beta-2", "gamma-3"]
        await press(pilot, "slash", "z", "z", "z")
        assert row_ids(app) == []
        assert "No sessions match" in screen_text(app)


async def test_status_cycle_ended_toggle_and_stale_filter(tmp_path: Path, db: Store) -> None:
    add_session(db, "s-active", status="active")
    add_session(db, "s-paused", status="paused")
    add_session(db, "s-stopped", status="stopped")
    add_session(db, "s-stale", status="running", at=FROZEN - timedelta(hours=2))
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert len(row_ids(app)) == 4
        await press(pilot, "f")  # starting
        assert row_ids(app) == []
        await press(pilot, "f")  # active
        assert row_ids(app) == ["s-active"]
        assert "status active" in screen_text(app)
        await press(pilot, "f")
        assert row_ids(app) == ["s-stale"]  # running
        await press(pilot, "f")
        assert row_ids(app) == ["s-paused"]
        await press(pilot, "f", "f")  # resuming, then stopped
        assert row_ids(app) == ["s-stopped"]
        await press(pilot, "a")  # hiding ended resets a terminal status filter
        assert row_ids(app) == ["s-stale", "s-active", "s-paused"]
        assert "ended hidden" in screen_text(app)
        await press(pilot, "a")
        assert "s-stopped" in row_ids(app)
        await press(pilot, "S")
        assert row_ids(app) == ["s-stale"]
        assert "stale only" in screen_text(app)
        await press(pilot, "S")
        assert len(row_ids(app)) == 4


async def test_keys_held_down_walk_the_list_holding_a_bounded_run(
    tmp_path: Path, db: Store
) -> None:
    for number in range(23):
        add_session(db, f"s{number:02d}", at=FROZEN + timedelta(seconds=number))
    app = console(sqlite_url(tmp_path), page_size=5, window_pages=2)
    async with app.run_test(size=(120, 9)) as pilot:
        await settle(pilot)
        assert row_ids(app)[:5] == [f"s{n:02d}" for n in range(5)]
        assert "row 1 of 23" in filter_line(app)
        await hold(pilot, "down", 14)
        # Never more than the view and a page either side held, and the cursor on its row.
        bound = grid(app).view_height + 2 * 5
        assert len(row_ids(app)) <= bound
        assert selected(app) == "s14"
        assert row_ids(app)[0] != "s00"
        await hold(pilot, "down", 30)
        assert selected(app) == "s22"
        assert row_ids(app)[-1] == "s22"
        assert "row 23 of 23" in filter_line(app)
        await hold(pilot, "up", 22)
        assert selected(app) == "s00"
        assert row_ids(app)[0] == "s00"


async def test_refresh_keeps_cursor_on_the_same_session(tmp_path: Path, db: Store) -> None:
    for number in range(5):
        add_session(db, f"s{number}", at=FROZEN + timedelta(seconds=number))
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "down", "down", "down")
        assert selected(app) == "s3"
        add_session(db, "s-earlier", at=FROZEN - timedelta(minutes=1))
        await press(pilot, "ctrl+r")
        assert row_ids(app)[0] == "s-earlier"
        assert selected(app) == "s3"
        assert grid(app).cursor == 4
        assert "row 5 of 6" in filter_line(app)


async def test_live_refresh_shows_another_process_writing(tmp_path: Path, db: Store) -> None:
    add_session(db, "first")
    app = console(sqlite_url(tmp_path), refresh_seconds=0.2)
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
        assert row_ids(app) == ["first"]
        subprocess.run([sys.executable, "-c", script], check=True, cwd=Path(__file__).parent.parent)
        for _ in range(40):
            await pilot.pause(0.1)
            if "from-outside" in row_ids(app):
                break
        await settle(pilot)
        assert row_ids(app) == ["first", "from-outside"]
        assert "active 1 · ended 1" in screen_text(app)


async def test_unavailable_database_shows_banner_then_recovers(tmp_path: Path, db: Store) -> None:
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        real_read = app.ctx.store.read  # type: ignore[union-attr]

        def broken_read():  # type: ignore[no-untyped-def]
            raise DatabaseUnavailable("The database sqlite:///x is unavailable: disk I/O error")

        app.ctx.store.read = broken_read  # type: ignore[union-attr,method-assign]
        await press(pilot, "ctrl+r")
        shown = screen_text(app)
        assert "disk I/O error [database_unavailable]" in shown
        assert row_ids(app) == ["s1"]  # what was last read stays on screen
        app.ctx.store.read = real_read  # type: ignore[union-attr,method-assign]
        await press(pilot, "ctrl+r")
        assert "database_unavailable" not in screen_text(app)


async def test_hostile_store_data_is_shown_literally(tmp_path: Path, db: Store) -> None:
    add_session(
        db,
        "[bold]x[/]",
        agent_id="[link=http://x]y[/link]",
        run_id="run\x1b[2J",
        adapter="[red]",
        model="m\x07",
        status="[/]",
    )
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        shown = screen_text(app)
        assert "[bold]x[/]" in shown
        assert "[link=" in shown  # the column cuts it with an ellipsis
        assert "run\\e[2J" in shown
        assert "m\\x07" in shown
        assert "[/] " in shown and "[red]" in shown
        assert "\x1b" not in shown and "\x07" not in shown
        await press(pilot, "enter")
        detail = screen_text(app)
        assert "[bold]x[/]" in detail
        assert "[link=http://x]y[/link]" in detail
        assert "run\\e[2J" in detail
        assert "\x1b" not in detail


async def test_empty_store_says_how_to_get_sessions(tmp_path: Path) -> None:
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "No sessions yet" in screen_text(app)
        await press(pilot, "p")
        assert any("No session is selected" in text for text in notifications(app))


async def test_live_clock_moves_relative_times(tmp_path: Path, db: Store) -> None:
    add_session(db, "s1")
    clock = FakeClock(FROZEN)
    app = console(sqlite_url(tmp_path), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert cell(app, "s1", "seen") == "0s ago"
        clock.advance(minutes=6)
        await press(pilot, "ctrl+r")
        assert cell(app, "s1", "seen") == "6m ago"
        assert "stale" in cell(app, "s1", "status")


def test_run_console_reports_a_bad_store_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("hello")
    code = run_console(
        url=f"sqlite:///{not_a_db}", settings=Settings(), operator="o", adapters={}, demo=False
    )
    err = capsys.readouterr().err
    assert code == 1
    assert "is not a SQLite database" in err
    assert "[database_unavailable]" in err
    assert "Traceback" not in err
    assert not_a_db.read_text() == "hello"


async def test_a_store_that_cannot_open_shows_a_banner_not_a_crash(tmp_path: Path) -> None:
    app = console(f"sqlite:///{tmp_path}")  # a directory, not a database file
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        banner = app.screen.query_one("#banner").render()
        assert "is a directory, not a SQLite database file. [database_unavailable]" in str(banner)
        shown = screen_text(app)
        assert "Nothing has been read yet; retrying by itself." in shown
        assert "Opening store" in shown
        await press(pilot, "p", "question_mark")
        assert "keys" in screen_text(app)


async def test_a_list_that_shrinks_keeps_the_cursor_on_its_session(
    tmp_path: Path, db: Store
) -> None:
    """Sessions above the cursor leave the list (a status filter, ten of them stopped): the
    cursor stays on its session, never on whatever now stands at its old row."""
    for number in range(30):
        add_session(db, f"s{number:02d}", at=FROZEN + timedelta(seconds=number), status="running")
    app = console(sqlite_url(tmp_path), page_size=10, window_pages=2)
    async with app.run_test(size=(120, 20)) as pilot:
        await settle(pilot)
        await press(pilot, "f", "f", "f")  # status running
        await press(pilot, "end")
        assert selected(app) == "s29"
        await press(pilot, "up", "up")
        assert selected(app) == "s27"
        for number in range(10):
            add_session(
                db, f"s{number:02d}", at=FROZEN + timedelta(seconds=number), status="stopped"
            )
        await press(pilot, "ctrl+r")
        assert selected(app) == "s27"
        assert "row 18 of 20" in filter_line(app)


async def test_claims_released_elsewhere_leave_the_claims_column(tmp_path: Path, db: Store) -> None:
    from sqlalchemy import text

    add_session(db, "s1", agent_id="agent-a")
    add_claim(db, "c1", agent_id="agent-a", resource_id="a.py", expires_in=timedelta(hours=1))
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 20)) as pilot:
        await settle(pilot)
        assert cell(app, "s1", "claims") == "1"
        with db.write() as conn:
            conn.execute(text("UPDATE claims SET status = 'released'"))
        await press(pilot, "ctrl+r")
        assert cell(app, "s1", "claims") == "0"


async def test_the_host_column_and_the_text_filter_name_the_machine(
    tmp_path: Path, db: Store
) -> None:
    """Issue 41: the machine each session runs on, in its own column (dropped first when the
    terminal is narrow) and found by the text filter."""
    add_session(db, "on-laptop", host="laptop-7")
    add_session(db, "on-box", host="build-box")
    add_session(db, "nowhere", host="[bold]x[/]")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot)
        shown = screen_text(app)
        assert any("Host" in line and "Session" in line for line in shown.splitlines())
        lines = {line.split()[0]: line for line in shown.splitlines() if line.split()[:1]
                 and line.split()[0] in ("on-laptop", "on-box", "nowhere")}  # fmt: skip
        assert "laptop-7" in lines["on-laptop"] and "build-box" in lines["on-box"]
        assert "[bold]x[/]" in lines["nowhere"]  # store data, never markup
        await press(pilot, "slash", "l", "a", "p", "t")
        assert row_ids(app) == ["on-laptop"]
    narrow = console(sqlite_url(tmp_path))
    async with narrow.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        assert "laptop-7" not in screen_text(narrow)  # the first column a narrow list drops
