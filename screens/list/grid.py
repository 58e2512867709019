"""A grid of one-line rows drawn on demand, with a header, a cursor and a truthful scrollbar.

Built on Textual's Line API, as its own ``Log`` widget is: a ``ScrollView`` whose virtual height
is the whole list's length and whose ``render_line(y)`` draws only the rows in view, each from a
``RowSource`` by its index. A row the source does not hold yet is drawn as a placeholder, and the
grid says where its view moved (``ViewMoved``), so whoever feeds it reads those rows. The grid
knows columns, rows and a cursor; nothing of sessions or of the store.

A row is a ``GridRow``: one cell per column, or a ``span`` drawn across the whole width (a group
header). A column is only a key, a label and a width, so a mark column is a column like any
other; the header draws the same columns' labels. Drawn lines are cached per row object, so a
row built again (new data, the clock moved) is drawn again and an unchanged one is not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from rich.cells import cell_len
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollDown, ScrollTo, ScrollUp
from textual.strip import Strip
from textual.widget import Widget

PLACEHOLDER = "…"
# Rows drawn ahead of need in one turn of the event loop (about a millisecond's drawing).
PREDRAW_ROWS = 4


@dataclass(frozen=True)
class GridColumn:
    key: str
    label: Text
    # Cells of content; the grid pads each side by ``CELL_PADDING``.
    width: int


@dataclass(eq=False)
class GridRow:
    """One line of the grid. Compared and hashed by identity: the line cache keys on it, so a
    row built anew is drawn anew."""

    cells: Sequence[Text] = ()
    # Drawn across every column instead of cells (a group header).
    span: Text | None = None


class RowSource(Protocol):
    def grid_row(self, index: int) -> GridRow | None:
        """The row at ``index`` of the list, or None when it is not held yet."""
        ...


CELL_PADDING = 1


@dataclass(frozen=True)
class GridStyles:
    base: Style
    even: Style
    cursor: Style
    placeholder: Style
    span: Style


def cell_segments(cell: Text, width: int, console: Console) -> list[Segment]:
    """One cell's segments, padded or cut to ``width``. A cell of one style (most of them) is
    one segment, made directly: drawing it as Rich does costs ten times as much."""
    plain = cell.plain
    used = cell_len(plain)
    if not cell.spans and "\n" not in plain and used <= width:
        style = console.get_style(cell.style) if isinstance(cell.style, str) else cell.style
        return [Segment(plain + " " * (width - used), style or None)]
    shown = cell
    if used > width or "\n" in plain:
        shown = cell.copy()
        shown.truncate(width, overflow="ellipsis")
        used = shown.cell_len
    segments = list(shown.render(console, end=""))
    if used < width:
        segments.append(Segment(" " * (width - used), console.get_style(cell.style or "")))
    return segments


def row_segments(
    columns: Sequence[GridColumn], cells: Sequence[Text], console: Console
) -> list[Segment]:
    """The cells side by side, each padded and cut to its column's width."""
    segments: list[Segment] = []
    pad = Segment(" " * CELL_PADDING)
    for column, cell in zip(columns, cells, strict=False):
        segments.append(pad)
        segments.extend(cell_segments(cell, column.width, console))
        segments.append(pad)
    return segments


class GridHeader(Widget):
    """The column labels above a grid; a click on one says which (``Clicked``)."""

    DEFAULT_CSS = """
    GridHeader {
        height: 1;
        background: $panel;
        color: $foreground;
        text-style: bold;
    }
    """

    class Clicked(Message):
        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.columns: tuple[GridColumn, ...] = ()

    def show(self, columns: Sequence[GridColumn]) -> None:
        self.columns = tuple(columns)
        self.refresh()

    def render_line(self, y: int) -> Strip:
        width, base = self.size.width, self.rich_style
        if y:
            return Strip.blank(width, base)
        labels = [column.label for column in self.columns]
        segments = row_segments(self.columns, labels, self.app.console)
        return Strip(Segment.apply_style(segments, base)).adjust_cell_length(width, base)

    def key_at(self, x: int) -> str | None:
        left = 0
        for column in self.columns:
            right = left + column.width + 2 * CELL_PADDING
            if left <= x < right:
                return column.key
            left = right
        return None

    def on_click(self, event: events.Click) -> None:
        key = self.key_at(event.x)
        if key is not None:
            event.stop()
            self.post_message(self.Clicked(key))


class SessionGrid(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    SessionGrid {
        background: $surface;
        color: $foreground;
        overflow-x: hidden;
        overflow-y: auto;
        & > .session-grid--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus > .session-grid--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
            text-style: $block-cursor-text-style;
        }
        & > .session-grid--even-row {
            background: $surface-lighten-1 50%;
        }
        &:dark > .session-grid--even-row {
            background: $surface-darken-1 40%;
        }
        & > .session-grid--placeholder {
            color: $text-disabled;
        }
        & > .session-grid--span {
            background: $panel;
            text-style: bold;
        }
    }
    """
    COMPONENT_CLASSES = {
        "session-grid--cursor",
        "session-grid--even-row",
        "session-grid--placeholder",
        "session-grid--span",
    }
    BINDINGS = [
        Binding("up", "cursor_up", "Up", show=False),
        Binding("down", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home,ctrl+home", "first", "First", show=False),
        Binding("end,ctrl+end", "last", "Last", show=False),
        Binding("enter", "choose", "Open", show=False),
    ]

    class ViewMoved(Message):
        """The rows in view changed: ``first`` and the ``height`` of the view."""

        def __init__(self, first: int, height: int) -> None:
            super().__init__()
            self.first = first
            self.height = height

    class RowChosen(Message):
        """Enter, or a double click, on a row."""

        def __init__(self, row: int) -> None:
            super().__init__()
            self.row = row

    row_count: reactive[int] = reactive(0, init=False)
    # The row under the cursor. Watchers (``watch(grid, "cursor", …)``) are called at once, in
    # the frame of the key press that moved it: what follows the cursor is painted with it.
    cursor: reactive[int] = reactive(0, init=False, repaint=False)

    def __init__(self, source: RowSource, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.source = source
        self.columns: tuple[GridColumn, ...] = ()
        self.lines: LRUCache[tuple[object, ...], Strip] = LRUCache(1024)
        # Calls of ``predraw``: one still drawing stops when a newer one starts.
        self.predraws = 0
        self.styles_now: GridStyles | None = None
        # Set while the grid scrolls to follow its cursor: a scroll by other means (the
        # scrollbar, the wheel) brings the cursor into the view instead.
        self.following = False

    # -- what to draw -------------------------------------------------------------------------

    def set_columns(self, columns: Sequence[GridColumn]) -> None:
        self.columns = tuple(columns)
        self.redraw()

    def redraw(self) -> None:
        """Draw every row again (the columns changed)."""
        self.lines.clear()
        self._size_content()
        self.refresh()

    def watch_row_count(self) -> None:
        self._size_content()
        if self.cursor >= self.row_count:
            self.move_cursor(self.row_count - 1)
        self.refresh()

    def _size_content(self) -> None:
        width = sum(column.width + 2 * CELL_PADDING for column in self.columns)
        self.virtual_size = Size(width, self.row_count)

    @property
    def view_height(self) -> int:
        return max(self.scrollable_content_region.height, 1)

    @property
    def first_in_view(self) -> int:
        return self.scroll_offset.y

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self.forget_styles()

    def on_focus(self) -> None:
        self.forget_styles()
        self.refresh()

    def on_blur(self) -> None:
        self.forget_styles()
        self.refresh()

    def forget_styles(self) -> None:
        """The theme, the focus or the CSS changed: every line is drawn again."""
        self.styles_now = None
        self.lines.clear()

    @property
    def looks(self) -> GridStyles:
        """The grid's styles, worked out once per change of theme or focus (asking the DOM for
        them costs more than drawing a cached line)."""
        if self.styles_now is None:
            base = self.rich_style
            component = self.get_component_rich_style
            self.styles_now = GridStyles(
                base=base,
                even=base + component("session-grid--even-row", partial=True),
                cursor=component("session-grid--cursor"),
                placeholder=component("session-grid--placeholder", partial=True),
                span=base + component("session-grid--span", partial=True),
            )
        return self.styles_now

    def render_line(self, y: int) -> Strip:
        index = self.scroll_offset.y + y
        width = self.scrollable_content_region.width
        if not 0 <= index < self.row_count:
            return Strip.blank(width, self.looks.base)
        return self.line(index, width)

    def line(self, index: int, width: int) -> Strip:
        """Row ``index`` drawn ``width`` cells wide, from the cache when it was drawn before."""
        row, cursor = self.source.grid_row(index), index == self.cursor
        if row is None:
            return self._pending_line(index, width, cursor)
        key = (row, cursor, index % 2, width)
        cached = self.lines.get(key)
        if cached is None:
            cached = self._draw(row, index, width, cursor)
            self.lines.set(key, cached)
        return cached

    def predraw(self, first: int, last: int) -> None:
        """Draw rows ``first`` … ``last - 1`` ahead of need (those held and not drawn yet), so a
        page down into them only copies lines. A few rows at a time, each few a turn of the
        event loop of its own: a key pressed meanwhile waits for a few rows' drawing, not for
        three pages of them (after a re-read under a fleet's changes most rows are drawn anew).
        A newer call replaces one still under way."""
        self.predraws += 1
        self._predraw(self.predraws, max(first, 0), last)

    def _predraw(self, serial: int, first: int, last: int) -> None:
        if serial != self.predraws:
            return  # a newer predraw replaced this one
        width = self.scrollable_content_region.width
        stop = min(first + PREDRAW_ROWS, last, self.row_count)
        for index in range(first, stop):
            self.line(index, width)
        if stop < min(last, self.row_count):
            self.call_later(self._predraw, serial, stop, last)

    def _draw(self, row: GridRow, index: int, width: int, cursor: bool) -> Strip:
        looks = self.looks
        console = self.app.console
        if row.span is not None:
            segments = [Segment(" " * CELL_PADDING), *row.span.render(console)]
            style = looks.span
        else:
            segments = row_segments(self.columns, row.cells, console)
            style = looks.even if index % 2 else looks.base
        return self._finish(segments, style, width, cursor)

    def _pending_line(self, index: int, width: int, cursor: bool) -> Strip:
        looks = self.looks
        style = looks.even if index % 2 else looks.base
        segments = [Segment(" " * CELL_PADDING + PLACEHOLDER, looks.placeholder)]
        return self._finish(segments, style, width, cursor)

    def _finish(self, segments: list[Segment], style: Style, width: int, cursor: bool) -> Strip:
        """A line's segments over the row's ``style``, under the cursor's when it is on it,
        filled to ``width``. Runs of one style are joined: the compositor handles every
        segment of a line at every frame that shows it."""
        post = self.looks.cursor if cursor else None
        strip = Strip(Segment.simplify(Segment.apply_style(segments, style, post)))
        return strip.adjust_cell_length(width, style + post if post else style)

    # -- the cursor and the view --------------------------------------------------------------

    def move_cursor(self, row: int, *, scroll: bool = True) -> None:
        """Put the cursor on ``row`` (kept within the list), scrolling it into view."""
        row = max(0, min(row, self.row_count - 1))
        if scroll:
            self.scroll_to_row(row)
        self.cursor = row

    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh_line(old)
        self.refresh_line(new)

    def scroll_to_row(self, row: int) -> None:
        top, height = self.first_in_view, self.view_height
        if row < top:
            self._follow(row)
        elif row >= top + height:
            self._follow(row - height + 1)

    def _follow(self, y: float) -> None:
        self.following = True
        try:
            self.scroll_to(y=y, animate=False, force=True)
        finally:
            self.following = False

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if round(old_value) == round(new_value):
            return
        self.post_message(self.ViewMoved(self.first_in_view, self.view_height))
        if not self.following:
            # Scrolled by the scrollbar or the wheel: the cursor comes along into the view.
            top, height = self.first_in_view, self.view_height
            inside = max(top, min(self.cursor, top + height - 1))
            if inside != self.cursor:
                self.move_cursor(inside, scroll=False)

    def on_resize(self) -> None:
        self.post_message(self.ViewMoved(self.first_in_view, self.view_height))

    def action_cursor_up(self) -> None:
        self.move_cursor(self.cursor - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(self.cursor + 1)

    def action_page_down(self) -> None:
        self._page(self.view_height)

    def action_page_up(self) -> None:
        self._page(-self.view_height)

    def _page(self, step: int) -> None:
        """The view and the cursor move a page together, as DataTable's do."""
        self._follow(self.first_in_view + step)
        self.move_cursor(self.cursor + step)

    def action_first(self) -> None:
        self.move_cursor(0)

    def action_last(self) -> None:
        self.move_cursor(self.row_count - 1)

    def action_choose(self) -> None:
        if self.row_count:
            self.post_message(self.RowChosen(self.cursor))

    def on_scroll_to(self, event: ScrollTo) -> None:
        """The thumb dragged: the view goes there at once. Textual animates it, and every step
        of the animation would be a place of the list to read."""
        event.prevent_default()
        event.stop()
        self.scroll_to(event.x, event.y, animate=False)

    def on_scroll_down(self, event: ScrollDown) -> None:
        """A click on the track below the thumb: a page down, at once, as the key does."""
        event.prevent_default()
        event.stop()
        self._page(self.view_height)

    def on_scroll_up(self, event: ScrollUp) -> None:
        event.prevent_default()
        event.stop()
        self._page(-self.view_height)

    def on_click(self, event: events.Click) -> None:
        row = self.first_in_view + event.y
        if not 0 <= row < self.row_count or event.x >= self.scrollable_content_region.width:
            return
        event.stop()
        self.move_cursor(row, scroll=False)
        if event.chain >= 2:
            self.post_message(self.RowChosen(row))
