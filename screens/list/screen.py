"""The default screen: every session, filtered and sorted in SQL, live-refreshed.

Parts with one job each: ``ListModel`` (screens.list.model, on the ``ListWindow`` of
screens.list.window) decides which rows are held, where the cursor is and what to read next;
``SessionGrid`` (screens.list.grid) draws the rows in view and moves the cursor;
``FilterBar`` (screens.list.filter_bar) holds the filters and the sort; ``Marks``
(screens.list.marks) holds the marks. This screen wires them together, with a mixin for each part of
that wiring:

- ``ListReading`` (screens.list.reading): the model's reads and the list's count, in thread
  workers (store.window.rows), and what their answers change;
- ``ListMarking`` (screens.list.marking): the marks' keys (``space``, ``*``, ``u``), and their
  count and the store's answers about them, in workers;
- ``ListKeys`` (screens.list.keys): the filter, sort and group keys, and the list's entries in
  the command palette;
- ``BulkActions`` (screens.bulk.run): with marks, ``h p s r t`` act on every marked session.

The screen itself holds the keys (``BINDINGS``) and the ``@on`` handlers, which Textual reads
from a screen's own classes only, never from a mixin that is no widget; it shows the model's rows
and cursor, folds or unfolds a group when ``enter`` is pressed on its header, and hands the
widgets' messages to its parts.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Header, Static

from roundtable_console.screens.banner import StoreBanner
from roundtable_console.screens.bulk.run import BulkActions
from roundtable_console.screens.context import ConsoleContext
from roundtable_console.screens.footer import ConsoleFooter
from roundtable_console.screens.list.columns import (
    RowPainter,
    counts_line,
    grid_columns,
    marks_text,
)
from roundtable_console.screens.list.filter_bar import FilterBar, update_text
from roundtable_console.screens.list.grid import GridHeader, GridRow, SessionGrid
from roundtable_console.screens.list.keys import ListKeys
from roundtable_console.screens.list.marking import ListMarking
from roundtable_console.screens.list.model import ListModel
from roundtable_console.screens.list.reading import ListReading
from roundtable_console.screens.list.state import ListState
from roundtable_console.screens.live import StoreChanged
from roundtable_console.screens.session.actions import SessionActionScreen
from roundtable_console.store.reads.listing import SessionOrder
from roundtable_console.store.records import SessionFields
from roundtable_console.store.rules import LIFECYCLE_ACTIONS
from roundtable_console.store.safety.display import one_line
from roundtable_console.store.window.layout import GroupHeader
from roundtable_console.store.window.questions import ReadResult


class SessionListScreen(ListKeys, ListReading, ListMarking, BulkActions, SessionActionScreen):
    """The list of every session. Its parts come before ``BulkActions``, whose runs call the
    marks' ``_marks_changed``; the reads before the marks, whose types theirs build on."""

    AUTO_FOCUS = "#sessions"
    BINDINGS = [
        Binding("slash", "filter_text", "Filter"),
        # Left out of a footer too narrow for them, last first (help lists them).
        Binding("space", "toggle_mark", "Mark", tooltip="Mark or unmark the selected session"),
        Binding("u", "clear_marks", "Unmark", tooltip="Clear every mark"),
        Binding("asterisk", "mark_matching", "Mark all", tooltip="Mark every session matching"),
        # Shown in the filter line with their state, so the footer stays short.
        Binding("f", "cycle_status", "Status", show=False),
        Binding("a", "toggle_ended", "Ended", show=False),
        Binding("S", "toggle_stale", "Stale", show=False),
        Binding("o", "cycle_sort", "Sort", show=False),
        Binding("d", "flip_sort", "Sort direction", show=False),
        Binding("O", "overview", "Overview", show=False, tooltip="The fleet at a glance"),
        Binding("g", "cycle_group", "Group", show=False),
        Binding("N", "new_session", "New session", show=False),
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
        # The list as it opens: every session, in the configured order and grouping.
        self.first_state = ListState(order=SessionOrder(ctx.sort), group=ctx.group)
        # Set while the grid is set to the model's cursor (its watcher then ignores the move).
        self.syncing = False

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(self._opening_text(), id="counts")
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
        self.model.grouping = self.first_state.group
        self._show_columns()
        # Called as the cursor moves, so the footer and the filter line follow in its frame.
        self.watch(self.grid, "cursor", self._cursor_moved, init=False)
        self.refresh_timer = self.set_interval(self.ctx.refresh_seconds, self.refresh_if_changed)
        if not self.ctx.source.ready and self.ctx.first_read is not None:
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
        columns = grid_columns(self.painter.widths, self.state.shown_order)
        self.query_one(GridHeader).show(columns)
        self.grid.set_columns(columns)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in (*LIFECYCLE_ACTIONS, "log", "briefing", "launch") and self.selected_header():
            return None  # shown dimmed: a header is no session (its key says so)
        return super().check_action(action, parameters)

    # -- the rows and the cursor --------------------------------------------------------------

    def grid_row(self, index: int) -> GridRow | None:
        item = self.model.row(index)
        if item is None:
            return None
        if isinstance(item, GroupHeader):
            counts = self.model.counts_of(item.key)
            return self.painter.header(self.model.grouping or "", item, counts)
        claims, marked = self.model.claims.get(item.agent_id), self.marks.is_marked(item)
        return self.painter.row(item, claims, self.ctx.now(), marked)

    def selected_session(self) -> SessionFields | None:
        """The session under the grid's cursor now: a key typed ahead (down, down, p) acts on
        the row the cursor is on, not on one a message has not caught up with yet. None on a
        group's header."""
        if not self.model.loaded or self.grid.has_class("hidden"):
            return None
        return self.model.session(self.grid.cursor)

    def selected_header(self) -> GroupHeader | None:
        """The group header under the grid's cursor, if it is on one."""
        if not self.model.loaded or self.grid.has_class("hidden"):
            return None
        item = self.model.row(self.grid.cursor)
        return item if isinstance(item, GroupHeader) else None

    def show_session(self, session_id: str) -> bool:
        """Put the cursor on that session, if the list holds it now."""
        index = self.model.index_of(session_id)
        if index is None or self.grid.has_class("hidden"):
            return False
        self.grid.move_cursor(index)
        return True

    def known_sessions(self) -> list[SessionFields]:
        return list(self.model.sessions())

    def session_updated(self, session: SessionFields) -> None:
        if self.model.updated(session):
            self.grid.refresh()
            self.refresh_bindings()

    def _cursor_moved(self, row: int) -> None:
        if self.syncing:
            return  # the grid is being set to the model's cursor, not moved by the operator
        self.model.choose(row)
        self.refresh_bindings()
        self.filters.show_place(self.model)

    @on(SessionGrid.ViewMoved)
    def _view_moved(self, event: SessionGrid.ViewMoved) -> None:
        self.model.move_view(event.first, event.height)
        self._start_reads()

    @on(SessionGrid.RowChosen)
    def _row_chosen(self, event: SessionGrid.RowChosen) -> None:
        item = self.model.row(event.row)
        if isinstance(item, GroupHeader):
            self._toggle_fold(event.row)
        elif item is not None:
            self.open_detail(item.id)

    def _toggle_fold(self, index: int) -> None:
        """Fold the group whose header is at ``index``, or unfold it: the rows after the
        header are read again."""
        header = self.model.toggle_fold(index)
        if header is None:
            return
        self._show_rows()
        self._start_reads()

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

    # -- the header ---------------------------------------------------------------------------

    def _opening_text(self) -> Text:
        return Text(f"Opening store {one_line(self.ctx.description, 100)}…")

    def _show_counts(self) -> None:
        """The header: how many sessions there are, how many are marked, and by status."""
        marked = marks_text(self.marks.count()) if self.marks else None
        if self.counts_shown is not None:
            line = counts_line(self.counts_shown, marked, attention=self.attention_shown)
        else:
            line = self._opening_text()
            if marked is not None:
                line.append(" · ")
                line.append_text(marked)
        update_text(self.query_one("#counts", Static), line)

    # -- the widgets' messages, handed to the parts -------------------------------------------

    @on(StoreChanged)
    def _store_changed(self) -> None:
        self.refresh_if_changed()

    @on(FilterBar.Done)
    def _filter_done(self) -> None:
        self.grid.focus()

    @on(GridHeader.Clicked)
    def _header_clicked(self, event: GridHeader.Clicked) -> None:
        self.sort_by_column(event.key)

    @on(FilterBar.Changed)
    def _filters_changed(self) -> None:
        self.model.grouping = self.state.group
        self.model.reset()
        self.order_moves_at = None
        self._show_columns()
        self.grid.move_cursor(0)
        self.grid.row_count = 0
        self._start_reads()
