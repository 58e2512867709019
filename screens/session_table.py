"""The session list's table: a DataTable whose home/end reach the ends of the whole list, not of
the rows read so far, and whose mouse selects with one click and opens with two."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual._two_way_dict import TwoWayDict
from textual.message import Message
from textual.widgets import DataTable


class SessionTable(DataTable[Text]):
    class Jump(Message):
        """Home or end was pressed: the screen reads that end of the list if it is not here."""

        def __init__(self, to_end: bool) -> None:
            super().__init__()
            self.to_end = to_end

    def remove_first_rows(self, count: int) -> None:
        """DataTable.remove_row for the first ``count`` rows at once: remove_row renumbers every
        row and asks for a layout each time (about 1 ms a row on a 200-row window)."""
        if count <= 0:
            return
        locations = self._row_locations
        gone = [locations.get_key(index) for index in range(count)]
        self._row_locations = TwoWayDict(
            {key: index - count for key in locations if (index := locations.get(key)) >= count}
        )
        for key in gone:
            del self.rows[key]
            del self._data[key]
        self._updated_cells = {cell for cell in self._updated_cells if cell.row_key in self.rows}
        self._new_rows.difference_update(gone)
        self._require_update_dimensions = True
        self.cursor_coordinate = self.cursor_coordinate
        self.hover_coordinate = self.hover_coordinate
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

    def action_page_down(self) -> None:
        """DataTable's page down, scrolling at once: its own scroll waits for the next refresh,
        to a position in the rows of before, so rows the screen drops above the cursor in the
        meantime (a window slide) would scroll the view too far."""
        if self.cursor_type != "row" or not self.show_cursor:
            super().action_page_down()
            return
        self._set_hover_cursor(False)
        # Every row here is one line high.
        height = self.scrollable_content_region.height - (
            self.header_height if self.show_header else 0
        )
        self.scroll_relative(y=height, animate=False, force=True, immediate=True)
        self.move_cursor(row=self.cursor_row + height, scroll=False)

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
