"""The session detail's Changes tab (``9``, issue 43 point 2), through the real console on the
store and through a real server: a page of what the session changed is asked of its host (a
stand-in here, taking the call from the store as the server holding a host does), shown with its
files and counts and its patch coloured as a diff, literal text (markup and escapes shown as
they are); ``n`` reads the next page; a session no host can be asked for says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from roundtable_console.store.clock import system_clock
from roundtable_console.store.db.database import open_store
from roundtable_console.store.hosts import protocol
from tests.console_ways import ConsoleWay
from tests.test_tui_support import press, screen_text, settle
from tests.test_tui_through_host import SIZE, StandInHost, on_laptop

BASE = "3" * 40
FIRST = {
    "directory": "/home/dev/worktrees/api-1/rt-csv",
    "branch": "rt/csv",
    "base": BASE,
    "commits": [{"sha": "a" * 40, "subject": "Add the CSV export"}],
    "files": [
        {"path": "export.py", "status": "added", "added": 2, "deleted": 0},
        {"path": "logo.png", "status": "untracked", "added": None, "deleted": None},
    ],
    "patch": "diff --git a/export.py b/export.py\n--- /dev/null\n+++ b/export.py\n"
    "@@ -0,0 +1,2 @@\n+def export():  # [bold]x[/] \x1b[31mred\n+    return 'csv'\n",
    "offset": 0,
    "next_offset": 150,
}
SECOND = {**FIRST, "patch": "+the second page\n", "offset": 150, "next_offset": None}


async def test_the_changes_tab_reads_a_page_through_the_host_and_n_the_next(
    way: ConsoleWay, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = open_store(way.url)
    try:
        on_laptop(db, tmp_path, monkeypatch, now=system_clock if way.through_server else None)
        app = way.console()
        with StandInHost(db, "laptop", [{"ok": FIRST}, {"ok": SECOND}]) as host:
            async with app.run_test(size=SIZE) as pilot:
                await settle(pilot)
                await press(pilot, "enter", "9")
                shown = screen_text(app)
                assert "branch rt/csv" in shown and "against 333333333333" in shown
                assert "Add the CSV export" in shown
                assert "+2" in shown and "export.py" in shown and "binary" in shown
                assert "[bold]x[/]" in shown and "\\e[31mred" in shown  # literal, escaped
                assert "n reads the next page" in shown
                await press(pilot, "n")
                shown = screen_text(app)
                assert "+the second page" in shown and "from byte 150" in shown
                assert "n reads the next page" not in shown
                await press(pilot, "n")  # no page after the last: nothing more is asked
        assert [op for op, _ in host.asked] == [protocol.CHANGES, protocol.CHANGES]
        (_, first), (_, second) = host.asked
        assert first["session"]["id"] == "s-laptop" and first["base"] is None
        assert (first["offset"], second["offset"]) == (0, 150)
    finally:
        db.dispose()


async def test_the_changes_tab_says_why_there_are_none(
    way: ConsoleWay, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = open_store(way.url)
    try:
        on_laptop(db, tmp_path, monkeypatch, now=system_clock if way.through_server else None)
        app = way.console()
        refused = {"refused": "The session does not run on the host laptop."}
        with StandInHost(db, "laptop", [refused]):
            async with app.run_test(size=SIZE) as pilot:
                await settle(pilot)
                await press(pilot, "enter", "9")
                assert "does not run on the host laptop" in screen_text(app)
    finally:
        db.dispose()


async def test_f_finishes_a_worktree_session_and_asks_before_discarding(
    way: ConsoleWay, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``F``: its host asked to remove the worktree; what is not committed is named and kept
    until ``y`` again discards it; the session ends, its branch kept, the commands said."""
    import json

    from sqlalchemy import text

    from roundtable_console.screens.dialogs.finish import FinishDialog
    from tests.helpers import session_row
    from tests.test_tui_support import notifications, until

    db = open_store(way.url)
    try:
        on_laptop(db, tmp_path, monkeypatch, now=system_clock if way.through_server else None)
        tree = {"path": "/home/dev/wt/api-1/rt-csv", "project": "/home/dev/src/api",
                "branch": "rt/csv", "base": BASE}  # fmt: skip
        with db.write() as conn:
            conn.execute(text("UPDATE agent_sessions SET metadata_json = :m WHERE id = 's-laptop'"),
                         {"m": json.dumps({"hooks": "claude-code", "worktree": tree})})  # fmt: skip
        unclean = {"finished": False, "uncommitted": ["draft.md"], "uncommitted_count": 1,
                   "branch": "rt/csv"}  # fmt: skip
        done = {**unclean, "finished": True, "directory": tree["path"], "project": tree["project"]}
        app = way.console()
        with StandInHost(db, "laptop", [{"ok": unclean}, {"ok": done}]) as host:
            async with app.run_test(size=SIZE) as pilot:
                await settle(pilot)
                await press(pilot, "F")
                await until(pilot, lambda: isinstance(app.screen, FinishDialog))
                assert "removes its worktree and keeps its" in screen_text(app)
                await press(pilot, "y")
                await until(pilot, lambda: "draft.md" in screen_text(app))
                assert "y discards them" in screen_text(app)
                assert isinstance(app.screen, FinishDialog)
                await press(pilot, "y")
                await until(pilot, lambda: not isinstance(app.screen, FinishDialog))
                said = notifications(app)
        assert [args["discard"] for _, args in host.asked] == [False, True]
        assert session_row(db, "s-laptop")["status"] == "finished"
        assert any("merge rt/csv" in line for line in said), said
    finally:
        db.dispose()
