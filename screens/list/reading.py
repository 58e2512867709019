"""The session list's reads at work (``ListReading``, a mixin of ``SessionListScreen``): which
reads start when, in thread workers (store.window.rows), and what their answers change.

The model (screens.list.model) says what to read; this part runs it: the view's missing rows at
once, a page read ahead once the key's frame is painted (the read's Python would slow that
frame: the GIL). The held rows are read again when the store changes (unless its change token
says nothing was written), when the clock may have moved rows (the stale filter, the attention
order), or on ``ctrl+r``; while the operator moves through the list, that read waits for them
(``InputHold``, screens.context). Before the store is open, the quick first read
(``ctx.first_read``) shows the list's top. A list the status counts cannot measure (a text or
stale filter), or whose groups they cannot say, is counted apart.
"""

from __future__ import annotations

import time
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from roundtable_console.screens.banner import StoreBanner
from roundtable_console.screens.context import INPUT_HOLD_SECONDS, InputHold
from roundtable_console.screens.failures import Failure
from roundtable_console.screens.list.state import ListState
from roundtable_console.store.records import ClaimCount
from roundtable_console.store.window.layout import Groups
from roundtable_console.store.window.questions import (
    ClockMoved,
    Read,
    ReadResult,
    RowsAsked,
    first_result,
)

if TYPE_CHECKING:
    from textual.message import Message
    from textual.timer import Timer

    from roundtable_console.screens.context import FirstRead
    from roundtable_console.screens.list.columns import RowPainter
    from roundtable_console.screens.list.grid import GridRow
    from roundtable_console.screens.list.marking import ListMarking
    from roundtable_console.store.reads.first_window import FirstWindow

    class ScreenBase(ListMarking):
        """What the reads take from the list screen and its other parts (for the type checker
        only: at run time the mixin's base is ``object``)."""

        FirstRowsShown: type[Message]
        Loaded: type[Message]
        painter: RowPainter
        first_state: ListState

        def grid_row(self, index: int) -> GridRow | None: ...
        def _show_rows(self, result: ReadResult | None = None) -> None: ...

else:
    ScreenBase = object


class ListReading(ScreenBase):
    """Mixin for the session list: its reads and counts in workers, and their answers shown."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.counts_shown: dict[str, int] | None = None
        self.attention_shown: int | None = None
        # When the clock next moves a session up the attention order (None: not known).
        self.order_moves_at: datetime | None = None
        self.loaded_once = False
        # A refresh held back for the operator's input, and the timer that runs it then.
        self.input_hold = InputHold(self.ctx.input_wait, INPUT_HOLD_SECONDS)
        self.held_refresh: Timer | None = None

    # -- when to read -------------------------------------------------------------------------

    def reload(self) -> None:
        """Read the held rows again at their place (ctrl+r, an action's outcome)."""
        if self.ctx.source.ready:
            self._run_read(self.model.refresh_read())

    def refresh_if_changed(self) -> None:
        """The store changed, or the clock moved: read the held rows again, unless the store's
        change token says nothing was written (the stale filter's rows move with the clock).
        A list that could not be read yet is asked for again. While the operator moves through
        the list, the read waits for them (``INPUT_QUIET_SECONDS``, ``INPUT_HOLD_SECONDS``)."""
        if not self.ctx.source.ready:
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

    # -- the reads and their answers ----------------------------------------------------------

    def _start_reads(self) -> None:
        """The view's missing rows are read at once; a page read ahead waits until the frame
        of the key press is painted (the read's Python would slow that frame: the GIL)."""
        if not self.ctx.source.ready:
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
        self.run_in_thread(
            partial(self.ctx.source.read_rows, asked),
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
            if self.ctx.source.ready or self.state != self.first_state:
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

    def show_failure(self, failure: Failure) -> None:
        """A banner over the last rows read; the next read that works takes it away."""
        self.query_one(StoreBanner).show_failure(
            failure.text,
            hint="Showing what was last read; retrying by itself."
            if self.loaded_once
            else "Nothing has been read yet; retrying by itself.",
        )

    # -- the list's length --------------------------------------------------------------------

    def _count_rows(self, generation: int, state: ListState) -> None:
        """The length of a list the status counts cannot say (a text or stale filter); grouped,
        its groups, counted over the sessions."""
        source = self.ctx.source

        def count() -> int | Groups:
            filters = state.to_filter(self.ctx.now(), self.ctx.stale_after)
            if state.group is None:
                return source.count_rows(filters)
            return source.count_grouped(state.group, filters, state.order.descending)

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
