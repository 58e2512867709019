"""The marks model (screens.list.marks) on its own: no Textual, no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from roundtable_console.screens.list.columns import RowPainter, counts_line, marks_text
from roundtable_console.screens.list.marks import RECOUNT_SECONDS, Marks
from roundtable_console.store.clock import format_ts
from roundtable_console.store.reads.listing import FilterSelection, Selection, SessionFilter
from roundtable_console.store.records import SESSION_COLUMNS, SessionRecord

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
PAUSED = SessionFilter(statuses=("paused",))
STALE = SessionFilter(stale_before=NOW - timedelta(minutes=5))


def session(session_id: str, **values: Any) -> SessionRecord:
    row: dict[str, Any] = dict.fromkeys(SESSION_COLUMNS)
    row.update(
        id=session_id,
        agent_id="a",
        run_id="r",
        adapter="codex",
        working_directory="/w",
        status="active",
        started_at=format_ts(NOW - timedelta(hours=1)),
        last_seen_at=format_ts(NOW - timedelta(minutes=1)),
        version=1,
    )
    row.update(values)
    return SessionRecord(row)


def test_space_marks_and_unmarks_one_session_by_id() -> None:
    marks = Marks()
    one, two = session("s1"), session("s2")
    assert not marks and marks.count() == 0
    assert marks.toggle(one) is True
    assert marks.is_marked(one) and not marks.is_marked(two)
    # The same session read again (another object, newer values) is still marked.
    assert marks.is_marked(session("s1", status="paused", version=2))
    assert marks.count() == 1 and not marks.needs_count
    assert marks.toggle(one) is False
    assert not marks and marks.selection() == Selection()


def test_a_filter_mark_covers_every_matching_session_less_those_unmarked() -> None:
    marks = Marks()
    paused, other, active = (
        session("p1", status="paused"),
        session("p2", status="paused"),
        session("a1"),
    )
    marks.mark_matching(PAUSED)
    assert marks.is_marked(paused) and marks.is_marked(other)
    assert not marks.is_marked(active)
    # A session read later, never seen before, is covered too.
    assert marks.is_marked(session("p9", status="paused"))
    marks.toggle(paused)
    assert not marks.is_marked(paused) and marks.is_marked(other)
    # Marked again: by id, and no longer excluded.
    marks.toggle(paused)
    assert marks.is_marked(paused)
    marks.toggle(active)  # outside the filter: by id
    assert marks.selection() == Selection(
        ids=frozenset({"p1", "a1"}), by_filter=(FilterSelection(PAUSED),)
    )


def test_sessions_done_by_a_bulk_action_are_unmarked_by_id() -> None:
    marks = Marks()
    marks.toggle(session("a1"))
    marks.toggle(session("a2"))
    marks.mark_matching(PAUSED)
    revision = marks.revision
    marks.unmark_ids([])
    assert marks.revision == revision  # nothing to unmark: the marks did not change
    marks.unmark_ids(["a1", "p1"])
    assert marks.revision == revision + 1
    assert marks.selection() == Selection(
        ids=frozenset({"a2"}), by_filter=(FilterSelection(PAUSED, frozenset({"a1", "p1"})),)
    )
    assert not marks.is_marked(session("p1", status="paused"))
    assert marks.is_marked(session("p2", status="paused")) and marks.is_marked(session("a2"))
    # A session done, then marked again by hand, is marked.
    marks.toggle(session("p1", status="paused"))
    assert marks.is_marked(session("p1", status="paused"))


def test_an_unmark_excludes_only_from_the_filters_that_cover_the_session() -> None:
    marks = Marks()
    marks.mark_matching(PAUSED)
    marks.mark_matching(SessionFilter(text="agent-z"))
    paused = session("p1", status="paused")
    marks.toggle(paused)
    assert marks.selection().by_filter == (
        FilterSelection(PAUSED, frozenset({"p1"})),
        FilterSelection(SessionFilter(text="agent-z")),
    )
    # Once it matches the other filter, that one marks it: the unmark was not against it.
    assert marks.is_marked(session("p1", status="paused", agent_id="agent-z", version=2))


def test_the_same_filter_marked_again_drops_its_exclusions() -> None:
    marks = Marks()
    paused = session("p1", status="paused")
    marks.mark_matching(PAUSED)
    marks.toggle(paused)
    assert not marks.is_marked(paused)
    marks.mark_matching(PAUSED)
    assert marks.is_marked(paused)
    assert marks.selection().by_filter == (FilterSelection(PAUSED),)


def test_clear_forgets_everything() -> None:
    marks = Marks()
    assert marks.clear() is False
    marks.toggle(session("s1"))
    marks.mark_matching(PAUSED)
    assert marks.clear() is True
    assert not marks and not marks.is_marked(session("p1", status="paused"))
    assert marks.count() == 0


def test_a_filter_mark_keeps_its_stale_cutoff_where_it_was() -> None:
    marks = Marks()
    marks.mark_matching(STALE)
    assert marks.is_marked(session("old", last_seen_at=format_ts(NOW - timedelta(minutes=10))))
    # Seen after the cutoff (the clock moving on changes nothing for the mark).
    assert not marks.is_marked(session("new", last_seen_at=format_ts(NOW - timedelta(minutes=4))))


def test_rows_only_the_store_can_decide_are_asked_about_once() -> None:
    marks = Marks()
    marks.mark_matching(STALE)
    odd = session("odd", last_seen_at="2026-12-01T11:00:00+0000")  # no colon: SQLite reads none
    plain = session("plain", last_seen_at=format_ts(NOW - timedelta(minutes=10)))
    assert marks.is_marked(odd) is None
    questions = marks.open_questions([odd, plain])
    assert questions == {STALE: (("odd", 1),)}
    assert marks.open_questions([odd, plain]) == {}  # asked already
    marks.answered(STALE, questions[STALE], {"odd"})
    assert marks.is_marked(odd) is True
    # A newer version of the row is asked about again.
    newer = session("odd", last_seen_at="2026-12-01T11:59:00+0000", version=2)
    assert marks.is_marked(newer) is None
    assert marks.open_questions([newer]) == {STALE: (("odd", 2),)}
    marks.answered(STALE, (("odd", 2),), None)  # the question failed: asked again later
    assert marks.open_questions([newer]) == {STALE: (("odd", 2),)}


def test_a_count_of_older_marks_is_not_shown() -> None:
    marks = Marks()
    marks.toggle(session("s1"))
    marks.mark_matching(PAUSED)
    assert marks.needs_count and marks.count() is None
    revision = marks.revision
    marks.toggle(session("s2"))
    assert marks.counted_as(revision, 10) is False
    assert marks.count() is None
    assert marks.counted_as(marks.revision, 12) is True
    assert marks.count() == 12


def test_the_count_follows_the_store_at_most_every_few_seconds() -> None:
    marks = Marks()
    assert marks.recount_in(100.0) == 0.0
    marks.count_started(100.0)
    assert marks.recount_in(101.0) == RECOUNT_SECONDS - 1.0
    assert marks.recount_in(100.0 + RECOUNT_SECONDS) == 0.0


def test_a_row_is_drawn_again_when_its_mark_changes_and_only_then() -> None:
    painter = RowPainter(stale_after=timedelta(minutes=10), adapters={})
    shown = session("s1")
    plain = painter.row(shown, None, NOW, False)
    assert painter.row(shown, None, NOW, False) is plain
    marked = painter.row(shown, None, NOW, True)
    assert marked is not plain
    column = list(painter.widths).index("mark")
    assert marked.cells[column].plain == "●" and plain.cells[column].plain == ""
    assert painter.row(shown, None, NOW, True) is marked
    assert painter.row(shown, None, NOW, None).cells[column].plain == "…"


def test_the_mark_column_is_never_dropped() -> None:
    for width in (40, 80, 120):
        painter = RowPainter(stale_after=timedelta(minutes=10), adapters={})
        painter.resize(width)
        assert next(iter(painter.widths)) == "mark"


def test_the_header_says_how_many_are_marked_before_the_statuses() -> None:
    counts = {"active": 2, "paused": 1}
    line = counts_line(counts, marks_text(2)).plain.replace("\u00a0", " ")
    assert line == "3 sessions · ● 2 marked · active 2 · paused 1"
    assert "● … marked" in counts_line(counts, marks_text(None)).plain.replace("\u00a0", " ")
    assert "marked" not in counts_line(counts).plain


def test_a_later_stale_cutoff_replaces_the_earlier_one() -> None:
    marks = Marks()
    marks.mark_matching(STALE)
    later = SessionFilter(stale_before=NOW)
    marks.mark_matching(later)
    assert marks.selection().by_filter == (FilterSelection(later),)
    marks.mark_matching(STALE)  # an earlier cutoff covers less: both are kept
    assert marks.selection().by_filter == (FilterSelection(later), FilterSelection(STALE))
    marks.mark_matching(SessionFilter(stale_before=NOW, text="x"))  # another filter
    assert len(marks.selection().by_filter) == 3
