"""Nothing fails silently: an unexpected exception in any worker is said in words, logged with
its traceback, and leaves no screen or dialog stuck busy (``docs/development.md``)."""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.screen import Screen
from textual.worker import Worker

from roundtable_console.screens.dialogs.action import ActionDialog
from roundtable_console.screens.dialogs.confirm import ConfirmActionDialog
from roundtable_console.screens.dialogs.terminate import TerminateDialog
from roundtable_console.screens.failures import Failure, ReportsFailures
from roundtable_console.screens.session.briefing import BriefingScreen
from roundtable_console.screens.session.detail import SessionDetailScreen
from roundtable_console.screens.session.log import SessionLogScreen
from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import DatabaseUnavailable
from roundtable_console.tui.console_app import RoundtableApp
from tests.helpers import history, session_row
from tests.test_tui_support import (
    add_agent,
    add_session,
    console,
    notifications,
    press,
    screen_text,
    settle,
    sqlite_url,
)

BOOM = "unexpected RuntimeError: boom. Details in the log."


@asynccontextmanager
async def running(
    tmp_path: Path, size: tuple[int, int] = (120, 40)
) -> AsyncIterator[tuple[RoundtableApp, Pilot[Any]]]:
    """The console on the test's store, its first rows read."""
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        yield app, pilot


def break_store(
    app: RoundtableApp,
    monkeypatch: pytest.MonkeyPatch,
    how: str,
    error: Exception | None = None,
) -> None:
    """Every ``how`` transaction ("read" or "write") of the console's store raises what no code
    expects: not a StoreError, the kind a bug or an unwrapped driver error raises."""

    def fail(*_args: Any, **_kwargs: Any) -> Any:
        raise error or RuntimeError("boom")

    monkeypatch.setattr(app.ctx.store, how, fail)


def logged_failures(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        record
        for record in caplog.records
        if record.name == "roundtable" and record.exc_info and record.exc_info[0] is RuntimeError
    ]


def assert_nothing_on_the_terminal(capfd: pytest.CaptureFixture[str]) -> None:
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err and "boom" not in out + err


# (action, keys, status the session must have, the dialog that asks first)
ACTIONS: list[tuple[str, tuple[str, ...], str, type[ActionDialog] | None]] = [
    ("heartbeat", ("h",), "active", None),
    ("pause", ("p",), "active", None),
    ("stop", ("s", "y"), "active", ConfirmActionDialog),
    ("resume", ("r", "y"), "paused", ConfirmActionDialog),
    ("terminate", ("t", "ctrl+s"), "active", TerminateDialog),
]


@pytest.mark.parametrize("where", ["list", "detail"])
@pytest.mark.parametrize(
    ("action", "keys", "status", "dialog"), ACTIONS, ids=[a[0] for a in ACTIONS]
)
async def test_an_unexpected_error_in_an_action_is_said_and_nothing_stays_busy(
    tmp_path: Path,
    db: Store,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    where: str,
    action: str,
    keys: tuple[str, ...],
    status: str,
    dialog: type[ActionDialog] | None,
) -> None:
    add_session(db, "s1", status=status)
    add_agent(db, "agent-1")
    before, events_before = session_row(db, "s1"), history(db, "s1")
    said = f"Could not {action} s1: {BOOM}"
    async with running(tmp_path) as (app, pilot):
        if where == "detail":
            await press(pilot, "enter")
        underneath = app.screen
        break_store(app, monkeypatch, "write")
        await press(pilot, *keys)
        assert said in notifications(app)
        if dialog is not None:
            assert isinstance(app.screen, dialog)  # open, so a retry reuses its key
            shown = screen_text(app)
            assert said in shown and "Working…" not in shown
            await press(pilot, "escape")
            assert app.screen is underneath
            assert f"{action.capitalize()} cancelled" in notifications(app)[-1]
        assert app.screen is underneath
        assert len(app.screen_stack) == (3 if where == "detail" else 2)
    assert session_row(db, "s1") == before
    assert history(db, "s1") == events_before
    assert len(logged_failures(caplog)) == 1
    assert_nothing_on_the_terminal(capfd)


async def test_after_an_unexpected_error_the_dialog_retries_with_its_key(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_session(db, "s1")
    async with running(tmp_path) as (app, pilot):
        break_store(app, monkeypatch, "write")
        await press(pilot, "s", "y")
        dialog = app.screen
        assert isinstance(dialog, ConfirmActionDialog)
        assert "Press y to retry with the same key" in screen_text(app)
        monkeypatch.undo()
        await press(pilot, "y")
        assert app.screen is app.list_screen
        assert "Stopped s1 (active → stopped)." in notifications(app)[-1]
    assert session_row(db, "s1")["status"] == "stopped"


@pytest.mark.parametrize("where", ["list", "detail"])
async def test_an_unexpected_error_reading_the_claims_leaves_the_dialog_usable(
    tmp_path: Path,
    db: Store,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    where: str,
) -> None:
    add_session(db, "s1")
    async with running(tmp_path) as (app, pilot):
        if where == "detail":
            await press(pilot, "enter")
        underneath = app.screen
        break_store(app, monkeypatch, "read")
        await press(pilot, "t")
        assert isinstance(app.screen, TerminateDialog)
        assert f"Could not read the claims of agent-1: {BOOM}" in screen_text(app)
        await press(pilot, "ctrl+s")  # reads them again, still failing
        assert "Still loading the agent's claims" in screen_text(app)
        assert len(logged_failures(caplog)) == 2
        monkeypatch.undo()
        await press(pilot, "ctrl+s")
        assert "The agent holds no active claims." in screen_text(app)
        await press(pilot, "escape")
        assert app.screen is underneath
    assert session_row(db, "s1")["status"] == "active"


# (what is read, keys before the store breaks, keys after, the screen, what is said)
LOADS: list[tuple[str, tuple[str, ...], tuple[str, ...], type[Screen[Any]], str]] = [
    ("detail", (), ("enter",), SessionDetailScreen, "Could not read session s1"),
    ("projection", ("enter",), ("2",), SessionDetailScreen, "Could not read the logs of s1"),
    ("log", (), ("l",), SessionLogScreen, "Could not read the history of s1"),
    ("briefing", (), ("b",), BriefingScreen, "Could not read the briefing of s1"),
]


@pytest.mark.parametrize(
    ("name", "first", "then", "screen", "said"), LOADS, ids=[x[0] for x in LOADS]
)
async def test_an_unexpected_error_in_a_read_is_shown_and_ctrl_r_reads_again(
    tmp_path: Path,
    db: Store,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    name: str,
    first: tuple[str, ...],
    then: tuple[str, ...],
    screen: type[Screen[Any]],
    said: str,
) -> None:
    add_session(db, "s1")
    async with running(tmp_path, size=(160, 40)) as (app, pilot):
        await press(pilot, *first)
        break_store(app, monkeypatch, "read")
        await press(pilot, *then)
        assert isinstance(app.screen, screen)
        assert f"{said}: {BOOM}" in screen_text(app)
        assert logged_failures(caplog)
        monkeypatch.undo()
        await press(pilot, "ctrl+r")  # nothing is left waiting for the failed read
        assert "boom" not in screen_text(app)
        await press(pilot, "escape")
        assert app.screen is app.list_screen
    assert_nothing_on_the_terminal(capfd)


async def test_an_error_text_is_shown_as_text(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_session(db, "s1")
    async with running(tmp_path) as (app, pilot):
        break_store(app, monkeypatch, "write", ValueError("[bold]x[/] \x1b[2J\x07"))
        await press(pilot, "s", "y")
        said = (
            "Could not stop s1: unexpected ValueError: [bold]x[/] \\e[2J\\x07. Details in the log."
        )
        assert said in notifications(app)
        shown = screen_text(app)
        assert "[bold]x[/] \\e[2J\\x07" in shown
        assert "\x1b" not in shown and "\x07" not in shown
        assert all("\x1b" not in note for note in notifications(app))


@pytest.mark.parametrize("staged", [False, True], ids=["opened-first", "opened-after-rows"])
async def test_an_unexpected_error_opening_the_store_is_said_once(
    tmp_path: Path,
    db: Store,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    staged: bool,
) -> None:
    add_session(db, "s1")

    def fail(*_args: Any, **_kwargs: Any) -> Store:
        raise RuntimeError("boom")

    monkeypatch.setattr("roundtable_console.store.db.database.open_store", fail)
    app = console(sqlite_url(tmp_path), staged=staged)
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(20):
            await settle(pilot)
            if notifications(app):
                break
        said = [note for note in notifications(app) if note.startswith("Could not open the store")]
        assert len(said) == 1 and said[0].endswith(BOOM)
        assert app.screen is app.list_screen
        assert len(logged_failures(caplog)) == 1
        app.prepare_store()  # as the retry timer does: the same failure is not said again
        await settle(pilot)
        assert [note for note in notifications(app) if note.startswith("Could not")] == said


# --- the mechanism itself, on a screen of its own ----------------------------------------------


class Probe(ReportsFailures, Screen[None]):
    """A screen that adopts the mechanism and records what it is handed back."""

    def __init__(self) -> None:
        super().__init__()
        self.answers: list[object] = []
        self.failures: list[Failure] = []
        self.worker_failures: list[str] = []

    def worker_failed(self, worker: Worker[Any], failure: Failure) -> None:
        self.worker_failures.append(worker.name)

    def start(
        self,
        job: Callable[[], object],
        done: Callable[[object], object] | None = None,
        *,
        handled: bool = True,
    ) -> Worker[object]:
        return self.run_in_thread(
            job,
            what="probe the store",
            group="probe",
            done=done or self.answers.append,
            failed=self.failures.append if handled else None,
        )


def boom() -> object:
    raise RuntimeError("boom")


Check = Callable[[RoundtableApp, Probe, Pilot[Any]], Awaitable[None]]


async def probe(tmp_path: Path, check: Check) -> None:
    """Run ``check`` on a Probe screen pushed over the console."""
    async with running(tmp_path) as (app, pilot):
        screen = Probe()
        await app.push_screen(screen)
        await settle(pilot)
        await check(app, screen, pilot)


async def test_any_worker_of_the_screen_is_covered(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def check(app: RoundtableApp, screen: Probe, pilot: Pilot[Any]) -> None:
        screen.run_worker(boom, name="sync", thread=True, exit_on_error=False)
        await settle(pilot)
        said = f"Could not complete the background task 'sync': {BOOM}"
        assert notifications(app)[-1] == said
        assert screen.worker_failures == ["sync"]

    await probe(tmp_path, check)
    assert len(logged_failures(caplog)) == 1


async def test_answers_and_failures_come_back_on_the_event_loop(tmp_path: Path) -> None:
    async def check(app: RoundtableApp, screen: Probe, pilot: Pilot[Any]) -> None:
        loop_thread = threading.current_thread()
        ran_on: list[threading.Thread] = []
        shown_on: list[threading.Thread] = []

        def answer() -> object:
            ran_on.append(threading.current_thread())
            return 42

        def show(value: object) -> None:
            shown_on.append(threading.current_thread())
            screen.answers.append(value)

        screen.start(answer, show)
        await settle(pilot)
        assert screen.answers == [42]
        assert ran_on != [loop_thread] and shown_on == [loop_thread]
        screen.start(boom)
        await settle(pilot)
        failure = screen.failures[-1]
        assert failure.text == f"Could not probe the store: {BOOM}"
        assert failure.unexpected and failure.code is None
        assert notifications(app) == []  # the screen shows it where it belongs

    await probe(tmp_path, check)


async def test_a_replaced_call_answers_nothing(tmp_path: Path) -> None:
    async def check(app: RoundtableApp, screen: Probe, pilot: Pilot[Any]) -> None:
        release = threading.Event()

        def slow() -> object:
            release.wait(5)
            return "old"

        screen.start(slow)
        screen.start(lambda: "new")
        release.set()
        await settle(pilot)
        assert screen.answers == ["new"]

    await probe(tmp_path, check)


async def test_a_failure_while_showing_an_answer_is_handed_back_too(tmp_path: Path) -> None:
    async def check(app: RoundtableApp, screen: Probe, pilot: Pilot[Any]) -> None:
        def show(_answer: object) -> None:
            raise KeyError("row")

        screen.start(lambda: 1, show)
        await settle(pilot)
        assert [failure.text for failure in screen.failures] == [
            "Could not probe the store: unexpected KeyError: 'row'. Details in the log."
        ]

    await probe(tmp_path, check)


async def test_a_store_error_nobody_handles_is_a_notification(tmp_path: Path) -> None:
    async def check(app: RoundtableApp, screen: Probe, pilot: Pilot[Any]) -> None:
        def unavailable() -> object:
            raise DatabaseUnavailable("The database is unavailable: disk I/O error")

        screen.start(unavailable, handled=False)
        await settle(pilot)
        said = "The database is unavailable: disk I/O error [database_unavailable]"
        assert notifications(app)[-1] == said

    await probe(tmp_path, check)


def test_failure_words() -> None:
    refusal = Failure("read s1", DatabaseUnavailable("gone"))
    assert refusal.text == "gone [database_unavailable]"
    assert refusal.sentence == "Could not read s1: gone [database_unavailable]"
    assert refusal.code == "database_unavailable" and not refusal.unexpected
    bare = Failure("read s1", RuntimeError())
    assert bare.text == "Could not read s1: unexpected RuntimeError. Details in the log."
    long = Failure("read s1", RuntimeError("x" * 1000 + "\n."))
    assert len(long.text) < 400 and "\n" not in long.text
