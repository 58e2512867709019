"""``N``: a new session on a host (issue 43 point 1), through the real console on the store and
through a real server: the dialog offers the hosts online, the chosen host's projects and
agents, a worktree with its branch and base, the first prompt and how much the agent asks;
``ctrl+s`` asks the host (a stand-in taking the calls from the store, as the server holding a
host does) to check, then to start; a refusal is said in the dialog, which stays."""

from __future__ import annotations

from pathlib import Path

import pytest

from roundtable_console.screens.dialogs.new_session import NewSessionDialog
from roundtable_console.store.clock import system_clock
from roundtable_console.store.db.database import open_store
from roundtable_console.store.hosts import protocol
from tests.console_ways import ConsoleWay
from tests.helpers import history, session_row
from tests.test_tui_support import notifications, press, screen_text, settle, until
from tests.test_tui_through_host import SIZE, STARTED, StandInHost, on_laptop

BASE = "4" * 40


async def test_n_starts_a_session_on_a_host_and_a_refusal_keeps_the_dialog(
    way: ConsoleWay, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = open_store(way.url)
    try:
        workdir = on_laptop(db, tmp_path, monkeypatch,
                            now=system_clock if way.through_server else None)  # fmt: skip
        place = {"directory": f"{workdir}-wt", "project": str(workdir), "branch": "rt/csv",
                 "base": BASE}  # fmt: skip
        answers = [{"refused": "The branch rt/csv exists already in api: choose another name."},
                   {"ok": place}, {"ok": {**place, **STARTED}}]  # fmt: skip
        app = way.console()
        with StandInHost(db, "laptop", answers) as host:
            async with app.run_test(size=SIZE) as pilot:
                await settle(pilot)
                await press(pilot, "N")
                await until(pilot, lambda: isinstance(app.screen, NewSessionDialog))
                shown = screen_text(app)
                assert "A new session" in shown and "laptop" in shown
                assert "claude-code" in shown, shown
                assert "EDITS: edits go ahead" in shown
                await pilot.click("#new-branch")
                await press(pilot, *"rt/csv")
                await pilot.click("#new-prompt")
                await press(pilot, *"add the csv export", "ctrl+s")
                try:
                    await until(pilot, lambda: "exists already" in screen_text(app))
                except AssertionError:
                    raise AssertionError(screen_text(app)) from None
                assert isinstance(app.screen, NewSessionDialog)  # it stays, saying why
                await press(pilot, "ctrl+s")
                await until(pilot, lambda: not isinstance(app.screen, NewSessionDialog))
                said = notifications(app)
        assert [op for op, _ in host.asked] == [protocol.START] * 3
        (_, refused), (_, checked), (_, started) = host.asked
        assert checked["check"] is True and "check" not in started
        assert started["project"] == str(workdir) and started["agent"] == "claude-code"
        assert started["worktree"] == {"branch": "rt/csv", "base": None}
        assert started["prompt"] == "add the csv export" and started["ask"] == "edits"
        session_id = started["session_id"]
        row = session_row(db, session_id)
        assert (row["status"], row["host"], row["working_directory"]) == (
            "starting", "laptop", f"{workdir}-wt")  # fmt: skip
        assert [kind for kind, _ in history(db, session_id)] == ["registered", "launched"]
        assert any(f"Started session {session_id} on laptop" in line for line in said), said
    finally:
        db.dispose()


async def test_n_with_no_host_online_says_so(
    way: ConsoleWay, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = way.console()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "N")
        await until(pilot, lambda: isinstance(app.screen, NewSessionDialog))
        assert "No host is online" in screen_text(app)
        await press(pilot, "escape")
        assert not isinstance(app.screen, NewSessionDialog)
