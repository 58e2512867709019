"""The default screen: every session, read a window of keyset pages at a time, live-refreshed."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Header, Input, Static

from screens.context import ConsoleContext
from screens.data import ClaimCount, ListWindow, read_list_window, require_store
from screens.session_actions import SessionActionScreen
from screens.text import plain, relative_ts, short_time, status_text
from store.display import one_line
from store.errors import StoreError
from store.models import ACTIVE_STATES, AgentSession
from store.sessions import SessionFilter

TERMINAL_STATUSES: tuple[str, ...] = ("stopped", "ended", "terminated")
# Statuses are free strings: the header names this many and sums the rest.
MAX_STATUSES_SHOWN = 10
# Rows from the window's edge at which the next (or previous) page is read.
EDGE_ROWS = 3


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    width: int
    # Columns with a weight share whatever width is left; the others keep ``width``.
    weight: int = 0


COLUMNS: tuple[Column, ...] = (
    Column("id", "Session", 10, 2),
    Column("agent", "Agent", 7, 1),
    Column("run", "Run", 5, 1),
    Column("workspace", "Workspace", 9, 1),
    Column("adapter", "Adapter", 7),
    Column("model", "Provider/model", 8, 4),
    Column("status", "Status", 16),
    Column("claims", "Claims", 6),
    Column("seen", "Last seen", 9),
    Column("started", "Started", 11),
)
CELL_PADDING = 1


def column_widths(total: int) -> dict[str, int]:
    """Fixed columns keep their width; the weighted ones share the rest (at least their width)."""
    fixed = sum(c.width for c in COLUMNS) + 2 * CELL_PADDING * len(COLUMNS) + 2
    spare = max(total - fixed, 0)
    weights = sum(c.weight for c in COLUMNS)
    return {c.key: c.width + (spare * c.weight) // weights for c in COLUMNS}


@dataclass(frozen=True)
class ListState:
    """What the operator asked to see. The window is the run of pages currently read."""

    text: str = ""
    status: str | None = None
    show_ended: bool = True
    stale_only: bool = False

    def status_cycle(self) -> tuple[str | None, ...]:
        states: tuple[str | None, ...] = (None, *ACTIVE_STATES)
        return states + TERMINAL_STATUSES if self.show_ended else states

    def next_status(self) -> str | None:
        cycle = self.status_cycle()
        index = cycle.index(self.status) if self.status in cycle else 0
        return cycle[(index + 1) % len(cycle)]

    def to_filter(self, now: datetime, stale_after: timedelta) -> SessionFilter:
        return SessionFilter(
            statuses=(self.status,) if self.status else (),
            active_only=not self.show_ended,
            stale_before=now - stale_after if self.stale_only else None,
            text=self.text.strip() or None,
        )

    def describe(self) -> Text:
        """The filters in force, each with the key that changes it."""
        text = Text("Showing ")
        text.append(f"status {self.status}" if self.status else "every status", style="bold")
        text.append(" (f) · ")
        text.append("ended shown" if self.show_ended else "ended hidden", style="bold")
        text.append(" (a) · ")
        if self.stale_only:
            text.append("stale only", style="bold dark_orange")
        else:
            text.append("stale and fresh", style="bold")
        text.append(" (S) · ")
        if self.text.strip():
            text.append("text ")
            text.append(repr(one_line(self.text.strip(), 40)), style="bold")
            text.append(" (/)")
        else:
            text.append("any text (/)")
        return text


def claims_cell(count: ClaimCount | None) -> Text:
    if count is None or count.total == 0:
        return Text("0", style="dim")
    text = Text()
    text.append(str(count.live), style="bold")
    if count.expired:
        text.append(f" +{count.expired}", style="yellow")
    return text


def provider_model(session: AgentSession) -> str | None:
    parts = [part for part in (session.provider, session.model) if part]
    return "/".join(parts) or None


def row_cells(
    session: AgentSession,
    claims: ClaimCount | None,
    now: datetime,
    stale_after: timedelta,
    widths: dict[str, int],
) -> list[Text]:
    return [
        plain(session.id, widths["id"]),
        plain(session.agent_id, widths["agent"]),
        plain(session.run_id, widths["run"]),
        plain(session.effective_workspace_id, widths["workspace"]),
        plain(session.adapter, widths["adapter"]),
        plain(provider_model(session), widths["model"]),
        status_text(session, now, stale_after),
        claims_cell(claims),
        relative_ts(session.last_seen_at or session.started_at, now),
        short_time(session.started_at),
    ]


def counts_line(counts: dict[str, int]) -> Text:
    """Counts by status; the store's name is in the header."""
    total = sum(counts.values())
    text = Text()
    text.append(f"{total} session{'s' if total != 1 else ''}", style="bold")
    ordered = [s for s in (*ACTIVE_STATES, *TERMINAL_STATUSES) if s in counts]
    ordered += sorted((s for s in counts if s not in ordered), key=lambda s: -counts[s])
    for status in ordered[:MAX_STATUSES_SHOWN]:
        text.append(" · ")
        text.append(f"{one_line(status, 20)} {counts[status]}")
    others = ordered[MAX_STATUSES_SHOWN:]
    if others:
        text.append(f" · {len(others)} other statuses {sum(counts[s] for s in others)}")
    return text


class SessionListScreen(SessionActionScreen):
    AUTO_FOCUS = "#sessions"
    BINDINGS = [
        Binding("slash", "filter_text", "Filter"),
        # Shown in the filter line with their state, so the footer stays short.
        Binding("f", "cycle_status", "Status", show=False),
        Binding("a", "toggle_ended", "Ended", show=False),
        Binding("S", "toggle_stale", "Stale", show=False),
        Binding("escape", "close_filter", "Close filter", show=False),
    ]

    class Loaded(Message):
        def __init__(self, serial: int, window: ListWindow) -> None:
            super().__init__()
            self.serial = serial
            self.window = window

    class LoadFailed(Message):
        def __init__(self, serial: int, error: StoreError) -> None:
            super().__init__()
            self.serial = serial
            self.error = error

    def __init__(self, ctx: ConsoleContext) -> None:
        super().__init__(ctx, id="session-list")
        self.state = ListState()
        self.sessions: list[AgentSession] = []
        self.by_id: dict[str, AgentSession] = {}
        self.cells: dict[str, list[Text]] = {}
        self.claims: dict[str, ClaimCount] = {}
        self.selected_id: str | None = None
        self.last_row = 0
        # Direction of the operator's last move: a page read while keys were held down is
        # followed by the next one if the cursor is still at the window's edge.
        self.last_move = 0
        # Start cursor of every page met so far (None: the list's beginning), the window's first
        # page and how many pages it spans.
        self.starts: list[str | None] = [None]
        self.first_page = 0
        self.page_count = 1
        self.has_more = False
        self.serial = 0
        self.loading = False
        self.loaded_once = False
        self.widths = column_widths(120)
        self.refresh_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text(f"Opening store {one_line(self.ctx.description, 100)}…"), id="counts")
        yield Static("", id="banner")
        filter_input = Input(
            placeholder="Filter by id, agent, run, adapter, model, status, workspace…", id="filter"
        )
        filter_input.cursor_blink = self.ctx.cursor_blink
        yield filter_input
        yield Static(self.state.describe(), id="filter-line")
        table: DataTable[Text] = DataTable(
            id="sessions", cursor_type="row", zebra_stripes=True, cell_padding=CELL_PADDING
        )
        yield table
        yield Static(Text("Loading sessions…", style="italic"), id="empty")
        yield Footer()

    @property
    def table(self) -> DataTable[Text]:
        return self.query_one("#sessions", DataTable)

    def on_mount(self) -> None:
        self._build_columns()
        self.refresh_timer = self.set_interval(self.ctx.refresh_seconds, self.reload)
        self.reload()

    def on_screen_suspend(self) -> None:
        if self.refresh_timer is not None:
            self.refresh_timer.pause()

    def on_screen_resume(self) -> None:
        if self.refresh_timer is not None:
            self.refresh_timer.resume()
        if self.loaded_once:
            self.reload()

    def on_resize(self) -> None:
        widths = column_widths(self.size.width)
        if widths != self.widths:
            self.widths = widths
            self._build_columns()
            self._fill_table(self.sessions)

    def _build_columns(self) -> None:
        table = self.table
        table.clear(columns=True)
        for column in COLUMNS:
            table.add_column(Text(column.label), key=column.key, width=self.widths[column.key])
        self.cells.clear()

    # -- selection -----------------------------------------------------------------------

    def selected_session(self) -> AgentSession | None:
        return self.by_id.get(self.selected_id) if self.selected_id else None

    def session_updated(self, session: AgentSession) -> None:
        if session.id in self.by_id:
            self.by_id[session.id] = session
            self.sessions = [self.by_id[s.id] for s in self.sessions]
            self._update_row(session)
            self.refresh_bindings()

    @on(DataTable.RowHighlighted, "#sessions")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.cursor_row != self.table.cursor_row:
            return  # posted before the table was refilled; the cursor has moved on since
        self.selected_id = event.row_key.value if event.row_key is not None else None
        self.refresh_bindings()
        moved, self.last_row = event.cursor_row - self.last_row, event.cursor_row
        if moved:
            self.last_move = 1 if moved > 0 else -1
        self._maybe_slide(event.cursor_row, moved)

    @on(DataTable.RowSelected, "#sessions")
    def _selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.open_detail(event.row_key.value)

    def known_sessions(self) -> list[AgentSession]:
        return list(self.sessions)

    # -- filters -------------------------------------------------------------------------

    def action_filter_text(self) -> None:
        filter_input = self.query_one("#filter", Input)
        filter_input.add_class("shown")
        filter_input.focus()

    def action_close_filter(self) -> None:
        filter_input = self.query_one("#filter", Input)
        if filter_input.has_focus or filter_input.value:
            filter_input.value = ""
            filter_input.remove_class("shown")
            self.table.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self._set_state(replace(self.state, text=event.value))

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        if not event.value.strip():
            event.input.remove_class("shown")
        self.table.focus()

    def action_cycle_status(self) -> None:
        self._set_state(replace(self.state, status=self.state.next_status()))

    def action_toggle_ended(self) -> None:
        show = not self.state.show_ended
        status = self.state.status if show or self.state.status in ACTIVE_STATES else None
        self._set_state(replace(self.state, show_ended=show, status=status))
        self.notify("Ended sessions shown." if show else "Ended sessions hidden.")

    def action_toggle_stale(self) -> None:
        self._set_state(replace(self.state, stale_only=not self.state.stale_only))

    def _set_state(self, state: ListState) -> None:
        if state == self.state:
            return
        self.state = state
        self.query_one("#filter-line", Static).update(self._filter_line())
        self.starts, self.first_page, self.page_count = [None], 0, 1
        self.reload()

    def _filter_line(self) -> Text:
        text = self.state.describe()
        if self.sessions:
            first_row = self.first_page * self.ctx.page_size + 1
            text.append(f" · rows {first_row}–{first_row + len(self.sessions) - 1}")
            if self.has_more:
                text.append(" (more below)", style="dim")
        return text

    # -- loading -------------------------------------------------------------------------

    def reload(self) -> None:
        if self.ctx.store is None:
            return
        self.serial += 1
        self.loading = True
        start = self.starts[self.first_page]
        self._load(self.serial, self.state, start, self.page_count)

    @work(thread=True, exclusive=True, group="session-list", exit_on_error=False)
    def _load(self, serial: int, state: ListState, start: str | None, pages: int) -> None:
        now = self.ctx.now()
        try:
            with require_store(self.ctx).read() as db:
                window = read_list_window(
                    db=db,
                    filters=state.to_filter(now, self.ctx.stale_after),
                    start=start,
                    pages=pages,
                    page_size=self.ctx.page_size,
                    now=now,
                )
        except StoreError as error:
            self.post_message(self.LoadFailed(serial, error))
            return
        self.post_message(self.Loaded(serial, window))

    def on_session_list_screen_load_failed(self, message: LoadFailed) -> None:
        if message.serial != self.serial:
            return
        self.loading = False
        self.show_error(message.error)

    def show_error(self, error: StoreError) -> None:
        """A banner over the last rows read; the next successful read takes it away."""
        banner = Text(f"⚠ {one_line(error.message, 300)} [{error.code}]")
        banner.append(
            "\nShowing what was last read; retrying by itself."
            if self.loaded_once
            else "\nNothing has been read yet; retrying by itself.",
            style="dim",
        )
        self.query_one("#banner", Static).update(banner)
        self.query_one("#banner", Static).add_class("shown")

    def on_session_list_screen_loaded(self, message: Loaded) -> None:
        if message.serial != self.serial:
            return
        self.loading = False
        self.loaded_once = True
        window = message.window
        self.query_one("#banner", Static).remove_class("shown")
        for offset, cursor in enumerate(window.following_starts, start=self.first_page + 1):
            if offset < len(self.starts):
                self.starts[offset] = cursor
            else:
                self.starts.append(cursor)
        self.page_count = max(len(window.following_starts), 1)
        self.has_more = window.has_more
        self.claims = window.claims
        self.query_one("#counts", Static).update(counts_line(window.counts))
        self._show(window.sessions)
        self.query_one("#filter-line", Static).update(self._filter_line())
        if self.sessions:
            self._maybe_slide(self.table.cursor_row, self.last_move)

    def _show(self, sessions: list[AgentSession]) -> None:
        same_rows = [s.id for s in sessions] == [s.id for s in self.sessions]
        self.sessions = sessions
        self.by_id = {s.id: s for s in sessions}
        empty = self.query_one("#empty", Static)
        if not sessions:
            empty.update(self._empty_text())
        empty.set_class(not sessions, "shown")
        self.table.set_class(not sessions, "hidden")
        if sessions and self.focused is None:
            self.table.focus()  # hiding the empty table took the focus away
        if same_rows and self.cells:
            for session in sessions:
                self._update_row(session)
        else:
            self._fill_table(sessions)
        self.refresh_bindings()

    def _empty_text(self) -> Text:
        if not self.ctx.store:
            return Text("Opening the store…", style="italic")
        nothing_at_all = self.state == ListState()
        if nothing_at_all:
            return Text(
                "No sessions yet. Agents register with `roundtable sessions register`; "
                "`roundtable tui --demo` opens a populated demo store."
            )
        text = Text("No sessions match: ")
        text.append_text(self.state.describe())
        text.append("\n/ text · f status · a ended · S stale", style="dim")
        return text

    def _fill_table(self, sessions: list[AgentSession]) -> None:
        table = self.table
        keep = self.selected_id
        old_row = table.cursor_row
        now = self.ctx.now()
        with self.app.batch_update():
            table.clear()
            self.cells.clear()
            for session in sessions:
                cells = self._cells(session, now)
                self.cells[session.id] = cells
                table.add_row(*cells, key=session.id)
            ids = [s.id for s in sessions]
            if not ids:
                self.selected_id = None
                return
            row = ids.index(keep) if keep in ids else min(max(old_row, 0), len(ids) - 1)
            # The operator did not move: the cursor's new index must not slide the window.
            self.last_row = row
            table.move_cursor(row=row, animate=False)
            self.selected_id = ids[row]

    def _cells(self, session: AgentSession, now: datetime) -> list[Text]:
        return row_cells(
            session, self.claims.get(session.agent_id), now, self.ctx.stale_after, self.widths
        )

    def _update_row(self, session: AgentSession) -> None:
        cells = self._cells(session, self.ctx.now())
        old = self.cells.get(session.id)
        if old is None:
            return
        for column, new_cell, old_cell in zip(COLUMNS, cells, old, strict=True):
            if new_cell != old_cell:
                self.table.update_cell(session.id, column.key, new_cell)
        self.cells[session.id] = cells

    def _maybe_slide(self, row: int, moved: int) -> None:
        """Keep a bounded window of pages: read the next page when moving down near the bottom,
        the previous one when moving up near the top, dropping a page at the other end once the
        window is full."""
        if self.loading or not self.sessions or moved == 0:
            return
        if moved > 0 and row >= len(self.sessions) - EDGE_ROWS and self.has_more:
            if self.page_count < self.ctx.window_pages:
                self.page_count += 1
            else:
                self.first_page += 1
            self.reload()
        elif moved < 0 and row < EDGE_ROWS and self.first_page > 0:
            self.first_page -= 1
            self.page_count = min(self.page_count + 1, self.ctx.window_pages)
            self.reload()
