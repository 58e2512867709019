"""The session table's own drawing and bookkeeping (screens.session_table): one-line cells drawn
directly must be, segment for segment, what DataTable draws through Rich; rows appended at once
must be what add_row makes; and a page down that slides the window is one frame."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.renderables.styled import Styled
from textual.widgets import DataTable
from textual.widgets.data_table import DuplicateKey

from screens.session_list import SessionListScreen
from screens.session_table import SessionTable, single_line_cell
from store.database import Store
from tests.test_tui_support import FROZEN, add_session, console, row_ids, settle, sqlite_url, table

STYLES = st.sampled_from(["", "bold", "dim", "yellow", "green", "bold red on blue", "italic"])
# Narrow and wide characters, combining marks and control characters: what cells of store data
# may hold once made one line.
CHARACTERS = st.sampled_from(list("ab Z-_.:…") + ["界", "é", "\u0301", "\x1b", "\x07", "🙂"])


@st.composite
def cells(draw: st.DrawFn) -> Text:
    text = Text(style=draw(STYLES))
    for _ in range(draw(st.integers(0, 4))):
        text.append("".join(draw(st.lists(CHARACTERS, max_size=6))), style=draw(STYLES))
    return text


def drawn_by_rich(
    cell: Text, console: Console, width: int, padding: int, pre: Style, post: Style
) -> list[list[Segment]]:
    """DataTable._render_cell's own drawing of a data cell in a one-line row."""
    options = console.options.update_dimensions(width, 1).update(no_wrap=True)
    styled = Styled(Padding(cell, (0, padding)), pre_style=pre, post_style=post)
    return console.render_lines(styled, options)


PRE = Style(color="#e0e0e0", bgcolor="#272727", meta={"row": 3, "column": 1})


@settings(max_examples=400, deadline=None)
@given(
    cell=cells(),
    width=st.integers(0, 14),
    padding=st.integers(0, 2),
    post=st.sampled_from([Style.null(), Style(bold=True), Style(bgcolor="#0178d4")]),
)
def test_a_one_line_cell_is_drawn_as_rich_draws_it(
    cell: Text, width: int, padding: int, post: Style
):
    console = Console(width=120, color_system="truecolor")
    ours = single_line_cell(cell, console=console, width=width, padding=padding, pre=PRE, post=post)
    if ours is None:
        # Left to DataTable: only cells that do not fit on one line.
        assert cell.cell_len > width - 2 * padding or "\n" in cell.plain or width <= 2 * padding
        return
    assert [ours] == drawn_by_rich(cell, console, width, padding, PRE, post)


def test_cells_that_do_not_fit_on_one_line_are_left_to_datatable():
    console = Console(width=120)
    for cell in (Text("a\nb"), Text("toolong"), Text("tab\there"), Text("x", justify="right")):
        assert (
            single_line_cell(cell, console=console, width=6, padding=1, pre=PRE, post=Style.null())
            is None
        )


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield SessionTable(cursor_type="row", zebra_stripes=True, cell_padding=1)


ROWS: list[tuple[Any, ...]] = [
    (Text("sess-1"), Text.assemble(("3", "bold"), (" +1", "yellow")), Text("")),
    (Text("界界界"), Text("0", style="dim"), Text("yes", style="green")),
    (Text("far too long for it"), Text("two\nlines"), "[b]markup string[/b]"),
    (Text("\x1b[31mred?"), None, Text("é\u0301", style="bold italic")),
]


async def test_the_table_draws_every_cell_as_datatable_does():
    """Through the real widget: cursor, hover and zebra rows, one-line cells drawn directly and
    the others (too long, two lines, strings, None) by DataTable itself."""
    app = TableApp()
    async with app.run_test(size=(80, 12)) as pilot:
        table = app.query_one(SessionTable)
        table.add_column("A", key="a", width=8)
        table.add_column("B", key="b", width=6)
        table.add_column("C", key="c", width=10)
        for index, row in enumerate(ROWS):
            table.add_row(*row, key=f"r{index}")
        table.move_cursor(row=1)
        await pilot.pause()
        compared = 0
        for row_index in range(len(ROWS)):
            for column_index, width in enumerate((10, 8, 12)):
                for cursor, hover in ((False, False), (True, False), (False, True)):
                    style = table._get_row_style(row_index, table.rich_style)
                    table._cell_render_cache.clear()
                    ours = table._render_cell(row_index, column_index, style, width, cursor, hover)
                    table._cell_render_cache.clear()
                    theirs = DataTable._render_cell(
                        table, row_index, column_index, style, width, cursor, hover
                    )
                    assert ours == theirs, (row_index, column_index, cursor, hover)
                    compared += 1
        assert compared == len(ROWS) * 3 * 3


class TwoTables(App[None]):
    CSS = "SessionTable { height: 1fr; }"

    def __init__(self) -> None:
        super().__init__()
        self.highlighted: list[tuple[str | None, str | None]] = []

    def compose(self) -> ComposeResult:
        yield SessionTable(id="bulk", cursor_type="row")
        yield SessionTable(id="one-by-one", cursor_type="row")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.highlighted.append((event.data_table.id, event.row_key.value))


async def test_rows_appended_at_once_are_the_rows_add_row_makes():
    app = TwoTables()
    rows = [(f"k{number}", [Text(f"s{number}"), Text("x" * number)]) for number in range(6)]
    async with app.run_test(size=(80, 20)) as pilot:
        bulk = app.query_one("#bulk", SessionTable)
        single = app.query_one("#one-by-one", SessionTable)
        for each in (bulk, single):
            each.add_column("A", key="a", width=6)
            each.add_column("B", key="b", width=8)
        bulk.append_rows(rows[:3])
        bulk.append_rows(rows[3:])
        for key, cells in rows:
            single.add_row(*cells, key=key)
        await pilot.pause()
        assert [row.key.value for row in bulk.ordered_rows] == [key for key, _ in rows]
        assert [bulk.get_row_at(index) for index in range(6)] == [
            single.get_row_at(index) for index in range(6)
        ]
        assert bulk.virtual_size == single.virtual_size
        assert bulk.cursor_coordinate == single.cursor_coordinate
        # The first rows put the cursor on a row and say so, as add_row does.
        assert bulk.cursor_row == 0
        assert sorted(app.highlighted) == [("bulk", "k0"), ("one-by-one", "k0")]
        with pytest.raises(DuplicateKey):
            bulk.append_rows([("k2", [Text("again")])])
        with pytest.raises(ValueError, match="More values"):
            bulk.append_rows([("k9", [Text("a"), Text("b"), Text("c")])])


async def test_the_table_height_follows_its_rows_without_a_layout():
    """Rows added change the virtual height (and the scrollbar) at once, not on the next
    layout of the screen."""
    app = TwoTables()
    async with app.run_test(size=(80, 20)) as pilot:
        bulk = app.query_one("#bulk", SessionTable)
        bulk.add_column("A", key="a", width=6)
        bulk.append_rows([(f"k{number}", [Text(str(number))]) for number in range(30)])
        await pilot.pause()
        assert bulk.virtual_size.height == 31  # the rows and the header
        assert bulk.vertical_scrollbar.window_virtual_size == 31
        bulk.append_rows([(f"m{number}", [Text(str(number))]) for number in range(20)])
        bulk.measure_now()
        assert bulk.virtual_size.height == 51
        assert bulk.vertical_scrollbar.window_virtual_size == 51
        bulk.remove_first_rows(10)
        bulk.measure_now()
        assert bulk.virtual_size.height == 41
        assert bulk.vertical_scrollbar.window_virtual_size == 41


class FrameCount:
    """Frames the screen writes (display calls with an update) while a key is handled."""

    def __init__(self, app: Any) -> None:
        self.frames = 0
        display = app._display

        def counting(screen: Any, update: Any) -> None:
            self.frames += update is not None
            display(screen, update)

        app._display = counting


async def test_a_page_down_that_slides_the_window_is_one_frame(tmp_path: Path, db: Store):
    """Rows, scrollbar, footer and the filter line change together: the operator sees one
    repaint per key, not the rows first and the scrollbar or a dimmed key a frame later."""
    for number in range(200):
        add_session(
            db,
            f"t{number:03d}",
            at=FROZEN + timedelta(seconds=number),
            status=("active", "paused", "ended")[number % 3],
        )
    # The first page is longer than the view: the scrollbar is there from the start (one that
    # comes when rows are added is a layout of the screen, a frame of its own).
    app = console(sqlite_url(tmp_path), page_size=30, window_pages=3)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionListScreen)
        frames = FrameCount(app)
        counted: list[int] = []
        first_rows: set[str] = set()
        for _ in range(7):
            await settle(pilot)  # the page ahead is on hand, as when keys are not held down
            frames.frames = 0
            await pilot.press("pagedown")
            await settle(pilot)
            counted.append(frames.frames)
            first_rows.add(row_ids(app)[0])
        assert len(first_rows) > 2  # the window slid (rows left above) and grew
        assert table(app).row_count <= 90
        assert counted == [1] * 7


async def test_rows_put_above_and_dropped_below_keep_the_table_in_order():
    app = TwoTables()
    async with app.run_test(size=(80, 20)) as pilot:
        table = app.query_one("#bulk", SessionTable)
        table.add_column("A", key="a", width=6)
        table.append_rows([(f"m{number}", [Text(f"m{number}")]) for number in range(5)])
        table.move_cursor(row=2)
        table.prepend_rows([(f"a{number}", [Text(f"a{number}")]) for number in range(3)])
        table.remove_last_rows(2)
        table.measure_now()
        await pilot.pause()
        expected = ["a0", "a1", "a2", "m0", "m1", "m2"]
        assert [row.key.value for row in table.ordered_rows] == expected
        assert [key.value for key in table.rows] == expected  # the dict in display order too
        assert [table.get_row_at(index)[0].plain for index in range(6)] == expected
        assert table.virtual_size.height == 7
        # The cursor keeps its index; the screen moves it with the rows it put above.
        assert table.cursor_row == 2
        with pytest.raises(DuplicateKey):
            table.prepend_rows([("m1", [Text("again")])])
        with pytest.raises(DuplicateKey):
            table.prepend_rows([("b", [Text("b")]), ("b", [Text("b")])])
        assert table.row_count == 6
        table.remove_first_rows(4)
        assert [row.key.value for row in table.ordered_rows] == ["m1", "m2"]
        table.remove_last_rows(0)
        table.remove_first_rows(0)
        assert table.row_count == 2
