"""Moving through a list: home and end, pages read ahead and above, the view and the scrollbar,
sorting by a column (keys and header clicks), the mouse, and the resumable column, asserting on
the screen and the store."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from roundtable_console.screens.list.grid import GridHeader
from roundtable_console.screens.list.screen import SessionListScreen
from roundtable_console.screens.session.detail import SessionDetailScreen
from roundtable_console.store.clock import parse_ts
from roundtable_console.store.db.database import Store
from roundtable_console.store.resume.adapters import AdapterConfig
from roundtable_console.store.window import rows as list_reads
from tests.helpers import count, session_row
from tests.test_tui_support import (
    FROZEN,
    add_session,
    cell,
    console,
    dimmed_keys,
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

STATUSES = ("active", "paused", "ended", "running")
# A terminal whose list shows fewer rows than the small pages these tests read, as the console's
# pages of 50 are longer than a 40-line terminal's view.
SHORT = (120, 9)
NAMES = [f"s{number:02d}" for number in range(23)]
# page_size=5, window_pages=2 hold 10 rows, or the view and a page either side when that is more.
BOUND = 5 + 5 + 5 + 5


def seed(db: Store) -> None:
    """23 sessions, started a second apart; statuses, agents and last-seen times run against the
    start order so that every sort is different."""
    for number, name in enumerate(NAMES):
        add_session(
            db,
            name,
            at=FROZEN + timedelta(seconds=number),
            status=STATUSES[number % 4],
            agent_id=f"agent-{(number * 7) % 5}",
        )
    # Last seen: the reverse of the start order for the first ten.
    for number, name in enumerate(NAMES[:10]):
        add_session(
            db,
            name,
            at=FROZEN + timedelta(minutes=30 - number),
            status=STATUSES[number % 4],
            agent_id=f"agent-{(number * 7) % 5}",
        )


class Reads:
    """The list's reads while it is on: (kind, offset) of each, kind being the store function
    (``sessions_at``: a place; ``list_sessions`` / ``list_sessions_before``: the page after or
    before a row)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, int | None]] = []
        for name in ("sessions_at", "list_sessions", "list_sessions_before"):
            real = getattr(list_reads, name)
            monkeypatch.setattr(list_reads, name, self._spying(name, real))

    def _spying(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def spying(**kwargs: Any) -> Any:
            self.calls.append((name, kwargs.get("offset")))
            return real(**kwargs)

        return spying

    def kinds(self) -> list[str]:
        return [name for name, _ in self.calls]


async def walk(pilot: Any, key: str, times: int) -> list[str | None]:
    """Press ``key`` one at a time, noting the selected session after each press."""
    seen = []
    for _ in range(times):
        await press(pilot, key)
        seen.append(selected(pilot.app))
    return seen


def view_is_held(app: Any) -> bool:
    """Every row in the grid's view is held (none drawn as a placeholder)."""
    shown = grid(app)
    last = min(shown.first_in_view + shown.view_height, app.screen.model.row_count)
    return all(app.screen.model.row(i) is not None for i in range(shown.first_in_view, last))


async def test_end_reads_only_the_end_and_home_goes_back(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(db)
    events = count(db, "agent_session_events")
    app = console(sqlite_url(tmp_path), page_size=5, window_pages=2)
    async with app.run_test(size=SHORT) as pilot:
        await settle(pilot)
        assert row_ids(app)[:5] == NAMES[:5]
        reads = Reads(monkeypatch)
        await press(pilot, "end")
        # The rows at the end are read at their place; none between is read.
        assert reads.calls[0][0] == "sessions_at" and (reads.calls[0][1] or 0) > 5
        assert "s00" not in row_ids(app)
        assert row_ids(app)[-1] == "s22" and selected(app) == "s22"
        assert "row 23 of 23" in filter_line(app)
        assert "s22" in screen_text(app)
        await press(pilot, "home")
        assert selected(app) == "s00" and row_ids(app)[0] == "s00"
        assert "row 1 of 23" in filter_line(app)
        await press(pilot, "ctrl+end")
        assert selected(app) == "s22"
        await press(pilot, "ctrl+home")
        assert selected(app) == "s00"
    assert count(db, "agent_session_events") == events  # reading never writes


async def test_up_from_the_end_reads_each_page_before_once(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(db)
    app = console(sqlite_url(tmp_path), page_size=5, window_pages=2)
    async with app.run_test(size=(120, 12)) as pilot:
        await settle(pilot)
        await press(pilot, "end")
        reads = Reads(monkeypatch)
        climbed = await walk(pilot, "up", 22)
        # Every session, once each, in reverse list order: no gap, no repeat at page seams.
        assert climbed == NAMES[:-1][::-1]
        assert selected(app) == "s00"
        assert len(row_ids(app)) <= BOUND
        # Climbing reads the pages above by keyset, a page at a time, never the held rows.
        assert set(reads.kinds()) <= {"list_sessions_before"}, reads.calls
        assert "row 1 of 23" in filter_line(app)


async def test_page_up_from_the_end_walks_back_to_the_top(tmp_path: Path, db: Store) -> None:
    seed(db)
    app = console(sqlite_url(tmp_path), page_size=5, window_pages=3)
    async with app.run_test(size=SHORT) as pilot:
        await settle(pilot)
        await press(pilot, "end")
        height = grid(app).view_height
        for step in range(1, 30):
            await press(pilot, "pageup")
            assert view_is_held(app)
            want = max(22 - step * height, 0)
            assert selected(app) == NAMES[want]
            if want == 0:
                break
        assert selected(app) == "s00" and row_ids(app)[0] == "s00"


def attention_rank(row: dict[str, Any]) -> int:
    """The attention order's segments, for rows that never wait, seen at the console's clock."""
    status, seen = row["status"], parse_ts(row["last_seen_at"])
    if status in ("starting", "active", "running", "resuming"):
        assert seen is not None
        return 2 if seen < FROZEN - timedelta(minutes=5) else 4
    if status in ("paused", "stopped"):
        return 3
    return 5 if status in ("ended", "terminated", "completed", "done") else 1


def model_order(db: Store, column: str, descending: bool) -> list[str]:
    rows = [session_row(db, name) for name in NAMES]
    keys = {
        "started": lambda r: (r["started_at"], r["id"]),
        "last_seen": lambda r: (r["last_seen_at"], r["id"]),
        "status": lambda r: (r["status"], r["started_at"], r["id"]),
        "agent": lambda r: (r["agent_id"], r["started_at"], r["id"]),
        # Fresh live sessions (rank 4) by start, the others by when they were last seen.
        "attention": lambda r: (
            attention_rank(r),
            r["started_at"] if attention_rank(r) == 4 else r["last_seen_at"],
            r["id"],
        ),
    }
    ordered = [r["id"] for r in sorted(rows, key=keys[column])]
    return ordered[::-1] if descending else ordered


async def collect(pilot: Any) -> list[str]:
    """Every session in list order, walking down from the top."""
    found = [selected(pilot.app)]
    for _ in range(30):
        await press(pilot, "down")
        if selected(pilot.app) == found[-1]:
            break
        found.append(selected(pilot.app))
    return [name for name in found if name is not None]


async def test_o_cycles_the_sort_and_shift_o_flips_it(tmp_path: Path, db: Store) -> None:
    seed(db)
    events = count(db, "agent_session_events")
    app = console(sqlite_url(tmp_path), page_size=50)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert "sorted by started ▲" in filter_line(app)
        assert row_ids(app) == model_order(db, "started", False)
        steps = [
            ("o", "last_seen", False, "last seen ▲", "Seen▲"),
            ("d", "last_seen", True, "last seen ▼", "Seen▼"),
            ("o", "status", True, "status ▼", "Status▼"),
            ("d", "status", False, "status ▲", "Status▲"),
            ("o", "agent", False, "agent ▲", "Agent▲"),
            ("d", "agent", True, "agent ▼", "Agent▼"),
            ("o", "attention", True, "attention ▼", "Attention▼"),
            ("d", "attention", False, "attention ▲", "Attention▲"),
            ("o", "started", False, "started ▲", "Started▲"),
            ("d", "started", True, "started ▼", "Started▼"),
            ("d", "started", False, "started ▲", "Started▲"),
        ]
        for key, column, descending, described, header in steps:
            await press(pilot, key)
            assert f"sorted by {described} (o d)" in filter_line(app), key
            labels = [str(c.label) for c in app.screen.query_one(GridHeader).columns]
            assert header in labels, labels
            assert sum("▲" in label or "▼" in label for label in labels) == 1
            assert row_ids(app) == model_order(db, column, descending), column
            assert selected(app) == "s00"  # the selection stays on the same session
    assert count(db, "agent_session_events") == events


async def test_a_sorted_list_is_paged_in_its_order(tmp_path: Path, db: Store) -> None:
    seed(db)
    app = console(sqlite_url(tmp_path), page_size=4, window_pages=2)
    async with app.run_test(size=SHORT) as pilot:
        await settle(pilot)
        await press(pilot, "o", "o", "d")  # status, descending
        assert row_ids(app)[:4] == model_order(db, "status", True)[:4]
        await press(pilot, "home")
        assert await collect(pilot) == model_order(db, "status", True)
        assert len(row_ids(app)) <= BOUND
        await press(pilot, "home")
        assert selected(app) == model_order(db, "status", True)[0]
        await press(pilot, "end")
        assert selected(app) == model_order(db, "status", True)[-1]
        assert "row 23 of 23" in filter_line(app)


async def test_sorting_keeps_the_filters_and_the_cursor_on_its_session(
    tmp_path: Path, db: Store
) -> None:
    seed(db)
    app = console(sqlite_url(tmp_path), page_size=4, window_pages=2)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await press(pilot, "f", "f")  # status active
        await press(pilot, "down")
        assert selected(app) == "s04"
        await press(pilot, "o", "o", "o", "d")  # agent, descending
        assert selected(app) == "s04"  # the same session, at its place in the new order
        await press(pilot, "home")
        shown = await collect(pilot)
        expected = [
            name
            for name in model_order(db, "agent", True)
            if session_row(db, name)["status"] == "active"
        ]
        assert shown == expected
        assert "status active" in filter_line(app)


def header_x(app: Any, key: str) -> int:
    """The x offset of a column's label inside the header."""
    x = 0
    for column in app.screen.query_one(GridHeader).columns:
        if column.key == key:
            return x + 2
        x += column.width + 2
    raise AssertionError(f"no column {key}")


async def test_clicking_a_header_sorts_by_it_and_again_flips_it(tmp_path: Path, db: Store) -> None:
    seed(db)
    app = console(sqlite_url(tmp_path), page_size=50)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.click("#columns", offset=(header_x(app, "status"), 0))
        await settle(pilot)
        assert "sorted by status ▲" in filter_line(app)
        assert row_ids(app) == model_order(db, "status", False)
        await pilot.click("#columns", offset=(header_x(app, "status"), 0))
        await settle(pilot)
        assert "sorted by status ▼" in filter_line(app)
        assert row_ids(app) == model_order(db, "status", True)
        await pilot.click("#columns", offset=(header_x(app, "seen"), 0))
        await settle(pilot)
        assert row_ids(app) == model_order(db, "last_seen", False)
        await pilot.click("#columns", offset=(header_x(app, "id"), 0))
        await settle(pilot)
        assert "sorted by last seen ▲" in filter_line(app)  # not a sort column: unchanged
        assert any(
            "Sessions sort by attention, started, seen, status or agent" in n
            for n in notifications(app)
        )


async def test_a_click_selects_a_row_and_a_double_click_opens_it(tmp_path: Path, db: Store) -> None:
    seed(db)
    events = count(db, "agent_session_events")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert selected(app) == "s00"
        assert "pause" not in dimmed_keys(app)
        await pilot.click("#sessions", offset=(4, 2))
        await settle(pilot)
        assert selected(app) == "s02"
        assert isinstance(app.screen, SessionListScreen)
        # The footer follows the selection: s02 has ended, so nothing to pause.
        assert "pause" in dimmed_keys(app)
        await pilot.click("#sessions", offset=(4, 4))
        await settle(pilot)
        assert selected(app) == "s04"
        assert isinstance(app.screen, SessionListScreen)  # a single click never opens
        await pilot.click("#sessions", offset=(4, 1), times=2)
        await settle(pilot)
        assert isinstance(app.screen, SessionDetailScreen)
        assert app.screen.session_id == "s01"
        assert "s01" in screen_text(app)
        await press(pilot, "escape")
        assert isinstance(app.screen, SessionListScreen)
        assert selected(app) == "s01"
        await press(pilot, "down", "enter")
        assert isinstance(app.screen, SessionDetailScreen)
        assert app.screen.session_id == "s02"
    assert count(db, "agent_session_events") == events


async def test_resumable_column_follows_the_resume_rules(tmp_path: Path, db: Store) -> None:
    add_session(db, "ok", external_session_id="ext-1", at=FROZEN - timedelta(seconds=5))
    add_session(db, "no-id", at=FROZEN - timedelta(seconds=4))
    add_session(db, "bad-id", external_session_id="has space", at=FROZEN - timedelta(seconds=3))
    add_session(
        db, "builtin", adapter="gemini", external_session_id="e2", at=FROZEN - timedelta(seconds=2)
    )
    add_session(
        db,
        "no-pattern",
        adapter="claude",
        external_session_id="e3",
        at=FROZEN - timedelta(seconds=1),
    )
    adapters = {
        "codex": AdapterConfig(name="codex", resume_pattern="codex resume {{external_session_id}}"),
        "claude": AdapterConfig(name="claude"),
    }
    app = console(sqlite_url(tmp_path), adapters=adapters)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        cells = {name: cell(app, name, "resume") for name in row_ids(app)}
        assert cells == {
            "ok": "yes",
            "no-id": "no",
            "bad-id": "no",
            "builtin": "no",
            "no-pattern": "no",
        }
        assert "Resume" in screen_text(app)
        # The briefing agrees with the column.
        await press(pilot, "b")
        assert "Resume plan: resumable" in screen_text(app)
        await press(pilot, "escape", "down", "b")
        assert "Resume plan: not resumable" in screen_text(app)
        assert "no external session id" in screen_text(app)
    # The column is computed, never stored.
    assert session_row(db, "no-id")["external_resume_command"] is None


async def test_a_page_down_finds_its_rows_already_read(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page past the view is read ahead (a keyset page from the last row held), so a page
    down draws its rows in the frame of the key press, and the view moves exactly a page."""
    for number in range(300):
        add_session(db, f"t{number:03d}", at=FROZEN + timedelta(seconds=number))
    names = [f"t{number:03d}" for number in range(300)]
    app = console(sqlite_url(tmp_path), page_size=20, window_pages=3)
    async with app.run_test(size=(120, 24)) as pilot:
        await settle(pilot)
        reads = Reads(monkeypatch)
        shown = grid(app)
        height = shown.view_height
        for step in range(1, 15):
            top = shown.first_in_view
            await pilot.press("pagedown")
            # Before any read the key caused has come back: the rows are there.
            assert view_is_held(app), step
            assert shown.first_in_view == top + height
            assert selected(app) == names[step * height]
            await settle(pilot)
            assert row_ids(app) == names[app.screen.model.start : app.screen.model.end]
            assert len(row_ids(app)) <= 60 + 20
        assert set(reads.kinds()) == {"list_sessions"}  # pages after a row, never a place


async def test_a_tall_terminal_fills_its_view_without_a_key(tmp_path: Path, db: Store) -> None:
    for number in range(120):
        add_session(db, f"t{number:03d}", at=FROZEN + timedelta(seconds=number))
    app = console(sqlite_url(tmp_path), page_size=20, window_pages=2)
    async with app.run_test(size=(120, 70)) as pilot:
        await settle(pilot)
        assert grid(app).view_height > 40
        assert view_is_held(app)
        assert "t060" in screen_text(app)
        await press(pilot, "end")
        assert view_is_held(app)
        assert "t119" in screen_text(app) and "t060" in screen_text(app)


async def test_the_scrollbar_shows_the_cursor_in_the_whole_list(tmp_path: Path, db: Store) -> None:
    """The grid scrolls over every session of the list, not a window of pages: the thumb is at
    the bottom at End and in the middle in the middle; dragging it reads the rows there."""
    for number in range(2000):
        add_session(db, f"t{number:04d}", at=FROZEN + timedelta(seconds=number))
    app = console(sqlite_url(tmp_path), page_size=50, window_pages=4)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        shown = grid(app)
        bar = shown.vertical_scrollbar
        assert shown.virtual_size.height == 2000
        assert bar.window_virtual_size == 2000 and bar.position == 0
        await press(pilot, "end")
        assert shown.scroll_y == shown.max_scroll_y == 2000 - shown.view_height
        assert bar.position == shown.max_scroll_y
        assert selected(app) == "t1999"
        # Drag the thumb from the bottom to the middle of the track.
        await pilot.mouse_down(bar, offset=(0, bar.size.height - 1))
        await pilot.hover(bar, offset=(0, bar.size.height // 2))
        await pilot.mouse_up(bar, offset=(0, bar.size.height // 2))
        await settle(pilot)
        middle = shown.first_in_view
        assert 700 < middle < 1300, middle
        assert view_is_held(app)
        assert "t0000" not in row_ids(app) and "t1999" not in row_ids(app)
        # The cursor came into the view with it, on the session at its place.
        cursor = grid(app).cursor
        assert middle <= cursor < middle + shown.view_height
        assert selected(app) == f"t{cursor:04d}"
        assert f"row {cursor + 1} of 2000" in filter_line(app)
        assert f"t{middle:04d}" in screen_text(app)
