"""The session list's table: a DataTable whose home/end reach the ends of the whole list, not of
the rows read so far, and whose mouse selects with one click and opens with two."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import zip_longest

from rich.cells import cell_len
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual._two_way_dict import TwoWayDict
from textual.geometry import Size
from textual.message import Message
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, DuplicateKey, Row, RowKey


def single_line_cell(
    cell: Text, *, console: Console, width: int, padding: int, pre: Style, post: Style | None
) -> list[Segment] | None:
    """The one line DataTable draws for ``cell`` in ``width`` cells (its padding included),
    with ``pre`` under and ``post`` over its own styles; None when the cell is not one line
    that fits without wrapping or cropping (DataTable's own drawing handles those).

    DataTable draws a cell through Rich's Padding, Styled and line splitting, about 0.1 ms a
    cell; a page of the list is some 400 cells. The segments are the same (a test compares
    them on generated cells), drawn from the Text's own spans as Rich's ``Text`` does."""
    plain = cell.plain
    room = width - 2 * padding
    if (
        room < 1
        or cell.justify not in (None, "default")
        or "\n" in plain
        or "\t" in plain
        or cell_len(plain) > room
    ):
        return None
    # As Rich renders a Text line: its own style becomes a span under the others.
    line = Text("\n").join([cell]).render(console)
    margin = Segment(" " * padding, pre) if padding else None
    drawn = [margin] if margin else []
    drawn.extend(Segment(text, pre + style) for text, style, _control in line)
    if (used := cell_len(plain)) < room:
        drawn.append(Segment(" " * (room - used), pre))
    if margin:
        drawn.append(margin)
    if post:
        drawn = [Segment(text, style + post if style else post) for text, style, _ in drawn]
    return drawn


class SessionTable(DataTable[Text]):
    class Jump(Message):
        """Home or end was pressed: the screen reads that end of the list if it is not here."""

        def __init__(self, to_end: bool) -> None:
            super().__init__()
            self.to_end = to_end

    def append_rows(self, rows: Iterable[tuple[str, Sequence[Text]]]) -> None:
        """DataTable.add_row for many one-line rows at once (key, cells): add_row moves the
        cursor to where it is after each row, and the screen watches the cursor."""
        had_rows = self.row_count > 0
        for key, cells in rows:
            row_key = self._checked_key(key, cells)
            self._row_locations[row_key] = self.row_count
            self._store_row(row_key, cells)
        self._rows_changed()
        self.cursor_coordinate = self.cursor_coordinate
        if not had_rows and self.row_count and self.columns and self.show_cursor:
            if self.cursor_type != "none":
                self._highlight_cursor()

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """DataTable's, without measuring each new cell when no column takes its width from
        its cells (every column here has a width) and no row has a label or its own height."""
        rows = self.rows
        new_rows = list(new_rows)
        measured = any(column.auto_width for column in self.columns.values()) or any(
            (row := rows.get(key)) is not None and (row.label is not None or row.auto_height)
            for key in new_rows
        )
        if measured:
            super()._update_dimensions(new_rows)
        else:
            self._set_virtual_size()

    def _set_virtual_size(self) -> None:
        """DataTable sets its virtual size, which asks for a layout of the whole screen, and
        the screen's layout repaints the scrollbar on the scrollbar's idle: a frame after the
        rows. The table's own size does not depend on its rows (its height is set in CSS), so
        a change of its height only moves the scrollbar's thumb, which is done here at once."""
        width = sum(column.get_render_width(self) for column in self.columns.values())
        header = self.header_height if self.show_header else 0
        size = Size(width + self._row_label_column_width, self._total_row_height + header)
        old = self.virtual_size
        height = self.styles.height
        if size == old:
            return
        if size.width != old.width or height is None or height.is_auto:
            self.virtual_size = size
            return
        shown = (self.show_vertical_scrollbar, self.show_horizontal_scrollbar)
        self.set_reactive(SessionTable.virtual_size, size)
        self._scroll_update(size)
        # A scrollbar that comes or goes changes the rows' width: that is a layout.
        layout = shown != (self.show_vertical_scrollbar, self.show_horizontal_scrollbar)
        self.refresh(layout=layout)

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> list[list[Segment]]:
        """DataTable's cell drawing, with its cache, drawing a one-line Text cell directly."""
        if row_index < 0 or column_index < 0 or self.fixed_rows or self.fixed_columns:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        row_key = self._row_locations.get_key(row_index)
        cache_key = (
            row_key,
            self._column_locations.get_key(column_index),
            base_style,
            cursor,
            hover,
            self._show_hover_cursor,
            self._update_count,
            self._pseudo_class_state,
        )
        cached = self._cell_render_cache.get(cache_key)
        if cached is not None:
            return cached
        row = self.rows.get(row_key) if row_key is not None else None
        cells = self._get_row_renderables(row_index).cells
        cell = cells[column_index] if column_index < len(cells) else None
        line = None
        if row is not None and row.height == 1 and isinstance(cell, Text):
            component_style, post_style = self._get_styles_to_render_cell(
                False,
                False,
                False,
                hover,
                cursor,
                self.show_cursor,
                self._show_hover_cursor,
                self.cursor_foreground_priority == "css",
                self.cursor_background_priority == "css",
            )
            meta = Style.from_meta({"row": row_index, "column": column_index})
            line = single_line_cell(
                cell,
                console=self.app.console,
                width=width,
                padding=self.cell_padding,
                pre=base_style + meta + component_style,
                post=post_style,
            )
        if line is None:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        self._cell_render_cache[cache_key] = [line]
        return [line]

    def remove_first_rows(self, count: int) -> None:
        """DataTable.remove_row for the first ``count`` rows at once: remove_row renumbers every
        row and asks for a layout each time (about 1 ms a row on a 200-row window)."""
        self._keep_rows(max(count, 0), self.row_count)

    def remove_last_rows(self, count: int) -> None:
        """The same for the last ``count`` rows."""
        self._keep_rows(0, self.row_count - max(count, 0))

    def _keep_rows(self, start: int, stop: int) -> None:
        """Keep the rows from ``start`` to ``stop`` (exclusive), renumbered from 0."""
        if start == 0 and stop >= self.row_count:
            return
        locations = self._row_locations
        gone = [locations.get_key(index) for index in (*range(start), *range(stop, self.row_count))]
        self._row_locations = TwoWayDict(
            {
                key: index - start
                for key in locations
                if start <= (index := locations.get(key)) < stop
            }
        )
        for key in gone:
            del self.rows[key]
            del self._data[key]
        self._updated_cells = {cell for cell in self._updated_cells if cell.row_key in self.rows}
        self._new_rows.difference_update(gone)
        self._rows_changed()
        self.cursor_coordinate = self.cursor_coordinate
        self.hover_coordinate = self.hover_coordinate

    def prepend_rows(self, rows: Sequence[tuple[str, Sequence[Text]]]) -> None:
        """Put one-line rows (key, cells) above the first, in order: DataTable only adds at the
        bottom. The cursor keeps its index (the screen moves it with the rows)."""
        if not rows:
            return
        keys = [self._checked_key(key, cells) for key, cells in rows]
        if len(set(keys)) != len(keys):
            raise DuplicateKey("A row key appears twice in the rows to add.")
        count, locations = len(keys), self._row_locations
        self._row_locations = TwoWayDict(
            {
                **{key: index for index, key in enumerate(keys)},
                **{
                    key: index + count
                    for key in locations
                    if (index := locations.get(key)) is not None
                },
            }
        )
        # The rows' dicts in display order too, as add_row leaves them.
        self._data = {
            **{
                key: self._cells_by_column(cells)
                for key, (_, cells) in zip(keys, rows, strict=True)
            },
            **self._data,
        }
        self.rows = {**{key: Row(key, 1) for key in keys}, **self.rows}
        self._new_rows.update(keys)
        self._rows_changed()

    def _checked_key(self, key: str, cells: Sequence[Text]) -> RowKey:
        row_key = RowKey(key)
        if row_key in self._row_locations:
            raise DuplicateKey(f"The row key {row_key!r} already exists.")
        if len(cells) > len(self.ordered_columns):
            raise ValueError("More values provided than there are columns.")
        return row_key

    def _store_row(self, row_key: RowKey, cells: Sequence[Text]) -> None:
        self._data[row_key] = self._cells_by_column(cells)
        self.rows[row_key] = Row(row_key, 1)
        self._new_rows.add(row_key)

    def _cells_by_column(self, cells: Sequence[Text]) -> dict[ColumnKey, Text | None]:
        return {column.key: cell for column, cell in zip_longest(self.ordered_columns, cells)}

    def _rows_changed(self) -> None:
        self._require_update_dimensions = True
        self._update_count += 1
        self.check_idle()
        # The table's own size does not depend on its rows (its virtual size is set on idle).
        self.refresh()

    def measure_now(self) -> None:
        """Measure the rows added since the last idle now, and tell the screen at once: on the
        table's idle, after the screen may have painted, a new height is a frame of its own."""
        if self._require_update_dimensions:
            self._require_update_dimensions = False
            new_rows = self._new_rows.copy()
            self._new_rows.clear()
            self._update_dimensions(new_rows)
        self._check_refresh()
        self._repaint_scrollbar_now()

    def _repaint_scrollbar_now(self) -> None:
        """Ask for the scrollbar's repaint now: it asks on its own idle, after the screen has
        painted the rows, and its thumb would move a frame later."""
        if self.show_vertical_scrollbar:
            self.vertical_scrollbar._check_refresh()

    def action_page_down(self) -> None:
        """DataTable's page down, scrolling at once: its own scroll waits for the next refresh,
        to a position in the rows of before, so rows the screen drops above the cursor in the
        meantime (a window slide) would scroll the view too far."""
        if self.cursor_type != "row" or not self.show_cursor:
            super().action_page_down()
            return
        self._move_a_page(down=True)

    def action_page_up(self) -> None:
        """DataTable's page up, scrolling at once (see action_page_down)."""
        if self.cursor_type != "row" or not self.show_cursor:
            super().action_page_up()
            return
        self._move_a_page(down=False)

    def _move_a_page(self, *, down: bool) -> None:
        self._set_hover_cursor(False)
        # Every row here is one line high.
        height = self.scrollable_content_region.height - (
            self.header_height if self.show_header else 0
        )
        step = height if down else -height
        self.scroll_relative(y=step, animate=False, force=True, immediate=True)
        self.move_cursor(row=max(self.cursor_row + step, 0), scroll=False)
        self._repaint_scrollbar_now()

    # DataTable binds ctrl+home / ctrl+end to the first / last row and home / end to the first /
    # last column; the columns always fit here, so all four go to the ends of the list.
    def action_scroll_top(self) -> None:
        self.post_message(self.Jump(to_end=False))

    def action_scroll_bottom(self) -> None:
        self.post_message(self.Jump(to_end=True))

    def action_scroll_home(self) -> None:
        self.post_message(self.Jump(to_end=False))

    def action_scroll_end(self) -> None:
        self.post_message(self.Jump(to_end=True))

    async def _on_click(self, event: events.Click) -> None:
        # Textual runs DataTable's own click handler after this one unless it is prevented:
        # it is left to handle the header (sorting) and the empty area below the rows.
        meta = event.style.meta
        row = meta.get("row")
        if not isinstance(row, int) or row < 0 or row >= self.row_count or "column" not in meta:
            return
        event.prevent_default()
        event.stop()
        self._set_hover_cursor(True)
        self.move_cursor(row=row, animate=False)
        if event.chain >= 2:
            # A double click opens the row, as enter does; a single one only selects it.
            self._post_selected_message()
