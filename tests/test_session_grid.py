"""The grid on its own, fed by a source that knows nothing of sessions or of a store: a million
rows drawn on demand, the cursor and the view, the scrollbar, rows not held yet, a column of
marks and rows that span the width (group headers), the mouse."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import App, ComposeResult
from textual.message import Message

from roundtable_console.screens.list.grid import (
    PREDRAW_ROWS,
    GridColumn,
    GridHeader,
    GridRow,
    SessionGrid,
)
from tests.test_tui_support import screen_text

COLUMNS = [
    GridColumn("mark", Text(""), 1),
    GridColumn("name", Text("Name"), 12),
    GridColumn("n", Text("N"), 8),
]


class Source:
    """Rows made up from their index; ``missing`` ones are not held; every tenth is a group
    header spanning the width; even rows are marked."""

    def __init__(self, missing: range = range(0)) -> None:
        self.asked: list[int] = []
        self.missing = missing
        self.rows: dict[int, GridRow] = {}

    def grid_row(self, index: int) -> GridRow | None:
        self.asked.append(index)
        if index in self.missing:
            return None
        if index not in self.rows:
            if index % 10 == 0:
                self.rows[index] = GridRow(span=Text(f"group {index // 10}"))
            else:
                mark = Text("●" if index % 2 == 0 else " ")
                self.rows[index] = GridRow([mark, Text(f"row-{index}"), Text("x")])
        return self.rows[index]


class GridApp(App[None]):
    def __init__(self, source: Source, rows: int) -> None:
        super().__init__()
        self.source, self.rows = source, rows
        self.heard: list[Message] = []
        self.cursors: list[int] = []

    def compose(self) -> ComposeResult:
        yield GridHeader(id="columns")
        yield SessionGrid(self.source, id="grid")

    def on_mount(self) -> None:
        grid = self.query_one(SessionGrid)
        self.query_one(GridHeader).show(COLUMNS)
        grid.set_columns(COLUMNS)
        grid.row_count = self.rows
        self.watch(grid, "cursor", self.cursor_moved, init=False)
        grid.focus()

    def cursor_moved(self, row: int) -> None:
        self.cursors.append(row)

    def on_session_grid_view_moved(self, message: SessionGrid.ViewMoved) -> None:
        self.heard.append(message)

    def on_session_grid_row_chosen(self, message: SessionGrid.RowChosen) -> None:
        self.heard.append(message)

    def on_grid_header_clicked(self, message: GridHeader.Clicked) -> None:
        self.heard.append(message)


def grid_of(app: App[Any]) -> SessionGrid:
    return app.query_one(SessionGrid)


def chosen(app: GridApp) -> list[int]:
    return [m.row for m in app.heard if isinstance(m, SessionGrid.RowChosen)]


async def test_a_million_rows_are_drawn_only_where_the_view_is() -> None:
    source = Source()
    app = GridApp(source, 1_000_000)
    async with app.run_test(size=(40, 12)) as pilot:
        await pilot.pause()
        grid = grid_of(app)
        assert grid.virtual_size.height == 1_000_000
        assert grid.view_height == 11
        assert set(source.asked) <= set(range(11))  # only rows in view were asked for
        shown = screen_text(app)
        assert "Name" in shown.splitlines()[0]
        assert "●  row-2" in shown and "row-3" in shown and "group 0" in shown
        source.asked.clear()
        await pilot.press("end")
        await pilot.pause()
        assert grid.cursor == 999_999 and grid.first_in_view == 1_000_000 - 11
        assert set(source.asked) <= set(range(1_000_000 - 11, 1_000_000))
        assert "row-999999" in screen_text(app)
        # The thumb is at the bottom of the track.
        assert grid.vertical_scrollbar.position == grid.max_scroll_y


async def test_keys_move_the_cursor_and_the_view_together() -> None:
    app = GridApp(Source(), 100)
    async with app.run_test(size=(40, 12)) as pilot:
        await pilot.pause()
        grid = grid_of(app)
        await pilot.press("down", "down")
        assert grid.cursor == 2 and app.cursors == [1, 2]  # watchers hear every move
        await pilot.press("pagedown")
        assert grid.cursor == 13 and grid.first_in_view == 11
        await pilot.press("pageup")
        assert grid.cursor == 2 and grid.first_in_view == 0
        await pilot.press("end")
        assert grid.cursor == 99 and grid.first_in_view == 89
        await pilot.press("down")
        assert grid.cursor == 99  # the last row stays the last
        await pilot.press("home")
        assert grid.cursor == 0 and grid.first_in_view == 0
        await pilot.press("up")
        assert grid.cursor == 0
        await pilot.press("ctrl+end")
        assert grid.cursor == 99
        await pilot.press("ctrl+home", "enter")
        await pilot.pause()
        assert chosen(app) == [0]


async def test_rows_not_held_are_placeholders_and_the_view_says_where_it_went() -> None:
    source = Source(missing=range(500, 600))
    app = GridApp(source, 1000)
    async with app.run_test(size=(40, 12)) as pilot:
        await pilot.pause()
        grid = grid_of(app)
        grid.scroll_to(y=505, animate=False)
        await pilot.pause()
        moved = [m for m in app.heard if isinstance(m, SessionGrid.ViewMoved)]
        assert moved and (moved[-1].first, moved[-1].height) == (505, 11)
        shown = screen_text(app)
        assert "row-5" not in shown and shown.count("…") == 11
        # Scrolled by other means than the cursor: the cursor comes into the view.
        assert grid.cursor == 505
        # The rows arrive: the grid draws them at its next refresh.
        source.missing = range(0)
        grid.refresh()
        await pilot.pause()
        assert "row-505" in screen_text(app)


async def test_dragging_the_thumb_moves_the_view_and_the_cursor_there() -> None:
    app = GridApp(Source(), 1_000_000)
    async with app.run_test(size=(40, 12)) as pilot:
        await pilot.pause()
        grid = grid_of(app)
        bar = grid.vertical_scrollbar
        await pilot.mouse_down(bar, offset=(0, 0))
        await pilot.hover(bar, offset=(0, bar.size.height // 2))
        await pilot.mouse_up(bar, offset=(0, bar.size.height // 2))
        await pilot.pause()
        assert 400_000 < grid.first_in_view < 600_000
        assert grid.first_in_view <= grid.cursor < grid.first_in_view + grid.view_height
        assert f"row-{grid.first_in_view + 1}" in screen_text(app)


async def test_a_click_puts_the_cursor_and_a_double_click_chooses() -> None:
    app = GridApp(Source(), 100)
    async with app.run_test(size=(40, 12)) as pilot:
        await pilot.pause()
        grid = grid_of(app)
        await pilot.click("#grid", offset=(3, 4))
        await pilot.pause()
        assert grid.cursor == 4 and chosen(app) == []
        await pilot.click("#grid", offset=(3, 6), times=2)
        await pilot.pause()
        assert grid.cursor == 6 and chosen(app) == [6]
        await pilot.click("#columns", offset=(5, 0))
        await pilot.pause()
        clicked = [m.key for m in app.heard if isinstance(m, GridHeader.Clicked)]
        assert clicked == ["name"]


async def test_a_list_that_shrinks_brings_the_cursor_back_inside() -> None:
    app = GridApp(Source(), 100)
    async with app.run_test(size=(40, 12)) as pilot:
        await pilot.pause()
        grid = grid_of(app)
        await pilot.press("end")
        grid.row_count = 30
        await pilot.pause()
        assert grid.cursor == 29 and grid.virtual_size.height == 30
        grid.row_count = 0
        await pilot.pause()
        assert grid.cursor == 0
        assert "row-" not in screen_text(app)


async def test_a_line_is_drawn_once_until_its_row_changes() -> None:
    source = Source()
    app = GridApp(source, 100)
    async with app.run_test(size=(40, 12)) as pilot:
        await pilot.pause()
        grid = grid_of(app)
        width = grid.scrollable_content_region.width
        first = grid.line(3, width)
        assert grid.line(3, width) is first  # drawn once, copied after
        source.rows[3] = GridRow([Text(" "), Text("changed"), Text("y")])
        again = grid.line(3, width)
        assert again is not first and "changed" in again.text

        # Drawn ahead: rows below the view are in the cache before a key shows them, a few
        # at once and the others in later turns of the event loop (keys pressed meanwhile
        # wait for a few rows' drawing, not for all of them).
        def drawn(first: int, last: int) -> list[bool]:
            rows = [source.rows.get(i) for i in range(first, last)]
            return [(row, False, i % 2, width) in grid.lines for i, row in enumerate(rows, first)]

        grid.predraw(11, 22)
        assert drawn(11, 11 + PREDRAW_ROWS) == [True] * PREDRAW_ROWS
        assert not any(drawn(11 + PREDRAW_ROWS, 22))
        await pilot.pause()
        assert all(drawn(11, 22))
        # A newer predraw replaces one still under way.
        grid.predraw(40, 60)
        grid.predraw(70, 80)
        await pilot.pause()
        assert all(drawn(70, 80)) and all(drawn(40, 40 + PREDRAW_ROWS))
        assert not any(drawn(40 + PREDRAW_ROWS, 60))
