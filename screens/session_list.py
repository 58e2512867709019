"""The default screen: every session, filtered and sorted in SQL, live-refreshed.

Parts with one job each: ``ListModel`` (screens.list_model) decides which rows are held, where
the cursor is and what to read next; ``SessionGrid`` (screens.session_grid) draws the rows in
view and moves the cursor; ``FilterBar`` (screens.filter_bar) holds the filters and the sort;
``Marks`` (screens.marks) holds the marks. This screen wires them together and runs the model's
reads, and the marks' count, in thread workers (screens.list_reads).

Marks: ``space`` marks or unmarks the selected session (the cursor stays, as in k9s and
lazygit: the mark appears where the eye is, and a second ``space`` undoes it); ``*`` marks every
session matching the filters in force, held as the filter; ``u`` clears every mark. The header
counts them. ``SessionListScreen.marks`` is the marks model and ``marks.selection()`` what is
marked. With marks, ``h p s r t`` act on every marked session (screens.bulk_run: a preview,
then a run the list stays usable under; escape cancels it).

Groups: ``g`` groups the list by workspace, run, agent, then none. A header row leads each group
with its counts by status; ``enter`` on it folds or unfolds the group, ``*`` on it marks the
group (the filters in force and that group); the lifecycle keys on it say they act on sessions.
``o`` leaves the grouping for the next sort (a group is read in start order only); ``d`` flips
the groups' direction with the sessions'.

``O`` opens the fleet's overview (screens.overview_screen).
"""

from __future__ import annotations

import time
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Header, Static

from roundtable_console.screens.banner import StoreBanner
from roundtable_console.screens.bulk_run import BulkActions
from roundtable_console.screens.context import INPUT_HOLD_SECONDS, ConsoleContext, InputHold
from roundtable_console.screens.failures import Failure
from roundtable_console.screens.filter_bar import FilterBar, update_text
from roundtable_console.screens.footer import ConsoleFooter
from roundtable_console.screens.list_columns import (
    COLUMN_BY_KEY,
    RowPainter,
    counts_line,
    grid_columns,
    group_name,
    marks_text,
)
from roundtable_console.screens.list_groups import GROUPING_NAMES, GroupHeader, Groups
from roundtable_console.screens.list_model import (
    ClockMoved,
    ListModel,
    Read,
    ReadResult,
    RowsAsked,
    first_result,
)
from roundtable_console.screens.list_state import ListState
from roundtable_console.screens.live import StoreChanged
from roundtable_console.screens.marks import Asked, Marks
from roundtable_console.screens.session_actions import ScreenCommand, SessionActionScreen
from roundtable_console.screens.session_grid import GridHeader, GridRow, SessionGrid
from roundtable_console.store.reads.listing import SessionFilter, SessionOrder, group_filter
from roundtable_console.store.records import ClaimCount, SessionFields
from roundtable_console.store.rules import LIFECYCLE_ACTIONS
from roundtable_console.store.safety.display import one_line

# The keys that mark sessions (for a bulk action): none of them in a read-only console.
MARK_ACTIONS = ("toggle_mark", "clear_marks", "mark_matching")

if TYPE_CHECKING:
    from roundtable_console.screens.context import FirstRead
    from roundtable_console.screens.list_reads import GroupCounts, StatusCounts
    from roundtable_console.store.reads.first_window import FirstWindow


class SessionListScreen(BulkActions, SessionActionScreen):
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
        self.group_counts: GroupCounts | None = None
        self.counts_shown: dict[str, int] | None = None
        self.attention_shown: int | None = None
        # When the clock next moves a session up the attention order (None: not known).
        self.order_moves_at: datetime | None = None
        self.marks = Marks()
        # A timer that counts the marks again, once the store's changes have settled.
        self.marks_recount: Timer | None = None
        self.loaded_once = False
        # The list as it opens: every session, in the configured order and grouping.
        self.first_state = ListState(order=SessionOrder(ctx.sort), group=ctx.group)
        # Set while the grid is set to the model's cursor (its watcher then ignores the move).
        self.syncing = False
        # A refresh held back for the operator's input, and the timer that runs it then.
        self.input_hold = InputHold(ctx.input_wait, INPUT_HOLD_SECONDS)
        self.held_refresh: Timer | None = None

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
        columns = grid_columns(self.painter.widths, self.state.shown_order)
        self.query_one(GridHeader).show(columns)
        self.grid.set_columns(columns)

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

    # -- reading ------------------------------------------------------------------------------

    def reload(self) -> None:
        """Read the held rows again at their place (ctrl+r, an action's outcome)."""
        if self.ctx.store is not None:
            self._run_read(self.model.refresh_read())

    @on(StoreChanged)
    def refresh_if_changed(self) -> None:
        """The store changed, or the clock moved: read the held rows again, unless the store's
        change token says nothing was written (the stale filter's rows move with the clock).
        A list that could not be read yet is asked for again. While the operator moves through
        the list, the read waits for them (``INPUT_QUIET_SECONDS``, ``INPUT_HOLD_SECONDS``)."""
        if self.ctx.store is None:
            return
        if self.model.loaded and self._hold_for_input():
            return
        self.input_hold.release()
        if not self.model.loaded:
            self._start_reads()
        elif "view" in self.model.in_flight:
            self.model.dirty = True  # read again once the view's own read is back
        else:
            self.model.dirty = False
            unless = None if self._clock_moves_rows() else self.model.token
            self._run_read(self.model.refresh_read(), unless_token=unless)

    def _hold_for_input(self) -> bool:
        """Whether the refresh due now waits for the operator's input (screens.context): it is
        then run by a timer once they pause, or once it has waited ``INPUT_HOLD_SECONDS``."""
        wait = self.input_hold.wait()
        if wait <= 0:
            return False
        if self.held_refresh is None:
            self.held_refresh = self.set_timer(wait, self._run_held_refresh)
        return True

    def _run_held_refresh(self) -> None:
        self.held_refresh = None
        self.refresh_if_changed()

    def _clock_moves_rows(self) -> bool:
        """Whether the clock alone may have changed which rows the list holds: in the stale
        filter, and in the attention order once a fresh session may have gone stale."""
        if self.state.stale_only:
            return True
        if self.state.read_order.column != "attention":
            return False
        return self.order_moves_at is None or self.ctx.now() >= self.order_moves_at

    def store_opened(self) -> None:
        super().store_opened()
        self._start_reads()
        self._marks_changed()  # marked before the store was open: counted and decided now

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
        order = state.read_order.at(now - self.ctx.stale_after)
        model = self.model
        asked = RowsAsked(
            read,
            filters,
            order,
            now,
            model.total,
            unless_token,
            live,
            grouping=model.grouping,
            folded=model.folded,
            groups=model.groups,
        )
        # The store is open, and with it the modules these need.
        from roundtable_console.screens.data import require_store
        from roundtable_console.screens.list_reads import GroupCounts, StatusCounts, read_rows

        self.status_counts = self.status_counts or StatusCounts()
        self.group_counts = self.group_counts or GroupCounts()
        store, counts, groups = require_store(self.ctx), self.status_counts, self.group_counts
        self.run_in_thread(
            partial(read_rows, store=store, asked=asked, counts=counts, groups=groups),
            what="read the sessions",
            group=f"session-list-{read.slot}",
            done=self._rows_read,
            failed=partial(self._read_failed, read),
        )

    def _read_first(self) -> None:
        """The first page from the quick read, while the store opens (ctx.first_read)."""
        quick, size = self.ctx.first_read, self.ctx.page_size
        read = Read("at", 0, size, self.model.generation, self.model.serial, header_first=True)
        shown = partial(self._rows_read, first=True)
        grouping = self.first_state.group
        self.run_in_thread(
            lambda: first_result(read, self._quick_read(quick, size) if quick else None, grouping),
            what="read the first sessions",
            group="session-list-first",
            done=shown,
            failed=lambda _failure: shown(None),  # the store, once open, reads and reports
        )

    def _quick_read(self, quick: FirstRead, size: int) -> FirstWindow | None:
        now = self.ctx.now()
        return quick(size, now, self.first_state.read_order.at(now - self.ctx.stale_after))

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
        if answer.moves_at is not None:
            self.order_moves_at = answer.moves_at
        attention_moved = answer.attention not in (None, self.attention_shown)
        if answer.attention is not None:
            self.attention_shown = answer.attention
        if answer.counts is not None and (attention_moved or answer.counts != self.counts_shown):
            self.counts_shown = answer.counts
            self._show_counts()
        self._show_rows(answer)
        self._ask_about_marks(answer.rows)
        if answer.read.refresh:
            self._recount_marks()
        if first:
            return
        counted = answer.grouped is not None and answer.grouped.groups is not None
        if answer.total is None and not counted:
            if self.model.count_due(time.monotonic(), answer.read.refresh):
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
        """The length of a list the status counts cannot say (a text or stale filter); grouped,
        its groups, counted over the sessions."""
        from roundtable_console.screens.data import require_store
        from roundtable_console.screens.list_reads import count_grouped, count_rows

        def count() -> int | Groups:
            filters = state.to_filter(self.ctx.now(), self.ctx.stale_after)
            store = require_store(self.ctx)
            if state.group is None:
                return count_rows(store=store, filters=filters)
            return count_grouped(
                store=store,
                grouping=state.group,
                filters=filters,
                descending=state.order.descending,
            )

        self.run_in_thread(
            count,
            what="count the sessions",
            group="session-list-count",
            done=partial(self._counted, generation),
            failed=partial(self._count_failed, generation),
        )

    def _counted(self, generation: int, total: int | Groups) -> None:
        if isinstance(total, Groups):
            counted = self.model.apply_groups(generation, total)
        else:
            counted = self.model.apply_total(generation, total)
        if counted:
            self.grid.refresh()  # the headers' counts too
            self._show_rows()
            self._start_reads()
        self._count_over(generation)

    def _count_failed(self, generation: int, failure: Failure) -> None:
        self._read_failed(None, failure)
        self._count_over(generation)

    def _count_over(self, generation: int) -> None:
        """A count is back: the list changed while it was on its way, so it is counted again."""
        if self.model.count_over(generation):
            self._count_rows(generation, self.state)

    def show_failure(self, failure: Failure) -> None:
        """A banner over the last rows read; the next read that works takes it away."""
        self.query_one(StoreBanner).show_failure(
            failure.text,
            hint="Showing what was last read; retrying by itself."
            if self.loaded_once
            else "Nothing has been read yet; retrying by itself.",
        )

    # -- marks --------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in MARK_ACTIONS and self.ctx.read_only:
            return False  # read-only: no marks, so no bulk action either
        if action in (*LIFECYCLE_ACTIONS, "log", "briefing", "launch") and self.selected_header():
            return None  # shown dimmed: a header is no session (its key says so)
        if action == "toggle_mark":
            return self.selected_session() is not None
        if action == "mark_matching":
            return self.model.loaded and self.model.row_count > 0
        if action == "clear_marks":
            return bool(self.marks)
        return super().check_action(action, parameters)

    def action_toggle_mark(self) -> None:
        session = self.selected_session()
        if session is None:
            return
        self.marks.toggle(session)
        self.grid.refresh_line(self.grid.cursor)
        self._marks_changed()

    def action_mark_matching(self) -> None:
        """Every session matching the filters in force, as they are now (a stale cutoff stays
        where it is), whether read yet or not; on a group's header, of that group."""
        filters = self.state.to_filter(self.ctx.now(), self.ctx.stale_after)
        header, grouping = self.selected_header(), self.model.grouping
        if header is not None and grouping is not None:
            self.marks.mark_matching(group_filter(filters, grouping, header.key))
            self.grid.refresh()
            self._marks_changed()
            name = group_name(grouping, header.key).plain
            self.notify(
                f"Marked every session of {name} matching the filters in force, on screen or "
                "not; space unmarks one, u clears the marks.",
                markup=False,
            )
            return
        self.marks.mark_matching(filters)
        self.grid.refresh()
        self._marks_changed()
        self.notify(
            "Marked every session matching the filters in force, on screen or not; "
            "space unmarks one, u clears the marks.",
            markup=False,
        )

    def action_explain(self, action: str) -> None:
        header, grouping = self.selected_header(), self.model.grouping
        if header is None or grouping is None:
            super().action_explain(action)
            return
        name = group_name(grouping, header.key).plain
        self.notify(
            f"The cursor is on the header of {name}: {action} acts on a session. Move to one "
            f"(enter {'unfolds' if header.folded else 'folds'} the group, * marks it).",
            severity="warning",
            markup=False,
        )

    def action_clear_marks(self) -> None:
        if self.marks.clear():
            self.grid.refresh()
            self._marks_changed()
            self.notify("Every mark cleared.", markup=False)

    def screen_commands(self) -> list[ScreenCommand]:
        """The marks' entries in the command palette (their help text is fixed: it is read as
        markup)."""
        found: list[ScreenCommand] = self.bulk_commands()
        session = None if self.ctx.read_only else self.selected_session()
        if session is not None:
            verb = "Unmark" if self.marks.is_marked(session) else "Mark"
            name = f"{verb} {one_line(session.id, 60)}"
            found.append((name, self.action_toggle_mark, "Mark or unmark the selected session"))
        header, grouping = self.selected_header(), self.model.grouping
        if header is not None and grouping is not None:
            group = group_name(grouping, header.key).plain
            cursor = self.grid.cursor
            found.append(
                (
                    f"{'Unfold' if header.folded else 'Fold'} {group}",
                    partial(self._toggle_fold, cursor),
                    "Folds the group under its header, or shows its sessions again",
                )
            )
            if not self.ctx.read_only:
                found.append(
                    (
                        f"Mark every session of {group} matching the filters",
                        self.action_mark_matching,
                        "Marks the group's sessions the list's filters let through",
                    )
                )
        elif self.check_action("mark_matching", ()):
            found.append(
                (
                    "Mark every session matching the filters",
                    self.action_mark_matching,
                    "Marks the sessions the list's filters let through, on screen or not",
                )
            )
        following = self.state.with_next_group().group
        found.append(
            (
                f"Group the sessions by {following}" if following else "Ungroup the sessions",
                self.action_cycle_group,
                "Groups the list (g): workspace, run, agent, then none",
            )
        )
        if self.marks:
            found.append(("Clear every mark", self.action_clear_marks, "Unmarks every session"))
        found.append(
            (
                "Overview of the fleet",
                self.action_overview,
                "Sessions by status, who needs a human, tokens and cost, starts per hour (O)",
            )
        )
        return found

    def _marks_changed(self) -> None:
        """The marks changed: the footer's keys, the header, and what only the store says."""
        self.refresh_bindings()
        self._show_counts()
        self._ask_about_marks()
        self._count_marks()

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

    def _count_marks(self) -> None:
        """A filter mark is counted by the store (ids marked one by one are counted here)."""
        if not self.marks.needs_count or self.ctx.store is None:
            return
        from roundtable_console.screens.data import require_store
        from roundtable_console.screens.list_reads import count_marked

        if self.marks_recount is not None:
            self.marks_recount.stop()
            self.marks_recount = None
        self.marks.count_started(time.monotonic())
        revision = self.marks.revision
        self.run_in_thread(
            partial(count_marked, store=require_store(self.ctx), selection=self.marks.selection()),
            what="count the marked sessions",
            group="session-list-marks-count",
            done=partial(self._marks_counted, revision),
            failed=partial(self._read_failed, None),
        )

    def _marks_counted(self, revision: int, total: int) -> None:
        if self.marks.counted_as(revision, total):
            self._show_counts()
            self.refresh_bindings()  # the footer's keys say how many they act on

    def _recount_marks(self) -> None:
        """The store changed: the filter marks are counted again, at most every few seconds
        (the last change is always counted)."""
        if not self.marks.needs_count or self.marks_recount is not None:
            return
        wait = self.marks.recount_in(time.monotonic())
        if wait <= 0:
            self._count_marks()
        else:
            self.marks_recount = self.set_timer(wait, self._count_marks)

    def _ask_about_marks(self, rows: list[SessionFields] | None = None) -> None:
        """Rows (those just read, else every row held) whose mark only the store can decide:
        values other writers left."""
        if self.ctx.store is None or not self.marks.by_filter:
            return
        from roundtable_console.screens.data import require_store
        from roundtable_console.screens.list_reads import admitted_among

        store = require_store(self.ctx)
        held = list(self.model.sessions()) if rows is None else rows
        for filters, asked in self.marks.open_questions(held).items():
            ids = [session_id for session_id, _version in asked]
            self.run_in_thread(
                partial(admitted_among, store=store, filters=filters, ids=ids),
                what="read which sessions are marked",
                group="session-list-marks-decide",
                exclusive=False,
                done=partial(self._marks_answered, filters, asked),
                failed=partial(self._marks_unanswered, filters, asked),
            )

    def _marks_answered(self, filters: SessionFilter, asked: Asked, admitted: set[str]) -> None:
        self.marks.answered(filters, asked, admitted)
        self.grid.refresh()

    def _marks_unanswered(self, filters: SessionFilter, asked: Asked, failure: Failure) -> None:
        self.marks.answered(filters, asked, None)
        self._read_failed(None, failure)

    # -- filters and sort ---------------------------------------------------------------------

    def action_filter_text(self) -> None:
        self.filters.open_text()

    def action_close_filter(self) -> None:
        if self.filters.close_text():
            self.grid.focus()
        else:
            self.bulk_cancel()

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
        grouped = self.state.group
        self.filters.change(self.state.with_next_sort())
        if grouped is not None:
            self._left_grouping(grouped)

    def _left_grouping(self, grouping: str) -> None:
        self.notify(
            f"Grouping by {GROUPING_NAMES[grouping]} left: a group lists its sessions in start "
            "order only. g groups again.",
            markup=False,
        )

    def action_cycle_group(self) -> None:
        self.filters.change(self.state.with_next_group())

    def action_flip_sort(self) -> None:
        self.filters.change(self.state.with_sort_flipped())

    def action_overview(self) -> None:
        from roundtable_console.screens.overview_screen import OverviewScreen

        self.app.push_screen(OverviewScreen(self.ctx))

    @on(GridHeader.Clicked)
    def _header_clicked(self, event: GridHeader.Clicked) -> None:
        column = COLUMN_BY_KEY.get(event.key)
        if column is None or column.sort is None:
            self.notify(
                "Sessions sort by attention, started, seen, status or agent: click one of those "
                "headers, or press o (d flips the direction); g groups them.",
                markup=False,
            )
            return
        grouped = self.state.group
        self.filters.change(self.state.sorted_by(column.sort))
        if grouped is not None and self.state.group is None:
            self._left_grouping(grouped)

    @on(FilterBar.Changed)
    def _filters_changed(self) -> None:
        self.model.grouping = self.state.group
        self.model.reset()
        self.order_moves_at = None
        self._show_columns()
        self.grid.move_cursor(0)
        self.grid.row_count = 0
        self._start_reads()
