"""The staged start: on a current SQLite store the console paints its first rows before
SQLAlchemy, SQLModel or Alembic is loaded, then opens the store; keys pressed meanwhile wait for
it (or are dropped, said out loud, if it cannot be opened)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from roundtable_console.screens.commands import session_commands
from roundtable_console.screens.dialogs.terminate import TerminateDialog
from roundtable_console.screens.list.screen import SessionListScreen
from roundtable_console.screens.session.detail import SessionDetailScreen
from roundtable_console.store.db import database
from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import DatabaseUnavailable
from roundtable_console.store.records import SessionRecord
from tests.helpers import history, session_row
from tests.test_tui_support import (
    OPERATOR,
    add_claim,
    add_session,
    cell,
    console,
    footer_keys,
    notifications,
    row_ids,
    screen_text,
    settle,
    sqlite_url,
)

PROJECT = Path(__file__).resolve().parents[1]
HEAVY = ("sqlalchemy", "sqlmodel", "alembic")

# Runs in a fresh interpreter: `roundtable tui --db URL` through the real CLI, headless (the
# only change: run_console is given headless, size and an auto-pilot). Reports what was loaded
# when the first frame showing rows was written, and again once the store is open and the
# list has been read from it.
FIRST_PAINT_SCRIPT = r"""
import asyncio, json, sys, time

HEAVY = ("sqlalchemy", "sqlmodel", "alembic", "psycopg")
report = {}


def heavy():
    return sorted({name.split(".")[0] for name in sys.modules} & set(HEAVY))


def seen(app):
    screen = app.screen
    rows = [session.id for session in screen.model.rows]
    return {
        "heavy": heavy(),
        "store_open": app.ctx.store is not None,
        "rows": rows,
        "kinds": sorted({type(session).__name__ for session in screen.model.rows}),
        "counts": str(screen.query_one("#counts").render()),
    }


import roundtable_console.tui.app as tui_app  # noqa: E402
import roundtable_console.tui.console_app as console_app  # noqa: E402

# The list says its quick rows are on screen once the refresh that painted them is done.
shown = console_app.RoundtableApp.on_session_list_screen_first_rows_shown


def recording(app, message):
    if "first_paint" not in report:
        report["first_paint"] = seen(app)
    shown(app, message)


console_app.RoundtableApp.on_session_list_screen_first_rows_shown = recording


async def pilot(pilot):
    try:
        await follow(pilot)
    except BaseException:
        import traceback
        report["pilot_error"] = traceback.format_exc()
        raise


async def follow(pilot):
    app = pilot.app
    deadline = time.monotonic() + 30
    while "first_paint" not in report:
        await asyncio.sleep(0.005)
    while time.monotonic() < deadline:
        try:  # a frame in between may hold no list (said in "between" if it lasts)
            if seen(app)["kinds"] == ["AgentSession"]:
                break
        except Exception as error:
            report["between"] = repr(error)
        await pilot.pause(0.02)
    report["ready"] = seen(app)
    # The GIL hand-over is shortened once the list is read from the store (tui.console_app).
    while sys.getswitchinterval() > 0.001 and time.monotonic() < deadline:
        await pilot.pause(0.02)
    report["switch_interval"] = sys.getswitchinterval()
    app.exit()


real_run_console = tui_app.run_console
tui_app.run_console = lambda **options: real_run_console(
    **options, headless=True, size=(120, 40), auto_pilot=pilot
)
report["imported_at_start"] = heavy()
from roundtable_console.tui.cli import main  # noqa: E402

try:
    main(["tui", "--db", sys.argv[1], "--operator", "olivia"])
except SystemExit as stop:
    report["exit"] = stop.code
print(json.dumps(report))
"""


def first_paint_report(url: str, tmp_path: Path) -> dict[str, Any]:
    """`roundtable tui --db URL` in a fresh interpreter: what it had loaded at the first frame
    showing rows, and once the store was open."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("ROUNDTABLE_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"))
    result = subprocess.run(
        [sys.executable, "-c", FIRST_PAINT_SCRIPT, url],
        capture_output=True,
        text=True,
        cwd=PROJECT,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    assert "ready" in report, (report, result.stderr[-3000:])
    return report


def seed_sixty(db: Store) -> None:
    for number in range(60):  # more than a page: the first window is a page of 50
        add_session(db, f"s{number:02d}", agent_id=f"agent-{number % 3}")
    add_claim(db, "c1", agent_id="agent-1", resource_id="src/a.py", expires_in=timedelta(days=9))


def test_first_rows_are_painted_before_the_database_layer_loads(tmp_path: Path, db: Store) -> None:
    seed_sixty(db)
    report = first_paint_report(sqlite_url(tmp_path), tmp_path)
    first, ready = report["first_paint"], report["ready"]
    assert report["imported_at_start"] == [] and report["exit"] == 0
    # Painted from the quick read: nothing heavy loaded, the store not open, counts to come.
    assert first["heavy"] == [] and first["store_open"] is False
    assert first["kinds"] == ["SessionRecord"]
    assert first["rows"] == [f"s{number:02d}" for number in range(50)]
    assert first["counts"].startswith("Opening store sqlite:///")
    # Then the store opened, in the background, and the list was read from it.
    assert ready["store_open"] is True and ready["kinds"] == ["AgentSession"], (ready, report)
    assert {"sqlalchemy", "sqlmodel"} <= set(ready["heavy"])
    assert "alembic" not in ready["heavy"]  # a current store needs no migration
    assert ready["rows"][:50] == first["rows"]  # and the page read ahead after them
    # Seeded long ago, in the attention order every session is stale: it needs attention.
    assert ready["counts"].replace("\u00a0", " ") == "60 sessions · 60 need attention · active 60"
    # The UI thread gets the GIL back within a millisecond, not Python's 5 (tui.console_app).
    assert report["switch_interval"] == pytest.approx(0.001)


def test_on_postgresql_a_child_reads_the_first_rows_and_the_console_imports_no_driver(
    tmp_path: Path, pg_store: Store
) -> None:
    """psycopg's import costs half of Textual's start-up: a child process started before
    Textual reads the first rows, and the console paints them having loaded no driver at all."""
    seed_sixty(pg_store)
    url = pg_store.engine.url.render_as_string(hide_password=False)
    report = first_paint_report(url, tmp_path)
    first, ready = report["first_paint"], report["ready"]
    assert report["exit"] == 0
    assert first["heavy"] == [] and first["store_open"] is False
    assert first["kinds"] == ["SessionRecord"]
    assert first["rows"] == [f"s{number:02d}" for number in range(50)]
    assert first["counts"].startswith("Opening store postgresql")
    assert ready["store_open"] is True and ready["kinds"] == ["AgentSession"], (ready, report)
    assert {"sqlalchemy", "psycopg"} <= set(ready["heavy"])
    # Seeded long ago, in the attention order every session is stale: it needs attention.
    assert ready["counts"].replace("\u00a0", " ") == "60 sessions · 60 need attention · active 60"


# ------------------------------------------------------------------ keys before the store is open


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """The store opens only once the test sets this."""
    opened = threading.Event()
    real_open = database.open_store

    def open_when_let(url: str, **kwargs: Any) -> Store:
        if not opened.wait(30):
            raise DatabaseUnavailable("The test never let the store open.")
        return real_open(url, **kwargs)

    monkeypatch.setattr(database, "open_store", open_when_let)
    yield opened
    opened.set()  # a thread still waiting ends


async def until(pilot: Pilot[Any], condition: Callable[[], object], timeout: float = 20) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "timed out"
        await pilot.pause(0.01)
    await settle(pilot)


def quick_rows_shown(app: Any) -> bool:
    screen = app.screen
    return isinstance(screen, SessionListScreen) and bool(row_ids(app))


async def test_enter_before_the_store_is_open_opens_the_session_once_it_is(
    tmp_path: Path, db: Store, gate: threading.Event
) -> None:
    add_session(db, "s1")
    add_session(db, "s2")
    app = console(sqlite_url(tmp_path), staged=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: quick_rows_shown(app))
        assert app.ctx.store is None
        assert all(isinstance(s, SessionRecord) for s in app.screen.model.rows)
        assert row_ids(app) == ["s1", "s2"]
        # The footer needs no store: the selected session's actions are offered already.
        assert {"heartbeat", "pause", "stop", "terminate"} <= footer_keys(app)
        assert "Opening store sqlite:///" in screen_text(app)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, SessionListScreen)
        assert notifications(app)[-1] == (
            "Opening the store… the session opens as soon as it is open."
        )
        gate.set()
        await until(pilot, lambda: isinstance(app.screen, SessionDetailScreen))
        await until(pilot, lambda: app.screen.session is not None)
        assert app.screen.session_id == "s1"
        assert "s1" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        assert "2 sessions · active 2" in screen_text(app)


async def test_a_lifecycle_key_before_the_store_is_open_acts_once_it_is(
    tmp_path: Path, db: Store, gate: threading.Event
) -> None:
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path), staged=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: quick_rows_shown(app))
        await pilot.press("p")
        await settle(pilot)
        assert (
            notifications(app)[-1] == "Opening the store… pause s1 follows as soon as it is open."
        )
        assert session_row(db, "s1")["status"] == "active"
        gate.set()
        await until(pilot, lambda: "Paused s1 (active → paused)." in notifications(app))
        assert cell(app, "s1", "status") == "paused"
    assert session_row(db, "s1")["status"] == "paused"
    assert history(db, "s1")[-1][1]["actor"] == OPERATOR


async def test_a_later_request_replaces_the_waiting_one(
    tmp_path: Path, db: Store, gate: threading.Event
) -> None:
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path), staged=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: quick_rows_shown(app))
        await pilot.press("p", "t")
        await settle(pilot)
        assert notifications(app)[-1].startswith("Opening the store… terminate s1 follows")
        gate.set()
        await until(pilot, lambda: isinstance(app.screen, TerminateDialog))
        assert app.screen.session.id == "s1"
        await pilot.press("escape")
        await settle(pilot)
    assert session_row(db, "s1")["status"] == "active"  # neither paused nor terminated


async def test_palette_commands_before_the_store_is_open_wait_too(
    tmp_path: Path, db: Store, gate: threading.Event
) -> None:
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path), staged=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: quick_rows_shown(app))
        commands = {name: callback for name, callback, _ in session_commands(app.screen)}
        assert {"Pause s1", "Stop s1", "Terminate s1", "Open s1"} <= set(commands)
        commands["Stop s1"]()
        await settle(pilot)
        assert notifications(app)[-1].startswith("Opening the store… stop s1 follows")
        gate.set()
        await until(pilot, lambda: app.screen.__class__.__name__ == "ConfirmActionDialog")
        await pilot.press("y")
        await until(pilot, lambda: "Stopped s1 (active → stopped)." in notifications(app))
    assert session_row(db, "s1")["status"] == "stopped"


async def test_a_store_that_fails_to_open_drops_what_was_waiting(
    tmp_path: Path, db: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_session(db, "s1")
    started = threading.Event()
    failed = threading.Event()

    def refuse(url: str, **_: Any) -> Store:
        started.set()
        failed.wait(30)
        raise DatabaseUnavailable("The disk went away.")

    monkeypatch.setattr(database, "open_store", refuse)
    app = console(sqlite_url(tmp_path), staged=True)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: quick_rows_shown(app))
            await pilot.press("h")
            await settle(pilot)
            assert notifications(app)[-1].startswith("Opening the store… heartbeat s1 follows")
            failed.set()
            await until(pilot, lambda: "not done" in notifications(app)[-1])
            assert notifications(app)[-1] == (
                "The store could not be opened, so what you asked for was not done."
            )
            shown = screen_text(app)
            assert "The disk went away. [database_unavailable]" in shown
            assert "Showing what was last read; retrying by itself." in shown
            assert row_ids(app) == ["s1"]  # the quick rows stay on screen
    finally:
        failed.set()
    assert started.is_set()
    assert len(history(db, "s1")) == 1  # registered only: no heartbeat was recorded


async def test_quitting_before_the_store_is_open_leaves_nothing_behind(
    tmp_path: Path, db: Store, gate: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_session(db, "s1")
    failures: list[Any] = []
    monkeypatch.setattr(threading, "excepthook", failures.append)
    disposed: list[Store] = []
    real_dispose = Store.dispose

    def dispose(store: Store) -> None:
        disposed.append(store)
        real_dispose(store)

    monkeypatch.setattr(Store, "dispose", dispose)
    before = set(threading.enumerate())
    app = console(sqlite_url(tmp_path), staged=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: quick_rows_shown(app))
        (opener,) = [t for t in set(threading.enumerate()) - before if t.name == "open-store"]
        assert opener.daemon  # quitting never waits for it
    gate.set()  # the store opens after the console has closed
    opener.join(20)
    assert not opener.is_alive()
    assert failures == []
    assert app.opened_store is not None and app.opened_store in disposed
