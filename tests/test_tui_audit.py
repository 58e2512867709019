"""The console read-only, and its audit screen (issue 11 points 2 and 5), through the real app:
Pilot key presses, the screen and the store both checked, and snapshots."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from roundtable_console.store.clock import fixed_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.writes import lifecycle, lifecycle_many
from tests.conftest import FakeClock
from tests.console_ways import ConsoleWay
from tests.helpers import count, history
from tests.test_tui_snapshots import SIZE, driving, seed
from tests.test_tui_support import (
    FROZEN,
    SNAPSHOT_DESCRIPTION,
    add_session,
    console,
    footer_keys,
    notifications,
    press,
    screen_text,
    settle,
    sqlite_url,
)

LIFECYCLE = {"heartbeat", "pause", "stop", "resume", "terminate"}
MARKING = {"toggle_mark", "clear_marks", "mark_matching"}


def act(db: Store) -> None:
    """Operators' actions at known times: a pause, a terminate with impact text holding a
    credential, a bulk stop."""
    steps: list[tuple[str, str, str, dict[str, Any]]] = [
        ("pause", "sess-01", "olivia", {}),
        (
            "terminate",
            "sess-03",
            "[b]mallory[/b]",
            {"idempotency_key": "k1", "impact_details": "released src/ by hand; token=s3cr3t"},
        ),
    ]
    for minutes, (action, session_id, actor, extra) in enumerate(steps, start=1):
        with db.write() as conn:
            lifecycle.ACTIONS[action](
                db=conn,
                session_id=session_id,
                actor=actor,
                clock=fixed_clock(FROZEN - timedelta(minutes=10 - minutes)),
                **extra,
            )
    with db.write() as conn:
        lifecycle_many.apply_many(
            db=conn,
            action="stop",
            requests=[("sess-06", None), ("sess-07", None)],
            actor="olivia",
            clock=fixed_clock(FROZEN - timedelta(minutes=2)),
        )


async def test_a_read_only_console_offers_no_action_and_writes_nothing(
    tmp_path: Path, db: Store
) -> None:
    add_session(db, "s1")
    add_session(db, "s2", status="paused")
    before = count(db, "agent_session_events")
    app = console(sqlite_url(tmp_path), read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.ctx.store is not None and app.ctx.store.read_only
        text = screen_text(app)
        assert "read-only" in text.splitlines()[0]
        assert not (LIFECYCLE | MARKING) & footer_keys(app)
        footer = text.splitlines()[-1]
        assert "Pause" not in footer and "Mark" not in footer and "Log" in footer
        for key in ("h", "p", "s", "t", "space", "asterisk"):
            await press(pilot, key)
        assert "The console is read-only: it does not pause sessions." in " ".join(
            notifications(app)
        )
        assert not app.screen.marks  # type: ignore[attr-defined]
        assert app.screen is app.list_screen  # no dialog opened
        from roundtable_console.screens.commands import session_commands

        names = [name for name, _call, _help in session_commands(app.screen)]
        assert names and not any(
            name.split()[0] in ("Heartbeat", "Pause", "Stop", "Resume", "Terminate", "Mark")
            for name in names
        )
        await press(pilot, "down", "r")  # the paused one: resume is not offered either
        await press(pilot, "enter")
        assert not LIFECYCLE & footer_keys(app)
        await press(pilot, "t")
        assert "read-only" in notifications(app)[-1]
        await press(pilot, "escape", "question_mark")
        help_text = screen_text(app)
        assert "Read-only: this console reads the store and changes nothing" in help_text
        assert "terminate — shows" not in help_text and "mark or unmark" not in help_text
        assert "bulk run" not in help_text
        await press(pilot, "A")  # not over a dialog or the help
        assert "Read-only: this console" in screen_text(app)
    assert count(db, "agent_session_events") == before
    assert [event for event, _payload in history(db, "s2")] == ["registered"]


async def test_the_console_is_writable_by_default(tmp_path: Path, db: Store) -> None:
    """The other side of the read-only test: the same console offers the actions."""
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert {"pause", "toggle_mark"} <= footer_keys(app)
        assert "read-only" not in screen_text(app).splitlines()[0]


async def test_the_audit_screen_lists_actions_newest_first(way: ConsoleWay) -> None:
    """On the store, and through a server (its audit route)."""
    db = way.store
    seed(db)
    act(db)
    app = way.console(clock=FakeClock(FROZEN))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "A")
        text = screen_text(app)
        rows = [line for line in text.splitlines() if line.startswith(" 2026-09-17")]
        assert [row.split()[5] for row in rows] == ["sess-07", "sess-06", "sess-03", "sess-01"]
        assert "stop" in rows[0] and "active → stopped" in rows[0]
        assert "[b]mallory[…" in rows[2]  # shown as text, never as markup
        assert "s3cr3t" not in text
        assert "4 actions shown · all shown" in text
        await press(pilot, "down", "down")
        entry = " ".join(screen_text(app).split())  # a line may wrap (PostgreSQL's role column)
        assert "impact: released src/ by hand; token=[REDACTED]" in entry
        assert "by [b]mallory[/b]" in entry and "s3cr3t" not in entry
        await press(pilot, "escape")
        assert app.screen is app.list_screen


async def test_the_audit_screen_pages_and_follows_new_actions(tmp_path: Path, db: Store) -> None:
    seed(db)
    act(db)
    app = console(sqlite_url(tmp_path), page_size=3)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "A")
        assert "3 actions shown · n reads the next page" in screen_text(app)
        assert "next_page" in footer_keys(app)
        await press(pilot, "n")
        assert "4 actions shown · all shown" in screen_text(app)
        assert "next_page" not in footer_keys(app)
        await press(pilot, "A")  # already there: nothing stacks
        with db.write() as conn:
            lifecycle.operator_heartbeat(
                db=conn, session_id="sess-01", actor="late", clock=fixed_clock(FROZEN)
            )
        await press(pilot, "ctrl+r")
        text = screen_text(app)
        assert "late" in text.splitlines()[3]
        await press(pilot, "escape")
        assert app.screen is app.list_screen


async def test_the_audit_screen_says_when_there_is_nothing(tmp_path: Path, db: Store) -> None:
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path), read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "A")
        assert "No operator actions yet" in screen_text(app)


def _app(tmp_path: Path, **options: Any) -> Any:
    app = console(sqlite_url(tmp_path), **options)
    app.ctx.description = SNAPSHOT_DESCRIPTION
    return app


def test_audit_screen_snapshot(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)
    act(db)
    run_before = driving("A", "down", "down")
    assert snap_compare(_app(tmp_path), terminal_size=SIZE, run_before=run_before)


def test_read_only_list_snapshot(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)
    app = _app(tmp_path, read_only=True, sort="attention")
    assert snap_compare(app, terminal_size=SIZE, run_before=driving())


def test_read_only_help_snapshot(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)
    app = _app(tmp_path, read_only=True)
    assert snap_compare(app, terminal_size=SIZE, run_before=driving("question_mark"))
