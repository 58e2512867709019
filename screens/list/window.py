"""The run of rows the session list holds around its view, and what to read next: plain data, no
Textual and no database (``ListWindow``, the base of screens.list.model's ``ListModel``;
tests/test_list_model.py).

Positions are 0-based places in the whole list, as the scrollbar shows them. The window holds
one run of consecutive rows (``start`` … ``start + len(rows)``), at most ``max_rows``, around the
view. It asks for:

- the rows at a place (``At``), when the view lands away from what is held (a thumb dragged, End)
  or to read the held run again after the store changed (``refresh``);
- the page just past either end of the run (``After`` / ``Before``, keyset pages from the row at
  that end) while the view comes within a page of it, so a key press finds its rows on hand.

One read of each slot is in flight at a time (``in_flight``). In a grouped list, places are
places in the list shown, headers included (store.window.layout); a page is still read by keyset
from the session at an end of the run, and a place far away is found in the stream from the
groups' sizes (``groups``), exactly, or, while they are being counted, estimated from what is
held.
"""

from __future__ import annotations

from collections.abc import Iterator

from roundtable_console.store.records import SessionFields
from roundtable_console.store.validation import MAX_LIMIT
from roundtable_console.store.window.layout import (
    GroupHeader,
    GroupKey,
    Groups,
    Item,
    Layout,
    in_stream,
    stream_row,
)
from roundtable_console.store.window.questions import Read, ReadKind

# A row's id: a session's, or a group header's (``GroupHeader.id``).
RowId = str | tuple[str, GroupKey]


class ListWindow:
    """The rows held and the view over them; the reads that fill the view and the pages either
    side of it."""

    def __init__(self, *, page_size: int = 50, max_rows: int = 400) -> None:
        self.page_size = page_size
        self.max_rows = max(max_rows, 2 * page_size)
        # The list the reads are for (the filters and sort), and the run they extend.
        self.generation = 0
        self.serial = 0
        self.start = 0
        # The rows shown: sessions, and in a grouped list their groups' headers.
        self.rows: list[Item] = []
        self.total: int | None = None
        # With the length unknown: whether rows lie past the held run.
        self.more_after = False
        self.loaded = False
        self.view_first = 0
        self.view_height = 1
        self.in_flight: dict[str, Read] = {}
        # A grouped list: the grouping, the groups folded (by grouping: kept through other
        # filters and groupings), the groups with their sizes when known, and the stream place
        # of the first session held.
        self.grouping: str | None = None
        self.folds: dict[str, frozenset[GroupKey]] = {}
        self.groups: Groups | None = None
        self.stream_start = 0
        self.laid_out: Layout | None = None

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

    # -- the run held -------------------------------------------------------------------------

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
