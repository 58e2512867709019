"""Lifecycle actions on every marked session (issue 9 point 4), through the real app: the keys,
the preview dialog, the run and its progress, the outcome, the marks after it, and the store's
rows and history. Without marks the keys act on the selected session as always
(tests/test_tui_actions.py, unchanged)."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import ProgressBar, TextArea

from roundtable_console.screens.bulk.dialog import BulkConfirmDialog, BulkTerminateDialog
from roundtable_console.screens.bulk.run import BulkRunPanel
from roundtable_console.screens.list.screen import SessionListScreen
from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import DatabaseUnavailable
from roundtable_console.store.reads.listing import FilterSelection, Selection, SessionFilter
from roundtable_console.store.writes import bulk, bulk_plan, bulk_run
from roundtable_console.store.writes.bulk import session_key
from tests.helpers import count, history, session_row
from tests.test_tui_support import (
    FROZEN,
    OPERATOR,
    add_agent,
    add_claim,
    add_session,
    console,
    footer,
    notifications,
    press,
    screen_text,
    selected,
    settle,
    sqlite_url,
)


def last_note(app: Any) -> str:
    return notifications(app)[-1]


def list_screen(app: Any) -> SessionListScreen:
    screen = app.list_screen
    assert isinstance(screen, SessionListScreen)
    return screen


def stored_keys(db: Store) -> list[tuple[str, str, str]]:
    with db.read() as conn:
        rows = conn.exec_driver_sql("SELECT key, action, session_id FROM idempotency_keys")
        return sorted(tuple(row) for row in rows)


def seed_fleet(db: Store) -> None:
    """s1, s2, s4 active; s3 paused; s5 ended: a second apart, in this order."""
    for number, status in enumerate(("active", "active", "paused", "active", "ended"), 1):
        add_session(db, f"s{number}", status=status, at=FROZEN + timedelta(seconds=number))


async def test_with_marks_p_previews_then_pauses_every_marked_session(
    tmp_path: Path, db: Store
) -> None:
    seed_fleet(db)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "space", "down", "down", "space", "down", "space")  # s1, s3, s4
        assert selected(app) == "s4"
        await press(pilot, "p")
        dialog = app.screen
        assert isinstance(dialog, BulkConfirmDialog)
        shown = screen_text(app)
        assert "Pause the marked sessions?" in shown
        assert "Pause applies to 2 of the 3 marked sessions:" in shown
        assert "s1  would pause (status 'active')" in shown
        assert "s4  would pause (status 'active')" in shown
        assert "1 will be skipped (the action does not apply; they stay marked):" in shown
        assert "• 1 already paused: s3" in shown
        assert "y pause 2 sessions · n no · escape cancel" in shown
        assert count(db, "agent_session_events") == 5  # the preview wrote nothing
        await press(pilot, "y")
        assert not isinstance(app.screen, BulkConfirmDialog)
        note = last_note(app)
        assert note.startswith("2 done, 1 skipped, 0 failed.")
        assert "1 skipped: already paused" in note
        assert "Done ones are unmarked; the others stay marked." in note
        marks = list_screen(app).marks
        assert marks.selection() == Selection(ids=frozenset({"s3"}))
        assert "● 1 marked" in screen_text(app)
    assert [session_row(db, f"s{n}")["status"] for n in range(1, 6)] == [
        "paused", "active", "paused", "paused", "ended",
    ]  # fmt: skip
    for session_id in ("s1", "s4"):
        event, payload = history(db, session_id)[-1]
        assert (event, payload["actor"], payload["previous_status"]) == (
            "paused", OPERATOR, "active",
        )  # fmt: skip
    assert [event for event, _ in history(db, "s3")] == ["registered"]
    # Each session has its own key, derived from the dialog's run key.
    assert stored_keys(db) == sorted(
        (session_key(dialog.run_key, s), "pause", s) for s in ("s1", "s4")
    )


async def test_n_and_escape_cancel_the_preview_and_write_nothing(tmp_path: Path, db: Store) -> None:
    seed_fleet(db)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "space", "down", "space")
        for key in ("n", "escape"):
            await press(pilot, "s")
            assert isinstance(app.screen, BulkConfirmDialog)
            await press(pilot, key)
            assert not isinstance(app.screen, BulkConfirmDialog)
            assert "Stop cancelled: nothing was done to the marked sessions." in last_note(app)
        await press(pilot, "s", "q")  # q does not quit under the preview
        assert isinstance(app.screen, BulkConfirmDialog)
        assert "Answer first" in last_note(app)
        await press(pilot, "n")
        assert list_screen(app).marks.selection() == Selection(ids=frozenset({"s1", "s2"}))
    assert count(db, "agent_session_events") == 5
    assert count(db, "idempotency_keys") == 0


async def test_without_marks_the_keys_act_on_the_selected_session(
    tmp_path: Path, db: Store
) -> None:
    seed_fleet(db)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "space", "space", "p")  # marked, then unmarked: no marks
        assert not isinstance(app.screen, BulkConfirmDialog)
        assert "Paused s1 (active → paused)." in last_note(app)
    assert session_row(db, "s2")["status"] == "active"


async def test_the_footer_says_the_keys_act_on_the_marked_sessions(
    tmp_path: Path, db: Store
) -> None:
    seed_fleet(db)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        line = screen_text(app).splitlines()[-1]
        assert "h Heartbeat  p Pause  s Stop" in line and "l Log" in line
        await press(pilot, "space", "down", "space")
        line = screen_text(app).splitlines()[-1]
        assert "h Beat ●2  p Pause ●2  s Stop ●2  r Resume ●2  t Term ●2" in line
        assert "u Unmark" in line and "q Quit" in line
        assert "l Log" not in line  # the selected session's keys: still bound, in help
        # Every key is offered, whatever the selected session allows: the preview judges each.
        labels = {key.action: (key.description, key.enabled) for key in footer(app).keys()}
        assert labels["resume"] == ("Resume ●2", True)
        await press(pilot, "u")
        line = screen_text(app).splitlines()[-1]
        assert "p Pause  s Stop" in line and "l Log" in line


async def test_a_filter_mark_counts_in_the_footer_and_every_matching_session_is_acted_on(
    tmp_path: Path, db: Store
) -> None:
    for number in range(12):
        add_session(db, f"a{number:02d}", agent_id="alpha", at=FROZEN + timedelta(seconds=number))
    add_session(db, "other", agent_id="beta", at=FROZEN + timedelta(hours=1))
    app = console(sqlite_url(tmp_path), page_size=5, window_pages=2)
    async with app.run_test(size=(120, 16)) as pilot:
        await settle(pilot)
        await press(pilot, "slash", *"alpha", "enter", "asterisk", "escape")
        await press(pilot, "down", "space")  # a01 unmarked: excluded from the filter mark
        assert "s Stop ●11" in screen_text(app).splitlines()[-1]
        await press(pilot, "s")
        assert "Stop applies to 11 of the 11 marked sessions:" in screen_text(app)
        await press(pilot, "y")
        assert last_note(app).startswith("11 done, 0 skipped, 0 failed.")
        (chosen,) = list_screen(app).marks.selection().by_filter
        assert chosen.excluded == {f"a{n:02d}" for n in range(12)}
        assert "● 0 marked" in screen_text(app)
    statuses = {f"a{n:02d}": session_row(db, f"a{n:02d}")["status"] for n in range(12)}
    assert statuses == {**dict.fromkeys(statuses, "stopped"), "a01": "active"}
    assert session_row(db, "other")["status"] == "active"


async def test_terminate_previews_the_claims_of_every_agent_and_takes_one_impact(
    tmp_path: Path, db: Store
) -> None:
    add_session(db, "s1", agent_id="ada")
    add_session(db, "s2", agent_id="bob", at=FROZEN + timedelta(seconds=1))
    add_session(db, "s3", agent_id="cy", at=FROZEN + timedelta(seconds=2))
    add_session(db, "s4", agent_id="dee", status="ended", at=FROZEN + timedelta(seconds=3))
    add_claim(db, "c1", agent_id="ada", resource_id="src/api.py", expires_in=timedelta(hours=1))
    add_claim(db, "c2", agent_id="bob", resource_id="src/db.py", expires_in=-timedelta(hours=1))
    add_claim(db, "c3", agent_id="dee", resource_id="src/ui.py", expires_in=timedelta(hours=1))
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 50)) as pilot:
        await settle(pilot)
        await press(pilot, "asterisk", "t")
        dialog = app.screen
        assert isinstance(dialog, BulkTerminateDialog)
        assert isinstance(app.focused, TextArea)
        shown = screen_text(app)
        assert "Terminate applies to 3 of the 4 marked sessions:" in shown
        assert "Claims held by ada: 1 live, 0 expired but not released" in shown
        assert "Claims held by bob: 0 live, 1 expired but not released" in shown
        assert "src/api.py" in shown and "src/db.py" in shown
        assert "src/ui.py" not in shown  # dee's only session is ended: not concerned
        assert "Impact details (required: their agents hold claims)" in shown
        assert "It releases no claim, cancels no task, resolves no proposal" in shown
        await press(pilot, "ctrl+s")
        assert app.screen is dialog
        assert "Their agents hold active claims: describe the impact" in screen_text(app)
        await pilot.press(*"Eve picks up the api work")
        await press(pilot, "ctrl+s")
        assert app.screen is not dialog
        assert last_note(app).startswith("3 done, 1 skipped, 0 failed.")
    for session_id in ("s1", "s2", "s3"):
        assert session_row(db, session_id)["status"] == "terminated"
        event, payload = history(db, session_id)[-1]
        assert (event, payload["impact_details"]) == ("terminated", "Eve picks up the api work")
    assert history(db, "s2")[-1][1]["active_claims"] == ["c2"]
    assert session_row(db, "s4")["status"] == "ended"
    assert count(db, "claims") == 3  # nothing released


async def test_failed_ones_stay_marked_and_a_retry_reuses_the_run_key(
    tmp_path: Path, db: Store
) -> None:
    """Resume: agent-2 is not in the store, so its session fails and stays marked; s1 is done
    and unmarked. r again, the marks as the run left them: the same run key."""
    add_agent(db, "agent-1")
    add_session(db, "s1", agent_id="agent-1", status="paused")
    add_session(db, "s2", agent_id="agent-2", status="stopped", at=FROZEN + timedelta(seconds=1))
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "asterisk", "r")
        first = app.screen
        assert isinstance(first, BulkConfirmDialog) and not first.retrying
        # The preview cannot know the agent is missing (checked as it runs): both would resume.
        assert "Resume applies to 2 of the 2 marked sessions:" in screen_text(app)
        await press(pilot, "y")
        note = last_note(app)
        assert note.startswith("1 done, 0 skipped, 1 failed.")
        assert "1 failed: The session's agent is not in the store" in note
        assert "r again retries them under the same run key" in note
        marks = list_screen(app).marks
        assert marks.selection() == Selection(
            by_filter=(FilterSelection(SessionFilter(), frozenset({"s1"})),)
        )
        add_agent(db, "agent-2")
        await press(pilot, "r")
        retry = app.screen
        assert isinstance(retry, BulkConfirmDialog)
        assert retry.retrying and retry.run_key == first.run_key
        assert "Retrying the last resume under its run key" in screen_text(app)
        await press(pilot, "y")
        assert last_note(app).startswith("1 done, 0 skipped, 0 failed.")
        await press(pilot, "r")  # the run ended cleanly: a new key
        fresh = app.screen
        assert isinstance(fresh, BulkConfirmDialog)
        assert not fresh.retrying and fresh.run_key != first.run_key
        assert "Resume applies to 0 of the 0 marked sessions." in screen_text(app)
        await press(pilot, "y")
        assert app.screen is fresh and "nothing to resume" in screen_text(app)
        await press(pilot, "n")
    assert stored_keys(db) == sorted(
        (session_key(first.run_key, s), "resume", s) for s in ("s1", "s2")
    )
    assert [session_row(db, s)["status"] for s in ("s1", "s2")] == ["resuming", "resuming"]


async def test_a_retry_under_the_kept_key_replays_what_was_done(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose last transaction committed but could not say so: its sessions are reported
    failed and stay marked. The retry, under the same run key, replays them: nothing twice."""
    seed_fleet(db)
    real = bulk_run.run_bulk

    def lost_answer(**arguments: Any) -> Any:
        outcome = real(**{**arguments, "on_items": lambda _items: None})
        failed = bulk.Tally(outcome.tally.keep)
        for item in outcome.tally.items:
            failed.add(bulk.BulkItem(item.session_id, "failed", "database_unavailable", "gone"))
        return bulk_run.BulkOutcome(outcome.action, outcome.run_key, outcome.total, failed)

    monkeypatch.setattr(bulk_run, "run_bulk", lost_answer)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "space", "down", "space", "h")  # s1, s2: heartbeat twice would show
        first = app.screen
        await press(pilot, "y")
        assert last_note(app).startswith("0 done, 0 skipped, 2 failed.")
        monkeypatch.setattr(bulk_run, "run_bulk", real)
        await press(pilot, "h")
        retry = app.screen
        assert isinstance(retry, BulkConfirmDialog) and retry.run_key == first.run_key
        shown = screen_text(app)
        assert "2 of them already done under this run's key (replayed, not applied again)" in shown
        await press(pilot, "y")
        note = last_note(app)
        assert note.startswith("2 done, 0 skipped, 0 failed.")
        assert "2 done: already done under this run's key (replayed, not applied again)" in note
        assert not list_screen(app).marks
    for session_id in ("s1", "s2"):
        assert [event for event, _ in history(db, session_id)] == ["registered", "heartbeat"]


class Gate:
    """Holds a run after each transaction until the test lets it go on."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.reached = threading.Event()

    def wrap(self, real: Any) -> Any:
        def run(**arguments: Any) -> Any:
            report = arguments["progress"]

            def held(done: int, total: int) -> None:
                report(done, total)
                if done:
                    self.reached.set()
                    assert self.go.wait(10)
                    self.go.clear()

            return real(**{**arguments, "progress": held})

        return run


async def wait_for(pilot: Any, event: threading.Event) -> None:
    for _ in range(200):
        if event.is_set():
            event.clear()
            return
        await pilot.pause(0.02)
    raise AssertionError("the run did not get there")


async def test_a_run_of_many_shows_progress_keeps_the_list_usable_and_escape_cancels(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    for number in range(60):
        add_session(db, f"s{number:02d}", at=FROZEN + timedelta(seconds=number))
    monkeypatch.setattr(bulk_run, "BATCH_SESSIONS", 20)
    gate = Gate()
    monkeypatch.setattr(bulk_run, "run_bulk", gate.wrap(bulk_run.run_bulk))
    app = console(sqlite_url(tmp_path), page_size=10, window_pages=2)
    async with app.run_test(size=(120, 20)) as pilot:
        await settle(pilot)
        await press(pilot, "asterisk", "p")
        await pilot.press("y")
        await wait_for(pilot, gate.reached)  # the first transaction (20) committed
        await pilot.pause()
        panel = app.screen.query_one(BulkRunPanel)
        bar = panel.query_one(ProgressBar)
        assert bar.display and (bar.progress, bar.total) == (20, 60)
        assert "Pausing 60 sessions: 20 done · escape cancels" in screen_text(app)
        # The console answers keys meanwhile: the cursor moves, a row opens and closes.
        await pilot.press("down", "down")
        await pilot.pause()
        assert selected(app) == "s02"
        await pilot.press("escape")  # cancels the run (no text filter is open)
        await pilot.pause()
        assert "cancelling after the session in hand" in screen_text(app)
        gate.go.set()
        await settle(pilot)
        assert not app.screen.query(BulkRunPanel)
        note = last_note(app)
        assert note.startswith("Cancelled after 20 of 60 sessions: 20 done, 0 skipped, 0 failed.")
        assert "p again retries them under the same run key" in note
        (chosen,) = list_screen(app).marks.selection().by_filter
        assert chosen.excluded == {f"s{n:02d}" for n in range(20)}
        assert "● 40 marked" in screen_text(app)
    statuses = [session_row(db, f"s{n:02d}")["status"] for n in range(60)]
    assert statuses == ["paused"] * 20 + ["active"] * 40


async def test_a_small_run_says_it_runs_without_a_bar_and_keys_wait_for_it(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_fleet(db)
    monkeypatch.setattr(bulk_run, "BATCH_SESSIONS", 1)
    gate = Gate()
    monkeypatch.setattr(bulk_run, "run_bulk", gate.wrap(bulk_run.run_bulk))
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "space", "down", "space", "p")
        await pilot.press("y")
        await wait_for(pilot, gate.reached)
        await pilot.pause()
        bar = app.screen.query_one(BulkRunPanel).query_one(ProgressBar)
        assert not bar.display
        assert "Pausing 2 sessions: 1 done" in screen_text(app)
        await pilot.press("s")  # another bulk action waits for this one
        await pilot.pause()
        assert "A pause of marked sessions is running" in last_note(app)
        assert not isinstance(app.screen, BulkConfirmDialog)
        gate.go.set()
        await wait_for(pilot, gate.reached)
        gate.go.set()
        await settle(pilot)
        assert last_note(app).startswith("2 done, 0 skipped, 0 failed.")
    assert [session_row(db, s)["status"] for s in ("s1", "s2")] == ["paused", "paused"]


async def test_help_says_what_the_keys_do_with_marks(tmp_path: Path, db: Store) -> None:
    seed_fleet(db)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 60)) as pilot:
        await settle(pilot)
        await press(pilot, "question_mark")
        shown = " ".join(screen_text(app).replace("│", " ").split())
        assert "with marks, act on every marked session" in shown
        assert "cancel a bulk run between batches" in shown


async def test_the_palette_offers_the_actions_on_the_marked_sessions(
    tmp_path: Path, db: Store
) -> None:
    seed_fleet(db)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "space", "down", "space", "ctrl+p")
        await pilot.press(*"Stop the 2")
        await settle(pilot)
        shown = screen_text(app)
        assert "Stop the 2 marked sessions" in shown
        assert "Stop s2" not in shown  # not the selected session's entry: the keys act on marks
        await press(pilot, "enter")
        assert isinstance(app.screen, BulkConfirmDialog)
        assert "Stop applies to 2 of the 2 marked sessions:" in screen_text(app)
        await press(pilot, "y")
    assert [session_row(db, s)["status"] for s in ("s1", "s2")] == ["stopped", "stopped"]


async def test_the_detail_screen_acts_on_its_own_session_whatever_is_marked(
    tmp_path: Path, db: Store
) -> None:
    seed_fleet(db)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "space", "down", "space", "enter", "p")
        assert not isinstance(app.screen, BulkConfirmDialog)
        assert "Paused s2 (active → paused)." in last_note(app)
        await press(pilot, "escape")
        assert list_screen(app).marks.selection() == Selection(ids=frozenset({"s1", "s2"}))
    assert [session_row(db, s)["status"] for s in ("s1", "s2")] == ["active", "paused"]


async def test_a_preview_that_cannot_be_read_says_why_and_y_reads_it_again(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_fleet(db)
    real = bulk_plan.plan_bulk
    calls: list[str] = []

    def flaky(*arguments: Any, **options: Any) -> Any:
        calls.append("read")
        if len(calls) == 1:
            raise DatabaseUnavailable("The database is unavailable: gone. Retry.")
        return real(*arguments, **options)

    monkeypatch.setattr(bulk_plan, "plan_bulk", flaky)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "space", "down", "space", "p")
        dialog = app.screen
        shown = screen_text(app)
        assert "Could not read the marked sessions: The database is unavailable" in shown
        assert "Press y to read them again." in shown
        await press(pilot, "y")  # reads again: nothing runs yet
        assert app.screen is dialog and len(calls) == 2
        assert "Pause applies to 2 of the 2 marked sessions:" in screen_text(app)
        await press(pilot, "y")
        assert last_note(app).startswith("2 done, 0 skipped, 0 failed.")


async def test_a_run_that_cannot_start_keeps_the_marks_and_its_key(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_fleet(db)
    real = bulk_run.run_bulk

    def unavailable(**_arguments: Any) -> Any:
        raise DatabaseUnavailable("The database is unavailable: gone. Retry.")

    monkeypatch.setattr(bulk_run, "run_bulk", unavailable)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "space", "down", "space", "s")
        first = app.screen
        assert isinstance(first, BulkConfirmDialog)
        await press(pilot, "y")
        assert not app.screen.query(BulkRunPanel)
        note = last_note(app)
        assert note.startswith("Could not stop the marked sessions: The database is unavailable")
        assert "0 done before it stopped" in note and "s again retries them" in note
        assert list_screen(app).marks.selection() == Selection(ids=frozenset({"s1", "s2"}))
        monkeypatch.setattr(bulk_run, "run_bulk", real)
        await press(pilot, "s")
        retry = app.screen
        assert isinstance(retry, BulkConfirmDialog) and retry.run_key == first.run_key
        await press(pilot, "y")
        assert last_note(app).startswith("2 done, 0 skipped, 0 failed.")
    assert stored_keys(db) == sorted(
        (session_key(first.run_key, s), "stop", s) for s in ("s1", "s2")
    )
