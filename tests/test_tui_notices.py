"""Told in the console (issue 10, point 3): a session that starts waiting, goes stale, takes an
unknown status or is stopped or terminated by someone else is notified, naming it, and ``j``
jumps to it; the operator's own actions never notify; many changes at once make one summary;
config ``notify`` adds the bell or a desktop notification. The store is written from the test
(another "process", another actor) while the real console runs."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from roundtable_console.screens.list.screen import SessionListScreen
from roundtable_console.screens.session.detail import SessionDetailScreen
from roundtable_console.store.clock import fixed_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.reads.changes import Change
from roundtable_console.store.service import perform_action
from roundtable_console.store.writes import agent_writes
from roundtable_console.tui import console_app
from roundtable_console.tui.console_app import RoundtableApp
from roundtable_console.tui.notices import desktop_sequence, notice_for
from tests.conftest import FakeClock
from tests.test_tui_support import (
    FROZEN,
    OPERATOR,
    SNAPSHOT_DESCRIPTION,
    add_session,
    console,
    footer_keys,
    notifications,
    press,
    screen_text,
    selected,
    settle,
    sqlite_url,
)

TICK = 0.05


async def wait_for(pilot: Any, done: Callable[[], bool], seconds: float = 10.0) -> bool:
    for _ in range(int(seconds / TICK)):
        await pilot.pause(TICK)
        if done():
            await settle(pilot)
            return True
    await settle(pilot)
    return done()


def attention_notices(app: RoundtableApp) -> list[tuple[str, str]]:
    return [(title, message) for title, message in app.notified if "attention" in title]


def change(kind: str, session_id: str = "s1", **values: Any) -> Change:
    return Change(
        at="t", session_id=session_id, change=kind, status=values.pop("status", "active"), **values
    )


# ------------------------------------------------------------------------------ the words


def test_what_is_worth_telling_and_what_is_not() -> None:
    told = notice_for([change("waiting_started", reason="Approve?", actor="agent-1")], "olivia")
    assert told is not None
    assert told.message == "s1 waits for a human: Approve?. Press j to jump to it."
    assert told.session_id == "s1"
    for news, words in (
        (change("stale", reason="not seen for 5m"), "s1 went stale (not seen for 5m)"),
        (change("ended", status="failed", actor="agent-1"), "s1 is failed"),
        (change("status", status="error", previous_status="active"), "s1 is error"),
        (change("status", status="stopped", actor="bob"), "s1 was stopped by bob"),
        (change("status", status="terminated", actor="bob"), "s1 was terminated by bob"),
    ):
        notice = notice_for([news], "olivia")
        assert notice is not None and notice.message.startswith(words), news
    for quiet in (
        change("status", status="stopped", actor="olivia"),  # the operator's own action
        change("status", status="terminated", actor="olivia"),
        change("status", status="paused", actor="bob"),
        change("registered", actor="agent-1"),
        change("waiting_stopped", actor="bob"),
        change("heartbeat", actor="agent-1"),
        change("ended", status="ended", actor="agent-1"),
    ):
        assert notice_for([quiet], "olivia") is None, quiet


def test_many_changes_make_one_summary_naming_the_first_sessions() -> None:
    news = [change("waiting_started", f"s{n}", reason="?") for n in range(20)]
    news.append(change("stale", "s3", reason="not seen for 5m"))  # one session, its newest news
    notice = notice_for(news, "olivia")
    assert notice is not None
    assert notice.title == "20 sessions need attention"
    assert notice.count == 20
    assert notice.message.startswith("s0 waits for a human: ?; s1 waits for a human: ?; s2 ")
    assert notice.message.endswith("; and 17 more. Press j to jump to s0.")
    assert notice.session_id == "s0"


def test_store_text_is_printable_in_a_notice_and_never_reaches_an_escape_sequence() -> None:
    notice = notice_for([change("waiting_started", "s\x1b[2J", reason="a\x07b;c")], "olivia")
    assert notice is not None
    assert "\x1b" not in notice.message and "\x07" not in notice.message
    osc9 = desktop_sequence(notice.title, "x\x1b]9;pwned\x07y", environ={"TERM": "xterm"})
    assert osc9 == "\x1b]9;A session needs attention: x ]9;pwned y\x07"
    osc777 = desktop_sequence("a;b\x1bc", "d;e", environ={"VTE_VERSION": "7600"})
    assert osc777 == "\x1b]777;notify;a b c;d;e\x07"
    assert len(desktop_sequence("t", "x" * 1000, environ={})) < 220


# ------------------------------------------------------------------------------ the console


async def test_a_session_that_starts_waiting_is_notified_and_j_jumps_to_it(
    tmp_path: Path, db: Store
) -> None:
    for n in range(1, 4):
        add_session(db, f"s{n}", at=FROZEN - timedelta(minutes=n))
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        assert selected(app) == "s3"  # reference order: oldest first
        assert "jump" not in footer_keys(app)
        with db.write() as conn:  # the agent of s2, another process
            agent_writes.heartbeat(
                db=conn, session_id="s2", waiting="Approve the plan?", clock=fixed_clock(FROZEN)
            )
        assert await wait_for(pilot, lambda: bool(attention_notices(app)))
        assert attention_notices(app) == [
            (
                "A session needs attention",
                "s2 waits for a human: Approve the plan?. Press j to jump to it.",
            )
        ]
        assert "s2 waits for a human" in screen_text(app)
        assert "jump" in footer_keys(app)
        await press(pilot, "j")
        assert isinstance(app.screen, SessionDetailScreen)
        assert "s2" in screen_text(app)
        await press(pilot, "escape")
        assert isinstance(app.screen, SessionListScreen)
        assert selected(app) == "s2"


async def test_the_operators_own_actions_never_notify_and_someone_elses_do(
    tmp_path: Path, db: Store
) -> None:
    add_session(db, "mine", at=FROZEN - timedelta(minutes=3))
    add_session(db, "also-mine", at=FROZEN - timedelta(minutes=2))
    add_session(db, "theirs", at=FROZEN - timedelta(minutes=1))
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        assert selected(app) == "mine"
        await press(pilot, "s", "y")  # stopped here, by the operator
        assert await wait_for(pilot, lambda: "stopped" in str(notifications(app)))
        # The same operator from the CLI in another terminal: still their own action.
        perform_action(
            store=db,
            action="terminate",
            session_id="also-mine",
            actor=OPERATOR,
            idempotency_key="k1",
        )
        await pilot.pause(1.0)
        await settle(pilot)
        assert attention_notices(app) == []
        perform_action(store=db, action="stop", session_id="theirs", actor="bob")
        assert await wait_for(pilot, lambda: bool(attention_notices(app)))
        assert attention_notices(app) == [
            ("A session needs attention", "theirs was stopped by bob. Press j to jump to it.")
        ]


async def test_twenty_changes_at_once_make_one_summary(tmp_path: Path, db: Store) -> None:
    for n in range(20):
        add_session(db, f"s{n:02d}", at=FROZEN - timedelta(minutes=30 - n))
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        with db.write() as conn:  # one transaction: twenty agents failing at once
            for n in range(20):
                agent_writes.end(db=conn, session_id=f"s{n:02d}", status="failed")
        assert await wait_for(pilot, lambda: bool(attention_notices(app)))
        await pilot.pause(1.0)
        await settle(pilot)
        assert len(attention_notices(app)) == 1
        title, message = attention_notices(app)[0]
        assert title == "20 sessions need attention"
        assert message.startswith("s00 is failed; s01 is failed; s02 is failed; and 17 more.")
        await press(pilot, "j")
        assert isinstance(app.screen, SessionDetailScreen)
        assert "s00" in screen_text(app)


async def test_a_stream_of_news_makes_a_notification_then_one_summary(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The quiet gap made long: on a loaded machine the change watcher's reads may lag by more
    # than the two seconds the console waits, and news read after the gap is told apart (that
    # is the rule working). The rule is the same whatever the gap.
    monkeypatch.setattr(console_app, "NOTICE_GAP_SECONDS", 6.0)
    for n in range(5):
        add_session(db, f"s{n}", at=FROZEN - timedelta(minutes=10 - n))
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        # Five agents failing one after another, each its own write: the first is told at once,
        # the next four come within the quiet gap that notice opened.
        with db.write() as conn:
            agent_writes.end(db=conn, session_id="s0", status="failed")
        assert await wait_for(pilot, lambda: len(attention_notices(app)) >= 1)
        for n in range(1, 5):
            with db.write() as conn:
                agent_writes.end(db=conn, session_id=f"s{n}", status="failed")
            await pilot.pause(0.05)
        assert await wait_for(pilot, lambda: len(attention_notices(app)) >= 2, seconds=20.0)
        await settle(pilot)
        told = attention_notices(app)
        assert len(told) == 2, told  # the first at once, the rest together after the gap

        def named(title: str) -> int:
            return 1 if title == "A session needs attention" else int(title.split()[0])

        assert named(told[0][0]) + named(told[1][0]) == 5
        assert told[0][1].startswith("s0 is failed")
        assert "s4 is failed" in told[1][1] or "and 1 more" in told[1][1]


async def test_a_session_going_stale_is_notified_when_the_clock_passes(
    tmp_path: Path, db: Store
) -> None:
    add_session(db, "quiet", at=FROZEN - timedelta(seconds=290))
    clock = FakeClock(FROZEN)
    app = console(sqlite_url(tmp_path), clock=clock)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        await pilot.pause(0.5)
        assert attention_notices(app) == []
        clock.advance(seconds=11)  # no write at all: only the clock moved
        assert await wait_for(pilot, lambda: bool(attention_notices(app)))
        assert attention_notices(app) == [
            (
                "A session needs attention",
                "quiet went stale (not seen for 5m). Press j to jump to it.",
            )
        ]


@pytest.mark.parametrize("mode", ["off", "bell", "desktop"])
async def test_config_notify_adds_the_bell_or_a_desktop_notification(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("VTE_VERSION", raising=False)
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path))
    app.notify_mode = mode
    bells: list[bool] = []
    written: list[str] = []
    monkeypatch.setattr(app, "bell", lambda: bells.append(True))
    app.terminal_writer = written.append
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        perform_action(
            store=db, action="terminate", session_id="s1", actor="bob", idempotency_key="k1"
        )
        assert await wait_for(pilot, lambda: bool(attention_notices(app)))
    assert bells == ([True] if mode == "bell" else [])
    expected = (
        "\x1b]9;A session needs attention: s1 was terminated by bob. Press j to jump to it.\x07"
    )
    assert written == ([expected] if mode == "desktop" else [])


def test_attention_notification_snapshot(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    add_session(db, "sess-01", at=FROZEN - timedelta(minutes=3))
    add_session(db, "sess-02", at=FROZEN - timedelta(minutes=2))
    app = console(sqlite_url(tmp_path))
    app.ctx.description = SNAPSHOT_DESCRIPTION

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        with db.write() as conn:
            agent_writes.heartbeat(
                db=conn,
                session_id="sess-02",
                waiting="approve [b]deploy[/b]",
                clock=fixed_clock(FROZEN),
            )
        assert await wait_for(pilot, lambda: bool(attention_notices(app)))

    assert snap_compare(app, terminal_size=(120, 30), run_before=run_before)
