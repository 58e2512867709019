"""The session list's marks at work (``ListMarking``, a mixin of ``SessionListScreen``): the keys
that mark, and the workers that ask the store what only it can say about the marks.

``space`` marks or unmarks the selected session (the cursor stays, as in k9s and lazygit: the
mark appears where the eye is, and a second ``space`` undoes it); ``*`` marks every session
matching the filters in force, held as the filter (on a group's header: that group too); ``u``
clears every mark. The header counts them. ``SessionListScreen.marks`` is the marks model
(screens.list.marks) and ``marks.selection()`` what is marked. With marks, ``h p s r t`` act on
every marked session (screens.bulk.run). None of these keys is offered in a read-only console.

Python decides most rows' marks; in thread workers (store.window.rows), a filter mark is
counted by the store, again after the store's changes at most every ``RECOUNT_SECONDS``
(screens.list.marks), and the few rows only the store can decide are asked about.
"""

from __future__ import annotations

import time
from functools import partial
from typing import TYPE_CHECKING, Any

from roundtable_console.screens.failures import Failure
from roundtable_console.screens.list.columns import group_name
from roundtable_console.screens.list.marks import Asked, Marks
from roundtable_console.store.reads.listing import SessionFilter, group_filter

if TYPE_CHECKING:
    from textual.timer import Timer

    from roundtable_console.screens.list.grid import SessionGrid
    from roundtable_console.screens.list.model import ListModel
    from roundtable_console.screens.list.state import ListState
    from roundtable_console.screens.session.actions import SessionActionScreen
    from roundtable_console.store.records import SessionFields
    from roundtable_console.store.window.layout import GroupHeader
    from roundtable_console.store.window.questions import Read

    class ScreenBase(SessionActionScreen):
        """What the marks take from the list screen and its other parts (for the type checker
        only: at run time the mixin's base is ``object``)."""

        model: ListModel

        @property
        def grid(self) -> SessionGrid:
            raise NotImplementedError

        @property
        def state(self) -> ListState:
            raise NotImplementedError

        def selected_header(self) -> GroupHeader | None: ...
        def _show_counts(self) -> None: ...
        def _read_failed(self, read: Read | None, failure: Failure) -> None: ...

else:
    ScreenBase = object

# The keys that mark sessions (for a bulk action): none of them in a read-only console.
MARK_ACTIONS = ("toggle_mark", "clear_marks", "mark_matching")


class ListMarking(ScreenBase):
    """Mixin for the session list, put before ``BulkActions`` among its bases (whose runs call
    ``_marks_changed``): the marks' keys, and their count and questions in workers."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.marks = Marks()
        # A timer that counts the marks again, once the store's changes have settled.
        self.marks_recount: Timer | None = None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in MARK_ACTIONS and self.ctx.read_only:
            return False  # read-only: no marks, so no bulk action either
        if action == "toggle_mark":
            return self.selected_session() is not None
        if action == "mark_matching":
            return self.model.loaded and self.model.row_count > 0
        if action == "clear_marks":
            return bool(self.marks)
        return super().check_action(action, parameters)

    # -- the keys -----------------------------------------------------------------------------

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

    def action_clear_marks(self) -> None:
        if self.marks.clear():
            self.grid.refresh()
            self._marks_changed()
            self.notify("Every mark cleared.", markup=False)

    def _marks_changed(self) -> None:
        """The marks changed: the footer's keys, the header, and what only the store says."""
        self.refresh_bindings()
        self._show_counts()
        self._ask_about_marks()
        self._count_marks()

    # -- what only the store says -------------------------------------------------------------

    def _count_marks(self) -> None:
        """A filter mark is counted by the store (ids marked one by one are counted here)."""
        if not self.marks.needs_count or not self.ctx.source.ready:
            return
        if self.marks_recount is not None:
            self.marks_recount.stop()
            self.marks_recount = None
        self.marks.count_started(time.monotonic())
        revision = self.marks.revision
        self.run_in_thread(
            partial(self.ctx.source.count_marked, self.marks.selection()),
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
        if not self.ctx.source.ready or not self.marks.by_filter:
            return
        held = list(self.model.sessions()) if rows is None else rows
        for filters, asked in self.marks.open_questions(held).items():
            ids = [session_id for session_id, _version in asked]
            self.run_in_thread(
                partial(self.ctx.source.admitted_among, filters, ids),
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
