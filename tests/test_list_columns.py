"""The session list's rows as the painter builds them: kept while nothing they show has changed,
built anew when anything has, style included."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rich.text import Text

from roundtable_console.screens.list.columns import RowPainter, same_cells
from roundtable_console.store.records import SESSION_COLUMNS, ClaimCount, SessionRecord

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def session(**values: object) -> SessionRecord:
    row: dict[str, object] = dict.fromkeys(SESSION_COLUMNS)
    row.update(
        id="s1",
        agent_id="a",
        run_id="r",
        adapter="codex",
        working_directory="/w",
        status="active",
        started_at="2026-12-01T11:00:00Z",
        last_seen_at="2026-12-01T11:59:00Z",
        metadata_json="{}",
        version=1,
    )
    row.update(values)
    return SessionRecord(row)


def test_cells_that_differ_only_in_style_are_not_the_same() -> None:
    assert Text("yes", style="green") == Text("yes", style="dim")  # why same_cells exists
    assert not same_cells([Text("yes", style="green")], [Text("yes", style="dim")])
    assert same_cells([Text("yes", style="green")], [Text("yes", style="green")])
    assert not same_cells([Text("a")], [Text("a"), Text("b")])
    bold_end = Text("ab")
    bold_end.stylize("bold", 1)
    assert not same_cells([Text("ab")], [bold_end])


def test_a_row_is_kept_until_what_it_shows_changes() -> None:
    painter = RowPainter(stale_after=timedelta(minutes=10), adapters={})
    shown = session()
    first = painter.row(shown, None, NOW)
    assert painter.row(shown, None, NOW) is first  # nothing moved: not built again
    painter.clock_moved()
    # A second later the cells read the same ("1m ago"): the row drawn stays.
    assert painter.row(shown, None, NOW + timedelta(seconds=1)) is first
    painter.clock_moved()
    later = painter.row(shown, None, NOW + timedelta(minutes=20))
    assert later is not first
    column = list(painter.widths)
    assert "stale" in later.cells[column.index("status")].plain  # stale by now
    claimed = painter.row(shown, ClaimCount(live=2), NOW + timedelta(minutes=20))
    assert claimed is not later and claimed.cells[column.index("claims")].plain == "2"
