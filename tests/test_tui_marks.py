"""Marks in the session list, through the real app: space, * and u; the mark column; the header's
count; marks kept through reads, scrolling, sorting and other filters."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert

from roundtable_console.screens.commands import session_commands
from roundtable_console.screens.list import marks
from roundtable_console.store.clock import format_ts
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.session_rows import SESSIONS
from roundtable_console.store.reads.listing import FilterSelection, Selection, SessionFilter
from roundtable_console.store.window import rows as list_reads
from roundtable_console.store.writes import agent_writes
from tests.test_tui_support import (
    FROZEN,
    add_session,
    cell,
    console,
    footer_keys,
    grid,
    notifications,
    press,
    row_ids,
    screen_text,
    selected,
    settle,
    sqlite_url,
)


def header(app: Any) -> str:
    """The counts line at the top of the list (a no-break space read as a space)."""
    return str(app.screen.query_one("#counts").render()).replace("\u00a0", " ")


def shown_line(app: Any, session_id: str) -> str:
    """The row of ``session_id`` as the terminal shows it."""
    lines = [line for line in screen_text(app).splitlines() if f" {session_id} " in line]
    assert len(lines) == 1, (session_id, lines)
    return lines[0]


def marked_held(app: Any) -> dict[str, str]:
    """The mark cell of every row the list holds now, as drawn."""
    return {session_id: cell(app, session_id, "mark") for session_id in row_ids(app)}


def type_filter(*characters: str) -> tuple[str, ...]:
    return ("slash", *characters, "enter")


async def test_space_marks_and_unmarks_the_selected_session(tmp_path: Path, db: Store) -> None:
    for number in range(3):
        add_session(db, f"s{number}", at=FROZEN + timedelta(minutes=number))
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "toggle_mark" in footer_keys(app) and "clear_marks" not in footer_keys(app)
        assert "marked" not in header(app)
        await press(pilot, "down", "space")
        assert selected(app) == "s1"  # the cursor stays on the row it marked
        assert marked_held(app) == {"s0": "", "s1": "●", "s2": ""}
        assert shown_line(app, "s1").split()[:2] == ["●", "s1"]
        assert "3 sessions" in header(app) and "● 1 marked" in header(app)
        assert "clear_marks" in footer_keys(app)
        assert "u Unmark" in screen_text(app).splitlines()[-1]
        assert app.screen.marks.selection() == Selection(ids=frozenset({"s1"}))
        await press(pilot, "space")
        assert marked_held(app) == {"s0": "", "s1": "", "s2": ""}
        assert "marked" not in header(app)
        assert "clear_marks" not in footer_keys(app)


async def test_star_marks_every_session_matching_even_those_read_later(
    tmp_path: Path, db: Store
) -> None:
    every = [f"{'match' if n % 3 == 0 else 'other'}-{n:02d}" for n in range(40)]
    for number, session_id in enumerate(every):
        add_session(db, session_id, at=FROZEN + timedelta(seconds=number))
    matching = {session_id for session_id in every if session_id.startswith("match")}
    app = console(sqlite_url(tmp_path), page_size=5, window_pages=2)
    async with app.run_test(size=(120, 12)) as pilot:
        await settle(pilot)
        await press(pilot, *type_filter("m", "a", "t", "c", "h"), "asterisk")
        assert set(row_ids(app)) <= matching
        assert "Marked every session matching" in notifications(app)[-1]
        (chosen,) = app.screen.marks.selection().by_filter
        assert chosen == FilterSelection(SessionFilter(text="match"))
        assert f"● {len(matching)} marked" in header(app)
        await press(pilot, "escape")  # every session again: most of them never read yet
        seen: set[str] = set()
        for key in ("home", *["pagedown"] * 8, "end"):
            await press(pilot, key)
            held = marked_held(app)
            assert {sid for sid, mark in held.items() if mark == "●"} == set(held) & matching
            seen |= set(held)
        assert seen == set(every)
        assert f"● {len(matching)} marked" in header(app)


async def test_u_clears_every_mark(tmp_path: Path, db: Store) -> None:
    add_session(db, "s1")
    add_session(db, "s2", status="paused", at=FROZEN + timedelta(seconds=1))
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "space", "asterisk")
        assert "● 2 marked" in header(app)
        await press(pilot, "u")
        assert marked_held(app) == {"s1": "", "s2": ""}
        assert "marked" not in header(app) and "2 sessions" in header(app)
        assert "Every mark cleared." in notifications(app)
        assert not app.screen.marks and "clear_marks" not in footer_keys(app)


async def test_marks_outlive_a_refresh_after_writes_to_the_store(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(marks, "RECOUNT_SECONDS", 0.0)
    add_session(db, "b1", agent_id="builder-1")
    add_session(db, "r1", agent_id="reviewer", at=FROZEN + timedelta(seconds=1))
    add_session(db, "r2", agent_id="reviewer", at=FROZEN + timedelta(seconds=2))
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "end", "space")  # r2, by id
        await press(pilot, *type_filter("b", "u", "i", "l", "d"), "asterisk", "escape")
        assert marked_held(app) == {"b1": "●", "r1": "", "r2": "●"}
        assert "● 2 marked" in header(app)
        # Another writer: a new builder session, a reviewer that becomes a builder's, another.
        add_session(db, "b2", agent_id="builder-2", at=FROZEN + timedelta(seconds=3))
        add_session(db, "r1", agent_id="builder-9", at=FROZEN + timedelta(seconds=1))
        add_session(db, "x1", agent_id="reviewer", at=FROZEN + timedelta(seconds=4))
        await press(pilot, "ctrl+r")
        await settle(pilot)
        assert marked_held(app) == {"b1": "●", "r1": "●", "r2": "●", "b2": "●", "x1": ""}
        assert "● 4 marked" in header(app)
        with db.write() as conn:
            agent_writes.end(db=conn, session_id="r2")
        await press(pilot, "ctrl+r")
        assert cell(app, "r2", "mark") == "●"  # marked by id: kept whatever it becomes


async def test_marks_outlive_sorting_scrolling_and_other_filters(tmp_path: Path, db: Store) -> None:
    for number in range(12):
        status = "paused" if number % 4 == 0 else "active"
        add_session(db, f"s{number:02d}", status=status, at=FROZEN + timedelta(seconds=number))
    app = console(sqlite_url(tmp_path), page_size=3, window_pages=2)
    async with app.run_test(size=(120, 10)) as pilot:
        await settle(pilot)
        await press(pilot, "down", "space")  # s01
        for keys in (("o",), ("d",), ("o", "o"), ("f", "f"), ("a",), ("S",), ("S", "a")):
            await press(pilot, *keys)
            if "s01" in row_ids(app):
                assert cell(app, "s01", "mark") == "●", keys
            assert all(mark == "" for sid, mark in marked_held(app).items() if sid != "s01"), keys
        await press(pilot, "f", "f", "f", "f", "f", "f", "f")  # back to any status
        await press(pilot, "end", "home")
        assert cell(app, "s01", "mark") == "●"
        assert "● 1 marked" in header(app)


async def test_the_header_counts_a_filter_mark_less_its_exceptions_plus_ids(
    tmp_path: Path, db: Store
) -> None:
    for number in range(6):
        status = "paused" if number < 4 else "active"
        add_session(db, f"s{number}", status=status, at=FROZEN + timedelta(seconds=number))
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "space")  # s0, by id, paused too: counted once
        await press(pilot, "f", "f", "f", "f")  # paused
        assert row_ids(app) == ["s0", "s1", "s2", "s3"]
        await press(pilot, "asterisk")
        assert "● 4 marked" in header(app)
        await press(pilot, "down", "space", "down", "space")  # s1, s2 unmarked
        assert marked_held(app) == {"s0": "●", "s1": "", "s2": "", "s3": "●"}
        assert "● 2 marked" in header(app)
        await press(pilot, "f", "f", "f", "f", "f")  # any status
        await press(pilot, "end", "space")  # s5, active: by id
        assert marked_held(app) == {
            "s0": "●", "s1": "", "s2": "", "s3": "●", "s4": "", "s5": "●",
        }  # fmt: skip
        assert "● 3 marked" in header(app)
        assert app.screen.marks.count() == 3


async def test_a_row_only_the_store_can_decide_is_asked_about(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A last-seen time in a form SQLite does not read (+0000): SQL falls back to the start,
    which is recent, so the store says not stale, although the text reads an hour old."""
    add_session(db, "old", at=FROZEN - timedelta(hours=1))
    add_session(db, "fresh", at=FROZEN)
    with db.write() as conn:
        conn.execute(
            insert(SESSIONS).values(
                id="odd",
                agent_id="a",
                run_id="r",
                adapter="codex",
                working_directory="/w",
                status="active",
                started_at=format_ts(FROZEN - timedelta(seconds=30)),
                last_seen_at="2026-09-17T16:26:35+0000",
            )
        )
    asked: list[list[str]] = []
    real = list_reads.admitted_among

    def spying(**arguments: Any) -> set[str]:
        asked.append(sorted(arguments["ids"]))
        return real(**arguments)

    monkeypatch.setattr(list_reads, "admitted_among", spying)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "S")
        assert row_ids(app) == ["old"]
        await press(pilot, "asterisk", "S")
        await settle(pilot)
        assert asked == [["odd"]]
        assert marked_held(app) == {"old": "●", "odd": "", "fresh": ""}
        assert "● 1 marked" in header(app)


async def test_the_palette_offers_the_marks(tmp_path: Path, db: Store) -> None:
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        names = [name for name, _do, _help in session_commands(app.screen)]
        assert "Mark s1" in names and "Mark every session matching the filters" in names
        assert "Clear every mark" not in names
        (mark,) = [do for name, do, _help in session_commands(app.screen) if name == "Mark s1"]
        mark()
        await settle(pilot)
        assert cell(app, "s1", "mark") == "●"
        names = [name for name, _do, _help in session_commands(app.screen)]
        assert "Unmark s1" in names and "Clear every mark" in names


@pytest.mark.parametrize(
    ("width", "marks_keys"),
    [
        (80, []),
        (100, ["space Mark", "u Unmark"]),
        # With marks, the selected session's l and b leave the footer to the marks' keys.
        (120, ["space Mark", "u Unmark", "* Mark all"]),
        (160, ["space Mark", "u Unmark", "* Mark all"]),
    ],
)
async def test_the_footer_keeps_quit_and_help_with_marks(
    tmp_path: Path, db: Store, width: int, marks_keys: list[str]
) -> None:
    """The marks' keys are shown as far as they fit, the app's always."""
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(width, 24)) as pilot:
        await settle(pilot)
        await press(pilot, "space")
        line = screen_text(app).splitlines()[-1]
        assert "q Quit" in line and "? Help" in line, line
        shown = [key for key in ("space Mark", "u Unmark", "* Mark all") if key in line]
        assert shown == marks_keys, line
        assert grid(app).cursor == 0
