"""The session list's model without Textual or a database: which rows it holds, where its cursor
is, and what it asks to read next, against a list of sessions kept in Python."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from roundtable_console.screens.list.model import ListModel
from roundtable_console.store.records import ClaimCount
from roundtable_console.store.window.layout import GroupHeader, Groups, Layout
from roundtable_console.store.window.questions import GroupedRows, Read, ReadResult


@dataclass(frozen=True)
class Row:
    """Stands for a session: the model only reads ids (and hands rows back as they came)."""

    id: str
    agent_id: str = "agent"


def sessions(count: int) -> list[Row]:
    return [Row(f"s{number:05d}") for number in range(count)]


def answer(model: ListModel, read: Read, rows: list[Row], *, countable: bool = True) -> bool:
    """What the store would answer ``read`` with, for the list ``rows``."""
    if read.kind == "at":
        found = rows[read.offset : read.offset + read.limit]
    elif read.kind == "after":
        found = rows[read.offset + 1 : read.offset + 1 + read.limit]
    else:
        found = rows[max(read.offset - read.limit, 0) : read.offset]
    total = len(rows) if countable else None
    return model.apply(ReadResult(read, list(found), total))  # type: ignore[arg-type]


def serve(model: ListModel, rows: list[Row], *, countable: bool = True) -> int:
    """Answer every read the model asks for until it asks for nothing; how many it asked."""
    asked = 0
    for _ in range(100):
        reads = model.next_reads()
        if not reads:
            return asked
        for read in reads:
            model.started(read)
            asked += 1
            answer(model, read, rows, countable=countable)
    raise AssertionError("the model never stopped asking")


def held_ids(model: ListModel) -> list[str]:
    return [row.id for row in model.rows]


def test_the_first_read_is_the_top_of_the_list_and_the_view_is_then_covered() -> None:
    rows = sessions(1000)
    model = ListModel(page_size=50, max_rows=200)
    model.move_view(0, 37)
    first = model.next_reads()
    assert [(read.kind, read.offset) for read in first] == [("at", 0)]
    serve(model, rows)
    assert model.row_count == 1000
    assert model.start == 0 and held_ids(model)[:37] == [r.id for r in rows[:37]]
    # A page past the view is held too, so the next page down finds its rows.
    assert model.end >= 37 + 50
    assert model.selected() == rows[0] and model.selected_id == "s00000"


def test_paging_down_reads_a_page_ahead_by_keyset_and_holds_at_most_the_bound() -> None:
    rows = sessions(1000)
    model = ListModel(page_size=50, max_rows=200)
    model.move_view(0, 37)
    serve(model, rows)
    for step in range(1, 20):
        model.move_view(step * 37, 37)
        model.move_cursor(step * 37)
        reads = model.next_reads()
        # The view is always covered already: only the page beyond is read, from the edge row.
        assert all(read.kind == "after" for read in reads), reads
        for read in reads:
            assert read.edge == model.rows[-1]
            model.started(read)
            answer(model, read, rows)
        assert model.start <= step * 37 and step * 37 + 37 <= model.end
        assert len(model.rows) <= 200
        assert held_ids(model) == [r.id for r in rows[model.start : model.end]]
        assert model.selected() == rows[step * 37]


def test_a_jump_far_away_reads_the_rows_there_and_lets_the_old_ones_go() -> None:
    rows = sessions(1_000_000)
    model = ListModel(page_size=50, max_rows=200)
    model.move_view(0, 37)
    serve(model, rows)
    model.move_view(500_000, 37)
    model.move_cursor(500_010)
    (read,) = model.next_reads()
    assert read.kind == "at" and read.offset <= 500_000 and read.offset + read.limit >= 500_037
    model.started(read)
    answer(model, read, rows)
    assert model.row(500_000) == rows[500_000] and model.row(0) is None
    assert model.selected() == rows[500_010]
    serve(model, rows)
    assert len(model.rows) <= 200
    # The end: the view there is read at its place (never page by page from the top).
    model.move_view(1_000_000 - 37, 37)
    model.move_cursor(999_999)
    (read,) = model.next_reads()
    assert read.kind == "at" and read.offset + read.limit == 1_000_000
    serve(model, rows)
    assert model.selected() == rows[-1]


def test_a_read_in_flight_is_not_asked_for_twice_and_a_failed_one_is_asked_again() -> None:
    rows = sessions(300)
    model = ListModel(page_size=50, max_rows=200)
    model.move_view(0, 20)
    (read,) = model.next_reads()
    model.started(read)
    assert model.next_reads() == []
    model.failed(read)
    assert model.next_reads() == [read]
    model.started(read)
    answer(model, read, rows)
    assert model.loaded


def test_an_answer_for_other_filters_or_another_run_changes_nothing() -> None:
    rows = sessions(300)
    model = ListModel(page_size=50, max_rows=200)
    model.move_view(0, 20)
    serve(model, rows)
    model.move_view(60, 20)
    (ahead,) = [r for r in model.next_reads() if r.kind == "after"]
    model.started(ahead)
    model.reset()  # the operator changed the filters meanwhile
    assert not answer(model, ahead, rows)
    assert model.rows == [] and not model.loaded
    # An extension of a run that a refresh has since replaced is dropped too.
    model.move_view(0, 20)
    serve(model, rows)
    model.move_view(60, 20)
    (ahead,) = [r for r in model.next_reads() if r.kind == "after"]
    model.started(ahead)
    refresh = model.refresh_read()
    model.started(refresh)
    answer(model, refresh, rows)
    assert not answer(model, ahead, rows)


def test_a_cursor_the_operator_never_moved_keeps_its_place_when_rows_move() -> None:
    rows = sessions(100)
    model = ListModel(page_size=50, max_rows=200)
    model.move_view(0, 20)
    serve(model, rows)
    assert not model.chosen and model.selected_id == "s00000"
    refresh = model.refresh_read()
    model.started(refresh)
    answer(model, refresh, [Row("a-new"), *rows])
    assert model.cursor == 0 and model.selected_id == "a-new"
    model.choose(1)
    assert model.chosen and model.selected_id == "s00000"


def test_the_cursor_follows_its_session_when_rows_are_added_above_it() -> None:
    rows = sessions(100)
    model = ListModel(page_size=50, max_rows=200)
    model.move_view(0, 20)
    serve(model, rows)
    model.choose(10)
    assert model.selected_id == "s00010"
    newer = [Row("a-new"), Row("b-new"), *rows]
    refresh = model.refresh_read()
    assert refresh.refresh and refresh.offset == model.start
    model.started(refresh)
    answer(model, refresh, newer)
    assert model.cursor == 12 and model.selected_id == "s00010"
    assert model.row_count == 102
    # Its session gone from what is held: the cursor keeps its place.
    fewer = [row for row in newer if row.id != "s00010"]
    refresh = model.refresh_read()
    model.started(refresh)
    answer(model, refresh, fewer)
    assert model.cursor == 12 and model.selected_id == fewer[12].id


def test_a_list_that_shrinks_keeps_the_cursor_inside_it() -> None:
    rows = sessions(100)
    model = ListModel(page_size=50, max_rows=200)
    model.move_view(80, 20)
    serve(model, rows)
    model.move_cursor(99)
    refresh = model.refresh_read()
    model.started(refresh)
    answer(model, refresh, rows[:30])
    assert model.row_count == 30 and model.cursor <= 29
    model.move_view(10, 20)
    serve(model, rows[:30])
    assert model.cursor == 29 and model.selected() == rows[29]
    model.reset()
    assert model.row_count == 0 and model.cursor == 0 and model.selected() is None
    # Another order: the cursor goes back to its session when the first rows hold it.
    model.move_view(0, 20)
    serve(model, list(reversed(rows[:30])))
    assert model.selected() == rows[29] and model.cursor == 0


def test_orders_changed_faster_than_they_are_read_keep_following_the_session() -> None:
    rows = sessions(30)
    model = ListModel(page_size=50, max_rows=200)
    model.move_view(0, 20)
    serve(model, rows)
    model.move_cursor(7)
    for _ in range(3):  # o pressed three times before a read came back
        model.reset()
        model.move_cursor(0)
    serve(model, list(reversed(rows)))
    assert model.selected() == rows[7] and model.cursor == 22


def test_a_list_of_unknown_length_grows_as_pages_come_and_learns_its_end() -> None:
    rows = sessions(130)
    model = ListModel(page_size=50, max_rows=400)
    model.move_view(0, 20)
    (first,) = model.next_reads()
    model.started(first)
    answer(model, first, rows, countable=False)
    assert model.total is None and model.more_after
    assert model.row_count == model.end + 50  # room to scroll towards the rows not read yet
    model.move_view(model.end - 10, 20)
    serve(model, rows, countable=False)
    assert model.total == 130 and model.row_count == 130
    # The count, when it comes, is the truth.
    assert model.apply_total(model.generation, 131)
    assert model.row_count == 131
    assert not model.apply_total(model.generation - 1, 5)


def test_moving_up_reads_the_page_above_by_keyset() -> None:
    rows = sessions(10_000)
    model = ListModel(page_size=50, max_rows=200)
    model.move_view(5000, 30)
    serve(model, rows)
    top = model.start
    model.move_view(top + 10, 30)
    reads = model.next_reads()
    assert [read.kind for read in reads] == ["before"]
    assert reads[0].edge == model.rows[0] and reads[0].offset == top
    model.started(reads[0])
    answer(model, reads[0], rows)
    assert model.start == top - 50
    assert held_ids(model) == [r.id for r in rows[model.start : model.end]]


@settings(max_examples=60, deadline=None)
@given(
    size=st.integers(min_value=0, max_value=3000),
    moves=st.lists(
        st.tuples(st.sampled_from(["view", "cursor"]), st.integers(0, 3100)), max_size=25
    ),
    page=st.integers(min_value=1, max_value=60),
    height=st.integers(min_value=1, max_value=80),
)
def test_wherever_the_view_goes_the_rows_held_are_the_lists_rows_at_their_places(
    size: int, moves: list[tuple[str, int]], page: int, height: int
) -> None:
    rows = sessions(size)
    model = ListModel(page_size=page, max_rows=4 * page)
    model.move_view(0, height)
    serve(model, rows)
    for kind, place in moves:
        if kind == "view":
            model.move_view(min(place, max(size - height, 0)), height)
        else:
            model.move_cursor(place)
        serve(model, rows)
        assert held_ids(model) == [r.id for r in rows[model.start : model.end]]
        assert len(model.rows) <= max(4 * page, height + 2 * page)
        assert model.row_count == size
        assert 0 <= model.cursor <= max(size - 1, 0)
        first, last = model.view_first, min(model.view_first + model.view_height, size)
        assert all(model.row(index) is not None for index in range(first, last))


def test_a_list_the_status_counts_cannot_measure_is_counted_once_then_after_changes() -> None:
    model = ListModel(page_size=10)
    assert model.count_due(100.0, after_change=False)  # a new list: at once
    assert not model.count_over(model.generation)  # back, and nothing changed meanwhile
    assert not model.count_due(100.5, after_change=False)  # pages read: never again
    assert not model.count_due(102.0, after_change=True)  # a change soon after: not yet
    assert model.count_due(106.0, after_change=True)  # a change later: again
    model.reset()  # other filters: a new list, counted at once
    assert model.count_due(106.1, after_change=False)


def test_a_count_slower_than_the_changes_is_never_replaced_but_followed() -> None:
    """A text filter's count of a million sessions outlasts RECOUNT_SECONDS while the store
    keeps changing: the count on its way is let finish (a new one would cancel it, again and
    again), and the list is counted once more when it is back."""
    model = ListModel(page_size=10)
    generation = model.generation
    assert model.count_due(100.0, after_change=False)
    for second in range(101, 130, 2):  # changes every 2 s, the count still on its way
        assert not model.count_due(float(second), after_change=True)
    assert model.count_over(generation)  # back: counted again at once, the list changed
    assert not model.count_due(131.0, after_change=True)  # that count is on its way
    assert model.count_over(generation)
    assert not model.count_over(generation)  # back, and nothing changed since
    assert model.count_due(140.0, after_change=True)  # a later change: counted as usual
    assert not model.count_over(generation - 1)  # another list's count says nothing


def answer_with(model: ListModel, read: Read, found: list[Row], total: int | None, **extra: Any):  # type: ignore[no-untyped-def]
    return model.apply(ReadResult(read, list(found), total, **extra))  # type: ignore[arg-type]


def test_a_cursor_on_rows_not_held_yet_never_snaps_back_to_an_older_session() -> None:
    """Two page downs faster than their rows: the cursor keeps its new place when the first
    page arrives, not the session it left (which that page holds)."""
    rows = sessions(1000)
    model = ListModel(page_size=50, max_rows=200)
    model.move_view(0, 30)
    serve(model, rows)
    model.move_cursor(90)
    assert model.selected_id == "s00090"
    (ahead,) = [r for r in model.next_reads() if r.kind == "after"] or [None]
    model.move_view(model.end + 10, 30)  # beyond what is held
    model.move_cursor(model.end + 20)
    assert model.selected_id is None  # nothing held there yet
    cursor = model.cursor
    if ahead is not None:
        model.started(ahead)
        answer(model, ahead, rows)
    assert model.cursor == cursor
    serve(model, rows)
    assert model.cursor == cursor and model.selected() == rows[cursor]


def test_claims_read_again_replace_the_old_ones_and_only_held_agents_are_kept() -> None:
    rows = [Row("s1", "a1"), Row("s2", "a2")]
    model = ListModel(page_size=10)
    model.move_view(0, 5)
    (read,) = model.next_reads()
    model.started(read)
    answer_with(model, read, rows, 2, claims={"a1": ClaimCount(2, 0)})
    assert model.claims == {"a1": ClaimCount(2, 0)}
    refresh = model.refresh_read()
    model.started(refresh)
    answer_with(model, refresh, rows, 2, claims={})  # a1's claims were released
    assert model.claims == {}
    refresh = model.refresh_read()
    model.started(refresh)
    answer_with(model, refresh, [Row("s9", "a9")], 1, claims={"a9": ClaimCount(0, 1)})
    assert model.claims == {"a9": ClaimCount(0, 1)}


def test_a_list_that_shrank_under_its_count_is_read_where_it_ends_without_looping() -> None:
    """A text filter's count is a few seconds old: the place the view is at is empty now."""
    counted = sessions(1000)
    model = ListModel(page_size=50, max_rows=200)
    model.move_view(0, 30)
    (read,) = model.next_reads()
    model.started(read)
    answer(model, read, counted, countable=False)
    assert model.apply_total(model.generation, 1000)
    model.move_view(900, 30)
    now = sessions(200)  # most of the list is gone
    asked = serve(model, now, countable=False)
    assert asked < 30
    assert model.row_count <= 900 and model.count_due(0.0, after_change=False)
    first = model.view_first
    assert all(model.row(i) is not None for i in range(first, min(first + 30, 200)))


def test_a_view_taller_than_a_read_is_read_in_parts() -> None:
    rows = sessions(2000)
    model = ListModel(page_size=50, max_rows=200)
    model.move_view(1000, 230)
    asked = serve(model, rows)
    assert asked <= 6
    assert all(model.row(i) == rows[i] for i in range(1000, 1230))
    # A page up in that view: the page above, in one read from the first row held.
    model.move_view(1000 - 40, 230)
    reads = model.next_reads()
    assert [r.kind for r in reads] == ["before"] and reads[0].limit >= 40


def test_a_page_read_from_an_end_the_run_has_left_is_dropped_and_asked_again() -> None:
    rows = sessions(5000)
    model = ListModel(page_size=50, max_rows=200)
    model.move_view(2000, 30)
    serve(model, rows)
    model.move_view(model.start + 5, 30)
    (behind,) = [r for r in model.next_reads() if r.kind == "before"]
    model.started(behind)
    for step in range(1, 8):  # page downs while the page above is being read
        model.move_view(2000 + step * 30, 30)
        serve(model, rows)
    held = (model.start, model.end)
    assert not answer(model, behind, rows)
    assert (model.start, model.end) == held  # the run held is intact
    assert all(model.row(i) == rows[i] for i in range(model.start, model.end))


def test_empty_pages_at_either_end_say_where_the_list_ends() -> None:
    rows = sessions(300)
    model = ListModel(page_size=50, max_rows=200)
    model.move_view(100, 30)
    serve(model, rows)
    start = model.start
    assert start > 0
    # Everything above the held run ended (and is hidden): the run now starts the list.
    model.move_view(start + 5, 30)
    (behind,) = [r for r in model.next_reads() if r.kind == "before"]
    model.started(behind)
    assert answer_with(model, behind, [], None)
    assert model.start == 0 and [r.id for r in model.rows][:1] == [rows[start].id]
    # And nothing follows the held run any more.
    model.move_view(0, 30)
    ahead = [r for r in model.next_reads() if r.kind == "after"]
    if ahead:
        model.started(ahead[0])
        assert answer_with(model, ahead[0], [], 300)
        assert model.total == model.end


# -- a grouped list ---------------------------------------------------------------------------


class Grouped:
    """A list grouped by agent, kept in Python as the store would read it: the sessions in the
    grouping's order, a folded group keeping its first session (store.reads.groups), and the list as
    it should be shown, headers included."""

    def __init__(self, rows: list[Row]) -> None:
        self.rows = sorted(rows, key=lambda row: (row.agent_id, row.id))

    def stream(self, folded: frozenset[str | None]) -> list[Row]:
        seen: set[str] = set()
        kept = []
        for row in self.rows:
            if row.agent_id in folded:
                if row.agent_id in seen:
                    continue
                seen.add(row.agent_id)
            kept.append(row)
        return kept

    def groups(self) -> Groups:
        counts: dict[str, int] = {}
        for row in self.rows:
            counts[row.agent_id] = counts.get(row.agent_id, 0) + 1
        return Groups.from_counts((agent, {"active": n}) for agent, n in counts.items())

    def shown(self, folded: frozenset[str | None]) -> list[object]:
        """The ids of the list shown: a header's id, or a session's."""
        found: list[object] = []
        previous = None
        for row in self.stream(folded):
            if row.agent_id != previous:
                found.append(("group", row.agent_id))
            if row.agent_id not in folded:
                found.append(row.id)
            previous = row.agent_id
        return found

    def answer(self, model: ListModel, read: Read, *, counted: bool = True) -> bool:
        """What the worker answers (store.window.rows): the stream's rows, each one's group,
        and whether the first starts its group; the groups when the counts can say them."""
        folded = model.folded
        stream = self.stream(folded)
        ids = [row.id for row in stream]
        groups = self.groups() if counted else None
        header_first, place = None, None
        if read.kind == "at":
            first = read.stream
            if groups is not None:
                layout = Layout(groups, folded)
                found = layout.place(read.offset)
                first = found.stream if found else layout.stream_length
                header_first = found.header if found else False
                place = first
            rows = stream[first : first + read.limit]
            starts = first == 0 or (
                first < len(stream) and stream[first - 1].agent_id != stream[first].agent_id
            )
            edge_key, edge_starts = None, False
        else:
            assert read.edge is not None
            at = ids.index(read.edge.id)
            if read.kind == "after":
                rows = stream[at + 1 : at + 1 + read.limit]
                starts = bool(rows) and rows[0].agent_id != read.edge.agent_id
            else:
                begin = max(at - read.limit, 0)
                rows = stream[begin:at]
                starts = begin == 0 or stream[begin - 1].agent_id != stream[begin].agent_id
            edge_key = read.edge.agent_id
            edge_starts = not rows or rows[-1].agent_id != read.edge.agent_id
        grouped = GroupedRows(
            tuple(row.agent_id for row in rows),
            starts,
            edge_key=edge_key,
            edge_starts=edge_starts,
            header_first=header_first,
            stream=place,
            groups=groups,
        )
        return model.apply(ReadResult(read, list(rows), None, grouped=grouped))  # type: ignore[arg-type]

    def serve(self, model: ListModel, *, counted: bool = True) -> int:
        asked = 0
        for _ in range(100):
            reads = model.next_reads()
            if not reads:
                return asked
            for read in reads:
                model.started(read)
                asked += 1
                self.answer(model, read, counted=counted)
        raise AssertionError("the model never stopped asking")

    def check(self, model: ListModel) -> None:
        """The rows held are the list's rows at their places, headers included."""
        shown = self.shown(model.folded)
        assert [item.id for item in model.rows] == shown[model.start : model.end]
        assert model.row_count == len(shown)
        for item in model.rows:
            if isinstance(item, GroupHeader):
                assert item.folded == (item.key in model.folded)


def agents_rows(sizes: list[int]) -> list[Row]:
    return [
        Row(f"{agent:02d}-s{number:04d}", f"agent-{agent:02d}")
        for agent, size in enumerate(sizes)
        for number in range(size)
    ]


def grouped_model(page: int = 10, rows: int = 40) -> ListModel:
    model = ListModel(page_size=page, max_rows=rows)
    model.grouping = "agent"
    return model


def test_a_grouped_list_shows_a_header_before_each_group_and_counts_them_in_its_length() -> None:
    store = Grouped(agents_rows([3, 1, 2]))
    model = grouped_model()
    model.move_view(0, 20)
    store.serve(model)
    assert [item.id for item in model.rows] == [
        ("group", "agent-00"), "00-s0000", "00-s0001", "00-s0002",
        ("group", "agent-01"), "01-s0000",
        ("group", "agent-02"), "02-s0000", "02-s0001",
    ]  # fmt: skip
    assert model.row_count == 9
    assert isinstance(model.row(0), GroupHeader) and model.session(0) is None
    assert list(model.sessions())[0].id == "00-s0000"
    store.check(model)


def test_paging_a_grouped_list_both_ways_reads_by_keyset_from_the_session_at_an_end() -> None:
    store = Grouped(agents_rows([7, 1, 12, 3, 1, 1, 25, 2, 9, 4]))
    model = grouped_model(page=5, rows=20)
    model.move_view(0, 6)
    store.serve(model)
    length = model.row_count
    for first in [*range(0, length - 6, 3), *range(length - 6, -1, -4)]:
        model.move_view(first, 6)
        reads = model.next_reads()
        for read in reads:
            assert read.kind != "at", read  # each page joins the run held, by keyset
            assert read.edge is not None and not isinstance(read.edge, GroupHeader)
            model.started(read)
            store.answer(model, read)
        store.check(model)
        assert all(model.row(i) is not None for i in range(first, first + 6))


def test_a_place_anywhere_in_a_grouped_list_is_read_there_exactly() -> None:
    store = Grouped(agents_rows([4, 1, 6, 2, 1, 8, 3]))
    shown = store.shown(frozenset())
    for place in range(len(shown)):
        model = grouped_model(page=2, rows=8)
        model.move_view(0, 3)
        store.serve(model)
        model.move_view(place, 3)
        model.move_cursor(place)
        store.serve(model)
        store.check(model)
        assert model.row(place).id == shown[place]  # type: ignore[union-attr]
        assert model.selected_id == shown[place]


def test_a_place_is_estimated_while_the_groups_are_counted_then_exact() -> None:
    """A text filter: the groups are counted apart. Pages from the top are exact meanwhile; a
    read at a place reads the session before it too, to know whether a header goes there."""
    store = Grouped(agents_rows([5, 2, 9, 1, 6]))
    model = grouped_model(page=4, rows=12)
    model.move_view(0, 5)
    store.serve(model, counted=False)
    assert model.total is None and model.more_after
    for first in range(0, 26, 3):
        model.move_view(first, 5)
        store.serve(model, counted=False)
        shown = store.shown(frozenset())
        assert [item.id for item in model.rows] == shown[model.start : model.end]
    refresh = model.refresh_read()
    model.started(refresh)
    store.answer(model, refresh, counted=False)
    assert [item.id for item in model.rows] == shown[model.start : model.end]
    assert model.apply_groups(model.generation, store.groups())
    assert model.row_count == len(shown)
    model.move_view(0, 5)
    store.serve(model)
    store.check(model)


def test_folding_a_group_keeps_its_header_under_the_cursor_and_hides_its_sessions() -> None:
    store = Grouped(agents_rows([3, 4, 2]))
    model = grouped_model()
    model.move_view(0, 20)
    store.serve(model)
    model.move_cursor(4)  # agent-01's header
    assert model.selected() == GroupHeader("agent-01")
    generation = model.generation
    header = model.toggle_fold(4)
    assert header == GroupHeader("agent-01", folded=True)
    assert model.generation == generation + 1 and model.folded == {"agent-01"}
    assert model.cursor == 4 and model.selected_id == ("group", "agent-01")
    store.serve(model)
    store.check(model)
    assert [item.id for item in model.rows][3:7] == [
        "00-s0002", ("group", "agent-01"), ("group", "agent-02"), "02-s0000",
    ]  # fmt: skip
    assert model.row_count == 3 + 1 + 1 + 1 + 2
    folded = model.row(4)
    assert isinstance(folded, GroupHeader) and folded.folded and folded.kept is not None
    # The header is no session: nothing acts on it, and a page reads past it from its session.
    assert model.session(4) is None
    # Unfolded: the sessions come back after the header, which stays under the cursor.
    assert model.toggle_fold(4) == GroupHeader("agent-01")
    store.serve(model)
    store.check(model)
    assert model.row_count == 12 and model.cursor == 4
    assert model.toggle_fold(5) is None  # a session's row folds nothing


def test_folds_are_kept_by_grouping_through_refreshes_and_other_lists() -> None:
    store = Grouped(agents_rows([2, 30, 2]))
    model = grouped_model(page=5, rows=20)
    model.move_view(0, 8)
    store.serve(model)
    model.toggle_fold(0)  # the first group: its header is the first row of the list
    store.serve(model)
    store.check(model)
    assert model.row(0) == GroupHeader("agent-00", folded=True)
    refresh = model.refresh_read()
    model.started(refresh)
    store.answer(model, refresh)
    store.check(model)
    model.reset()
    model.grouping = "run"
    assert model.folded == frozenset()
    model.reset()
    model.grouping = "agent"
    assert model.folded == {"agent-00"}


def test_the_cursor_on_a_header_follows_it_when_rows_are_written_above() -> None:
    rows = agents_rows([3, 3, 3])
    store = Grouped(rows)
    model = grouped_model()
    model.move_view(0, 20)
    store.serve(model)
    model.choose(8)  # agent-02's header
    more = Grouped([*rows, Row("00-s9999", "agent-00"), Row("01-s9999", "agent-01")])
    refresh = model.refresh_read()
    model.started(refresh)
    more.answer(model, refresh)
    assert model.cursor == 10 and model.selected() == GroupHeader("agent-02")
    more.check(model)


def test_a_page_before_a_run_that_starts_the_list_puts_the_first_header_at_the_top() -> None:
    store = Grouped(agents_rows([6, 6]))
    model = grouped_model(page=3, rows=30)
    model.move_view(8, 3)
    store.serve(model)
    store.check(model)
    # Everything above the held run is gone: the run's first session now starts the list.
    model.move_view(model.start + 1, 3)
    (behind,) = [r for r in model.next_reads() if r.kind == "before"]
    model.started(behind)
    edge = behind.edge
    assert edge is not None
    gone = Grouped([row for row in store.rows if row.id >= edge.id])
    gone.answer(model, behind, counted=False)
    assert model.start == 0 and model.row(0) == GroupHeader(edge.agent_id)
    assert model.row(1) == edge


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=40), max_size=12),
    moves=st.lists(
        st.tuples(st.sampled_from(["view", "cursor", "fold", "refresh"]), st.integers(0, 400)),
        max_size=20,
    ),
    page=st.integers(min_value=1, max_value=12),
    height=st.integers(min_value=1, max_value=20),
    counted=st.booleans(),
)
def test_wherever_a_grouped_list_goes_its_rows_and_headers_are_at_their_places(
    sizes: list[int],
    moves: list[tuple[str, int]],
    page: int,
    height: int,
    counted: bool,
) -> None:
    store = Grouped(agents_rows(sizes))
    model = grouped_model(page=page, rows=4 * page)
    model.move_view(0, height)
    store.serve(model)  # the groups are counted from the first read on
    for kind, place in moves:
        length = model.row_count
        if kind == "view":
            model.move_view(min(place, max(length - height, 0)), height)
        elif kind == "cursor":
            model.move_cursor(place)
        elif kind == "fold":
            headers = [i for i in range(model.start, model.end) if model.row(i) is not None]
            headers = [i for i in headers if isinstance(model.row(i), GroupHeader)]
            if headers:
                model.toggle_fold(headers[place % len(headers)])
        else:
            refresh = model.refresh_read()
            model.started(refresh)
            store.answer(model, refresh, counted=counted)
        store.serve(model, counted=counted)
        if counted:
            store.check(model)
        else:
            shown = store.shown(model.folded)
            assert [item.id for item in model.rows] == shown[model.start : model.end]
        first, last = model.view_first, min(model.view_first + model.view_height, model.row_count)
        assert all(model.row(index) is not None for index in range(first, last))
        assert 0 <= model.cursor <= max(model.row_count - 1, 0)
