"""A fleet-wide table screen: a title, the store's banner, one table read in a thread (and
again whenever the store changes), a status line, the footer. The requests (``P``) and the
hosts (``H``) are two: each says what it reads and how a row shows."""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static

from roundtable_console.screens.banner import StoreBanner
from roundtable_console.screens.context import ConsoleContext
from roundtable_console.screens.failures import Failure, ReportsFailures
from roundtable_console.screens.footer import ConsoleFooter
from roundtable_console.screens.live import StoreChanged

R = TypeVar("R")


class FleetTable(ReportsFailures, Screen[R]):
    # The screen's name: its widgets' ids, and what it reads ("the hosts").
    NAME: ClassVar[str]
    TITLE_TEXT: ClassVar[str]
    SUBTITLE: ClassVar[str]
    # The columns of a fixed width, then the one that takes the rest of the width.
    COLUMNS: ClassVar[tuple[tuple[str, str, int], ...]]
    REST: ClassVar[tuple[str, str]]
    # Seconds between reads while shown, besides each change of the store (None: none).
    READ_EVERY: ClassVar[float | None] = None
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("ctrl+r", "reload", "Refresh", show=False),
    ]

    def __init__(self, ctx: ConsoleContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.reading = False
        self.rest_width = 20

    def compose(self) -> ComposeResult:
        yield Header()
        title = Text(self.TITLE_TEXT, style="bold")
        title.append(f" · {self.SUBTITLE}", style="dim")
        yield Static(title, id=f"{self.NAME}-title")
        yield StoreBanner()
        yield DataTable(id=self.NAME, cursor_type="row", zebra_stripes=True)
        yield Static(
            Text(f"Reading the {self.NAME}…"), id=f"{self.NAME}-status", classes="projection-note"
        )
        yield ConsoleFooter()

    @property
    def table(self) -> DataTable[Text]:
        return self.query_one(f"#{self.NAME}", DataTable)

    def on_mount(self) -> None:
        table = self.table
        for key, label, width in self.COLUMNS:
            table.add_column(Text(label), key=key, width=width)
        fixed = sum(width for _key, _label, width in self.COLUMNS) + 2 * (len(self.COLUMNS) + 1)
        self.rest_width = max(self.app.size.width - fixed - 2, 20)
        key, label = self.REST
        table.add_column(Text(label), key=key, width=self.rest_width)
        self.read()
        if self.READ_EVERY is not None:
            self.set_interval(self.READ_EVERY, self.read)

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
            self.fetch,
            what=f"read the {self.NAME}",
            group=self.NAME,
            done=self._fetched,
            failed=self._fetch_failed,
        )

    def fetch(self) -> Any:
        """The rows, read in a worker thread."""
        raise NotImplementedError

    def show(self, rows: Any) -> Text:
        """Put ``rows`` in the table; the status line to show."""
        raise NotImplementedError

    def _fetch_failed(self, failure: Failure) -> None:
        self.reading = False
        self.query_one(StoreBanner).show_failure(failure.text)

    def _fetched(self, rows: Any) -> None:
        self.reading = False
        self.query_one(StoreBanner).clear()
        status = self.show(rows)
        self.query_one(f"#{self.NAME}-status", Static).update(status)

    def highlighted_key(self) -> str | None:
        table = self.table
        if table.row_count == 0:
            return None
        row_key, _column = table.coordinate_to_cell_key(table.cursor_coordinate)
        return None if row_key.value is None else str(row_key.value)
