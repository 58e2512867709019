"""What the operator asked the session list to show, and in which order."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from rich.text import Text

from roundtable_console.screens.list.columns import TERMINAL_STATUSES, sort_arrow
from roundtable_console.store.reads.listing import SORT_COLUMNS, SessionFilter, SessionOrder
from roundtable_console.store.rules import ACTIVE_STATES, GROUP_COLUMNS
from roundtable_console.store.safety.display import one_line
from roundtable_console.store.window.layout import GROUPING_NAMES

SORT_NAMES: dict[str, str] = {
    "attention": "attention",
    "started": "started",
    "last_seen": "last seen",
    "status": "status",
    "agent": "agent",
}


@dataclass(frozen=True)
class ListState:
    """What the operator asked to see, and in which order. Grouped (``group``: workspace, run
    or agent), the list is read in the grouping's order, the group then start (the indexes hold
    no other order within a group): ``order`` keeps the sort to go back to, and its direction
    is the groups' too (``d`` flips both). ``o`` (another sort) leaves the grouping."""

    text: str = ""
    status: str | None = None
    show_ended: bool = True
    stale_only: bool = False
    order: SessionOrder = field(default_factory=lambda: SessionOrder("attention"))
    group: str | None = None
    # Only the sessions of this machine (chosen on the hosts screen, H).
    host: str | None = None

    @property
    def shown_order(self) -> SessionOrder:
        """The sort the column headers show: grouped, the sessions' start within a group."""
        if self.group is None:
            return self.order
        return SessionOrder("started", self.order.descending)

    @property
    def read_order(self) -> SessionOrder:
        """The order the list is read in: the sort, or the grouping's order."""
        if self.group is None:
            return self.order
        return SessionOrder(self.group, self.order.descending)

    def status_cycle(self) -> tuple[str | None, ...]:
        states: tuple[str | None, ...] = (None, *ACTIVE_STATES)
        return states + TERMINAL_STATUSES if self.show_ended else states

    def next_status(self) -> str | None:
        cycle = self.status_cycle()
        index = cycle.index(self.status) if self.status in cycle else 0
        return cycle[(index + 1) % len(cycle)]

    def next_sort(self) -> SessionOrder:
        index = SORT_COLUMNS.index(self.order.column)
        return SessionOrder(SORT_COLUMNS[(index + 1) % len(SORT_COLUMNS)], self.order.descending)

    def with_next_status(self) -> ListState:
        return replace(self, status=self.next_status())

    def with_ended_toggled(self) -> ListState:
        """Ended sessions shown or hidden; hiding them drops a status filter on an ended one."""
        show = not self.show_ended
        status = self.status if show or self.status in ACTIVE_STATES else None
        return replace(self, show_ended=show, status=status)

    def with_stale_toggled(self) -> ListState:
        return replace(self, stale_only=not self.stale_only)

    def with_next_sort(self) -> ListState:
        """The next sort, ungrouped (a group is read in start order only)."""
        return replace(self, order=self.next_sort(), group=None)

    def with_sort_flipped(self) -> ListState:
        return replace(self, order=self.order.flipped())

    def with_next_group(self) -> ListState:
        """Grouped by the next of none, workspace, run, agent."""
        cycle: tuple[str | None, ...] = (None, *GROUP_COLUMNS)
        index = cycle.index(self.group) if self.group in cycle else 0
        return replace(self, group=cycle[(index + 1) % len(cycle)])

    def sorted_by(self, column: str) -> ListState:
        """Sorted by ``column``, ascending, ungrouped; the direction flips when it is the sort
        already (grouped: start, the order within a group)."""
        if self.shown_order.column == column:
            return self.with_sort_flipped()
        return replace(self, order=SessionOrder(column), group=None)

    def to_filter(self, now: datetime, stale_after: timedelta) -> SessionFilter:
        return SessionFilter(
            statuses=(self.status,) if self.status else (),
            active_only=not self.show_ended,
            stale_before=now - stale_after if self.stale_only else None,
            text=self.text.strip() or None,
            host=self.host,
        )

    def empty_text(self, *, store_open: bool) -> Text:
        """What an empty list says: why it is empty, and what to do about it."""
        if not store_open:
            return Text("Opening the store…", style="italic")
        if replace(self, order=ListState().order, group=None) == ListState():
            return Text(
                "No sessions yet. Agents register with `roundtable sessions register`; "
                "`roundtable tui --demo` opens a populated demo store."
            )
        text = Text("No sessions match: ")
        text.append_text(self.describe())
        text.append("\n/ text · f status · a ended · S stale", style="dim")
        return text

    def describe(self) -> Text:
        """The filters and the sort in force, each with the key that changes it."""
        text = Text()
        text.append(f"status {self.status}" if self.status else "any status", style="bold")
        text.append(" (f) · ")
        text.append("ended shown" if self.show_ended else "ended hidden", style="bold")
        text.append(" (a) · ")
        if self.stale_only:
            text.append("stale only", style="bold dark_orange")
        else:
            text.append("stale too", style="bold")
        text.append(" (S) · ")
        if self.host is not None:
            text.append("host ")
            text.append(one_line(self.host, 40), style="bold")
            text.append(" (H) · ")
        if self.text.strip():
            text.append("text ")
            text.append(repr(one_line(self.text.strip(), 40)), style="bold")
            text.append(" (/)")
        else:
            text.append("any text (/)")
        if self.group is not None:
            text.append(" · grouped by ")
            text.append(f"{GROUPING_NAMES[self.group]} {sort_arrow(self.order)}", style="bold")
            text.append(" (g d)")
            return text
        text.append(" · sorted by ")
        text.append(f"{SORT_NAMES[self.order.column]} {sort_arrow(self.order)}", style="bold")
        text.append(" (o d)")
        return text
