"""What the console asks of a session's host, through the real console (issue 41, point 4).
``R`` for a session of another machine: its host is asked through the store
(``store.hosts.launches``), first whether it can start the agent and, after the resume, to
start it; the ``launched`` row keeps where. ``X``: the agent's process stopped where it runs
(``agents.stopping``). A host that refuses, or is offline, changes nothing. The host here stands
in for the server that would hold it: it takes the console's calls from the store and answers
them as a host does (``hosts.launching``, ``hosts.operations``)."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from roundtable_console.screens.dialogs.launch import LaunchDialog
from roundtable_console.screens.dialogs.stop_agent import StopAgentDialog
from roundtable_console.screens.dialogs.terminate import TerminateDialog
from roundtable_console.store import service
from roundtable_console.store.clock import Clock, system_clock
from roundtable_console.store.db.database import Store, open_store
from roundtable_console.store.hosts import calls, protocol, registry
from roundtable_console.store.hosts.facts import AgentFound, HostFacts
from roundtable_console.store.reads.launches import last_launch
from roundtable_console.store.resume.adapters import AGENT_RESUME_PATTERNS, PLACEHOLDER
from tests.conftest import FakeClock
from tests.console_ways import ConsoleWay
from tests.helpers import history, session_row
from tests.test_launch import paused_session
from tests.test_tui_support import (
    FROZEN,
    OPERATOR,
    console,
    notifications,
    press,
    screen_text,
    settle,
    sqlite_url,
    until,
)

SIZE = (120, 40)
CLAUDE = "3f0c8a52-7c1e-4b8e-9a57-2f1d7c0e9b11"
STARTED = {
    "tmux_pane": "%7",
    "tmux_socket": "/tmp/tmux-1000/roundtable-host",
    "tmux_server_pid": "4242",
    "machine": "laptop",
}


class StandInHost:
    """Takes the calls for ``name`` from the store, as the server that holds a host does, and
    answers each in turn with the next of ``answers``; what it was asked, kept."""

    def __init__(self, store: Store, name: str, answers: list[dict[str, Any]]) -> None:
        self.store = store
        self.name = name
        self.answers = list(answers)
        self.asked: list[tuple[str, dict[str, Any]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> StandInHost:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            with self.store.read() as db:
                found = calls.open_for(db, [self.name])
            if found:
                with self.store.write() as db:
                    for call in calls.take(db, found, "stand-in"):
                        self.asked.append((call.op, call.args))
                        calls.answer(db, call.id, self.answers.pop(0), "stand-in")
            time.sleep(0.02)


def on_laptop(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, now: Clock | None = None
) -> Path:
    """This machine is "desk"; a paused session of Claude Code on "laptop", whose host is
    online with Claude Code (its connection at ``now``: the console's frozen clock unless a
    server, which judges by its own, reads it)."""
    monkeypatch.setenv("ROUNDTABLE_HOST", "desk")
    workdir = paused_session(
        store, tmp_path, "s-laptop", adapter="claude", host="laptop", external_session_id=CLAUDE,
        resume_command=AGENT_RESUME_PATTERNS["claude"].replace(PLACEHOLDER, CLAUDE),
        metadata={"hooks": "claude-code"},
    )  # fmt: skip
    facts = HostFacts(name="laptop", agents=(AgentFound("claude-code", "2.1.328"),),
                      projects=(str(workdir),))  # fmt: skip
    with store.write() as db:
        registry.connect(db, facts, connection_id="laptop-1", clock=now or FakeClock(FROZEN))
    return workdir


def launched_on_laptop(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, now: Clock | None = None
) -> None:
    """``on_laptop``, its agent started by the laptop's host in pane %7."""
    on_laptop(store, tmp_path, monkeypatch, now=now)
    service.record_launch(
        store=store, session_id="s-laptop", tmux_pane="%7", tmux_socket=None, actor="ops",
        machine="laptop", via_host="laptop",
    )  # fmt: skip


def flat(text: str) -> str:
    """Without spaces, line ends and the dialog's border: words folded over lines, whole."""
    return re.sub(r"[\s█]", "", text)


def dialog(app: Any) -> LaunchDialog:
    assert isinstance(app.screen, LaunchDialog), app.screen
    return app.screen


async def test_r_asks_the_sessions_host_to_check_then_start_it_there(
    way: ConsoleWay, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the store, and through a server (which asks the host itself: ``POST …/launch``)."""
    db = open_store(way.url)
    try:
        await _r_on_laptop(way, db, tmp_path, monkeypatch)
    finally:
        db.dispose()


async def _r_on_laptop(
    way: ConsoleWay, db: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workdir = on_laptop(db, tmp_path, monkeypatch, now=system_clock if way.through_server else None)
    app = way.console()
    with StandInHost(db, "laptop", [{"ok": {"checked": True}}, {"ok": STARTED}]) as host:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await press(pilot, "R")
            shown = screen_text(app)
            assert "Resume and launch s-laptop?" in shown
            assert "asks its host to start its agent" in shown
            assert "host       laptop" in shown
            name = protocol.tmux_session_name("s-laptop")
            assert f"tmux session '{name}' on laptop" in shown
            assert host.asked == []  # nothing asked before y
            plan = dialog(app).on_host
            assert plan is not None and dialog(app).launch is None
            await press(pilot, "y")  # the worker waits for the host's two answers
            await until(pilot, lambda: not isinstance(app.screen, LaunchDialog))
            said = notifications(app)
    assert [op for op, _ in host.asked] == [protocol.LAUNCH, protocol.LAUNCH]
    (_, checked), (_, started) = host.asked
    assert checked["check"] is True and "check" not in started
    assert started["session"]["id"] == "s-laptop" and started["session"]["host"] == "laptop"
    assert started["session"]["working_directory"] == str(workdir)
    assert started["prompt"] == plan.prompt and plan.prompt.startswith("# Roundtable")
    assert session_row(db, "s-laptop")["status"] == "resuming"
    events = [(event, payload) for event, payload in history(db, "s-laptop")]
    assert [event for event, _ in events] == ["registered", "resuming", "launched"]
    assert events[1][1]["actor"] == OPERATOR
    with db.read() as conn:
        launched = last_launch(conn, "s-laptop")
    assert launched is not None
    assert launched["via_host"] == "laptop" and launched["tmux_pane"] == "%7"
    assert launched["host"] == "laptop"  # the machine it runs on, as its host said
    assert any(f"Started on laptop in tmux session {name!r}" in line for line in said), said


async def test_a_host_that_refuses_or_is_offline_changes_nothing(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_laptop(db, tmp_path, monkeypatch)
    refusal = {"refused": "The host laptop has no agent codex."}
    app = console(sqlite_url(tmp_path))
    with StandInHost(db, "laptop", [refusal]) as host:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await press(pilot, "R", "y")
            await until(pilot, lambda: "Nothing was started" in screen_text(app))
            assert "The host laptop has no agent codex. Nothing was started." in screen_text(app)
            assert isinstance(app.screen, LaunchDialog)  # kept: y may retry, n closes
            await press(pilot, "n")
    assert len(host.asked) == 1  # the check only: no resume, no start
    assert session_row(db, "s-laptop")["status"] == "paused"
    assert [event for event, _ in history(db, "s-laptop")] == ["registered"]
    with db.write() as conn:
        registry.disconnect(conn, "laptop", connection_id="laptop-1")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "R")
        shown = screen_text(app)
        assert "runs on laptop, whose host is offline" in shown
        assert "Nothing was started." in shown
        assert not app.screen.check_action("confirm", ())  # y is not offered
        await press(pilot, "y")
    assert session_row(db, "s-laptop")["status"] == "paused"


async def test_x_asks_first_then_has_the_host_stop_the_agent_it_started(
    way: ConsoleWay, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the store, and through a server (which asks the host itself: ``POST …/stop-agent``)."""
    db = way.store
    now = system_clock if way.through_server else None
    launched_on_laptop(db, tmp_path, monkeypatch, now=now)
    app = way.console()
    stopped = {"ok": {"signal": "SIGINT", "exited": True}}
    with StandInHost(db, "laptop", [stopped]) as host:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await press(pilot, "X")
            shown = screen_text(app)
            assert "Stop the agent of s-laptop?" in shown and "SIGINT, then SIGTERM" in shown
            assert host.asked == []  # nothing before y
            await press(pilot, "y")
            await until(pilot, lambda: not isinstance(app.screen, StopAgentDialog))
            said = notifications(app)
    assert "Sent SIGINT to the agent of s-laptop: it exited." in said, said
    [(op, args)] = host.asked
    assert op == protocol.STOP_AGENT and args["launch"]["tmux_pane"] == "%7"
    last, payload = history(db, "s-laptop")[-1]
    assert last == "agent_stopped" and payload["via_host"] == "laptop"
    with db.read() as conn:
        actor = conn.exec_driver_sql(
            "SELECT actor FROM agent_session_events WHERE event_type = 'agent_stopped'"
        ).scalar_one()
    assert actor == OPERATOR
    assert session_row(db, "s-laptop")["status"] == "paused"  # its hooks' to change


async def test_x_on_an_agent_started_by_hand_says_so_and_a_read_only_console_offers_none(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_laptop(db, tmp_path, monkeypatch)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "X", "y")
        await until(pilot, lambda: "Nothing was stopped" in screen_text(app))
        assert flat("was not started by Roundtable (R, or its host)") in flat(screen_text(app))
        assert isinstance(app.screen, StopAgentDialog)  # y may retry; n closes
        await press(pilot, "n")
        assert "Stop agent cancelled: nothing was done to s-laptop." in notifications(app)
    assert [event for event, _ in history(db, "s-laptop")] == ["registered"]
    app = console(sqlite_url(tmp_path), read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.screen.check_action("stop_agent", ()) is False
        await press(pilot, "X")
        assert not isinstance(app.screen, StopAgentDialog)


async def test_terminate_says_its_agent_may_still_run_and_stops_it_too_when_asked(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    launched_on_laptop(db, tmp_path, monkeypatch)
    app = console(sqlite_url(tmp_path))
    stopped = {"ok": {"signal": "SIGINT", "exited": True}}
    with StandInHost(db, "laptop", [stopped]) as host:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await press(pilot, "t")
            await until(pilot, lambda: "may still run" in screen_text(app))
            assert isinstance(app.screen, TerminateDialog)
            assert flat("tmux pane %7 on host laptop) and may still run: terminating does not "
                        "stop it.") in flat(screen_text(app))  # fmt: skip
            assert "Also stop its agent" in screen_text(app)
            await press(pilot, "tab", "space", "ctrl+s")
            await until(pilot, lambda: not isinstance(app.screen, TerminateDialog))
            said = "\n".join(notifications(app))
    assert "Sent SIGINT to the agent of s-laptop: it exited." in said, said
    [(op, _args)] = host.asked
    assert op == protocol.STOP_AGENT
    assert session_row(db, "s-laptop")["status"] == "terminated"
    assert [event for event, _ in history(db, "s-laptop")][-2:] == ["terminated", "agent_stopped"]


async def test_terminate_leaves_the_agent_running_unless_asked(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    launched_on_laptop(db, tmp_path, monkeypatch)
    app = console(sqlite_url(tmp_path))
    with StandInHost(db, "laptop", []) as host:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await press(pilot, "t")
            await until(pilot, lambda: "may still run" in screen_text(app))
            await press(pilot, "ctrl+s")
            await until(pilot, lambda: not isinstance(app.screen, TerminateDialog))
            said = "\n".join(notifications(app))
    assert "Terminated s-laptop" in said and "SIGINT" not in said, said
    assert host.asked == []
    assert [event for event, _ in history(db, "s-laptop")][-1] == "terminated"


async def test_terminate_of_an_agent_started_by_hand_offers_no_stop(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_laptop(db, tmp_path, monkeypatch)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "t")
        await until(pilot, lambda: "no active claims" in screen_text(app))
        assert "may still run" not in screen_text(app)
        assert "Also stop its agent" not in screen_text(app)
