"""Groups in the session list, through the real app (issue 9 point 6): g cycles the grouping,
headers show each group's counts by status, enter folds and unfolds, * on a header marks the
group, and the grouping, the folds and the marks outlive refreshes and each other."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from roundtable_console.screens.commands import session_commands
from roundtable_console.screens.list import model as list_model
from roundtable_console.screens.list.grid import GridHeader
from roundtable_console.store.db.database import Store
from roundtable_console.store.reads.listing import Selection
from roundtable_console.store.reads.sessions import count_selected, get_session
from roundtable_console.store.window.layout import GroupHeader
from roundtable_console.store.writes import lifecycle
from tests.console_ways import ConsoleWay
from tests.test_tui_support import (
    FROZEN,
    add_session,
    console,
    filter_line,
    grid,
    notifications,
    press,
    row_ids,
    screen_text,
    selected,
    settle,
    sqlite_url,
)

AGENTS = ("ada", "grace", "linus")
STATUSES = ("active", "paused", "ended")


def seed(db: Store, count: int = 12) -> None:
    """Sessions of three agents, four runs and two workspaces (and some with none)."""
    for number in range(count):
        add_session(
            db,
            f"s{number:02d}",
            agent_id=AGENTS[number % 3],
            run_id=f"run-{number % 4}",
            status=STATUSES[number % 3 if number % 5 else 0],
            at=FROZEN - timedelta(minutes=60 - number),
            metadata={"workspace_id": f"ws-{number % 2}"} if number % 4 else None,
        )


def shown_rows(app: Any) -> list[str]:
    """The list's rows on the terminal, each its first words: a header's text or a session id."""
    lines = screen_text(app).splitlines()
    rows = []
    for line in lines[4:-1]:
        text = line.strip()
        if text.startswith(("▾", "▸")):
            rows.append(text)
        elif text:
            rows.append(text.lstrip("● ").split()[0])
    return rows


def headers(app: Any) -> list[str]:
    return [row for row in shown_rows(app) if row.startswith(("▾", "▸"))]


def held_headers(app: Any) -> list[GroupHeader]:
    return [item for item in app.screen.model.rows if isinstance(item, GroupHeader)]


def store_counts(db: Store, column: str) -> dict[str, dict[str, int]]:
    """Sessions by group and status, as the store holds them."""
    found: dict[str, dict[str, int]] = {}
    with db.read() as conn:
        for session_id in [f"s{n:02d}" for n in range(40)]:
            try:
                session = get_session(db=conn, session_id=session_id)
            except Exception:
                continue
            key = getattr(session, column) if column != "workspace" else None
            if column == "workspace":
                key = session.effective_workspace_id
            counts = found.setdefault(str(key), {})
            counts[session.status] = counts.get(session.status, 0) + 1
    return found


async def test_g_cycles_none_workspace_run_agent_then_none(way: ConsoleWay) -> None:
    """On the store, and through a server (its console routes: the groups counted there)."""
    seed(way.store)
    app = way.console()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert headers(app) == [] and "sorted by started" in filter_line(app)
        await press(pilot, "g")
        assert "grouped by workspace ▲ (g d)" in filter_line(app)
        assert [h.split(" ·")[0] for h in headers(app)] == [
            "▾ workspace (no workspace)",
            "▾ workspace ws-0",
            "▾ workspace ws-1",
        ]
        await press(pilot, "g")
        assert "grouped by run ▲" in filter_line(app)
        assert [h.split(" ·")[0] for h in headers(app)] == [f"▾ run run-{n}" for n in range(4)]
        await press(pilot, "g")
        assert "grouped by agent ▲" in filter_line(app)
        assert [h.split(" ·")[0] for h in headers(app)] == [f"▾ agent {a}" for a in sorted(AGENTS)]
        # Each session under its own agent's header, in start order.
        rows, current = shown_rows(app), None
        for row in rows:
            if row.startswith("▾"):
                current = row.split(" ·")[0].removeprefix("▾ agent ")
            else:
                assert AGENTS[int(row[1:]) % 3] == current, row
        assert "row" in filter_line(app) and "of 15" in filter_line(app)  # 12 sessions, 3 heads
        await press(pilot, "g")
        assert headers(app) == [] and "sorted by started ▲ (o d)" in filter_line(app)
        assert row_ids(app) == [f"s{n:02d}" for n in range(12)]


async def test_headers_show_each_groups_counts_by_status_under_the_filters(
    way: ConsoleWay,
) -> None:
    """On the store, and through a server."""
    db = way.store
    seed(db)
    app = way.console(group="agent")
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        counts = store_counts(db, "agent_id")
        for header in headers(app):
            name = header.split(" ·")[0].removeprefix("▾ agent ")
            by_status = counts[name]
            total = sum(by_status.values())
            assert f"{total} session{'s' if total != 1 else ''}" in header, header
            for status, number in by_status.items():
                assert f"{status} {number}" in header, header
        assert "▾ agent ada · 4 sessions · active 4" in headers(app)
        await press(pilot, "a")  # ended hidden: the counts are the active states' only
        assert headers(app) == [
            "▾ agent ada · 4 sessions · active 4",
            "▾ agent grace · 4 sessions · active 1 · paused 3",
            "▾ agent linus · 1 session · active 1",
        ]
        await press(pilot, "a", "slash", "g", "r", "a", "enter")  # a text filter: counted apart
        await settle(pilot)
        assert headers(app) == ["▾ agent grace · 4 sessions · active 1 · paused 3"]


async def test_enter_on_a_header_folds_and_unfolds_its_group(tmp_path: Path, db: Store) -> None:
    seed(db)
    app = console(sqlite_url(tmp_path), group="agent")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "home")
        ada = shown_rows(app)[:5]
        assert ada[0].startswith("▾ agent ada") and len(ada) == 5
        await press(pilot, "down", "down", "down", "down", "down")  # grace's header
        assert selected(app) is None and app.screen.selected_header() == GroupHeader("grace")
        await press(pilot, "enter")
        assert app.screen.selected_header() == GroupHeader("grace", folded=True)
        assert grid(app).cursor == 5
        rows = shown_rows(app)
        assert rows[5].startswith("▸ agent grace · 4 sessions") and "folded" in rows[5]
        assert rows[6].startswith("▾ agent linus")
        assert not any(AGENTS[int(r[1:]) % 3] == "grace" for r in rows if r.startswith("s"))
        assert "of 11" in filter_line(app)
        assert "toggle_mark" not in app.screen.active_bindings  # no session: nothing to mark
        await press(pilot, "enter")
        rows = shown_rows(app)
        assert rows[5].startswith("▾ agent grace") and rows[6:10] == ["s01", "s04", "s07", "s10"]
        assert grid(app).cursor == 5 and "of 15" in filter_line(app)
        await press(pilot, "down", "enter")  # a session's row still opens its detail
        assert app.screen.id != "session-list"


async def test_star_on_a_header_marks_the_group_under_the_filters(
    tmp_path: Path, db: Store
) -> None:
    seed(db)
    app = console(sqlite_url(tmp_path), group="run")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "a")  # ended hidden
        rows = shown_rows(app)
        run_2 = next(i for i, row in enumerate(rows) if row.startswith("▾ run run-2"))
        await press(pilot, "home", *["down"] * run_2, "asterisk")
        assert "Marked every session of run run-2 matching" in notifications(app)[-1]
        selection = app.screen.marks.selection()
        with db.read() as conn:
            marked = count_selected(db=conn, selection=selection)
            live_of_run = {
                f"s{n:02d}"
                for n in range(12)
                if n % 4 == 2 and get_session(db=conn, session_id=f"s{n:02d}").is_active
            }
        assert marked == len(live_of_run) == 2
        assert f"● {marked} marked" in screen_text(app)
        await press(pilot, "a")  # every session shown again: run-2's ended one is not marked
        marks = {
            session_id: app.screen.marks.is_marked(session)
            for session in app.screen.model.sessions()
            for session_id in [session.id]
        }
        assert {sid for sid, mark in marks.items() if mark} == live_of_run
        assert app.screen.marks.selection() == selection != Selection()


async def test_lifecycle_keys_on_a_header_say_they_act_on_sessions(
    tmp_path: Path, db: Store
) -> None:
    seed(db)
    app = console(sqlite_url(tmp_path), group="agent")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "home")
        for key in "hpst":
            await press(pilot, key)
            assert "The cursor is on the header of agent ada" in notifications(app)[-1], key
        assert app.screen.id == "session-list"  # no dialog opened
        with db.read() as conn:
            assert get_session(db=conn, session_id="s00").status == "active"


async def test_grouping_and_folds_outlive_a_refresh_after_writes(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(db)
    app = console(sqlite_url(tmp_path), group="agent")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "home", "enter")  # ada folded
        add_session(db, "s20", agent_id="ada", at=FROZEN)
        add_session(db, "s21", agent_id="turing", status="failed", at=FROZEN)
        with db.write() as conn:
            lifecycle.pause(db=conn, session_id="s10", actor="op")
        await press(pilot, "ctrl+r")
        await settle(pilot)
        assert "grouped by agent" in filter_line(app)
        assert [h.split(" ·")[0] for h in headers(app)] == [
            "▸ agent ada",
            "▾ agent grace",
            "▾ agent linus",
            "▾ agent turing",
        ]
        assert headers(app)[0].startswith("▸ agent ada · 5 sessions · active 5")
        assert headers(app)[1].startswith("▾ agent grace · 4 sessions · paused 4")
        assert headers(app)[3] == "▾ agent turing · 1 session · failed 1"
        assert shown_rows(app)[-1] == "s21"
        assert "of 13" in filter_line(app)  # 9 sessions shown, 4 headers


async def test_marks_outlive_grouping_changes(tmp_path: Path, db: Store) -> None:
    seed(db)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "down", "space")  # s01, by id
        for _ in range(4):
            await press(pilot, "g")
            marked = {s.id for s in app.screen.model.sessions() if app.screen.marks.is_marked(s)}
            assert marked == {"s01"}
        assert "● 1 marked" in screen_text(app)


async def test_o_leaves_the_grouping_and_says_so(tmp_path: Path, db: Store) -> None:
    seed(db)
    app = console(sqlite_url(tmp_path), group="workspace")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "d")
        assert "grouped by workspace ▼" in filter_line(app)
        assert headers(app)[0].startswith("▾ workspace ws-1")
        assert headers(app)[-1].startswith("▾ workspace (no workspace)")
        # A click on the start column's header flips a grouped list (start is its order
        # within a group); on another column's, it leaves the grouping for that sort.
        clicked = app.screen.query_one(GridHeader)
        clicked.post_message(GridHeader.Clicked("started"))
        await settle(pilot)
        assert "grouped by workspace ▲" in filter_line(app)
        await press(pilot, "o")
        assert headers(app) == [] and "sorted by last seen ▲" in filter_line(app)
        assert "Grouping by workspace left" in notifications(app)[-1]
        await press(pilot, "g")
        clicked.post_message(GridHeader.Clicked("status"))
        await settle(pilot)
        assert headers(app) == [] and "sorted by status ▲" in filter_line(app)


async def test_help_lists_grouping(tmp_path: Path, db: Store) -> None:
    seed(db)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 50)) as pilot:
        await settle(pilot)
        await press(pilot, "question_mark")
        shown = screen_text(app)
        assert "g                 group by workspace, run, agent, then none" in shown
        assert "enter on a group  fold or unfold the group" in shown
        assert "* on a group      mark every session of that group" in shown


async def test_the_console_opens_grouped_from_its_quick_first_read(
    tmp_path: Path, db: Store
) -> None:
    """The configured grouping (config ``group``): the first rows come from sqlite3 alone, in
    the grouping's order, their headers' counts once the store is open."""
    seed(db)
    app = console(sqlite_url(tmp_path), group="agent", staged=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "grouped by agent ▲" in filter_line(app)
        assert headers(app)[0] == "▾ agent ada · 4 sessions · active 4"
        assert shown_rows(app)[:3] == ["▾ agent ada · 4 sessions · active 4", "s00", "s03"]


async def test_a_long_grouped_list_pages_and_jumps_with_headers_in_place(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages of 5, a window of 2 pages: the list is read by keyset page by page, and End and
    Home jump, and every row is where the whole list puts it."""
    for number in range(60):
        add_session(
            db,
            f"s{number:02d}",
            agent_id=f"agent-{number % 7}",
            at=FROZEN - timedelta(minutes=60 - number),
        )
    monkeypatch.setattr(list_model, "RECOUNT_SECONDS", 0.0)
    whole: list[str] = []
    for agent in range(7):
        whole.append(f"agent-{agent}")
        whole += [f"s{n:02d}" for n in range(60) if n % 7 == agent]
    app = console(sqlite_url(tmp_path), group="agent", page_size=5, window_pages=2)
    async with app.run_test(size=(120, 16)) as pilot:
        await settle(pilot)

        def check() -> None:
            model = app.screen.model
            held = [item.key if isinstance(item, GroupHeader) else item.id for item in model.rows]
            assert held == whole[model.start : model.end]
            assert model.row_count == len(whole) == 67

        check()
        for key in ("pagedown",) * 7 + ("end", "pageup", "pageup", "home", "end", "home"):
            await press(pilot, key)
            check()
        await press(pilot, "end")
        assert shown_rows(app)[-1] == "s55" and "row 67 of 67" in filter_line(app)


async def test_the_palette_offers_grouping_and_the_selected_groups_fold_and_mark(
    tmp_path: Path, db: Store
) -> None:
    seed(db)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        names = [name for name, _do, _help in session_commands(app.screen)]
        assert "Group the sessions by workspace" in names
        assert "Fold agent ada" not in names
        await press(pilot, "g", "g", "g", "home")
        entries = {name: do for name, do, _help in session_commands(app.screen)}
        assert "Ungroup the sessions" in entries
        assert "Mark every session of agent ada matching the filters" in entries
        assert "Mark every session matching the filters" not in entries
        entries["Fold agent ada"]()
        await settle(pilot)
        assert app.screen.selected_header() == GroupHeader("ada", folded=True)
        names = [name for name, _do, _help in session_commands(app.screen)]
        assert "Unfold agent ada" in names
