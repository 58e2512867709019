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
its session by id when a read moves it, and otherwise keeps its place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from store.listing import SessionFilter, SessionOrder
from store.records import ClaimCount, SessionFields
from store.validation import MAX_LIMIT

if TYPE_CHECKING:
    from store.first_window import FirstWindow

ReadKind = Literal["at", "after", "before"]
# A list the status counts cannot measure (a text or stale filter) is counted in SQL: once when
# it is asked for, then after changes at most this often.
RECOUNT_SECONDS = 5.0


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

    @property
    def slot(self) -> str:
        """One read of each slot is in flight at a time: a newer one replaces the older (whose
        answer is then dropped)."""
        return "view" if self.kind == "at" else self.kind


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
    # How many sessions need a human (store.sessions.ATTENTION_CAP at most), when read.
    attention: int | None = None


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
        self.rows: list[SessionFields] = []
        self.total: int | None = None
        # With the length unknown: whether rows lie past the held run.
        self.more_after = False
        self.loaded = False
        self.cursor = 0
        self.selected_id: str | None = None
        self.view_first = 0
        self.view_height = 1
        self.claims: dict[str, ClaimCount] = {}
        # The store's change token of the last read of the whole held run.
        self.token: object | None = None
        self.in_flight: dict[str, Read] = {}
        self.counted_at: float | None = None
        # After other filters or another order: the session the cursor goes back to if the
        # first rows read hold it.
        self.follow_id: str | None = None
        # The store changed while the view's rows were being read: read again once they are.
        self.dirty = False

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

    def row(self, index: int) -> SessionFields | None:
        if self.start <= index < self.end:
            return self.rows[index - self.start]
        return None

    def index_of(self, session_id: str | None) -> int | None:
        for offset, session in enumerate(self.rows):
            if session.id == session_id:
                return self.start + offset
        return None

    def updated(self, session: SessionFields) -> bool:
        """A held session as an action just left it (before the next read); False when the
        session is not held."""
        index = self.index_of(session.id)
        if index is not None:
            self.rows[index - self.start] = session
        return index is not None

    def selected(self) -> SessionFields | None:
        """The session under the cursor, once its row is held."""
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
        self.dirty = False
        self.claims = {}

    def move_cursor(self, index: int) -> None:
        """The cursor on ``index``; the session it selects is the one held there (none while
        that row is being read: the cursor then keeps its place, not an older session)."""
        self.cursor = max(0, min(index, max(self.row_count - 1, 0)))
        session = self.row(self.cursor)
        self.selected_id = session.id if session is not None else None

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
                reads.append(self._page(after=True, ahead=True))
            if self.start > 0 and first - margin < self.start:
                reads.append(self._page(after=False, ahead=True))
        return [read for read in reads if self._wanted(read)]

    def refresh_read(self) -> Read:
        """The rows around the view read again (the store changed), at their place: a page
        either side of the view, as many as a read takes."""
        offset, limit = self._around(self.view_first, self.view_first + self.view_height)
        return Read("at", offset, limit, self.generation, self.serial, refresh=True)

    def started(self, read: Read) -> None:
        self.in_flight[read.slot] = read

    def failed(self, read: Read) -> None:
        """``read`` is over without rows (it failed, or nothing needed reading)."""
        if self.in_flight.get(read.slot) == read:
            del self.in_flight[read.slot]

    def _wanted(self, read: Read) -> bool:
        """One read of each kind at a time. A view that moves on while its rows are read (a
        thumb dragged) is read once that read is back, where the view is by then: never once
        for every place it passed."""
        held = self.in_flight.get(read.slot)
        if held is None:
            return True
        return read.kind != "at" and (held.edge != read.edge or held.serial != read.serial)

    def _view_read(self, first: int, last: int) -> Read:
        """The rows the view lacks: the page next to the held run when the view reaches just
        past it, else the rows around the view, a page either side of it."""
        if self.loaded and self.rows:
            if self.start <= first < self.end or self.end <= first < self.end + self.page_size:
                if last - self.end <= MAX_LIMIT:  # the view's top is held, or just below
                    return self._page(after=True, upto=last)
            if self.start - self.page_size < last <= self.end and first < self.start:
                if self.start - first <= MAX_LIMIT:  # the view's bottom is held, or just above
                    return self._page(after=False, upto=first)
        offset, limit = self._around(first, last)
        if self.total is not None and limit > last - first:
            offset = max(0, min(offset, self.total - limit))
        return Read("at", offset, limit, self.generation, self.serial)

    def _around(self, first: int, last: int) -> tuple[int, int]:
        """The offset and limit of a read of the view ``first`` … ``last - 1`` and a page
        either side of it, as many as a read takes: never past the view's first row (a view
        taller than a read is read from its top)."""
        height = max(last - first, 1)
        limit = min(height + 2 * self.page_size, MAX_LIMIT)
        return max(0, first - max(limit - height, 0) // 2), limit

    def _page(self, *, after: bool, upto: int | None = None, ahead: bool = False) -> Read:
        """A keyset page from the row at that end of the held run: ``page_size`` rows, or as
        many as reach position ``upto``."""
        edge = self.rows[-1] if after else self.rows[0]
        position = self.end - 1 if after else self.start
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
        if read.kind == "at":
            start = read.offset
        elif read.kind == "after":
            start = read.offset + 1
        else:
            start = read.offset - len(rows)
        missing = not rows and (read.kind != "at" or read.offset > 0)
        if missing:
            total = self._nothing_there(read, total)
        if total is not None:
            self.total = total
        replaced = False if missing else self._place(start, rows, replace=read.refresh)
        if read.kind == "at":
            self.serial += 1  # reads extending the run held before are answers to another run
        # The change token the whole held run was read at; None when its parts were read at
        # different ones (the next refresh then reads it whole).
        self.token = result.token if replaced or result.token == self.token else None
        if result.total is None:
            self._learn_the_end(read, start, rows)
        self._keep_claims(rows, result.claims)
        self.loaded = True
        self._trim()
        self._follow_selection()
        return True

    def _edge_still_held(self, read: Read) -> bool:
        """A page read from a row at one end of the held run joins it only if that row is
        still there (the run may have moved or been let go meanwhile)."""
        held, edge = self.row(read.offset), read.edge
        at_the_end = read.offset == (self.end - 1 if read.kind == "after" else self.start)
        return at_the_end and held is not None and edge is not None and held.id == edge.id

    def _nothing_there(self, read: Read, total: int | None) -> int | None:
        """No rows where rows were expected: the list changed since its length was learnt. An
        empty page after the held run ends the list there; an empty read at a place ends it
        before that place; an empty page before the run means the run starts the list. The
        length is counted again."""
        self.counted_at = None
        if read.kind == "after":
            return self.end
        if read.kind == "at":
            return read.offset if total is None or total > read.offset else total
        if self.start > 0:  # "before": the held run is the top of the list
            self.total = None if self.total is None else self.total - self.start
            self.start = 0
        return total

    def _keep_claims(self, rows: list[SessionFields], claims: dict[str, ClaimCount]) -> None:
        """The claim counts of the agents of the rows read, as read (an agent absent from
        ``claims`` holds none); only the agents of held rows are kept."""
        for agent in {session.agent_id for session in rows}:
            if agent in claims:
                self.claims[agent] = claims[agent]
            else:
                self.claims.pop(agent, None)
        held = {session.agent_id for session in self.rows}
        if len(self.claims) > len(held):
            self.claims = {agent: count for agent, count in self.claims.items() if agent in held}

    def count_due(self, now: float, after_change: bool) -> bool:
        """Whether to count the list in SQL now (``now``: a monotonic clock): at once for a new
        list, after a change not within ``RECOUNT_SECONDS`` of the last count."""
        due = self.counted_at is None or (after_change and now - self.counted_at >= RECOUNT_SECONDS)
        if due:
            self.counted_at = now
        return due

    def apply_total(self, generation: int, total: int) -> bool:
        """The list's length, counted apart (a filter the status counts cannot answer)."""
        if generation != self.generation:
            return False
        self.total = total
        self._trim()
        self.move_cursor(self.cursor)
        return True

    def _place(self, start: int, rows: list[SessionFields], *, replace: bool) -> bool:
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

    def _learn_the_end(self, read: Read, start: int, rows: list[SessionFields]) -> None:
        """With the length unknown (a count still on its way), a short page read forwards is
        the list's end; a full one says more may follow."""
        if read.kind == "before":
            return
        if len(rows) < read.limit:
            self.more_after = False
            if rows or read.kind == "after" or read.offset == 0:
                self.total = start + len(rows)
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
        self.rows = self.rows[cut : cut + bound]
        self.start = start

    def _follow_selection(self) -> None:
        """The cursor stays on its session when a read moved it (rows written above it), and
        goes back to it once after other filters or another order; else it keeps its place."""
        target = self.selected_id or self.follow_id
        self.follow_id = None
        found = self.index_of(target)
        self.move_cursor(found if found is not None else self.cursor)


def first_result(read: Read, first: FirstWindow | None) -> ReadResult | None:
    """The quick first read's page (``store.first_window``) as the answer to ``read``."""
    if first is None:
        return None
    rows: list[SessionFields] = list(first.sessions)
    return ReadResult(read, rows, None if first.has_more else len(rows), dict(first.claims))
