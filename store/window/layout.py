"""The grouped session list as plain data: group headers among the sessions, folded groups, and
where each row of the whole list is. No Textual and no database (tests/test_list_model.py).

A list grouped by agent (or run, or workspace) is read in that grouping's order, sessions only:
the *stream*. The list shown is the stream with a header row before the first session of each
group. A folded group keeps one session in the stream (``store.reads.groups.fold_condition``), shown
as its header alone. So the shown list is as long as the stream plus one header per unfolded
group, and a header's place follows from the groups' sizes (``Layout``).

The groups and their sizes (``Groups``) come from the store's counts by group; where they are
not known yet (a text filter, counted apart), headers are still placed where the group changes
between two sessions read, and places far from what is held are only estimated.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from roundtable_console.store.reads.listing import SessionFilter, countable_total
from roundtable_console.store.records import SessionFields
from roundtable_console.store.rules import ACTIVE_STATES

GroupKey = str | None
# What the names of the groupings read as in a header.
GROUPING_NAMES: dict[str, str] = {"workspace": "workspace", "run": "run", "agent": "agent"}


@dataclass(frozen=True)
class GroupHeader:
    """The header row of a group. A folded group's header stands for the one session the
    folded list keeps of it (``kept``), which it is in the stream."""

    key: GroupKey
    folded: bool = False
    kept: SessionFields | None = field(default=None, compare=False)

    @property
    def id(self) -> tuple[str, GroupKey]:
        """Never a session's id (those are strings)."""
        return ("group", self.key)


# A row of the shown list.
Item = SessionFields | GroupHeader


def stream_row(item: Item | None) -> SessionFields | None:
    """The stream's session a shown row is: a session, or the one a folded header stands for."""
    if isinstance(item, GroupHeader):
        return item.kept if item.folded else None
    return item


def in_stream(item: Item) -> bool:
    return stream_row(item) is not None


def session_key(grouping: str, session: SessionFields) -> GroupKey:
    """A session's group as Python reads it (the store reads a workspace itself: a read's
    answer carries the keys; this serves rows read without them, and the tests)."""
    if grouping == "agent":
        return session.agent_id
    if grouping == "run":
        return session.run_id
    return session.effective_workspace_id


def interleave(
    rows: Sequence[SessionFields],
    keys: Sequence[GroupKey],
    first_starts: bool,
    folded: frozenset[GroupKey],
) -> list[Item]:
    """The shown rows of consecutive stream ``rows``: a header before each one that starts a
    group (the first when ``first_starts``), a folded group's session as its header alone."""
    items: list[Item] = []
    for index, (session, key) in enumerate(zip(rows, keys, strict=True)):
        starts = first_starts if index == 0 else key != keys[index - 1]
        if key in folded:
            if starts:
                items.append(GroupHeader(key, folded=True, kept=session))
            continue  # a folded group keeps one session: a second one is not shown
        if starts:
            items.append(GroupHeader(key))
        items.append(session)
    return items


@dataclass(frozen=True, eq=False)
class Groups:
    """The groups of a list under its filters, in the list's order, each with its number of
    sessions (only groups with sessions); and the sessions by status of those whose counts were
    read with them (``counts``: every group's when counted over the sessions)."""

    keys: tuple[GroupKey, ...]
    sizes: tuple[int, ...]
    counts: Mapping[GroupKey, Mapping[str, int]] = field(default_factory=dict)

    @classmethod
    def from_sizes(
        cls, rows: Iterable[tuple[GroupKey, int]], *, descending: bool = False
    ) -> Groups:
        """Sizes by group in ascending order (``store.reads.groups.read_group_sizes``)."""
        found = [(key, size) for key, size in rows if size > 0]
        if descending:
            found.reverse()
        return cls(tuple(key for key, _ in found), tuple(size for _, size in found))

    @classmethod
    def from_counts(
        cls,
        rows: Iterable[tuple[GroupKey, Mapping[str, int]]],
        *,
        filters: SessionFilter | None = None,
        descending: bool = False,
    ) -> Groups:
        """Counts by group and status in ascending order (``store.reads.groups``), narrowed to the
        statuses ``filters`` shows (a filter the counts can answer: ``countable``)."""
        keys: list[GroupKey] = []
        counts: dict[GroupKey, Mapping[str, int]] = {}
        for key, by_status in rows:
            shown = {s: n for s, n in by_status.items() if n > 0 and shows(filters, s)}
            if shown:
                keys.append(key)
                counts[key] = shown
        if descending:
            keys.reverse()
        sizes = tuple(sum(counts[key].values()) for key in keys)
        return cls(tuple(keys), sizes, counts)

    @cached_property
    def index(self) -> dict[GroupKey, int]:
        return {key: number for number, key in enumerate(self.keys)}

    def of(self, key: GroupKey) -> Mapping[str, int] | None:
        """A group's sessions by status, when read with the groups."""
        return self.counts.get(key)

    def sessions(self, number: int) -> int:
        return self.sizes[number]


def countable(filters: SessionFilter) -> bool:
    """Whether the counts by group answer for ``filters`` (statuses, ended hidden), as the
    counts by status do; otherwise the groups are counted over the sessions, apart."""
    return countable_total(filters, {}) is not None


def shown_statuses(filters: SessionFilter) -> frozenset[str] | None:
    """The statuses a countable filter shows (None: every one)."""
    if not filters.statuses and not filters.active_only:
        return None
    statuses = set(filters.statuses) if filters.statuses else set(ACTIVE_STATES)
    if filters.active_only:
        statuses &= set(ACTIVE_STATES)
    return frozenset(statuses)


def shows(filters: SessionFilter | None, status: str) -> bool:
    """Whether a countable filter shows sessions of ``status``."""
    if filters is None:
        return True
    if filters.statuses and status not in filters.statuses:
        return False
    return not filters.active_only or status in ACTIVE_STATES


@dataclass(frozen=True)
class Place:
    """What is at a place of the shown list: the header of group ``index`` (``header``), or
    the ``offset``-th (0-based) stream row of it. ``size``: the group's stream rows (1 when
    folded); ``stream``: the stream row's place in the whole stream (for a header, the place of
    the group's first)."""

    index: int
    key: GroupKey
    offset: int
    size: int
    header: bool
    stream: int


class Layout:
    """Where each group and row is in the shown list, from the groups and the folded ones."""

    def __init__(self, groups: Groups, folded: frozenset[GroupKey]) -> None:
        self.groups = groups
        self.folded = folded
        self.starts: list[int] = []  # each group's header's place
        self.stream_starts: list[int] = []
        shown = stream = 0
        self.sizes: list[int] = []
        for number, key in enumerate(groups.keys):
            size = 1 if key in folded else groups.sessions(number)
            self.starts.append(shown)
            self.stream_starts.append(stream)
            self.sizes.append(size)
            shown += size + (0 if key in folded else 1)
            stream += size
        self.length = shown
        self.stream_length = stream

    def place(self, position: int) -> Place | None:
        """What is at ``position`` of the shown list; None past its end."""
        if not 0 <= position < self.length:
            return None
        number = bisect_right(self.starts, position) - 1
        key, start = self.groups.keys[number], self.starts[number]
        size, stream = self.sizes[number], self.stream_starts[number]
        if key in self.folded:
            return Place(number, key, 0, size, True, stream)
        if position == start:
            return Place(number, key, 0, size, True, stream)
        offset = position - start - 1
        return Place(number, key, offset, size, False, stream + offset)
