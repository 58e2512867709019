"""The default screen: every session, filtered and sorted in SQL, live-refreshed.

Parts with one job each: ``ListModel`` (screens.list_model) decides which rows are held, where
the cursor is and what to read next; ``SessionGrid`` (screens.session_grid) draws the rows in
view and moves the cursor; ``FilterBar`` (screens.filter_bar) holds the filters and the sort.
This screen wires them together and runs the model's reads in thread workers
(screens.list_reads).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Header, Static

from screens.context import ConsoleContext
from screens.filter_bar import FilterBar, update_text
from screens.footer import ConsoleFooter
from screens.list_columns import COLUMN_BY_KEY, RowPainter, counts_line, grid_columns, header_label
from screens.list_model import ListModel, Read, ReadResult, first_result
from screens.list_state import ListState
from screens.live import StoreChanged
from screens.session_actions import SessionActionScreen
from screens.session_grid import GridHeader, GridRow, SessionGrid
from store.display import one_line
from store.errors import StoreError
from store.records import ClaimCount, SessionFields

if TYPE_CHECKING:
    from screens.list_reads import StatusCounts


class SessionListScreen(SessionActionScreen):
    AUTO_FOCUS = "#sessions"
    BINDINGS = [
        Binding("slash", "filter_text", "Filter"),
        # Shown in the filter line with their state, so the footer stays short.
        Binding("f", "cycle_status", "Status", show=False),
        Binding("a", "toggle_ended", "Ended", show=False),
        Binding("S", "toggle_stale", "Stale", show=False),
        Binding("o", "cycle_sort", "Sort", show=False),
        Binding("O", "flip_sort", "Sort direction", show=False),
        Binding("escape", "close_filter", "Close filter", show=False),
    ]

    @dataclass
    class RowsRead(Message):
        """A read's answer; ``first`` for the quick read made before the store is open (None
        when it had nothing)."""

        result: ReadResult | None
        first: bool = False

    @dataclass
    class ReadFailed(Message):
        read: Read | None
        error: StoreError

    @dataclass
    class Counted(Message):
        generation: int
        total: int

    @dataclass
    class Unchanged(Message):
        """The store has not changed since the held rows were read: only the clock moved, and
        claims may have expired by it (read again)."""

        read: Read
        claims: dict[str, ClaimCount]

    class FirstRowsShown(Message):
        """The quick first read's rows are on screen (or it had none): the app opens the store."""

    class Loaded(Message):
        """Rows read from the store are on screen."""

    def __init__(self, ctx: ConsoleContext) -> None:
        super().__init__(ctx, id="session-list")
        self.model = ListModel()
        self.painter = RowPainter(stale_after=ctx.stale_after, adapters=ctx.adapters)
        self.refresh_timer: Timer | None = None
        self.status_counts: StatusCounts | None = None
        self.counts_shown: dict[str, int] | None = None
        self.loaded_once = False

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text(f"Opening store {one_line(self.ctx.description, 100)}…"), id="counts")
        yield Static("", id="banner")
        yield FilterBar(cursor_blink=self.ctx.cursor_blink)
        yield GridHeader(id="columns")
        yield SessionGrid(self, id="sessions")
        yield Static(Text("Loading sessions…", style="italic"), id="empty")
        yield ConsoleFooter()

    @property
    def grid(self) -> SessionGrid:
        return self.query_one("#sessions", SessionGrid)

    @property
    def filters(self) -> FilterBar:
        return self.query_one(FilterBar)

    @property
    def state(self) -> ListState:
        return self.filters.state

    def on_mount(self) -> None:
        # The context's sizes as they are now (tests shrink them after building the app).
        pages = self.ctx.page_size * self.ctx.window_pages
        self.model = ListModel(page_size=self.ctx.page_size, max_rows=pages)
        self._show_columns()
        # Called as the cursor moves, so the footer and the filter line follow in its frame.
        self.watch(self.grid, "cursor", self._cursor_moved, init=False)
        self.refresh_timer = self.set_interval(self.ctx.refresh_seconds, self.refresh_if_changed)
        if self.ctx.store is None and self.ctx.first_read is not None:
            self._read_first()
        else:
            self._start_reads()

    def on_screen_suspend(self) -> None:
        if self.refresh_timer is not None:
            self.refresh_timer.pause()

    def on_screen_resume(self) -> None:
        if self.refresh_timer is not None:
            self.refresh_timer.resume()
        if self.loaded_once:
            self.reload()

    def on_resize(self) -> None:
        if self.painter.resize(self.size.width):
            self._show_columns()

    def _show_columns(self) -> None:
        columns = grid_columns(self.painter.widths)
        labels = [header_label(COLUMN_BY_KEY[c.key], self.state.order) for c in columns]
        self.query_one(GridHeader).show(columns, labels)
        self.grid.set_columns(columns)

    # -- the rows and the cursor --------------------------------------------------------------

    def grid_row(self, index: int) -> GridRow | None:
        session = self.model.row(index)
        if session is None:
            return None
        return self.painter.row(session, self.model.claims.get(session.agent_id), self.ctx.now())

    def selected_session(self) -> SessionFields | None:
        """The session under the grid's cursor now: a key typed ahead (down, down, p) acts on
        the row the cursor is on, not on one a message has not caught up with yet."""
        if not self.model.loaded or self.grid.has_class("hidden"):
            return None
        return self.model.row(self.grid.cursor)

    def known_sessions(self) -> list[SessionFields]:
        return list(self.model.rows)

    def session_updated(self, session: SessionFields) -> None:
        index = self.model.index_of(session.id)
        if index is not None:
            self.model.rows[index - self.model.start] = session
            self.grid.refresh()
            self.refresh_bindings()

    def _cursor_moved(self, row: int) -> None:
        self.model.move_cursor(row)
        self.refresh_bindings()
        self._show_position()

    @on(SessionGrid.ViewMoved)
    def _view_moved(self, event: SessionGrid.ViewMoved) -> None:
        self.model.move_view(event.first, event.height)
        self._start_reads()

    @on(SessionGrid.RowChosen)
    def _row_chosen(self, event: SessionGrid.RowChosen) -> None:
        session = self.model.row(event.row)
        if session is not None:
            self.open_detail(session.id)

    def _show_rows(self, result: ReadResult | None = None) -> None:
        """The model's rows, length and cursor, on screen. A page read ahead, outside the view,
        changes nothing on screen: it is only drawn ahead, once the keyboard is quiet."""
        grid, model = self.grid, self.model
        first, height = grid.first_in_view, grid.view_height
        empty = model.row_count == 0
        resized = grid.row_count != model.row_count
        grid.row_count = model.row_count
        moved = grid.cursor != model.cursor
        if moved:
            grid.move_cursor(model.cursor)
        # Once painted: the rows a page away either side are drawn ahead of the key that
        # shows them.
        self.call_after_refresh(grid.predraw, first - height, first + 2 * height)
        if result is not None and not (resized or moved) and result.read.kind != "at":
            start = result.read.offset + 1 if result.read.kind == "after" else model.start
            if start >= first + height or start + len(result.rows) <= first:
                return  # read ahead, out of view
        grid.refresh()
        if empty:
            self.query_one("#empty", Static).update(self.state.empty_text(store_open=True))
        self.query_one("#empty", Static).set_class(empty, "shown")
        grid.set_class(empty, "hidden")
        self.query_one(GridHeader).set_class(empty, "hidden")
        if not empty and self.focused is None:
            grid.focus()  # hiding the empty grid took the focus away
        self._show_position()
        self.refresh_bindings()

    def _show_position(self) -> None:
        model, position = self.model, Text()
        if model.loaded and model.row_count:
            position.append(f" · row {model.cursor + 1} of {model.row_count}")
            if model.total is None:
                position.append("+ (counting)", style="dim")
        self.filters.show_position(position)

    # -- reading ------------------------------------------------------------------------------

    def reload(self) -> None:
        """Read the held rows again at their place (ctrl+r, an action's outcome)."""
        if self.ctx.store is not None:
            self._run_read(self.model.refresh_read())

    @on(StoreChanged)
    def refresh_if_changed(self) -> None:
        """The store changed, or the clock moved: read the held rows again, unless the store's
        change token says nothing was written (the stale filter's rows move with the clock)."""
        if self.ctx.store is not None and self.model.loaded:
            unless = None if self.state.stale_only else self.model.token
            self._run_read(self.model.refresh_read(), unless_token=unless)

    def store_opened(self) -> None:
        super().store_opened()
        self._start_reads()

    def _start_reads(self) -> None:
        if self.ctx.store is not None:
            for read in self.model.next_reads():
                self._run_read(read)

    def _run_read(self, read: Read, *, unless_token: object | None = None) -> None:
        self.model.started(read)
        reader = partial(self._read, read, self.state, self.model.total, unless_token)
        group = f"session-list-{read.slot}"
        self.run_worker(reader, thread=True, group=group, exit_on_error=False)

    def _read(
        self, read: Read, state: ListState, known_total: int | None, unless_token: object | None
    ) -> None:
        from screens.data import require_store
        from screens.list_reads import StatusCounts, read_rows, recheck_claims

        if self.status_counts is None:
            self.status_counts = StatusCounts()
        now = self.ctx.now()
        try:
            store = require_store(self.ctx)
            if unless_token is not None and store.change_token() == unless_token:
                live = [agent for agent, count in self.model.claims.items() if count.live]
                claims = recheck_claims(store=store, agent_ids=live, now=now)
                self.post_message(self.Unchanged(read, claims))
                return
            result = read_rows(
                store=store,
                read=read,
                filters=state.to_filter(now, self.ctx.stale_after),
                order=state.order,
                now=now,
                status_counts=self.status_counts,
                known_total=known_total,
            )
        except StoreError as error:
            self.post_message(self.ReadFailed(read, error))
            return
        self.post_message(self.RowsRead(result))

    @work(thread=True, exclusive=True, group="session-list-first", exit_on_error=False)
    def _read_first(self) -> None:
        """The first page from the quick read, while the store opens (ctx.first_read)."""
        quick = self.ctx.first_read
        read = Read("at", 0, self.ctx.page_size, self.model.generation, self.model.serial)
        try:
            first = quick(self.ctx.page_size, self.ctx.now()) if quick is not None else None
        except StoreError:
            first = None  # the store, once open, reads and reports
        self.post_message(self.RowsRead(first_result(read, first), first=True))

    def on_session_list_screen_rows_read(self, message: RowsRead) -> None:
        result = message.result
        if message.first:
            # Once painted: opening the store then loads SQLAlchemy, and no frame waits for it.
            self.call_after_refresh(self.post_message, self.FirstRowsShown())
            # Rows of the default list only: the operator may have changed the filters already.
            if self.ctx.store is not None or self.state != ListState():
                return
        if result is None or not self.model.apply(result):
            return
        self.query_one("#banner", Static).remove_class("shown")
        self.loaded_once = True
        if result.counts is not None and result.counts != self.counts_shown:
            self.counts_shown = result.counts
            update_text(self.query_one("#counts", Static), counts_line(result.counts))
        self._show_rows(result)
        if message.first:
            return
        if result.total is None and self.model.count_due(time.monotonic(), result.read.refresh):
            self._count_rows(self.model.generation, self.state)
        self.post_message(self.Loaded())
        self._start_reads()

    def on_session_list_screen_unchanged(self, message: Unchanged) -> None:
        self.model.failed(message.read)  # nothing to read: the read is over
        self.model.claims.update(message.claims)
        self.painter.clock_moved()  # relative times and stale marks move with the clock
        self.grid.refresh()

    def on_session_list_screen_read_failed(self, message: ReadFailed) -> None:
        if message.read is not None:
            self.model.failed(message.read)
        self.show_error(message.error)

    @work(thread=True, exclusive=True, group="session-list-count", exit_on_error=False)
    def _count_rows(self, generation: int, state: ListState) -> None:
        """The length of a list the status counts cannot say (a text or stale filter)."""
        from screens.data import require_store
        from screens.list_reads import count_rows

        try:
            filters = state.to_filter(self.ctx.now(), self.ctx.stale_after)
            total = count_rows(store=require_store(self.ctx), filters=filters)
        except StoreError as error:
            self.post_message(self.ReadFailed(None, error))
            return
        self.post_message(self.Counted(generation, total))

    def on_session_list_screen_counted(self, message: Counted) -> None:
        if self.model.apply_total(message.generation, message.total):
            self._show_rows()
            self._start_reads()

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

    # -- filters and sort ---------------------------------------------------------------------

    def action_filter_text(self) -> None:
        self.filters.open_text()

    def action_close_filter(self) -> None:
        if self.filters.close_text():
            self.grid.focus()

    @on(FilterBar.Done)
    def _filter_done(self) -> None:
        self.grid.focus()

    def action_cycle_status(self) -> None:
        self.filters.change(self.state.with_next_status())

    def action_toggle_ended(self) -> None:
        self.filters.change(self.state.with_ended_toggled())
        shown = self.state.show_ended
        self.notify("Ended sessions shown." if shown else "Ended sessions hidden.", markup=False)

    def action_toggle_stale(self) -> None:
        self.filters.change(self.state.with_stale_toggled())

    def action_cycle_sort(self) -> None:
        self.filters.change(self.state.with_next_sort())

    def action_flip_sort(self) -> None:
        self.filters.change(self.state.with_sort_flipped())

    @on(GridHeader.Clicked)
    def _header_clicked(self, event: GridHeader.Clicked) -> None:
        column = COLUMN_BY_KEY.get(event.key)
        if column is None or column.sort is None:
            self.notify(
                "Sessions sort by started, seen, status or agent: click one of those headers, "
                "or press o (O flips the direction).",
                markup=False,
            )
            return
        self.filters.change(self.state.sorted_by(column.sort))

    @on(FilterBar.Changed)
    def _filters_changed(self) -> None:
        self.model.reset()
        self._show_columns()
        self.grid.move_cursor(0)
        self.grid.row_count = 0
        self._start_reads()
