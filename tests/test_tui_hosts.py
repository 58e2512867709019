"""The hosts in the console (issue 41 point 2): H shows each machine that runs agents, online or
not, its agents, sessions and projects, read in a thread and again when the store changes; what
a host says of itself shown as text; escape goes back. Through the real app, and a snapshot."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from roundtable_console.screens.fleet.hosts import HostsScreen
from roundtable_console.store.clock import fixed_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.hosts import registry
from roundtable_console.store.hosts.facts import AgentFound, HostFacts
from tests.conftest import FakeClock
from tests.console_ways import ConsoleWay
from tests.helpers import register_session
from tests.test_tui_snapshots import SIZE, seed
from tests.test_tui_support import (
    FROZEN,
    SNAPSHOT_DESCRIPTION,
    console,
    press,
    screen_text,
    settle,
    sqlite_url,
    until,
)

LAPTOP = HostFacts(
    name="laptop",
    agents=(AgentFound("claude-code", "2.1.328"), AgentFound("codex", "0.169.0")),
    tmux="3.3a",
    projects=("/home/ann/src/api", "/home/ann/[bold red]x[/]"),
)
BUILDBOX = HostFacts(name="buildbox", agents=(AgentFound("gemini", "[link=x]0.9[/link]"),))


def connect(
    db: Store, facts: HostFacts, *, minutes_ago: float = 0, at: datetime = FROZEN
) -> None:
    with db.write() as conn:
        registry.connect(
            conn, facts, connection_id=facts.name,
            clock=fixed_clock(at - timedelta(minutes=minutes_ago)),
        )  # fmt: skip


def listed(app: Any) -> list[str]:
    """The sessions the list holds, whichever screen is on top."""
    return [session.id for session in app.list_screen.model.sessions()]


async def test_h_shows_the_hosts_and_escape_goes_back(
    way: ConsoleWay, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the store, and through a server (its hosts route). A host's word wakes no console
    through a server or on PostgreSQL: the screen's own reading again brings it (sooner here)."""
    monkeypatch.setattr(HostsScreen, "READ_EVERY", 0.5)
    db = way.store
    seed(db)
    connect(db, LAPTOP, at=way.moment)
    # Not seen for longer than ONLINE_SECONDS: offline.
    connect(db, BUILDBOX, minutes_ago=5, at=way.moment)
    with db.write() as conn:
        register_session(conn, "on-laptop", host="laptop", status="running")
    app = way.console(clock=FakeClock(FROZEN))
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "H")
        await until(pilot, lambda: "1 of 2 online" in screen_text(app))
        text = screen_text(app)
        assert "1 of 2 online" in text
        laptop = next(line for line in text.splitlines() if "laptop" in line)
        assert "online" in laptop and "1 of 1" in laptop and "claude-code 2.1.328" in laptop
        assert "/home/ann/[bold red]x[/]" in text  # a project's name, not markup
        buildbox = next(line for line in text.splitlines() if "buildbox" in line)
        assert "offline" in buildbox and "gemini [link=x]0.9[/link]" in buildbox
        connect(db, HostFacts(name="newbox"), at=way.moment)
        await until(pilot, lambda: "2 of 3 online" in screen_text(app))
        assert "newbox" in screen_text(app)
        await press(pilot, "escape")
        assert "Hosts ·" not in screen_text(app)


async def test_no_host_says_how_to_run_one(tmp_path: Path, db: Store) -> None:
    seed(db)
    app = console(sqlite_url(tmp_path), clock=FakeClock(FROZEN))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "H")
        await until(pilot, lambda: "No host yet" in screen_text(app))
        assert "roundtable host run" in screen_text(app)


def test_hosts_screen_snapshot(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)
    connect(db, LAPTOP)
    connect(db, BUILDBOX, minutes_ago=5)

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await press(pilot, "H")
        await until(pilot, lambda: "1 of 2 online" in screen_text(pilot.app))
        await settle(pilot)

    app = console(sqlite_url(tmp_path), clock=FakeClock(FROZEN))
    app.ctx.description = SNAPSHOT_DESCRIPTION
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


async def test_enter_on_a_host_shows_its_sessions_and_a_shows_every_hosts(
    tmp_path: Path, db: Store
) -> None:
    seed(db)
    connect(db, LAPTOP)
    with db.write() as conn:
        register_session(conn, "on-laptop", host="laptop", status="running")
    app = console(sqlite_url(tmp_path), clock=FakeClock(FROZEN))
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        everyone = listed(app)
        assert "on-laptop" in everyone and len(everyone) > 1
        await press(pilot, "H")
        await until(pilot, lambda: "1 of 1 online" in screen_text(app))
        await press(pilot, "enter")
        await until(pilot, lambda: listed(app) == ["on-laptop"])
        assert listed(app) == ["on-laptop"]
        assert "host laptop (H)" in screen_text(app)
        await press(pilot, "H")
        await until(pilot, lambda: "1 of 1 online" in screen_text(app))
        await press(pilot, "a")
        await until(pilot, lambda: listed(app) == everyone)
        assert listed(app) == everyone and "host laptop" not in screen_text(app)
