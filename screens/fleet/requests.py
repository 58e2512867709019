"""Every pending permission request across the fleet (``P``), oldest first: the longest-waiting
agent at the top. ``y`` allows and ``n`` denies the highlighted one after showing it in full
(``screens.dialogs.request``); read again whenever the store changes. Store text shown as text."""

from __future__ import annotations

from functools import partial

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static

from roundtable_console.screens.banner import StoreBanner
from roundtable_console.screens.context import ConsoleContext
from roundtable_console.screens.dialogs.request import RequestDialog, read_pending, said
from roundtable_console.screens.failures import Failure, ReportsFailures
from roundtable_console.screens.footer import ConsoleFooter
from roundtable_console.screens.live import StoreChanged
from roundtable_console.screens.text import plain
from roundtable_console.store.requests.records import PermissionRequestRecord

COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("asked", "Asked (UTC)", 19),
    ("session", "Session", 24),
    ("agent", "Agent", 11),
    ("answers", "Answer here", 11),
)


class RequestsScreen(ReportsFailures, Screen[None]):
    AUTO_FOCUS = "#requests"
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("y", "answer(False)", "Allow…"),
        Binding("n", "answer(True)", "Deny…"),
        Binding("enter", "answer(False)", "Show", show=False),
        Binding("ctrl+r", "reload", "Refresh", show=False),
    ]

    def __init__(self, ctx: ConsoleContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.records: dict[str, PermissionRequestRecord] = {}
        self.reading = False
        self.loaded = False

    def compose(self) -> ComposeResult:
        yield Header()
        title = Text("Permission requests", style="bold")
        title.append(" · pending across the fleet, the longest-waiting first", style="dim")
        yield Static(title, id="requests-title")
        yield StoreBanner()
        yield DataTable(id="requests", cursor_type="row", zebra_stripes=True)
        yield Static(Text("Reading the requests…"), id="requests-status", classes="projection-note")
        yield ConsoleFooter()

    def on_mount(self) -> None:
        table: DataTable[Text] = self.query_one("#requests", DataTable)
        for key, label, width in COLUMNS:
            table.add_column(Text(label), key=key, width=width)
        fixed = sum(width for _key, _label, width in COLUMNS) + 2 * (len(COLUMNS) + 1) + 2
        self.reason_width = max(self.app.size.width - fixed, 20)
        table.add_column(Text("Asks"), key="asks", width=self.reason_width)
        self.read()

    @on(StoreChanged)
    def _store_changed(self) -> None:
        self.read()

    def action_back(self) -> None:
        self.dismiss(None)

    def action_reload(self) -> None:
        self.read()

    def read(self) -> None:
        if self.reading:
            return
        self.reading = True
        self.run_in_thread(
            partial(read_pending, self.ctx, None),
            what="read the permission requests",
            group="requests",
            done=self._requests_read,
            failed=self._requests_failed,
        )

    def _requests_failed(self, failure: Failure) -> None:
        self.reading = False
        self.query_one(StoreBanner).show_failure(failure.text)

    def _requests_read(self, records: list[PermissionRequestRecord]) -> None:
        self.reading = False
        self.loaded = True
        self.query_one(StoreBanner).clear()
        table: DataTable[Text] = self.query_one("#requests", DataTable)
        highlighted = self._highlighted_id()
        table.clear()
        self.records = {record.id: record for record in records}
        for record in records:
            table.add_row(
                plain(record.asked_at.replace("T", " ")[:19], 19),
                plain(record.session_id, 24),
                plain(record.agent, 11),
                plain("/".join(record.answers) or "terminal", 11),
                plain(record.reason, self.reason_width),
                key=record.id,
            )
        if highlighted in self.records:
            table.move_cursor(row=table.get_row_index(highlighted))
        status = (
            f"{len(records)} pending · y allow · n deny · enter show in full"
            if records
            else "No pending permission request: every agent that asks shows here."
        )
        self.query_one("#requests-status", Static).update(Text(status))

    def _highlighted_id(self) -> str | None:
        table: DataTable[Text] = self.query_one("#requests", DataTable)
        if table.row_count == 0:
            return None
        row_key, _column = table.coordinate_to_cell_key(table.cursor_coordinate)
        return None if row_key.value is None else str(row_key.value)

    def action_answer(self, deny_first: bool) -> None:
        record = self.records.get(self._highlighted_id() or "")
        if record is None:
            return
        dialog = RequestDialog(ctx=self.ctx, record=record, deny_first=deny_first)
        self.app.push_screen(dialog, self._request_answered)

    def _request_answered(self, record: PermissionRequestRecord | None) -> None:
        if record is not None:
            self.notify(said(record), title="Permission request", markup=False)
        self.read()
