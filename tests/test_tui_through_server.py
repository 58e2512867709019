"""The terminal console through a real ``roundtable serve`` (issue 42): ``build_app`` with a link
to the server opens the same console, reading the list through the server's console routes and
acting through its routes for people, as the token's own name; changes made elsewhere arrive by
the server's stream of changes; a viewer's console offers no action; the bad days are sentences.
Each engine."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from roundtable_console.client.calls import ServerCalls
from roundtable_console.client.console_source import ServerConsole
from roundtable_console.store import service
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.session_rows import SESSIONS
from roundtable_console.store.errors import StoreError
from roundtable_console.store.reads.audit import audit_page
from roundtable_console.store.reads.listing import FilterSelection, Selection, SessionFilter
from roundtable_console.store.resume.launch import read_launch
from roundtable_console.store.writes import agent_writes
from roundtable_console.store.writes.bulk import REPLAYED
from roundtable_console.tui.app import build_app, run_console_through_server
from roundtable_console.tui.cli import cli
from roundtable_console.tui.cli.invocation import CliState
from roundtable_console.tui.cli.tui_command import prefetch_through_server
from roundtable_console.tui.config import Settings
from roundtable_console.tui.console_app import LINK_DOWN, RoundtableApp
from roundtable_console.tui.console_link import ServerLink, open_link
from tests.api_support import seed_agent, seed_workspace
from tests.pg_server import free_port
from tests.serve_support import Served, serving
from tests.test_tui_support import footer_keys, notifications, press, screen_text, settle, until
from tests.web_support import OTHER_WORKSPACE, WORKSPACE, hold_claim, register, tokens

pytestmark = pytest.mark.usefixtures("isolated_env")


@dataclass
class Team:
    served: Served
    store: Store
    made: dict[str, str]

    def link(self, role: str = "operator") -> ServerLink:
        return open_link(self.served.url, self.made[role])

    def console(self, role: str = "operator") -> RoundtableApp:
        app = build_app(
            url=self.served.url, settings=Settings(refresh_seconds=3600, sort="started"),
            operator="unused", adapters={}, demo=False, link=self.link(role),
        )  # fmt: skip
        app.ctx.cursor_blink = False
        return app


@pytest.fixture
def team(store: Store, store_url: str, tmp_path: Path) -> Iterator[Team]:
    made = tokens(store)
    seed_workspace(store, WORKSPACE)
    seed_workspace(store, OTHER_WORKSPACE)
    seed_agent(store, "agent-1")
    for session_id in ("s-one", "s-two", "s-three"):
        register(store, session_id)
    with serving(store_url, tmp_path / "home") as served:
        yield Team(served, store, made)


async def shown_within(app: RoundtableApp, pilot: Any, text: str, seconds: float) -> bool:
    """Whether ``text`` shows on screen within ``seconds``, nothing pressed meanwhile."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        await pilot.pause()
        if text in screen_text(app):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_the_console_reads_and_acts_through_the_server_as_the_token(team: Team) -> None:
    app = team.console()
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot, 8)
        shown = screen_text(app)
        assert f"olivia @ {team.served.url}" in shown  # who the server says the token is
        assert "3 sessions" in shown and "s-one" in shown and "s-three" in shown
        assert {"pause", "stop", "terminate"} <= footer_keys(app)  # an operator's token
        await press(pilot, "enter")  # the first row's detail, read through the server
        await settle(pilot, 8)
        assert "Session s-one" in screen_text(app) and "Working directory" in screen_text(app)
        await press(pilot, "escape", "p")  # pause, confirmed
        await settle(pilot, 8)
        await press(pilot, "y")
        await settle(pilot, 8)
    assert service.read_session(store=team.store, session_id="s-one").status == "paused"
    with team.store.read() as db:
        [last] = audit_page(db=db, limit=1).items
    assert (last.action, last.actor, last.session_id) == ("pause", "olivia", "s-one")


def test_as_roundtable_tui_starts_it_the_first_rows_come_from_a_child_then_all_goes_on(
    team: Team, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``roundtable tui --server``'s own path: a child asks who the token is and for the first
    rows while Textual loads (client.first_window); the console paints them, then makes its
    own client and reads and acts through it as before."""
    seen: dict[str, Any] = {}
    # The console's own client is held back: what it shows first came from the child.
    gate = threading.Event()
    connect = ServerCalls.connect
    monkeypatch.setattr(ServerCalls, "connect", lambda calls: gate.wait(30) and connect(calls))

    async def script(pilot: Any) -> None:
        app = pilot.app
        await until_shown(pilot, "s-three")
        seen["first"] = (screen_text(app), app.ctx.source.ready)
        gate.set()
        while not app.ctx.source.ready:  # its client, made once the rows are shown
            await asyncio.sleep(0.02)
        await settle(pilot, 8)
        await press(pilot, "p")
        await settle(pilot, 8)
        await press(pilot, "y")
        await settle(pilot, 8)
        seen["after"] = screen_text(app)
        app.exit()

    settings = Settings(refresh_seconds=3600, sort="started")
    token = team.made["operator"]
    early = prefetch_through_server(team.served.url, token, settings)
    code = run_console_through_server(server=team.served.url, token=token, settings=settings,
                                      prefetched=early, headless=True, size=(140, 30),
                                      auto_pilot=script)  # fmt: skip
    assert code == 0
    first, ready_then = seen["first"]
    assert f"olivia @ {team.served.url}" in first and "s-one" in first and not ready_then
    assert "paused" in seen["after"]
    assert service.read_session(store=team.store, session_id="s-one").status == "paused"
    # A token the server refuses: one sentence, exit 1, the screen never taken.
    refused = prefetch_through_server(team.served.url, "rt_wrong", settings)
    code = run_console_through_server(server=team.served.url, token="rt_wrong",
                                      settings=settings, prefetched=refused)  # fmt: skip
    said = capsys.readouterr().err
    assert code == 1 and "did not accept your token" in said and "Traceback" not in said


async def until_shown(pilot: Any, text: str, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while text not in screen_text(pilot.app):
        assert time.monotonic() < deadline, f"{text!r} not shown within {seconds} s"
        await asyncio.sleep(0.02)


async def test_a_change_made_elsewhere_shows_without_a_key(team: Team) -> None:
    app = team.console()
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot, 8)
        assert "paused" not in screen_text(app)
        service.perform_action(store=team.store, action="pause", session_id="s-two",
                               actor="bob")  # fmt: skip
        # The stream of changes wakes the list (its timed refresh is an hour away).
        assert await shown_within(app, pilot, "paused", 10.0)
        assert "paused 1" in screen_text(app)


async def test_a_dropped_link_is_said_then_followed_again_with_nothing_lost(
    store: Store, store_url: str, tmp_path: Path
) -> None:
    """The server goes away: the header says "link down" and the console keeps what it showed;
    a change made meanwhile arrives once the server is back (the stream resumed from the last
    event it gave), told as news."""
    made = tokens(store)
    seed_workspace(store, WORKSPACE)
    seed_agent(store, "agent-1")
    for session_id in ("s-one", "s-two"):
        register(store, session_id)
    port, home = free_port(), tmp_path / "home"
    with ExitStack() as first:
        served = first.enter_context(serving(store_url, home, port=port))
        app = build_app(
            url=served.url, settings=Settings(refresh_seconds=3600, sort="started"),
            operator="unused", adapters={}, demo=False, link=open_link(served.url,
                                                                       made["operator"]),
        )  # fmt: skip
        async with app.run_test(size=(140, 30)) as pilot:
            await settle(pilot, 8)
            await until(pilot, lambda: app.server_watcher is not None)
            await asyncio.sleep(0.5)  # its stream open
            served.stop()
            await until(pilot, lambda: app.sub_title.startswith(LINK_DOWN))
            assert "s-two" in screen_text(app)  # what it showed, kept
            with store.write() as db:  # news: a session that waits for a human
                agent_writes.heartbeat(db=db, session_id="s-two", waiting="review the diff")
            with serving(store_url, home, port=port):
                await until(pilot, lambda: not app.sub_title.startswith(LINK_DOWN), 30)
                await until(pilot, lambda: "waiting" in screen_text(app))
                await until(pilot, lambda: any("s-two" in n for n in notifications(app)))
            assert any("is back" in n for n in notifications(app))


async def test_a_viewers_console_offers_no_action(team: Team) -> None:
    app = team.console("viewer")
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot, 8)
        assert app.ctx.read_only and "read-only · vic @" in screen_text(app)
        assert not {"pause", "terminate", "stop", "resume"} & footer_keys(app)
        await press(pilot, "p")
        await settle(pilot, 4)
    assert service.read_session(store=team.store, session_id="s-one").status == "active"


async def test_terminate_reads_the_impact_through_the_server(team: Team) -> None:
    hold_claim(team.store, "agent-1")
    app = team.console()
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, 8)
        await press(pilot, "t")
        await settle(pilot, 8)
        assert "Claims held by agent-1: 1 live" in screen_text(app)
        for key in "handed back":
            await pilot.press("space" if key == " " else key)
        await press(pilot, "ctrl+s")
        await settle(pilot, 8)
    assert service.read_session(store=team.store, session_id="s-one").status == "terminated"


async def test_the_briefing_the_overview_and_a_run_on_marked_sessions(
    team: Team,
) -> None:
    app = team.console()
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot, 8)
        await press(pilot, "b")
        await settle(pilot, 8)
        shown = screen_text(app)
        assert "Resume briefing for s-one" in shown and "Required next action" in shown
        await press(pilot, "escape", "O")  # the fleet's overview, counted by the server
        await settle(pilot, 8)
        assert "3 sessions" in screen_text(app) and "active" in screen_text(app)
        await press(pilot, "escape", "space", "down", "space", "p")  # two marked, then pause
        await settle(pilot, 8)
        assert "Pause applies to 2 of the 2 marked sessions" in screen_text(app)
        await press(pilot, "y")
        await settle(pilot, 8)
    statuses = {sid: service.read_session(store=team.store, session_id=sid).status
                for sid in ("s-one", "s-two", "s-three")}  # fmt: skip
    assert statuses == {"s-one": "paused", "s-two": "paused", "s-three": "active"}
    with team.store.read() as db:
        actors = {entry.actor for entry in audit_page(db=db, limit=5).items}
    assert actors == {"olivia"}  # each session's action is the token's


def test_a_run_on_many_sessions_tells_its_progress_and_stops_when_told(team: Team) -> None:
    """Through the server, a run on a filter's 450 sessions tells its progress after each of its
    transactions (200 sessions each) and the sessions each settled; the console's cancel closes
    the stream, the server stops, what was done stays; the same key again does the rest."""
    with team.store.write() as db:
        for number in range(450):
            agent_writes.register(db=db, session_id=f"many-{number:03d}", agent_id="agent-1",
                                  run_id="run-many", adapter="codex", working_directory="/w",
                                  workspace_id=WORKSPACE)  # fmt: skip
    link = team.link()
    source = ServerConsole(link.calls, 50)
    every = Selection(by_filter=(FilterSelection(SessionFilter(run_id="run-many")),))
    told: list[tuple[int, int]] = []
    settled: list[str] = []
    replayed: list[str] = []

    def take(items: Any) -> None:
        settled.extend(item.session_id for item in items)
        replayed.extend(item.session_id for item in items if item.code == REPLAYED)

    def run(cancel_when_told: bool) -> Any:
        return source.run_bulk_action(
            "pause", every, run_key="many-1", impact_details=None,
            progress=lambda done, total: told.append((done, total)),
            cancelled=lambda: cancel_when_told and bool(told),
            on_items=take,
        )  # fmt: skip

    # The run's sessions held by another writer (SQLite's lock; PostgreSQL's rows), so that the
    # server cannot finish before it sees the console go: then it stops at its next session.
    with team.store.write() as db:
        db.execute(select(SESSIONS.c.id).where(SESSIONS.c.run_id == "run-many").with_for_update())
        stopped = run(cancel_when_told=True)
        assert stopped.cancelled and told[0] == (0, 450) and settled == []
        time.sleep(0.5)  # for the server to see the stream closed while it waits
    time.sleep(1)  # for the server's transaction under way to commit
    paused = sum(1 for number in range(450) if service.read_session(
        store=team.store, session_id=f"many-{number:03d}").status == "paused")  # fmt: skip
    assert paused <= 200  # one transaction at most (SQLite's one session, PostgreSQL's batch)
    told.clear()
    done = run(cancel_when_told=False)
    assert not done.cancelled and done.total == 450 and told[-1] == (450, 450)
    assert len(told) >= 4 and sorted(settled) == [f"many-{n:03d}" for n in range(450)]
    assert done.tally.counts["done"] == 450 and len(replayed) == paused  # the first run's replayed
    assert all(service.read_session(store=team.store, session_id=f"many-{n:03d}").status
               == "paused" for n in range(450))  # fmt: skip
    link.close()


def test_the_bad_days_are_one_sentence(team: Team, monkeypatch: pytest.MonkeyPatch) -> None:
    link = team.link()
    with pytest.raises(StoreError) as through:
        ServerConsole(link.calls, 50).read_launch_anywhere("s-one")
    with pytest.raises(StoreError) as direct:  # R's plan, refused in the store's own words
        read_launch(store=team.store, adapters={}, session_id="s-one")
    assert (through.value.code, through.value.message) == ("not_launchable", direct.value.message)
    assert "is not resumable" in through.value.message
    link.close()
    with pytest.raises(StoreError, match="did not accept your token"):
        open_link(team.served.url, "rt_wrong")
    with pytest.raises(StoreError, match="needs a person's token"):
        team.link("agent")
    monkeypatch.setenv("RT_TOKEN", "rt_wrong")
    result = CliRunner().invoke(
        cli, ["tui", "--server", team.served.url, "--token-env", "RT_TOKEN"], obj=CliState()
    )
    assert result.exit_code == 1 and "did not accept your token" in result.stderr
    assert "Traceback" not in result.output + result.stderr


async def test_a_bound_tokens_console_shows_its_workspace_alone(team: Team) -> None:
    register(team.store, "b-theirs", workspace=OTHER_WORKSPACE)
    app = team.console("bound")  # an operator's token bound to the other workspace
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot, 8)
        shown = screen_text(app)
        assert "b-theirs" in shown and "1 session" in shown
        assert "s-one" not in shown and "3 sessions" not in shown  # nothing counted beyond it
        await press(pilot, "enter")
        await settle(pilot, 8)
        assert "Session b-theirs" in screen_text(app)
        await press(pilot, "escape")
        service.perform_action(store=team.store, action="pause", session_id="b-theirs",
                               actor="bob")  # fmt: skip
        assert await shown_within(app, pilot, "paused", 10.0)  # its workspace's stream
