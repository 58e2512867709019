"""The session list as plain data: which rows are held, where the cursor is, what to read next.

No Textual and no database here, so every rule is tested directly (tests/test_list_model.py).
Positions are 0-based places in the whole list, as the scrollbar shows them. The model holds one
run of consecutive rows (``start`` … ``start + len(rows)``), at most ``max_rows``, around the
view. It asks for:

- the rows at a place (``At``), when the view lands away from what is held (a thumb dragged, End)
  or to read the held run again after the store changed (``refresh``);
- the page just past either end of the run (``After`` / ``Before``, keyset pages from the row at
  that end) while the view comes within a page of it, so a key press finds its rows on hand.

A read carries the model's ``generation`` (the filters and sort it was asked under) and the
``serial`` of the run it extends; an answer to an older question is dropped. The cursor follows
its session by id when a read moves it, and otherwise keeps its place; until the operator first
moves it (``choose``), it keeps its place even so: a console left on the list's top shows the
top, not a session the store's changes carry down the list (a fleet's heartbeats move a session
in the attention order at every beat).

A grouped list (``grouping``: agent, run or workspace) holds header rows among the sessions
(``screens.list_groups``): the store reads sessions only, and the model puts a header before
each session that starts a group, a folded group's one session as its header alone. Places are
places in the list shown, headers included; a page is still read by keyset from the session at
an end of the run, and a place far away is found from the groups' sizes (``groups``), exactly,
or, while they are being counted, estimated from what is held. The cursor may rest on a header.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from roundtable_console.screens.list_groups import (
    GroupHeader,
    GroupKey,
    Groups,
    Item,
    Layout,
    in_stream,
    interleave,
    session_key,
    stream_row,
)
from roundtable_console.store.reads.listing import SessionFilter, SessionOrder
from roundtable_console.store.records import ClaimCount, SessionFields
from roundtable_console.store.validation import MAX_LIMIT

if TYPE_CHECKING:
    from roundtable_console.store.reads.first_window import FirstWindow

ReadKind = Literal["at", "after", "before"]
# A list the status counts cannot measure (a text or stale filter) is counted in SQL: once when
# it is asked for, then after changes at most this often.
RECOUNT_SECONDS = 5.0
# The groups whose counts by status are kept, past which those read lately are.
MAX_COUNTS_KEPT = 4096
# A row's id: a session's, or a group header's (``GroupHeader.id``).
RowId = str | tuple[str, GroupKey]


@dataclass(frozen=True)
class Read:
    """One read the model wants. ``at``: ``limit`` rows from position ``offset``; ``after`` /
    ``before``: ``limit`` rows just past ``edge`` (the row at ``offset``) in that direction."""

    kind: ReadKind
    offset: int
    limit: int
    generation: int
    serial: int
    edge: SessionFields | None = None
    refresh: bool = False
    # A page read ahead of need (the view has its rows): it may wait for the next frame.
    ahead: bool = False
    # A grouped list's ``at``: the stream place (sessions only) of the first session to read,
    # and whether the place asked for is that session's group's header, as the model holds
    # them (the worker places them itself from the groups when it has them).
    stream: int = 0
    header_first: bool = False

    @property
    def slot(self) -> str:
        """One read of each slot is in flight at a time: a newer one replaces the older (whose
        answer is then dropped)."""
        return "view" if self.kind == "at" else self.kind


@dataclass(frozen=True)
class GroupedRows:
    """What a read of a grouped list says beside its rows: each row's group as the store reads
    it; whether the first row starts its group (the session before it is in another, or there
    is none); for a page before a row, whether that row (``edge``) starts its group; for a read
    at a place, where the worker placed it (from the groups); the groups, when read with the
    rows."""

    keys: tuple[GroupKey, ...]
    first_starts: bool
    edge_key: GroupKey = None
    edge_starts: bool = False
    header_first: bool | None = None
    stream: int | None = None
    groups: Groups | None = None
    # The sessions by status of the groups these rows are in (their headers' counts).
    counts: Mapping[GroupKey, Mapping[str, int]] | None = None


@dataclass(frozen=True)
class ReadResult:
    """What a read found, from one snapshot: the rows, the list's length when known, the claim
    counts of those rows' agents and the counts by status (None when not read)."""

    read: Read
    rows: list[SessionFields]
    total: int | None
    claims: dict[str, ClaimCount] = field(default_factory=dict)
    counts: dict[str, int] | None = None
    token: object | None = None
    # How many sessions need a human (store.reads.listing.ATTENTION_CAP at most), when read.
    attention: int | None = None
    # In the attention order: when the clock next moves a session (one goes stale), when read.
    moves_at: datetime | None = None
    grouped: GroupedRows | None = None


@dataclass(frozen=True)
class RowsAsked:
    """A read as a worker makes it: the model's ``read`` of the list the filters and the order
    give, at ``now``. ``known_total``: the list's length when counted apart. With
    ``unless_token``, a store still at that change token is not read: only the claims of the
    agents in ``live_claims``, which may have expired by the clock alone."""

    read: Read
    filters: SessionFilter
    order: SessionOrder
    now: datetime
    known_total: int | None = None
    unless_token: object | None = None
    live_claims: tuple[str, ...] = ()
    # A grouped list: its grouping, the groups folded, and the groups as the model has them
    # (counted apart, for a filter the counts by group cannot answer).
    grouping: str | None = None
    folded: frozenset[GroupKey] = frozenset()
    groups: Groups | None = None


@dataclass(frozen=True)
class ClockMoved:
    """The answer to a refresh when the store has not changed since the held rows were read: the
    clock alone moved, and the claims that may have expired by it, read again."""

    read: Read
    claims: dict[str, ClaimCount]


class ListModel:
    def __init__(self, *, page_size: int = 50, max_rows: int = 400) -> None:
        self.page_size = page_size
        self.max_rows = max(max_rows, 2 * page_size)
        self.generation = 0
        self.serial = 0
        self.start = 0
        # The rows shown: sessions, and in a grouped list their groups' headers.
        self.rows: list[Item] = []
        self.total: int | None = None
        # With the length unknown: whether rows lie past the held run.
        self.more_after = False
        self.loaded = False
        self.cursor = 0
        # The id of the row under the cursor: a session's, or a group header's.
        self.selected_id: RowId | None = None
        # The operator has moved the cursor: from then on it follows its session.
        self.chosen = False
        self.view_first = 0
        self.view_height = 1
        self.claims: dict[str, ClaimCount] = {}
        # The store's change token of the last read of the whole held run.
        self.token: object | None = None
        self.in_flight: dict[str, Read] = {}
        self.counted_at: float | None = None
        # A count is on its way; the list was due another meanwhile.
        self.counting = False
        self.recount = False
        # After other filters or another order: the session the cursor goes back to if the
        # first rows read hold it.
        self.follow_id: RowId | None = None
        # The store changed while the view's rows were being read: read again once they are.
        self.dirty = False
        # A grouped list: the grouping, the groups folded (by grouping: kept through other
        # filters and groupings), the groups with their sizes when known, and the stream place
        # of the first session held.
        self.grouping: str | None = None
        self.folds: dict[str, frozenset[GroupKey]] = {}
        self.groups: Groups | None = None
        self.stream_start = 0
        self.laid_out: Layout | None = None
        # The groups' counts by status as last read (their headers show them).
        self.header_counts: dict[GroupKey, Mapping[str, int]] = {}

    # -- what is held -------------------------------------------------------------------------

    @property
    def end(self) -> int:
        return self.start + len(self.rows)

    @property
    def row_count(self) -> int:
        """The rows the view scrolls over: the whole list when its length is known."""
        if self.total is not None:
            return self.total
        return self.end + (self.page_size if self.more_after else 0)

    def row(self, index: int) -> Item | None:
        if self.start <= index < self.end:
            return self.rows[index - self.start]
        return None

    def session(self, index: int) -> SessionFields | None:
        """The session shown at ``index`` (None for a header, or a row not held)."""
        item = self.row(index)
        return None if isinstance(item, GroupHeader) else item

    def sessions(self) -> Iterator[SessionFields]:
        """The sessions shown, in order (not the headers)."""
        return (item for item in self.rows if not isinstance(item, GroupHeader))

    def index_of(self, row_id: RowId | None) -> int | None:
        """Where the row of that id is held: a session's id, or a header's."""
        for offset, item in enumerate(self.rows):
            if item.id == row_id:
                return self.start + offset
        return None

    def counts_of(self, key: GroupKey) -> Mapping[str, int] | None:
        """A group's sessions by status, as last read (None while they are being read)."""
        found = self.header_counts.get(key)
        if found is None and self.groups is not None:
            found = self.groups.of(key)
        return found

    def _keep_counts(self, counts: Mapping[GroupKey, Mapping[str, int]]) -> None:
        if len(self.header_counts) + len(counts) > MAX_COUNTS_KEPT:
            self.header_counts = {}  # groups long scrolled past
        self.header_counts.update(counts)

    @property
    def folded(self) -> frozenset[GroupKey]:
        """The groups folded in the grouping shown."""
        return self.folds.get(self.grouping or "", frozenset())

    def layout(self) -> Layout | None:
        """Where each group is in the whole list, when the groups are known."""
        if self.grouping is None or self.groups is None:
            return None
        laid = self.laid_out
        if laid is None or laid.groups is not self.groups or laid.folded != self.folded:
            laid = self.laid_out = Layout(self.groups, self.folded)
        return laid

    def updated(self, session: SessionFields) -> bool:
        """A held session as an action just left it (before the next read); False when the
        session is not held."""
        index = self.index_of(session.id)
        if index is not None:
            self.rows[index - self.start] = session
        return index is not None

    def selected(self) -> Item | None:
        """The row under the cursor (a session, or a group's header), once it is held."""
        return self.row(self.cursor)

    # -- what the operator does ---------------------------------------------------------------

    def reset(self) -> None:
        """Other filters or another order: a new list, read from its top. The cursor goes back
        to its session if the first rows read hold it."""
        self.generation += 1
        self.serial += 1
        # Changed again before the last change was read: the same session is still followed.
        self.follow_id = self.selected_id or self.follow_id
        self.start, self.rows, self.total, self.more_after = 0, [], None, False
        self.loaded = False
        self.cursor, self.view_first = 0, 0
        self.token = None
        self.in_flight.clear()
        self.counted_at = None
        self.counting = self.recount = False
        self.dirty = False
        self.claims = {}
        self.groups = None
        self.stream_start = 0
        self.header_counts = {}

    def move_cursor(self, index: int) -> None:
        """The cursor on ``index``; the row it selects is the one held there (none while that
        row is being read: the cursor then keeps its place, not an older row)."""
        self.cursor = max(0, min(index, max(self.row_count - 1, 0)))
        item = self.row(self.cursor)
        self.selected_id = item.id if item is not None else None

    def choose(self, index: int) -> None:
        """The operator moved the cursor to ``index``: the session there is theirs to follow."""
        self.chosen = True
        self.move_cursor(index)

    def toggle_fold(self, index: int) -> GroupHeader | None:
        """Fold the group whose header is at ``index``, or unfold it; its header as it is now
        (None when no header is there). What comes before the header stays; what follows it
        is read again (a folded group keeps one session, shown as its header)."""
        item = self.row(index)
        if self.grouping is None or not isinstance(item, GroupHeader):
            return None
        folded = set(self.folded)
        if item.folded:
            folded.discard(item.key)
        else:
            folded.add(item.key)
        self.folds[self.grouping] = frozenset(folded)
        header = GroupHeader(item.key, folded=not item.folded)
        # Another list from the header on: reads asked before are answers to another question.
        self.generation += 1
        self.serial += 1
        self.in_flight.clear()
        self.token = None
        self.dirty = False
        self.rows = [*self.rows[: index - self.start], header]
        layout = self.layout()
        self.total = layout.length if layout is not None else None
        self.counting = self.recount = False  # a count on its way counts another list
        if self.total is None:
            self.more_after = True
            self.counted_at = None  # the groups are counted again
        self.move_cursor(index)
        return header

    def move_view(self, first: int, height: int) -> None:
        self.view_first, self.view_height = max(first, 0), max(height, 1)

    # -- what to read -------------------------------------------------------------------------

    def next_reads(self) -> list[Read]:
        """The reads to start now (none that is already in flight): the view's missing rows
        first, then the pages just past either end of the held run."""
        reads: list[Read] = []
        first, last = self.view_first, self.view_first + self.view_height
        if self.loaded:
            last = min(last, self.row_count)
        if not self.loaded or not (self.start <= first and last <= self.end):
            reads.append(self._view_read(first, last))
        else:
            margin = self.page_size
            if self.end < self.row_count and last + margin > self.end:
                reads.append(self._page(after=True, ahead=True) or self._view_read(first, last))
            if self.start > 0 and first - margin < self.start:
                reads.append(self._page(after=False, ahead=True) or self._view_read(first, last))
        return [read for read in reads if self._wanted(read)]

    def refresh_read(self) -> Read:
        """The rows around the view read again (the store changed), at their place: a page
        either side of the view, as many as a read takes."""
        offset, limit = self._around(self.view_first, self.view_first + self.view_height)
        return self._at(offset, limit, refresh=True)

    def _at(self, offset: int, limit: int, *, refresh: bool = False) -> Read:
        stream, header_first = self._believed(offset)
        return Read(
            "at",
            offset,
            limit,
            self.generation,
            self.serial,
            refresh=refresh,
            stream=stream,
            header_first=header_first,
        )

    def _believed(self, position: int) -> tuple[int, bool]:
        """For a grouped list: the stream place of the first session at or after ``position``,
        and whether ``position`` is its group's header. Exact when the groups are known; else
        from the run held (exact for a run read down from the top), and estimated beyond it."""
        if self.grouping is None:
            return position, False
        layout = self.layout()
        if layout is not None:
            place = layout.place(position)
            if place is not None:
                return place.stream, place.header
            return layout.stream_length + position - layout.length, False
        if position == 0:
            return 0, True  # a grouped list starts with its first group's header
        if self.start <= position < self.end:
            before = sum(in_stream(item) for item in self.rows[: position - self.start])
            header = isinstance(self.rows[position - self.start], GroupHeader)
            return self.stream_start + before, header
        if position >= self.end:
            held = sum(in_stream(item) for item in self.rows)
            return self.stream_start + held + position - self.end, False
        return max(0, self.stream_start - (self.start - position)), False

    def started(self, read: Read) -> None:
        self.in_flight[read.slot] = read

    def failed(self, read: Read) -> None:
        """``read`` is over without rows (it failed, or nothing needed reading)."""
        if self.in_flight.get(read.slot) == read:
            del self.in_flight[read.slot]

    def _wanted(self, read: Read | None) -> bool:
        """One read of each kind at a time. A view that moves on while its rows are read (a
        thumb dragged) is read once that read is back, where the view is by then: never once
        for every place it passed."""
        if read is None:
            return False
        held = self.in_flight.get(read.slot)
        if held is None:
            return True
        return read.kind != "at" and (held.edge != read.edge or held.serial != read.serial)

    def _view_read(self, first: int, last: int) -> Read:
        """The rows the view lacks: the page next to the held run when the view reaches just
        past it, else the rows around the view, a page either side of it."""
        if self.loaded and self.rows:
            page = None
            if self.start <= first < self.end or self.end <= first < self.end + self.page_size:
                if last - self.end <= MAX_LIMIT:  # the view's top is held, or just below
                    page = self._page(after=True, upto=last)
            elif self.start - self.page_size < last <= self.end and first < self.start:
                if self.start - first <= MAX_LIMIT:  # the view's bottom is held, or just above
                    page = self._page(after=False, upto=first)
            if page is not None:
                return page
        offset, limit = self._around(first, last)
        if self.total is not None and limit > last - first:
            offset = max(0, min(offset, self.total - limit))
        return self._at(offset, limit)

    def _around(self, first: int, last: int) -> tuple[int, int]:
        """The offset and limit of a read of the view ``first`` … ``last - 1`` and a page
        either side of it, as many as a read takes: never past the view's first row (a view
        taller than a read is read from its top)."""
        height = max(last - first, 1)
        limit = min(height + 2 * self.page_size, MAX_LIMIT)
        return max(0, first - max(limit - height, 0) // 2), limit

    def _page(self, *, after: bool, upto: int | None = None, ahead: bool = False) -> Read | None:
        """A keyset page from the session at that end of the held run (a header is no place in
        the store: the page is read from the session nearest the end): ``page_size`` rows, or
        as many as reach position ``upto``. None when the run holds no session."""
        found = self._stream_edge(after=after)
        if found is None:
            return None
        position, edge = found
        size = self.page_size
        if upto is not None:
            size = max(size, upto - self.end if after else self.start - upto)
        kind: ReadKind = "after" if after else "before"
        return Read(
            kind,
            position,
            min(size, MAX_LIMIT),
            self.generation,
            self.serial,
            edge=edge,
            ahead=ahead,
        )

    def _stream_edge(self, *, after: bool) -> tuple[int, SessionFields] | None:
        """The place and the session of the stream row nearest that end of the held run."""
        places = range(len(self.rows) - 1, -1, -1) if after else range(len(self.rows))
        for offset in places:
            session = stream_row(self.rows[offset])
            if session is not None:
                return self.start + offset, session
        return None

    # -- what was read ------------------------------------------------------------------------

    def apply(self, result: ReadResult) -> bool:
        """Take a read's rows in; False when the read was for another list, another run, or a
        run that has moved since the read was asked for (it changes nothing)."""
        read = result.read
        if self.in_flight.get(read.slot) == read:
            del self.in_flight[read.slot]
        if read.generation != self.generation:
            return False
        if read.kind != "at" and not self._edge_still_held(read):
            return False
        rows = result.rows
        total = result.total
        grouped = result.grouped
        counted = total is not None
        if self.grouping is not None and grouped is not None and grouped.groups is not None:
            self.groups = grouped.groups
            total = self.layout().length  # type: ignore[union-attr]
            counted = True
        if self.grouping is not None and grouped is not None and grouped.counts:
            self._keep_counts(grouped.counts)
        items, start = self._placed(read, rows, grouped)
        missing = not rows and (read.kind != "at" or read.offset > 0)
        if missing:
            total = self._nothing_there(read, total)
            if read.kind == "before" and items:
                start = 0  # the header of the list's first group
        if total is not None:
            self.total = total
        old_start = self.start
        replaced = False
        if not missing or (read.kind == "before" and items):
            replaced = self._place(start, items, replace=read.refresh)
        self._follow_stream(read, items, grouped, replaced or start < old_start)
        if read.kind == "at":
            self.serial += 1  # reads extending the run held before are answers to another run
        # The change token the whole held run was read at; None when its parts were read at
        # different ones (the next refresh then reads it whole).
        self.token = result.token if replaced or result.token == self.token else None
        if not counted:
            self._learn_the_end(read, start, len(rows), len(items))
        self._keep_claims(rows, result.claims)
        self.loaded = True
        self._trim()
        self._follow_selection()
        return True

    def _placed(
        self, read: Read, rows: list[SessionFields], grouped: GroupedRows | None
    ) -> tuple[list[Item], int]:
        """The rows a read found as shown (headers among them in a grouped list), and the
        place of the first."""
        if self.grouping is None:
            if read.kind == "at":
                return list(rows), read.offset
            return list(rows), read.offset + 1 if read.kind == "after" else read.offset - len(rows)
        if grouped is not None:
            keys = list(grouped.keys)
        else:  # rows read without their keys (the quick first read): Python reads them
            keys = [session_key(self.grouping, session) for session in rows]
        edge_key = None
        if read.edge is not None:
            edge_key = (
                grouped.edge_key if grouped is not None else session_key(self.grouping, read.edge)
            )
        if read.kind == "at":
            first_starts = grouped.first_starts if grouped is not None else read.header_first
            items = interleave(rows, keys, first_starts, self.folded)
            header_first = read.header_first
            if grouped is not None and grouped.header_first is not None:
                header_first = grouped.header_first
            unfolded_header = bool(items) and isinstance(items[0], GroupHeader)
            unfolded_header = unfolded_header and not items[0].folded  # type: ignore[union-attr]
            start = read.offset
            if unfolded_header and not header_first:
                start -= 1  # the place asked for is the session: its header goes before it
                if start < 0:
                    items, start = items[1:], 0
            return items, start
        if read.kind == "after":
            first_starts = grouped.first_starts if grouped is not None else bool(keys)
            if grouped is None and keys:
                first_starts = keys[0] != edge_key
            return interleave(rows, keys, first_starts, self.folded), read.offset + 1
        first_starts = grouped.first_starts if grouped is not None else True
        items = interleave(rows, keys, first_starts, self.folded)
        edge_starts = not keys or keys[-1] != edge_key
        if grouped is not None:
            edge_starts = grouped.edge_starts
        if edge_starts and not isinstance(self.row(read.offset), GroupHeader):
            items.append(GroupHeader(edge_key))  # the header of the edge's group
        return items, read.offset - len(items)

    def _follow_stream(
        self, read: Read, items: list[Item], grouped: GroupedRows | None, new_start: bool
    ) -> None:
        """The stream place of the first session held, as the read leaves it."""
        if self.grouping is None:
            self.stream_start = self.start
            return
        if read.kind == "at" and new_start:
            first = read.stream
            if grouped is not None and grouped.stream is not None:
                first = grouped.stream
            self.stream_start = first
        elif read.kind == "before":
            self.stream_start = max(0, self.stream_start - sum(map(in_stream, items)))

    def _edge_still_held(self, read: Read) -> bool:
        """A page read from a session at one end of the held run joins it only if that session
        is still there (the run may have moved or been let go meanwhile)."""
        found, edge = self._stream_edge(after=read.kind == "after"), read.edge
        if found is None or edge is None:
            return False
        position, held = found
        return position == read.offset and held.id == edge.id

    def _nothing_there(self, read: Read, total: int | None) -> int | None:
        """No rows where rows were expected: the list changed since its length was learnt. An
        empty page after the held run ends the list there; an empty read at a place ends it
        before that place; an empty page before the run means the run starts the list (in a
        grouped list, after its first group's header). The length is counted again."""
        self.counted_at = None
        if read.kind == "after":
            return self.end
        if read.kind == "at":
            return read.offset if total is None or total > read.offset else total
        # "before": the held run's first session is the list's first.
        first = 0
        if self.grouping is not None and not isinstance(self.row(read.offset), GroupHeader):
            first = 1  # its group's header goes before it
        shift = read.offset - first
        if shift:
            self.total = None if self.total is None else self.total - shift
            self.start -= shift
        self.stream_start = 0
        return total

    def _keep_claims(self, rows: list[SessionFields], claims: dict[str, ClaimCount]) -> None:
        """The claim counts of the agents of the rows read, as read (an agent absent from
        ``claims`` holds none); only the agents of held rows are kept."""
        for agent in {session.agent_id for session in rows}:
            if agent in claims:
                self.claims[agent] = claims[agent]
            else:
                self.claims.pop(agent, None)
        held = {session.agent_id for session in self.sessions()}
        if len(self.claims) > len(held):
            self.claims = {agent: count for agent, count in self.claims.items() if agent in held}

    def count_due(self, now: float, after_change: bool) -> bool:
        """Whether to count the list in SQL now (``now``: a monotonic clock): at once for a new
        list, after a change not within ``RECOUNT_SECONDS`` of the last count; never while a
        count is on its way (a count that outlasts the changes would otherwise be replaced by
        the next one forever, and none would come back): it is counted again once that is
        back (``count_over``)."""
        due = self.counted_at is None or (after_change and now - self.counted_at >= RECOUNT_SECONDS)
        if due and self.counting:
            self.recount = True
            return False
        if due:
            self.counted_at = now
            self.counting = True
        return due

    def count_over(self, generation: int) -> bool:
        """The count of ``generation`` is back, or failed: whether to count again (the list was
        due a count meanwhile)."""
        if generation != self.generation:
            return False
        again, self.recount = self.recount, False
        self.counting = again  # the caller counts again at once
        return again

    def apply_total(self, generation: int, total: int) -> bool:
        """The list's length, counted apart (a filter the status counts cannot answer)."""
        if generation != self.generation:
            return False
        self.total = total
        self._trim()
        self.move_cursor(self.cursor)
        return True

    def apply_groups(self, generation: int, groups: Groups) -> bool:
        """A grouped list's groups, counted apart (a filter the counts by group cannot
        answer): its length, and from now on the places of its groups."""
        if generation != self.generation or self.grouping is None:
            return False
        self.groups = groups
        self.header_counts = {}  # the groups' own counts are the newer
        return self.apply_total(generation, self.layout().length)  # type: ignore[union-attr]

    def _place(self, start: int, rows: list[Item], *, replace: bool) -> bool:
        """Put ``rows`` at their place, joined to the held run when they touch it; True when
        they replaced it."""
        joins = self.rows and start <= self.end and start + len(rows) >= self.start
        if replace or not joins:
            self.start, self.rows = start, list(rows)
            return True
        # One session appears once: a row the list moved past a page seam is kept where the
        # newer read put it.
        fresh = {session.id for session in rows}
        cut_before, cut_after = max(start - self.start, 0), max(start + len(rows) - self.start, 0)
        before = [s for s in self.rows[:cut_before] if s.id not in fresh]
        after = [s for s in self.rows[cut_after:] if s.id not in fresh]
        self.start = start - len(before)
        self.rows = [*before, *rows, *after]
        return False

    def _learn_the_end(self, read: Read, start: int, found: int, shown: int) -> None:
        """With the length unknown (a count still on its way), a short page read forwards is
        the list's end; a full one says more may follow. ``found``: the sessions read;
        ``shown``: the rows they make (headers too)."""
        if read.kind == "before":
            return
        if found < read.limit:
            self.more_after = False
            if found or read.kind == "after" or read.offset == 0:
                self.total = start + shown
        else:
            self.more_after = True

    def _trim(self) -> None:
        """At most ``max_rows`` held, centred on the view where the run allows; none past the
        list's end."""
        if self.total is not None and self.end > self.total:
            self.rows = self.rows[: max(self.total - self.start, 0)]
        # Never fewer than the view and a page either side of it, which the reads ahead fetch.
        bound = max(self.max_rows, self.view_height + 2 * self.page_size)
        if len(self.rows) <= bound:
            return
        middle = self.view_first + self.view_height // 2
        start = min(max(middle - bound // 2, self.start), self.end - bound)
        cut = start - self.start
        self.stream_start += sum(in_stream(item) for item in self.rows[:cut])
        self.rows = self.rows[cut : cut + bound]
        self.start = start

    def _follow_selection(self) -> None:
        """The cursor stays on its session when a read moved it (rows written above it), once
        the operator has chosen it, and goes back to it once after other filters or another
        order; else it keeps its place."""
        target = (self.selected_id if self.chosen else None) or self.follow_id
        self.follow_id = None
        found = self.index_of(target)
        self.move_cursor(found if found is not None else self.cursor)


def first_result(
    read: Read, first: FirstWindow | None, grouping: str | None = None
) -> ReadResult | None:
    """The quick first read's page (``store.reads.first_window``) as the answer to ``read``: the
    list's top (in a grouped list, its first group's header first)."""
    if first is None:
        return None
    rows: list[SessionFields] = list(first.sessions)
    total = None if first.has_more or grouping is not None else len(rows)
    grouped = None
    if grouping is not None:
        keys = tuple(session_key(grouping, session) for session in rows)
        grouped = GroupedRows(keys, first_starts=True, header_first=True, stream=0)
    return ReadResult(read, rows, total, dict(first.claims), grouped=grouped)
