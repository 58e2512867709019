"""A session's history, newest at the bottom, following new rows as they arrive (tail -f)."""

from __future__ import annotations

import json
from functools import partial

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static

from roundtable_console.screens.banner import StoreBanner
from roundtable_console.screens.context import ConsoleContext
from roundtable_console.screens.failures import Failure, ReportsFailures
from roundtable_console.screens.footer import ConsoleFooter
from roundtable_console.screens.live import StoreChanged
from roundtable_console.screens.text import exact, heading, plain, pretty_json
from roundtable_console.store.safety.display import one_line
from roundtable_console.store.service import LogBatch

# Rows kept on screen; older ones are dropped as new ones arrive.
MAX_SHOWN = 1000
# The columns before the payload, with their padding and the scrollbar.
FIXED_WIDTH = 7 + 23 + 12 + 14 + 2 * 5 + 2


def payload_actor(payload: str | None) -> str | None:
    try:
        decoded = json.loads(payload or "")
    except (json.JSONDecodeError, TypeError, ValueError, RecursionError):
        return None
    actor = decoded.get("actor") if isinstance(decoded, dict) else None
    return str(actor) if actor not in (None, "") else None


class SessionLogScreen(ReportsFailures, Screen[None]):
    AUTO_FOCUS = "#log"
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("ctrl+r", "reload", "Refresh", show=False),
        Binding("F", "toggle_follow", "Follow"),
    ]

    def __init__(self, ctx: ConsoleContext, session_id: str) -> None:
        super().__init__()
        self.ctx = ctx
        self.session_id = session_id
        self.last_id: int | None = None
        self.following = True
        self.reading = False
        self.payload_width = 60
        self.payloads: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        note = " · payloads redacted · newest at the bottom"
        yield Static(heading("History of ", self.session_id, note=note), id="log-title")
        yield StoreBanner()
        table: DataTable[Text] = DataTable(id="log", cursor_type="row", zebra_stripes=True)
        yield table
        with VerticalScroll(id="log-payload-box"):
            yield Static("", id="log-payload")
        yield Static("", id="log-status", classes="projection-note")
        yield ConsoleFooter()

    def on_mount(self) -> None:
        table = self.query_one("#log", DataTable)
        table.add_column(Text("#"), key="id", width=7)
        table.add_column(Text("When"), key="when", width=23)
        table.add_column(Text("Event"), key="event", width=12)
        table.add_column(Text("Actor"), key="actor", width=14)
        self.payload_width = max(self.app.size.width - FIXED_WIDTH, 20)
        table.add_column(Text("Payload (redacted)"), key="payload", width=self.payload_width)
        self.set_interval(self.ctx.refresh_seconds, self.poll)
        self.poll()

    @on(StoreChanged)
    def _store_changed(self) -> None:
        self.poll()

    def action_back(self) -> None:
        self.dismiss(None)

    def action_reload(self) -> None:
        self.poll()

    def action_toggle_follow(self) -> None:
        self.following = not self.following
        if self.following:
            self._scroll_to_newest()
        self._show_status()

    def poll(self) -> None:
        if not self.reading:
            self.reading = True
            self.run_in_thread(
                partial(self.ctx.source.read_log_after, self.session_id, self.last_id),
                what=f"read the history of {one_line(self.session_id, 40)}",
                group="session-log",
                done=self._batch_read,
                failed=self._read_failed,
            )

    def _read_failed(self, failure: Failure) -> None:
        self.reading = False
        self.query_one(StoreBanner).show_failure(failure.text)

    def _batch_read(self, batch: LogBatch) -> None:
        self.reading = False
        self.query_one(StoreBanner).clear()
        table = self.query_one("#log", DataTable)
        for item in batch.items:
            payload = item.get("payload")
            table.add_row(
                Text(str(item["id"])),
                Text(exact(item.get("created_at"))),
                plain(item.get("event_type"), 12),
                plain(payload_actor(payload), 14),
                plain(payload, self.payload_width),
                key=str(item["id"]),
            )
            self.payloads[str(item["id"])] = payload or ""
        while table.row_count > MAX_SHOWN:
            oldest = table.coordinate_to_cell_key((0, 0)).row_key
            table.remove_row(oldest)
            self.payloads.pop(str(oldest.value), None)
        self.last_id = batch.last_id
        if batch.items and self.following:
            self._scroll_to_newest()
        self._show_status()
        if batch.more_waiting:
            self.poll()  # catching up on a long history

    @on(DataTable.RowHighlighted, "#log")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The highlighted event's whole payload, pretty-printed (still redacted, still text)."""
        raw = self.payloads.get(str(event.row_key.value), "")
        text = Text(f"Event #{event.row_key.value} payload\n", style="bold")
        text.append_text(pretty_json(raw))
        self.query_one("#log-payload", Static).update(text)

    def _scroll_to_newest(self) -> None:
        table = self.query_one("#log", DataTable)
        if table.row_count:
            table.move_cursor(row=table.row_count - 1, animate=False)

    def _show_status(self) -> None:
        count = self.query_one("#log", DataTable).row_count
        text = Text(f"{count} event{'s' if count != 1 else ''} shown · ")
        if self.following:
            text.append("following new events", style="bold green")
        else:
            text.append("paused (F follows again)", style="yellow")
        self.query_one("#log-status", Static).update(text)
