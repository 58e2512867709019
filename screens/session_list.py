"""The default screen: every session, filtered and sorted in SQL, live-refreshed.

Parts with one job each: ``ListModel`` (screens.list_model) decides which rows are held, where
the cursor is and what to read next; ``SessionGrid`` (screens.session_grid) draws the rows in
view and moves the cursor; ``FilterBar`` (screens.filter_bar) holds the filters and the sort.
This screen wires them together and runs the model's reads in thread workers
(screens.list_reads).
"""

from __future__ import annotations

import time
from functools import partial
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Header, Static

from screens.banner import StoreBanner
from screens.context import ConsoleContext
from screens.failures import Failure
from screens.filter_bar import FilterBar, update_text
from screens.footer import ConsoleFooter
from screens.list_columns import COLUMN_BY_KEY, RowPainter, counts_line, grid_columns
from screens.list_model import ClockMoved, ListModel, Read, ReadResult, RowsAsked, first_result
from screens.list_state import ListState
from screens.live import StoreChanged
from screens.session_actions import SessionActionScreen
from screens.session_grid import GridHeader, GridRow, SessionGrid
from store.display import one_line
from store.listing import SessionOrder
from store.records import ClaimCount, SessionFields

if TYPE_CHECKING:
    from screens.context import FirstRead
    from screens.list_reads import StatusCounts
    from store.first_window import FirstWindow


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

    class FirstRowsShown(Message):
        """The quick first read's rows are on screen (or it had none): the app opens the store."""

    class Loaded(Message):
        """Rows read from the store are on screen."""

    def __init__(self, ctx: ConsoleContext) -> None:
        super().__init__(ctx, id="session-list")
        self.model = ListModel()
        self.painter = RowPainter(stale_after=ctx.stale_after, adapters=ctx.adapters)
        self.status_counts: StatusCounts | None = None
        self.counts_shown: tuple[dict[str, int] | None, int | None] | None = None
        self.attention_shown: int | None = None
        self.loaded_once = False
        # The list as it opens: every session, in the configured order.
        self.first_state = ListState(order=SessionOrder(ctx.sort))
        # Set while the grid is set to the model's cursor (its watcher then ignores the move).
        self.syncing = False

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text(f"Opening store {one_line(self.ctx.description, 100)}…"), id="counts")
        yield StoreBanner()
        yield FilterBar(self.first_state, cursor_blink=self.ctx.cursor_blink)
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

    def on_screen_resume(self) -> None:
        # The timer is resumed by SessionActionScreen's handler (Textual calls both).
        if self.loaded_once:
            self.reload()

    def on_resize(self) -> None:
        if self.painter.resize(self.size.width):
            self._show_columns()

    def _show_columns(self) -> None:
        columns = grid_columns(self.painter.widths, self.state.order)
        self.query_one(GridHeader).show(columns)
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
        if self.model.updated(session):
            self.grid.refresh()
            self.refresh_bindings()

    def _cursor_moved(self, row: int) -> None:
        if self.syncing:
            return  # the grid is being set to the model's cursor, not moved by the operator
        self.model.move_cursor(row)
        self.refresh_bindings()
        self.filters.show_place(self.model)

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
        resized, moved = grid.row_count != model.row_count, grid.cursor != model.cursor
        self.syncing = True  # a list that shrank clamps the grid's cursor on the way
        try:
            grid.row_count = model.row_count
            grid.move_cursor(model.cursor)
        finally:
            self.syncing = False
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
        self.filters.show_place(self.model)
        self.refresh_bindings()

    # -- reading ------------------------------------------------------------------------------

    def reload(self) -> None:
        """Read the held rows again at their place (ctrl+r, an action's outcome)."""
        if self.ctx.store is not None:
            self._run_read(self.model.refresh_read())

    @on(StoreChanged)
    def refresh_if_changed(self) -> None:
        """The store changed, or the clock moved: read the held rows again, unless the store's
        change token says nothing was written (the stale filter's rows move with the clock).
        A list that could not be read yet is asked for again."""
        if self.ctx.store is None:
            return
        if not self.model.loaded:
            self._start_reads()
        elif "view" in self.model.in_flight:
            self.model.dirty = True  # read again once the view's own read is back
        else:
            self.model.dirty = False
            # Rows move with the clock in the stale filter and in the attention order.
            timed = self.state.stale_only or self.state.order.column == "attention"
            unless = None if timed else self.model.token
            self._run_read(self.model.refresh_read(), unless_token=unless)

    def store_opened(self) -> None:
        super().store_opened()
        self._start_reads()

    def _start_reads(self) -> None:
        """The view's missing rows are read at once; a page read ahead waits until the frame
        of the key press is painted (the read's Python would slow that frame: the GIL)."""
        if self.ctx.store is None:
            return
        for read in self.model.next_reads():
            if read.ahead:
                self.model.started(read)  # held in flight until it runs
                self.call_after_refresh(self._run_ahead, read)
            else:
                self._run_read(read)

    def _run_ahead(self, read: Read) -> None:
        if self.model.in_flight.get(read.slot) == read:  # not replaced meanwhile
            self._run_read(read)

    def _run_read(self, read: Read, *, unless_token: object | None = None) -> None:
        self.model.started(read)
        now, state = self.ctx.now(), self.state
        live = tuple(agent for agent, count in self.model.claims.items() if count.live)
        filters = state.to_filter(now, self.ctx.stale_after)
        order = state.order.at(now - self.ctx.stale_after)
        asked = RowsAsked(read, filters, order, now, self.model.total, unless_token, live)
        # The store is open, and with it the modules these need.
        from screens.data import require_store
        from screens.list_reads import StatusCounts, read_rows

        self.status_counts = self.status_counts or StatusCounts()
        store, counts = require_store(self.ctx), self.status_counts
        self.run_in_thread(
            partial(read_rows, store=store, asked=asked, counts=counts),
            what="read the sessions",
            group=f"session-list-{read.slot}",
            done=self._rows_read,
            failed=partial(self._read_failed, read),
        )

    def _read_first(self) -> None:
        """The first page from the quick read, while the store opens (ctx.first_read)."""
        quick, size = self.ctx.first_read, self.ctx.page_size
        read = Read("at", 0, size, self.model.generation, self.model.serial)
        shown = partial(self._rows_read, first=True)
        self.run_in_thread(
            lambda: first_result(read, self._quick_read(quick, size) if quick else None),
            what="read the first sessions",
            group="session-list-first",
            done=shown,
            failed=lambda _failure: shown(None),  # the store, once open, reads and reports
        )

    def _quick_read(self, quick: FirstRead, size: int) -> FirstWindow | None:
        now = self.ctx.now()
        return quick(size, now, self.first_state.order.at(now - self.ctx.stale_after))

    def _rows_read(self, answer: ReadResult | ClockMoved | None, *, first: bool = False) -> None:
        if first:
            # Once painted: opening the store then loads SQLAlchemy, and no frame waits for it.
            self.call_after_refresh(self.post_message, self.FirstRowsShown())
            # Rows of the default list only: the operator may have changed the filters already.
            if self.ctx.store is not None or self.state != self.first_state:
                return
        if isinstance(answer, ClockMoved):
            self.model.failed(answer.read)  # nothing to read: the read is over
            self.query_one(StoreBanner).clear()  # the store answered
            self._clock_moved(answer.claims)
            self._start_reads()  # what failed meanwhile, tried again
            return
        if answer is None or not self.model.apply(answer):
            self._start_reads()  # an answer to another question: ask this one
            return
        self.query_one(StoreBanner).clear()
        self.loaded_once = True
        if answer.attention is not None:
            self.attention_shown = answer.attention
        header = (answer.counts, self.attention_shown)
        if answer.counts is not None and header != self.counts_shown:
            self.counts_shown = header
            update_text(self.query_one("#counts", Static), counts_line(*header))
        self._show_rows(answer)
        if first:
            return
        if answer.total is None and self.model.count_due(time.monotonic(), answer.read.refresh):
            self._count_rows(self.model.generation, self.state)
        self.post_message(self.Loaded())
        if self.model.dirty:
            self.refresh_if_changed()
        self._start_reads()

    def _clock_moved(self, claims: dict[str, ClaimCount]) -> None:
        """Relative times, stale marks and claims expiring move with the clock: the lines in
        view whose cells changed are drawn again (most keep theirs: no frame for them)."""
        grid = self.grid
        shown = range(grid.first_in_view, grid.first_in_view + grid.view_height)
        before = [self.grid_row(index) for index in shown]
        self.model.claims.update(claims)
        self.painter.clock_moved()
        for index, old in zip(shown, before, strict=True):
            if self.grid_row(index) is not old:
                grid.refresh_line(index)

    def _read_failed(self, read: Read | None, failure: Failure) -> None:
        if read is not None:
            self.model.failed(read)
        self.show_failure(failure)

    def _count_rows(self, generation: int, state: ListState) -> None:
        """The length of a list the status counts cannot say (a text or stale filter)."""
        from screens.data import require_store
        from screens.list_reads import count_rows

        def count() -> int:
            filters = state.to_filter(self.ctx.now(), self.ctx.stale_after)
            return count_rows(store=require_store(self.ctx), filters=filters)

        self.run_in_thread(
            count,
            what="count the sessions",
            group="session-list-count",
            done=partial(self._counted, generation),
            failed=partial(self._read_failed, None),
        )

    def _counted(self, generation: int, total: int) -> None:
        if self.model.apply_total(generation, total):
            self._show_rows()
            self._start_reads()

    def show_failure(self, failure: Failure) -> None:
        """A banner over the last rows read; the next read that works takes it away."""
        self.query_one(StoreBanner).show_failure(
            failure.text,
            hint="Showing what was last read; retrying by itself."
            if self.loaded_once
            else "Nothing has been read yet; retrying by itself.",
        )

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
                "Sessions sort by attention, started, seen, status or agent: click one of those "
                "headers, or press o (O flips the direction).",
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
