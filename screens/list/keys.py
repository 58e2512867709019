"""The session list's keys for which list it shows, and its entries in the command palette
(``ListKeys``, a mixin of ``SessionListScreen``).

Filters and sort: ``/`` filters by text (``escape`` closes it, or else cancels a bulk run),
``f`` cycles the status filter, ``a`` shows or hides ended sessions, ``S`` shows only stale ones
(or every one again), ``o`` sorts by the next column (as a click on a column's header sorts by
that one) and ``d`` flips the direction. Each key hands the filter bar (screens.list.filter_bar) a
new ``ListState``; the screen then reads the list it describes.

Groups: ``g`` groups the list by workspace, run, agent, then none. A header row leads each group
with its counts by status; ``enter`` on it folds or unfolds the group, ``*`` on it marks the
group (the filters in force and that group); the lifecycle keys on it say they act on sessions.
``o`` leaves the grouping for the next sort (a group is read in start order only); ``d`` flips
the groups' direction with the sessions'.

``O`` opens the fleet's overview (screens.fleet.overview).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from roundtable_console.screens.list.columns import COLUMN_BY_KEY, group_name
from roundtable_console.store.safety.display import one_line
from roundtable_console.store.window.layout import GROUPING_NAMES

if TYPE_CHECKING:
    from roundtable_console.screens.bulk.run import BulkActions
    from roundtable_console.screens.list.filter_bar import FilterBar
    from roundtable_console.screens.list.marking import ListMarking
    from roundtable_console.screens.session.actions import ScreenCommand

    class ScreenBase(ListMarking, BulkActions):
        """What the keys take from the list screen and its other parts (for the type checker
        only: at run time the mixin's base is ``object``)."""

        @property
        def filters(self) -> FilterBar:
            raise NotImplementedError

        def _toggle_fold(self, index: int) -> None: ...

else:
    ScreenBase = object


class ListKeys(ScreenBase):
    """Mixin for the session list: its filter, sort and group keys, what a session's key says
    on a group's header, and the palette's entries of the list."""

    # -- filters and sort ---------------------------------------------------------------------

    def action_filter_text(self) -> None:
        self.filters.open_text()

    def action_close_filter(self) -> None:
        if self.filters.close_text():
            self.grid.focus()
        else:
            self.bulk_cancel()

    def action_cycle_status(self) -> None:
        self.filters.change(self.state.with_next_status())

    def action_toggle_ended(self) -> None:
        self.filters.change(self.state.with_ended_toggled())
        shown = self.state.show_ended
        self.notify("Ended sessions shown." if shown else "Ended sessions hidden.", markup=False)

    def action_new_session(self) -> None:
        """``N``: a new session on a host (screens.dialogs.new_session)."""
        from roundtable_console.screens.dialogs.new_session import open_new_session

        if not self.ctx.read_only:
            open_new_session(self, self.ctx)

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

    def sort_by_column(self, key: str) -> None:
        """A column's header was clicked: the list sorts by that column, if it sorts by any."""
        column = COLUMN_BY_KEY.get(key)
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

    def action_overview(self) -> None:
        from roundtable_console.screens.fleet.overview import OverviewScreen

        self.app.push_screen(OverviewScreen(self.ctx))

    # -- on a group's header ------------------------------------------------------------------

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

    # -- the command palette ------------------------------------------------------------------

    def screen_commands(self) -> list[ScreenCommand]:
        """The list's entries in the command palette: the marks', a group's, the grouping's and
        the overview's (their help text is fixed: it is read as markup)."""
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
