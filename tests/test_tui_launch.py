"""R, resume and launch, through the real console: the dialog (exact argv, id masked until v,
program, directory, where), every refusal before anything changes, the resume, and the fake
agent really run: in this terminal (the console suspended) and in a new window of a real tmux
server of the test's own."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from roundtable_console.screens.commands import session_commands
from roundtable_console.screens.dialogs.launch import LaunchDialog
from roundtable_console.screens.session import launcher
from roundtable_console.screens.session.briefing import BriefingScreen
from roundtable_console.screens.session.detail import SessionDetailScreen
from roundtable_console.store.db.database import Store, open_store
from roundtable_console.store.reads.audit import audit_page
from roundtable_console.store.resume.adapters import AdapterConfig
from roundtable_console.store.writes.lifecycle import pause
from roundtable_console.tui.console_app import RoundtableApp
from tests.console_ways import ConsoleWay
from tests.helpers import history, session_row
from tests.test_launch import FAKE, agent_bin, dump, paused_session
from tests.test_tui_support import (
    OPERATOR,
    console,
    notifications,
    press,
    screen_text,
    settle,
    sqlite_url,
)

SIZE = (120, 40)


@pytest.fixture
def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the fake agent writes its argv and cwd; PATH finds it; no tmux around."""
    path = tmp_path / "record.json"
    monkeypatch.setenv("FAKE_AGENT_RECORD", str(path))
    monkeypatch.setenv("FAKE_AGENT_EXIT", "3")
    monkeypatch.setenv("PATH", f"{agent_bin(tmp_path)}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("TMUX", raising=False)
    return path


class Terminal:
    """Stands in for the terminal a headless test has none of: ``App.suspend`` entered (and
    left) around the agent's run, counted."""

    def __init__(self, app: RoundtableApp, monkeypatch: pytest.MonkeyPatch) -> None:
        self.suspended = 0
        self.running = False
        monkeypatch.setattr(launcher, "can_hand_over", lambda _app: True)
        monkeypatch.setattr(app, "suspend", self.suspend)

    @contextmanager
    def suspend(self) -> Iterator[None]:
        self.suspended += 1
        self.running = True
        try:
            yield
        finally:
            self.running = False


def unfolded(shown: str) -> str:
    """Screen text without its spaces, line ends and borders: a path folded over lines whole."""
    return re.sub(r"[\s█▌▐│]", "", shown)


def dialog(app: RoundtableApp) -> LaunchDialog:
    assert isinstance(app.screen, LaunchDialog), type(app.screen)
    return app.screen


def dialog_error(app: RoundtableApp) -> str:
    """The dialog's refusal line(s), whole (the screen wraps them inside the border)."""
    return str(dialog(app).query_one("#dialog-error", Static).render())


async def test_r_shows_the_argv_then_resumes_and_runs_the_agent_in_this_terminal(
    tmp_path: Path, db: Store, record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workdir = paused_session(db, tmp_path)
    app = console(sqlite_url(tmp_path), adapters=FAKE)
    terminal = Terminal(app, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "R")
        shown = screen_text(app)
        assert "Resume and launch s1?" in shown
        assert "fake-agent --resume •••••• <the briefing: " in shown
        assert "ext-42" not in shown
        # Each beside its label (a path longer than the dialog's line is folded onto the next).
        squashed = unfolded(shown)
        program, directory = unfolded(f"{agent_bin(tmp_path)}/fake-agent"), unfolded(str(workdir))
        assert f"program{program}directory{directory}runsin" in squashed
        assert "runs in    this terminal: the console is suspended until the agent exits" in shown
        await press(pilot, "v")
        assert "fake-agent --resume ext-42 <the briefing: " in screen_text(app)
        argv = dialog(app).launch.argv  # type: ignore[union-attr]
        await press(pilot, "y")
        assert not isinstance(app.screen, LaunchDialog)
    assert terminal.suspended == 1
    ran = json.loads(record.read_text())
    assert ran["cwd"] == str(workdir)
    assert ran["session"] == "s1"  # the agent's hooks report on this session
    assert ran["argv"][1:] == list(argv[1:])
    assert Path(ran["argv"][0]).name == "fake-agent"
    assert session_row(db)["status"] == "resuming"
    assert history(db)[-1][1]["actor"] == OPERATOR
    said = notifications(app)
    assert "Resuming s1 (paused → resuming)." in said
    assert f"fake-agent exited with status 3 (in {workdir}); the console is back." in said


async def test_r_in_tmux_opens_a_window_named_after_the_session(
    tmp_path: Path, db: Store, record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real tmux server of the test's own, with the console "inside" it ($TMUX): the agent
    runs in a new window, directly (no shell), in the session's directory."""
    tmux = shutil.which("tmux")
    assert tmux is not None, "the tmux walk needs tmux (Debian's tmux package)"
    socket = tmp_path / "tmux.sock"
    env = dict(os.environ)
    server = [tmux, "-S", str(socket), "-f", "/dev/null"]
    subprocess.run([*server, "new-session", "-d", "-s", "walk", "-x", "120", "-y", "40"],
                   env=env, check=True, timeout=30)  # fmt: skip
    try:
        subprocess.run([*server, "set", "-g", "remain-on-exit", "on"], check=True, timeout=30)
        pid = subprocess.run([*server, "display", "-p", "#{pid}"], capture_output=True,
                             text=True, check=True, timeout=30).stdout.strip()  # fmt: skip
        monkeypatch.setenv("TMUX", f"{socket},{pid},0")
        workdir = paused_session(db, tmp_path, session_id="sess [1]")
        app = console(sqlite_url(tmp_path), adapters=FAKE)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await press(pilot, "R")
            assert "runs in    a new tmux window named 'sess-1'" in screen_text(app)
            await press(pilot, "y")
            assert not isinstance(app.screen, LaunchDialog)
            said = notifications(app)
            assert f"fake-agent started in tmux window 1 (sess-1), in {workdir}." in said
        for _ in range(100):
            if record.exists() and record.stat().st_size:
                break
            time.sleep(0.1)
        ran = json.loads(record.read_text())
        assert ran["cwd"] == str(workdir)
        assert ran["session"] == "sess [1]"  # the id as it is, not the window name
        assert ran["argv"][1:3] == ["--resume", "ext-42"]
        assert ran["argv"][3].startswith("# Roundtable Resume Briefing")
        windows = subprocess.run(
            [*server, "list-windows", "-t", "walk", "-F", "#{window_name}"],
            capture_output=True, text=True, check=True, timeout=30,
        ).stdout.split()  # fmt: skip
        assert "sess-1" in windows  # kept after the agent exited (remain-on-exit)
        assert session_row(db, "sess [1]")["status"] == "resuming"
        # Where it runs is history (an operator's, audited), and the Transcript tab shows that
        # pane while no transcript is known.
        (launched,) = [payload for kind, payload in history(db, "sess [1]") if kind == "launched"]
        assert launched["tmux_pane"].startswith("%") and launched["tmux_socket"] == str(socket)
        assert launched["tmux_server_pid"] == pid
        app = console(sqlite_url(tmp_path), adapters=FAKE)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await press(pilot, "enter", "8")
            shown = screen_text(app)
            assert unfolded(f"fake agent: 3 arguments in {workdir}") in unfolded(shown)
            assert "The tmux pane the agent was started in" in shown
        # Another tmux server on the same socket numbers its panes from %0 again: its pane is
        # not the agent's, and is not shown.
        subprocess.run([*server, "kill-server"], timeout=30, check=False)
        _wait_gone(int(pid))  # kill-server returns before the server has let go of its socket
        subprocess.run([*server, "new-session", "-d", "-s", "other", "echo OPERATOR-SHELL; sh"],
                       env=env, check=True, timeout=30)  # fmt: skip
        app = console(sqlite_url(tmp_path), adapters=FAKE)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await press(pilot, "enter", "8")
            shown = screen_text(app)
            assert "OPERATOR-SHELL" not in shown and "is gone" in shown
    finally:
        subprocess.run([*server, "kill-server"], timeout=30, check=False)


def _wait_gone(pid: int) -> None:
    stat = Path(f"/proc/{pid}/stat")
    for _ in range(200):
        try:
            if stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return  # exited; not reaped by a container's init
        except (FileNotFoundError, ProcessLookupError):
            return
        time.sleep(0.05)
    raise AssertionError(f"tmux server {pid} did not exit")


@pytest.mark.parametrize(
    ("setup", "words"),
    [
        ("missing directory", "does not exist on this machine"),
        ("program missing", "The program 'fake-agent' of adapter 'fake' was not found"),
        ("not resumable", "is not resumable: Adapter 'fake' is not configured"),
        ("no terminal", "This console has no terminal to lend the agent"),
    ],
)
async def test_what_cannot_be_launched_is_refused_in_the_dialog_and_nothing_changes(
    tmp_path: Path,
    db: Store,
    record: Path,
    monkeypatch: pytest.MonkeyPatch,
    setup: str,
    words: str,
) -> None:
    values: dict[str, Any] = {}
    if setup == "missing directory":
        values["working_directory"] = str(tmp_path / "gone")
    if setup == "program missing":
        monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    paused_session(db, tmp_path, **values)
    before = dump(db)
    app = console(sqlite_url(tmp_path), adapters={} if setup == "not resumable" else FAKE)
    if setup != "no terminal":
        Terminal(app, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "R")
        assert words in dialog_error(app)
        assert "n or escape closes" in screen_text(app)
        await press(pilot, "y")  # refused: y does nothing
        assert isinstance(app.screen, LaunchDialog)
        await press(pilot, "escape")
        assert not isinstance(app.screen, LaunchDialog)
        assert "Resume cancelled: nothing was done to s1." in notifications(app)
    assert dump(db) == before
    assert not record.exists()


async def test_r_on_a_session_that_cannot_resume_says_why_and_opens_nothing(
    tmp_path: Path, db: Store, record: Path
) -> None:
    paused_session(db, tmp_path, status="active")
    app = console(sqlite_url(tmp_path), adapters=FAKE)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "R")
        assert not isinstance(app.screen, LaunchDialog)
        assert notifications(app)[-1] == (
            "Cannot resume s1: its status is 'active'; resume is allowed only from 'paused', "
            "'stopped' or 'ended'."
        )


async def test_a_session_changed_since_the_dialog_read_it_is_not_resumed(
    tmp_path: Path, db: Store, record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paused_session(db, tmp_path, status="stopped")
    app = console(sqlite_url(tmp_path), adapters=FAKE)
    Terminal(app, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "R")
        assert "Now stopped." in screen_text(app)
        with db.write() as conn:  # someone else resumes and pauses it meanwhile
            conn.exec_driver_sql("UPDATE agent_sessions SET status = 'paused', version = 7")
        before = dump(db)
        await press(pilot, "y")
        assert not isinstance(app.screen, LaunchDialog)
        said = "\n".join(notifications(app))
        assert "[session_transition_conflict]" in said
        assert "status: stopped → paused" in said
    assert dump(db) == before
    assert not record.exists()


async def test_an_agent_that_cannot_start_keeps_the_dialog_and_y_retries_without_resuming_twice(
    tmp_path: Path, db: Store, record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paused_session(db, tmp_path)
    app = console(sqlite_url(tmp_path), adapters=FAKE)
    Terminal(app, monkeypatch)
    real_run = subprocess.run
    starts: list[list[str]] = []

    def run_once_failing(argv: list[str], **options: Any) -> Any:
        starts.append(argv)
        if len(starts) == 1:
            raise PermissionError(13, "Permission denied")
        return real_run(argv, **options)

    monkeypatch.setattr(launcher.subprocess, "run", run_once_failing)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "R", "y")
        assert dialog_error(app) == (
            "Session 's1' is resuming, but its agent could not be started: Permission denied. "
            "[not_launchable]\n"
            "Press y to retry with the same key (a resume done is not done twice), or n."
        )
        assert session_row(db)["status"] == "resuming"
        await press(pilot, "y")
        assert not isinstance(app.screen, LaunchDialog)
    assert len(starts) == 2
    assert record.exists()
    assert [event for event, _ in history(db)] == ["registered", "resuming"]


async def test_r_works_from_the_detail_and_the_briefing(
    tmp_path: Path, db: Store, record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paused_session(db, tmp_path)
    app = console(sqlite_url(tmp_path), adapters=FAKE)
    Terminal(app, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "enter")
        assert isinstance(app.screen, SessionDetailScreen)
        await press(pilot, "R")
        assert "Resume and launch s1?" in screen_text(app)
        await press(pilot, "n")
        assert isinstance(app.screen, SessionDetailScreen)
        await press(pilot, "escape", "b")
        assert isinstance(app.screen, BriefingScreen)
        assert "R Launch" in screen_text(app).splitlines()[-1]
        assert "R resumes the session and starts it" in screen_text(app)
        await press(pilot, "R", "y")
        assert isinstance(app.screen, BriefingScreen)
        assert "fake-agent exited with status 3" in notifications(app)[-1]
    assert session_row(db)["status"] == "resuming"


async def test_the_briefing_is_a_snapshot_and_the_dialog_judges_the_session_as_it_is(
    tmp_path: Path, db: Store, record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paused_session(db, tmp_path, status="active")
    app = console(sqlite_url(tmp_path), adapters=FAKE)
    Terminal(app, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "b")
        with db.write() as conn:
            pause(db=conn, session_id="s1", actor="someone")
        await press(pilot, "R")  # the briefing read it active; the dialog reads it paused
        assert "Now paused." in screen_text(app)
        await press(pilot, "y")
    assert record.exists()
    assert session_row(db)["status"] == "resuming"


async def test_r_resumes_and_launches_on_each_backend_and_through_a_server(
    every_way: ConsoleWay, tmp_path: Path, record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    way = every_way
    store = open_store(way.url)
    try:
        workdir = paused_session(store, tmp_path)
        app = way.console(adapters=FAKE)
        terminal = Terminal(app, monkeypatch)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await press(pilot, "R")
            assert "fake-agent --resume •••••• <the briefing: " in screen_text(app)
            await press(pilot, "y")
            assert "fake-agent exited with status 3" in notifications(app)[-1]
        assert terminal.suspended == 1
        assert json.loads(record.read_text())["cwd"] == str(workdir)
        assert session_row(store)["status"] == "resuming"
        assert [event for event, _ in history(store)] == ["registered", "resuming"]
        with store.read() as db:
            resumed = audit_page(db=db, limit=5).items[0]
        assert (resumed.actor, resumed.action) == (OPERATOR, "resume")
    finally:
        store.dispose()


async def test_the_command_palette_offers_resume_and_launch_where_it_applies(
    tmp_path: Path, db: Store, record: Path
) -> None:
    paused_session(db, tmp_path)
    paused_session(db, tmp_path, session_id="s2", status="active")
    app = console(sqlite_url(tmp_path), adapters=FAKE)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        names = [name for name, _callback, _help in session_commands(app.screen)]
        assert "Resume and launch s1" in names
        await press(pilot, "ctrl+p", *"and launch", "enter")
        assert isinstance(app.screen, LaunchDialog)
        await press(pilot, "escape", "down")
        names = [name for name, _callback, _help in session_commands(app.screen)]
        assert not any(name.startswith("Resume and launch") for name in names)


async def test_in_tmux_a_command_too_long_for_tmux_is_refused_before_the_resume(
    tmp_path: Path, db: Store, record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmux = shutil.which("tmux")
    assert tmux is not None, "the tmux walk needs tmux (Debian's tmux package)"
    monkeypatch.setenv("TMUX", f"{tmp_path / 'no-server.sock'},1,0")
    monkeypatch.setenv("PATH", f"{agent_bin(tmp_path)}{os.pathsep}{Path(tmux).parent}")
    paused_session(db, tmp_path)
    before = dump(db)
    long = {"fake": AdapterConfig(name="fake", resume_pattern="fake-agent " + "x" * 17_000)}
    app = console(sqlite_url(tmp_path), adapters=long)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "R")
        assert "tmux takes at most about 15 KiB" in dialog_error(app)
        await press(pilot, "y")
        assert isinstance(app.screen, LaunchDialog)
    assert dump(db) == before
