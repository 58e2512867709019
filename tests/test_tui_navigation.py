"""Moving through a long list: home and end, reading pages above, sorting by a column (keys and
header clicks), the mouse, and the resumable column, asserting on the screen and the store."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import event

from screens.session_detail import SessionDetailScreen
from screens.session_list import SessionListScreen
from store.adapters import AdapterConfig
from store.database import Store
from tests.helpers import count, session_row
from tests.test_tui_support import (
    FROZEN,
    add_session,
    console,
    dimmed_keys,
    filter_line,
    notifications,
    press,
    row_ids,
    screen_text,
    selected,
    settle,
    sqlite_url,
    table,
)

STATUSES = ("active", "paused", "ended", "running")
# A terminal whose list shows fewer rows than the small pages these tests read, as the console's
# pages of 50 are longer than a 40-line terminal's view (a taller one fills its view at once:
# test_a_tall_terminal_fills_its_view_without_a_key).
SHORT = (120, 9)
NAMES = [f"s{number:02d}" for number in range(23)]


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


class SessionReads:
    """The session-list statements the console sends while it is on."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.statements: list[tuple[str, Any]] = []

    def __enter__(self) -> SessionReads:
        event.listen(self.store.engine, "before_cursor_execute", self._capture)
        return self

    def __exit__(self, *_exc: object) -> None:
        event.remove(self.store.engine, "before_cursor_execute", self._capture)

    def _capture(self, _conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if "FROM agent_sessions" in statement and "LIMIT" in statement:
            self.statements.append((statement, parameters))

    def limits(self) -> list[int]:
        """The LIMIT of each page statement (the page size plus one)."""
        return [int(parameters[-2]) for _, parameters in self.statements]


async def walk(pilot: Any, key: str, times: int) -> list[str]:
    """Press ``key`` one at a time, noting the selected session after each press."""
    seen = []
    for _ in range(times):
        await press(pilot, key)
        seen.append(selected(pilot.app))
    return seen


async def test_end_reads_only_the_last_page_and_home_goes_back(tmp_path: Path, db: Store) -> None:
    seed(db)
    events = count(db, "agent_session_events")
    app = console(sqlite_url(tmp_path), page_size=5, window_pages=2)
    async with app.run_test(size=SHORT) as pilot:
        await settle(pilot)
        assert row_ids(app) == NAMES[:5]
        store = app.ctx.store
        assert store is not None
        with SessionReads(store) as reads:
            await press(pilot, "end")
        # One page statement, read from the end (descending) and cut at a page: nothing before
        # the last page is read.
        assert reads.limits() == [6]
        assert "DESC" in reads.statements[0][0]
        assert row_ids(app) == NAMES[-5:]
        assert selected(app) == "s22"
        assert "rows 19–23 of 23 (more above)" in filter_line(app)
        assert "s22" in screen_text(app)
        await press(pilot, "home")
        assert row_ids(app) == NAMES[:5]
        assert selected(app) == "s00"
        assert "rows 1–5 of 23 (more below)" in filter_line(app)
        # ctrl+end and ctrl+home (DataTable's own keys for the ends) do the same.
        await press(pilot, "ctrl+end")
        assert selected(app) == "s22"
        await press(pilot, "ctrl+home")
        assert selected(app) == "s00"
    assert count(db, "agent_session_events") == events  # reading never writes


async def test_up_from_the_end_reads_each_page_before_once(tmp_path: Path, db: Store) -> None:
    seed(db)
    app = console(sqlite_url(tmp_path), page_size=5, window_pages=2)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await press(pilot, "end")
        climbed = await walk(pilot, "up", 22)
        # Every session, once each, in reverse list order: no gap, no repeat at page seams.
        assert climbed == NAMES[:-1][::-1]
        assert selected(app) == "s00"
        assert table(app).row_count <= 10  # never more than the window's two pages
        assert "rows 1–" in filter_line(app) and "more above" not in filter_line(app)


async def test_page_up_from_the_end_reads_the_page_before(tmp_path: Path, db: Store) -> None:
    seed(db)
    app = console(sqlite_url(tmp_path), page_size=5, window_pages=3)
    async with app.run_test(size=SHORT) as pilot:
        await settle(pilot)
        await press(pilot, "end")
        assert row_ids(app) == NAMES[-5:]
        await press(pilot, "pageup")
        # The cursor reached the window's top; the page above it has been read.
        assert row_ids(app)[0] in NAMES[:-5]
        assert row_ids(app)[-1] == "s22"
        assert "more above" in filter_line(app)
        for _ in range(10):
            await press(pilot, "pageup")
        assert selected(app) == "s00"
        assert row_ids(app)[0] == "s00"


def model_order(db: Store, column: str, descending: bool) -> list[str]:
    rows = [session_row(db, name) for name in NAMES]
    keys = {
        "started": lambda r: (r["started_at"], r["id"]),
        "last_seen": lambda r: (r["last_seen_at"], r["id"]),
        "status": lambda r: (r["status"], r["started_at"], r["id"]),
        "agent": lambda r: (r["agent_id"], r["started_at"], r["id"]),
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
            ("O", "last_seen", True, "last seen ▼", "Seen▼"),
            ("o", "status", True, "status ▼", "Status▼"),
            ("O", "status", False, "status ▲", "Status▲"),
            ("o", "agent", False, "agent ▲", "Agent▲"),
            ("O", "agent", True, "agent ▼", "Agent▼"),
            ("o", "started", True, "started ▼", "Started▼"),
            ("O", "started", False, "started ▲", "Started▲"),
        ]
        for key, column, descending, described, header in steps:
            await press(pilot, key)
            assert f"sorted by {described} (o O)" in filter_line(app), key
            labels = [str(c.label) for c in table(app).columns.values()]
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
        await press(pilot, "o", "o", "O")  # status, descending
        assert row_ids(app) == model_order(db, "status", True)[:4]
        assert await collect(pilot) == model_order(db, "status", True)
        assert table(app).row_count <= 8
        await press(pilot, "home")
        assert row_ids(app) == model_order(db, "status", True)[:4]
        await press(pilot, "end")
        assert row_ids(app) == model_order(db, "status", True)[-4:]
        assert "rows 20–23 of 23 (more above)" in filter_line(app)


async def test_sorting_keeps_the_filters_and_starts_at_the_top(tmp_path: Path, db: Store) -> None:
    seed(db)
    app = console(sqlite_url(tmp_path), page_size=4, window_pages=2)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await press(pilot, "f", "f")  # status active
        await press(pilot, "o", "o", "o", "O")  # agent, descending
        shown = await collect(pilot)
        expected = [
            name
            for name in model_order(db, "agent", True)
            if session_row(db, name)["status"] == "active"
        ]
        assert shown == expected
        assert "status active" in filter_line(app)


def header_x(app: Any, key: str) -> int:
    """The x offset of a column's header cell inside the table."""
    x = 0
    for column in table(app).ordered_columns:
        if column.key.value == key:
            return x + 2
        x += column.get_render_width(table(app))
    raise AssertionError(f"no column {key}")


async def test_clicking_a_header_sorts_by_it_and_again_flips_it(tmp_path: Path, db: Store) -> None:
    seed(db)
    app = console(sqlite_url(tmp_path), page_size=50)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.click("#sessions", offset=(header_x(app, "status"), 0))
        await settle(pilot)
        assert "sorted by status ▲" in filter_line(app)
        assert row_ids(app) == model_order(db, "status", False)
        await pilot.click("#sessions", offset=(header_x(app, "status"), 0))
        await settle(pilot)
        assert "sorted by status ▼" in filter_line(app)
        assert row_ids(app) == model_order(db, "status", True)
        await pilot.click("#sessions", offset=(header_x(app, "seen"), 0))
        await settle(pilot)
        assert row_ids(app) == model_order(db, "last_seen", False)
        await pilot.click("#sessions", offset=(header_x(app, "id"), 0))
        await settle(pilot)
        assert "sorted by last seen ▲" in filter_line(app)  # not a sort column: unchanged
        assert any(
            "Sessions sort by started, seen, status or agent" in n for n in notifications(app)
        )


async def test_a_click_selects_a_row_and_a_double_click_opens_it(tmp_path: Path, db: Store) -> None:
    seed(db)
    events = count(db, "agent_session_events")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert selected(app) == "s00"
        assert "pause" not in dimmed_keys(app)
        await pilot.click("#sessions", offset=(4, 3))  # the header is row 0
        await settle(pilot)
        assert selected(app) == "s02"
        assert isinstance(app.screen, SessionListScreen)
        # The footer follows the selection: s02 has ended, so nothing to pause.
        assert "pause" in dimmed_keys(app)
        await pilot.click("#sessions", offset=(4, 5))
        await settle(pilot)
        assert selected(app) == "s04"
        assert isinstance(app.screen, SessionListScreen)  # a single click never opens
        await pilot.click("#sessions", offset=(4, 2), times=2)
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
        cells = {name: table(app).get_cell(name, "resume").plain for name in row_ids(app)}
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


async def test_the_page_below_is_read_ahead_and_appended_without_a_read(
    tmp_path: Path, db: Store
) -> None:
    seed(db)
    app = console(sqlite_url(tmp_path), page_size=5, window_pages=2)
    async with app.run_test(size=SHORT) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionListScreen)
        # Without any key: the next page is on hand already.
        assert screen.ahead is not None
        assert [s.id for s in screen.ahead.window.sessions] == NAMES[5:10]
        store = app.ctx.store
        assert store is not None
        with SessionReads(store) as reads:
            await pilot.press("down")
            # Appended in the same handler as the move: on screen before any read returns.
            assert row_ids(app) == NAMES[:10]
            assert selected(app) == "s01"
        assert reads.limits() in ([], [6])  # at most the next page ahead, never the window
        walked = await walk(pilot, "down", 21)
        assert walked == NAMES[2:]
        assert table(app).row_count <= 10
        first = NAMES.index(row_ids(app)[0])
        assert row_ids(app) == NAMES[first:]
        assert f"rows {first + 1}–23 of 23 (more above)" in filter_line(app)


def top_of_view(app: Any) -> str:
    """The session on the table's first visible line."""
    return row_ids(app)[int(table(app).scroll_y)]


async def test_a_slide_keeps_the_view_where_it_was(tmp_path: Path, db: Store) -> None:
    for number in range(80):
        add_session(db, f"t{number:02d}", at=FROZEN + timedelta(seconds=number))
    names = [f"t{number:02d}" for number in range(80)]
    # A window of three pages for a view of about fifteen rows: the page ahead is appended
    # while the rows that leave are above the view.
    app = console(sqlite_url(tmp_path), page_size=10, window_pages=3)
    async with app.run_test(size=(120, 24)) as pilot:
        await settle(pilot)
        dropped = 0
        for _ in range(50):
            top, first = top_of_view(app), row_ids(app)[0]
            await press(pilot, "down")
            # One row down scrolls the view by one row at most, whatever left the window above.
            assert names.index(top_of_view(app)) - names.index(top) in (0, 1)
            assert row_ids(app) == names[names.index(row_ids(app)[0]) :][: len(row_ids(app))]
            assert table(app).row_count <= 30
            dropped += row_ids(app)[0] != first
        assert selected(app) == "t50"
        assert dropped >= 2  # the window slid, rows leaving above, several times
        screen = app.screen
        assert isinstance(screen, SessionListScreen)
        assert screen.first_row == names.index(row_ids(app)[0]) + 1
        # A page down: the cursor's session is on screen, the window's bound holds.
        await press(pilot, "pagedown")
        cursor, top_row = table(app).cursor_row, int(table(app).scroll_y)
        assert top_row <= cursor < top_row + table(app).scrollable_content_region.height - 1
        assert selected(app) == row_ids(app)[cursor]
        assert names.index(selected(app)) > 50
        assert table(app).row_count <= 30


def eighty_sessions(db: Store) -> list[str]:
    names = [f"t{number:02d}" for number in range(80)]
    for number, name in enumerate(names):
        add_session(db, name, at=FROZEN + timedelta(seconds=number))
    return names


async def test_moving_up_puts_the_page_read_above_in_place_without_reading_the_window(
    tmp_path: Path, db: Store
) -> None:
    """From the end, up one row at a time: the page above is read in the background and put
    above the window when the cursor comes within a screen of its top, the rows below the view
    leaving; the view never jumps and the window is never read again. (Pages are longer than
    the view, as in the console: 40 rows for about 34 lines.)"""
    names = eighty_sessions(db)
    app = console(sqlite_url(tmp_path), page_size=20, window_pages=3)
    async with app.run_test(size=(120, 24)) as pilot:
        await settle(pilot)
        await press(pilot, "end")
        assert selected(app) == names[-1]
        screen = app.screen
        assert isinstance(screen, SessionListScreen)
        store = app.ctx.store
        assert store is not None
        grown = 0
        with SessionReads(store) as reads:
            for _ in range(60):
                top, first = top_of_view(app), row_ids(app)[0]
                await press(pilot, "up")
                # One row up scrolls the view by one row at most, whatever came in above.
                assert names.index(top) - names.index(top_of_view(app)) in (0, 1)
                ids = row_ids(app)
                assert ids == names[names.index(ids[0]) :][: len(ids)]
                assert table(app).row_count <= 60
                grown += row_ids(app)[0] != first
        assert selected(app) == names[-61]
        assert grown >= 3  # pages came in above several times
        # Only single pages were read (the page size plus one), never the window.
        assert reads.limits() and set(reads.limits()) == {21}
        assert screen.first_row == names.index(row_ids(app)[0]) + 1
        last = names.index(row_ids(app)[-1]) + 1
        assert screen.first_row == 1  # the whole way up: the window starts at the top
        assert f"rows 1–{last} of 80 (more below)" in filter_line(app)


async def test_page_up_from_the_end_walks_back_to_the_top_a_page_at_a_time(
    tmp_path: Path, db: Store
) -> None:
    names = eighty_sessions(db)
    app = console(sqlite_url(tmp_path), page_size=20, window_pages=3)
    async with app.run_test(size=(120, 24)) as pilot:
        await settle(pilot)
        await press(pilot, "end")
        view = table(app).scrollable_content_region.height - 1
        seen = [selected(app)]
        for _ in range(8):
            await press(pilot, "pageup")
            seen.append(selected(app))
            cursor, top_row = table(app).cursor_row, int(table(app).scroll_y)
            assert top_row <= cursor < top_row + view  # the selected row is on screen
        steps = [names.index(a) - names.index(b) for a, b in zip(seen, seen[1:], strict=False)]
        # A page a step (the last one stops at the top of the list).
        assert seen[-1] == names[0]
        assert all(step == view for step in steps[: len(names) // view - 1]), (steps, view)
        assert table(app).row_count <= 60


async def test_a_tall_terminal_fills_its_view_without_a_key(tmp_path: Path, db: Store) -> None:
    """Pages shorter than the view (a tall terminal): the page below is added as soon as it is
    read, and after End the page above, so no line of the list stays blank while there are
    sessions to show; the window's bound still holds."""
    names = eighty_sessions(db)
    app = console(sqlite_url(tmp_path), page_size=10, window_pages=4)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        view = table(app).size.height - 1
        assert view > 10  # longer than a page
        assert row_ids(app) == names[: len(row_ids(app))]
        assert len(row_ids(app)) >= view
        assert names[view - 1] in screen_text(app)  # the view's last line holds a session
        assert selected(app) == names[0]
        await press(pilot, "end")
        assert selected(app) == names[-1]
        assert len(row_ids(app)) >= view
        assert row_ids(app) == names[-len(row_ids(app)) :]
        assert names[-view] in screen_text(app)
        assert table(app).row_count <= 40


async def test_a_page_read_ahead_that_overlaps_the_window_makes_it_read_again(
    tmp_path: Path, db: Store
) -> None:
    """The list moved between the window's read and the page's (a session's start time changed,
    say): the page is not added, the window is read whole."""
    names = eighty_sessions(db)
    app = console(sqlite_url(tmp_path), page_size=20, window_pages=3)
    async with app.run_test(size=(120, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionListScreen)
        ahead = screen.ahead
        assert ahead is not None
        stale = [screen.sessions[-2], *ahead.window.sessions[1:]]
        screen.ahead = replace(ahead, window=replace(ahead.window, sessions=stale))
        reads_before = screen.serial
        # Within a screen of the window's end, not at its edge: the page ahead is due.
        await press(pilot, "down", "down", "down")
        assert table(app).cursor_row < 20 - 3  # the window's 20 rows less the 3 at its edge
        assert screen.serial > reads_before  # the window was read again
        ids = row_ids(app)
        assert ids == names[: len(ids)]  # contiguous, no session twice
        assert len(set(ids)) == len(ids)
