"""The audit trail (``A``): the operators' actions across all sessions, newest first, a page at a
time (``store.reads.audit``), read in a worker. Everything shown is store text, shown as text.

Imported by the app's key check at first paint: nothing here loads SQLAlchemy at import."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

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
from roundtable_console.screens.text import exact, plain
from roundtable_console.store.safety.display import one_line

if TYPE_CHECKING:
    from roundtable_console.store.reads.audit import AuditEntry

# The columns before the impact text, with their padding and the scrollbar.
COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("when", "When (UTC)", 19),
    ("actor", "Operator", 12),
    ("db_user", "DB role", 12),
    ("action", "Action", 9),
    ("session", "Session", 18),
    ("change", "From → to", 20),
)
FIXED_WIDTH = sum(width for _key, _label, width in COLUMNS) + 2 * (len(COLUMNS) + 1) + 2


@dataclass(frozen=True)
class AuditRead:
    """A page read for the screen: its rows, where the next page starts, and whether it
    continues the rows on show (``after`` given) or replaces them."""

    items: list[AuditEntry]
    next_cursor: str | None
    continues: bool


def read_audit(ctx: ConsoleContext, cursor: str | None) -> AuditRead:
    """One page of the audit trail (runs in a thread, which imports the database layer: the
    console's first paint never waits for it)."""
    page = ctx.source.audit_page(cursor)
    return AuditRead(page.items, page.next_cursor, continues=cursor is not None)


def change_text(entry: AuditEntry) -> str:
    return f"{entry.previous_status or '?'} → {entry.status or '?'}"


class AuditScreen(ReportsFailures, Screen[None]):
    AUTO_FOCUS = "#audit"
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("n", "next_page", "More"),
        Binding("ctrl+r", "reload", "Refresh", show=False),
    ]

    def __init__(self, ctx: ConsoleContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.next_cursor: str | None = None
        self.reading = False
        self.loaded = False
        self.impact_width = 40
        self.entries: dict[str, AuditEntry] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        title = Text("Audit trail", style="bold")
        title.append(
            " · the operators' actions on every session, newest first · impact text redacted",
            style="dim",
        )
        yield Static(title, id="audit-title")
        yield StoreBanner()
        yield DataTable(id="audit", cursor_type="row", zebra_stripes=True)
        yield Static("", id="audit-entry", classes="projection-note")
        yield Static("", id="audit-status", classes="projection-note")
        yield ConsoleFooter()

    def on_mount(self) -> None:
        table: DataTable[Text] = self.query_one("#audit", DataTable)
        for key, label, width in COLUMNS:
            table.add_column(Text(label), key=key, width=width)
        self.impact_width = max(self.app.size.width - FIXED_WIDTH, 20)
        table.add_column(Text("Impact (redacted)"), key="impact", width=self.impact_width)
        self._show_status()
        self.read(None)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "next_page":
            return self.next_cursor is not None
        return True

    @on(StoreChanged)
    def _store_changed(self) -> None:
        if self.next_cursor is None or not self.loaded:
            self.read(None)  # the whole trail is on show: read it again, newest first

    def action_back(self) -> None:
        self.dismiss(None)

    def action_reload(self) -> None:
        self.read(None)

    def action_next_page(self) -> None:
        if self.next_cursor is not None:
            self.read(self.next_cursor)

    def read(self, cursor: str | None) -> None:
        if self.reading:
            return
        self.reading = True
        self.run_in_thread(
            partial(read_audit, self.ctx, cursor),
            what="read the audit trail",
            group="audit",
            done=self._page_read,
            failed=self._read_failed,
        )

    def _read_failed(self, failure: Failure) -> None:
        self.reading = False
        self.query_one(StoreBanner).show_failure(failure.text)

    def _page_read(self, page: AuditRead) -> None:
        self.reading = False
        self.loaded = True
        self.query_one(StoreBanner).clear()
        table: DataTable[Text] = self.query_one("#audit", DataTable)
        if not page.continues:
            table.clear()
            self.entries.clear()
        first = str(len(self.entries))
        for entry in page.items:
            key = str(len(self.entries))  # its place: an entry a server sent has no row id
            table.add_row(
                Text(exact(entry.at).removesuffix(" UTC")),
                plain(entry.actor, 12),
                plain(entry.db_user, 12),
                plain(entry.action, 9),
                plain(entry.session_id, 18),
                plain(change_text(entry), 20),
                plain(entry.note, self.impact_width),
                key=key,
            )
            self.entries[key] = entry
        if not page.continues:
            self._show_entry(self.entries.get(first))
        self.next_cursor = page.next_cursor
        self.refresh_bindings()
        self._show_status()

    @on(DataTable.RowHighlighted, "#audit")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_entry(self.entries.get(str(event.row_key.value)))

    def _show_entry(self, entry: AuditEntry | None) -> None:
        """The highlighted action in full: its session and its impact text, uncut."""
        text = Text()
        if entry is not None:
            text.append(f"{entry.action} ", style="bold")
            text.append(one_line(entry.session_id))
            text.append(f" by {one_line(entry.actor)}")
            if entry.db_user:
                text.append(f" (role {one_line(entry.db_user)})")
            text.append(f" · {one_line(change_text(entry))}")
            if entry.impact_details:
                text.append(" · impact: ", style="dim")
                text.append(one_line(entry.impact_details))
            elif entry.field is not None:
                text.append(" · revealed ", style="dim")
                text.append(one_line(entry.field))
        self.query_one("#audit-entry", Static).update(text)

    def _show_status(self) -> None:
        count = self.query_one("#audit", DataTable).row_count
        if not self.loaded:
            self.query_one("#audit-status", Static).update(Text("Reading the audit trail…"))
            return
        if count == 0:
            text = Text("No operator actions yet: pause, stop, resume, terminate and the ")
            text.append("operator's heartbeat are listed here as they happen.")
        else:
            text = Text(f"{count} action{'s' if count != 1 else ''} shown")
            text.append(" · n reads the next page" if self.next_cursor else " · all shown")
        self.query_one("#audit-status", Static).update(text)
