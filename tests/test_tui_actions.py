"""Lifecycle keys through the real app, asserting on the screen and on the store."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from textual import events
from textual.widgets import TextArea

from roundtable_console.screens.dialogs.confirm import ConfirmActionDialog
from roundtable_console.screens.dialogs.terminate import TerminateDialog
from roundtable_console.screens.help import HelpScreen
from roundtable_console.store.clock import fixed_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.writes import agent_writes
from tests.conftest import FakeClock
from tests.helpers import count, history, session_row
from tests.test_tui_support import (
    FROZEN,
    OPERATOR,
    add_agent,
    add_claim,
    add_session,
    cell,
    console,
    dimmed_keys,
    footer,
    footer_keys,
    notifications,
    press,
    screen_text,
    selected,
    settle,
    sqlite_url,
)

LATER = FROZEN + timedelta(seconds=30)


def last_note(app) -> str:  # type: ignore[no-untyped-def]
    return notifications(app)[-1]


async def test_heartbeat_records_operator_and_time(tmp_path: Path, db: Store) -> None:
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path), clock=FakeClock(LATER))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "h")
        assert "Heartbeat recorded for s1." in last_note(app)
        assert cell(app, "s1", "seen") == "0s ago"
    row = session_row(db, "s1")
    assert row["last_seen_at"] == "2026-09-17T17:27:05.000000Z"
    event, payload = history(db, "s1")[-1]
    assert event == "heartbeat" and payload["actor"] == OPERATOR


async def test_pause_then_footer_offers_resume_not_pause(tmp_path: Path, db: Store) -> None:
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert {"heartbeat", "pause", "stop", "terminate"} <= footer_keys(app)
        assert "resume" not in footer_keys(app)
        await press(pilot, "p")
        assert "Paused s1 (active → paused)." in last_note(app)
        assert "paused" in screen_text(app)
        assert "pause" not in footer_keys(app)
        assert {"resume", "stop", "terminate", "heartbeat"} <= footer_keys(app)
        events_before = len(history(db, "s1"))
        await press(pilot, "p")  # not offered: the key says why instead
        assert "Cannot pause s1: its status is 'paused'" in last_note(app)
        assert len(history(db, "s1")) == events_before
    assert session_row(db, "s1")["status"] == "paused"
    assert history(db, "s1")[-1][1]["actor"] == OPERATOR


async def test_footer_for_a_terminal_session_offers_no_lifecycle_action(
    tmp_path: Path, db: Store
) -> None:
    add_session(db, "s1", status="terminated")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        lifecycle = {"heartbeat", "pause", "stop", "resume", "terminate"}
        assert not lifecycle & footer_keys(app)
        # Shown dimmed, in their places: the footer does not shift from row to row.
        assert lifecycle <= dimmed_keys(app)
        footer = screen_text(app).splitlines()[-1]
        assert "p Pause" in footer and "t Terminate" in footer
        await press(pilot, "t")
        assert "Cannot terminate s1" in last_note(app)
        assert not isinstance(app.screen, TerminateDialog)


async def test_stop_asks_first_and_n_does_nothing(tmp_path: Path, db: Store) -> None:
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "s")
        assert isinstance(app.screen, ConfirmActionDialog)
        assert "Stop s1 (now active)?" in screen_text(app)
        await press(pilot, "n")
        assert not isinstance(app.screen, ConfirmActionDialog)
        assert "Stop cancelled: nothing was done to s1." in last_note(app)
        assert session_row(db, "s1")["status"] == "active"
        await press(pilot, "s", "escape")
        assert session_row(db, "s1")["status"] == "active"
        await press(pilot, "s", "y")
        assert "Stopped s1 (active → stopped)." in last_note(app)
    row = session_row(db, "s1")
    assert row["status"] == "stopped" and row["ended_at"] == "2026-09-17T17:26:35.000000Z"
    assert history(db, "s1")[-1] == (
        "stopped",
        {
            "actor": OPERATOR,
            "ended_at": row["ended_at"],
            "last_seen_at": row["ended_at"],
            "previous_status": "active",
            "status": "stopped",
        },
    )


async def test_resume_refusal_stays_in_dialog_and_retry_reuses_the_key(
    tmp_path: Path, db: Store
) -> None:
    add_session(db, "s1", agent_id="agent-1", status="paused")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "r")
        dialog = app.screen
        assert isinstance(dialog, ConfirmActionDialog)
        await press(pilot, "y")
        assert app.screen is dialog  # refused: the dialog stays so a retry reuses its key
        assert "[agent_not_found]" in screen_text(app)
        assert "not in the store" in screen_text(app)
        assert count(db, "idempotency_keys") == 0
        assert session_row(db, "s1")["status"] == "paused"
        add_agent(db, "agent-1")
        await press(pilot, "y")
        assert app.screen is not dialog
        assert "Resuming s1 (paused → resuming)." in last_note(app)
    with db.read() as conn:
        keys = conn.exec_driver_sql("SELECT key, action, session_id FROM idempotency_keys").all()
    assert [tuple(k) for k in keys] == [(dialog.idempotency_key, "resume", "s1")]
    assert session_row(db, "s1")["status"] == "resuming"


async def test_each_dialog_has_its_own_key(tmp_path: Path, db: Store) -> None:
    add_session(db, "s1", status="paused")
    add_agent(db, "agent-1")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "r")
        first = app.screen
        await press(pilot, "n", "r")
        second = app.screen
        assert isinstance(first, ConfirmActionDialog) and isinstance(second, ConfirmActionDialog)
        assert first.idempotency_key != second.idempotency_key
        await press(pilot, "n")


async def test_conflict_reloads_the_row_and_says_what_changed(tmp_path: Path, db: Store) -> None:
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "s")
        # Meanwhile the agent pauses itself.
        with db.write() as conn:
            agent_writes.heartbeat(
                db=conn, session_id="s1", status="paused", clock=fixed_clock(LATER)
            )
        await press(pilot, "y")
        assert not isinstance(app.screen, ConfirmActionDialog)
        note = last_note(app)
        assert "[session_transition_conflict]" in note
        assert "status: active → paused" in note
        assert "version: 0 → 1" in note
        assert "Nothing was done" in note
        assert cell(app, "s1", "status") == "paused"
        assert "resume" in footer_keys(app)
    assert session_row(db, "s1")["status"] == "paused"


async def test_terminate_lists_claims_refuses_blank_then_terminates(
    tmp_path: Path, db: Store
) -> None:
    add_session(db, "s1", agent_id="agent-1")
    add_claim(
        db, "c1", agent_id="agent-1", resource_id="src/live.py", expires_in=timedelta(hours=1)
    )
    add_claim(
        db, "c2", agent_id="agent-1", resource_id="src/old.py", expires_in=-timedelta(hours=1)
    )
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "t")
        dialog = app.screen
        assert isinstance(dialog, TerminateDialog)
        assert isinstance(app.focused, TextArea)
        shown = screen_text(app)
        assert "Claims held by agent-1: 1 live, 1 expired but not released" in shown
        assert "src/live.py" in shown
        assert "Expired, still held until someone releases them:" in shown
        assert shown.index("src/live.py") < shown.index("Expired") < shown.index("src/old.py")
        assert "It releases no claim, cancels no task, resolves no proposal" in shown
        assert "required: the agent holds claims" in shown
        await press(pilot, "ctrl+s")
        assert app.screen is dialog
        assert "describe the impact of terminating" in screen_text(app)
        assert session_row(db, "s1")["status"] == "active"
        await pilot.press(*"Bob takes over src/live.py")
        await press(pilot, "ctrl+s")
        assert app.screen is not dialog
        assert "Terminated s1 (active → terminated)." in last_note(app)
        assert "releases no claim" in last_note(app)
    assert session_row(db, "s1")["status"] == "terminated"
    event, payload = history(db, "s1")[-1]
    assert event == "terminated"
    assert payload["impact_details"] == "Bob takes over src/live.py"
    assert payload["actor"] == OPERATOR
    assert count(db, "claims") == 2  # nothing released


async def test_terminate_without_claims_needs_no_text_and_escape_cancels(
    tmp_path: Path, db: Store
) -> None:
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "t")
        assert "The agent holds no active claims." in screen_text(app)
        assert "Impact details (optional)" in screen_text(app)
        await press(pilot, "escape")
        assert not isinstance(app.screen, TerminateDialog)
        assert "Terminate cancelled" in last_note(app)
        assert session_row(db, "s1")["status"] == "active"
        await press(pilot, "t", "ctrl+s")
        assert session_row(db, "s1")["status"] == "terminated"
        assert history(db, "s1")[-1][1]["impact_details"] is None


async def test_command_palette_offers_actions_for_the_selected_session(
    tmp_path: Path, db: Store
) -> None:
    add_session(db, "sess-42")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "ctrl+p")
        await pilot.press(*"Pause sess-42")
        await settle(pilot)
        assert "Pause sess-42" in screen_text(app)
        await press(pilot, "enter")
        await settle(pilot)
        assert "Paused sess-42" in last_note(app)
    assert session_row(db, "sess-42")["status"] == "paused"


async def test_help_lists_keys_and_escape_returns(tmp_path: Path, db: Store) -> None:
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        shown = screen_text(app)
        await press(pilot, "end")
        shown += screen_text(app)
        for words in ("terminate", "cycle the status filter", "command palette", "stale"):
            assert words in shown
        await press(pilot, "escape")
        assert not isinstance(app.screen, HelpScreen)
        await press(pilot, "q")
    assert app.return_code == 0


async def test_moving_between_statuses_redims_the_footer_in_place(
    tmp_path: Path, db: Store
) -> None:
    """Each status allows other actions: the footer dims and undims the same keys rather than
    being built again on every cursor move."""
    add_session(db, "s1")
    add_session(db, "s2", status="paused")
    add_session(db, "s3", status="terminated")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        shown_before = footer(app)
        keys_before = [key.key for key in shown_before.keys()]
        assert dimmed_keys(app) == {"resume"}
        await press(pilot, "down")
        assert dimmed_keys(app) == {"pause"}
        assert "resume" in footer_keys(app)
        await press(pilot, "down")
        assert dimmed_keys(app) == {"heartbeat", "pause", "stop", "resume", "terminate"}
        await press(pilot, "up", "up")
        assert dimmed_keys(app) == {"resume"}
        # The same footer, the same keys in the same places: only their dimming changed.
        assert footer(app) is shown_before
        assert [key.key for key in footer(app).keys()] == keys_before


async def test_the_footer_is_repainted_only_when_its_keys_change(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cursor move to a session of the same status leaves the footer's line as it is (no
    repaint, a smaller frame); a move to another status repaints it."""
    add_session(db, "s1")
    add_session(db, "s2")
    add_session(db, "s3", status="paused")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        shown = footer(app)
        repaints: list[object] = []
        repaint = shown.refresh

        def counted(*args: object, **kwargs: object) -> object:
            repaints.append(args)
            return repaint(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(shown, "refresh", counted)
        await press(pilot, "down")
        assert selected(app) == "s2"
        assert repaints == []
        assert dimmed_keys(app) == {"resume"}
        await press(pilot, "down")
        assert selected(app) == "s3"
        assert len(repaints) == 1
        assert dimmed_keys(app) == {"pause"}
        assert "Resume" in screen_text(app)


async def test_at_80_columns_quit_and_help_stay_in_the_footer(tmp_path: Path, db: Store) -> None:
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for screen in ("list", "detail"):
            line = screen_text(app).splitlines()[-1]
            assert "q Quit" in line and "? Help" in line, (screen, line)
            assert "h Beat" in line and "t Term" in line
            await press(pilot, "enter")


async def test_keys_typed_ahead_act_on_the_row_the_cursor_reached(
    tmp_path: Path, db: Store
) -> None:
    """down, down, p typed faster than the screen handles the cursor's messages: the pause
    still falls on the third session, where the cursor is, not on the first."""
    for number in range(3):
        add_session(db, f"s{number}", at=FROZEN + timedelta(minutes=number))
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        for key, character in (("down", None), ("down", None), ("p", "p")):
            app.post_message(events.Key(key, character))
        await settle(pilot)
        assert "Paused s2" in last_note(app)
    assert [session_row(db, f"s{n}")["status"] for n in range(3)] == ["active", "active", "paused"]
