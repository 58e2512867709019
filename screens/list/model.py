"""The session list as plain data: which rows are held, where the cursor is, what a read's answer
changes. No Textual and no database here, so every rule is tested directly
(tests/test_list_model.py).

``ListModel`` is the list's ``ListWindow`` (screens.list.window: the run of rows held around the
view, and what to read next) with the cursor, the claims of the held rows' agents, and the
answers taken in (store.window.questions). An answer carries the ``generation`` and the
``serial`` its read was asked under; an answer to an older question is dropped. The cursor
follows its session by id when a read moves it, and otherwise keeps its place; until the
operator first moves it (``choose``), it keeps its place even so: a console left on the list's
top shows the top, not a session the store's changes carry down the list (a stale session seen
again moves in the attention order, and a re-sort or another writer moves any).

A grouped list (``grouping``: agent, run or workspace) holds header rows among the sessions
(``store.window.layout``): the store reads sessions only, and the model puts a header before
each session that starts a group, a folded group's one session as its header alone. The cursor
may rest on a header.
"""

from __future__ import annotations

from collections.abc import Mapping

from roundtable_console.screens.list.window import ListWindow, RowId
from roundtable_console.store.records import ClaimCount, SessionFields
from roundtable_console.store.window.layout import (
    GroupHeader,
    GroupKey,
    Groups,
    Item,
    in_stream,
    interleave,
    session_key,
)
from roundtable_console.store.window.questions import GroupedRows, Read, ReadResult

# A list the status counts cannot measure (a text or stale filter) is counted in SQL: once when
# it is asked for, then after changes at most this often.
RECOUNT_SECONDS = 5.0
# The groups whose counts by status are kept, past which those read lately are.
MAX_COUNTS_KEPT = 4096


class ListModel(ListWindow):
    """The rows held, the cursor on them, and the answers of the reads taken in."""

    def __init__(self, *, page_size: int = 50, max_rows: int = 400) -> None:
        super().__init__(page_size=page_size, max_rows=max_rows)
        self.cursor = 0
        # The id of the row under the cursor: a session's, or a group header's.
        self.selected_id: RowId | None = None
        # The operator has moved the cursor: from then on it follows its session.
        self.chosen = False
        self.claims: dict[str, ClaimCount] = {}
        # The store's change token of the last read of the whole held run.
        self.token: object | None = None
        self.counted_at: float | None = None
        # A count is on its way; the list was due another meanwhile.
        self.counting = False
        self.recount = False
        # After other filters or another order: the session the cursor goes back to if the
        # first rows read hold it.
        self.follow_id: RowId | None = None
        # The store changed while the view's rows were being read: read again once they are.
        self.dirty = False
        # The groups' counts by status as last read (their headers show them).
        self.header_counts: dict[GroupKey, Mapping[str, int]] = {}

    # -- what is held -------------------------------------------------------------------------

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

    def _follow_selection(self) -> None:
        """The cursor stays on its session when a read moved it (rows written above it), once
        the operator has chosen it, and goes back to it once after other filters or another
        order; else it keeps its place."""
        target = (self.selected_id if self.chosen else None) or self.follow_id
        self.follow_id = None
        found = self.index_of(target)
        self.move_cursor(found if found is not None else self.cursor)
