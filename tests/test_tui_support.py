"""Helpers for the TUI tests: a SQLite store in tmp_path, rows written directly, the console
built by the same factory the CLI uses, and ways to read what is on the screen."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Callable
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rich.cells import cell_len
from sqlalchemy import insert
from textual.app import App
from textual.pilot import Pilot
from textual.worker import WorkerCancelled, WorkerFailed, WorkerState

from roundtable_console.screens.footer import ConsoleFooter
from roundtable_console.screens.list.grid import SessionGrid
from roundtable_console.store.clock import Clock, fixed_clock, format_ts
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.models import Agent, Claim
from roundtable_console.store.resume.adapters import AdapterConfig
from roundtable_console.tui.app import build_app
from roundtable_console.tui.config import Settings
from roundtable_console.tui.console_app import RoundtableApp
from tests.conftest import FakeClock
from tests.helpers import register_session

FROZEN = datetime(2026, 9, 17, 17, 26, 35, tzinfo=UTC)
OPERATOR = "olivia"
SNAPSHOT_DESCRIPTION = "sqlite:///roundtable.db"

_AGENTS = Agent.__table__  # type: ignore[attr-defined]
_CLAIMS = Claim.__table__  # type: ignore[attr-defined]


def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'roundtable.db'}"


def add_session(store: Store, session_id: str, *, at: datetime = FROZEN, **values: Any) -> None:
    defaults = {"agent_id": "agent-1", "run_id": "run-1", "working_directory": "/work/repo"}
    with store.write() as db:
        register_session(db, session_id, clock=fixed_clock(at), **{**defaults, **values})


def add_agent(store: Store, agent_id: str, *, enabled: bool = True) -> None:
    with store.write() as db:
        db.execute(
            insert(_AGENTS).values(
                id=agent_id, role="coder", name=agent_id, adapter="codex", is_enabled=int(enabled)
            )
        )


def add_claim(
    store: Store, claim_id: str, *, agent_id: str, resource_id: str, expires_in: timedelta
) -> None:
    with store.write() as db:
        db.execute(
            insert(_CLAIMS).values(
                id=claim_id,
                resource_id=resource_id,
                agent_id=agent_id,
                task_id="task-1",
                claim_type="write",
                status="active",
                expires_at=format_ts(FROZEN + expires_in),
            )
        )


def console(
    url: str,
    *,
    clock: Clock | None = None,
    refresh_seconds: float = 3600,
    page_size: int | None = None,
    window_pages: int | None = None,
    adapters: dict[str, AdapterConfig] | None = None,
    demo: bool = False,
    theme: str | None = None,
    staged: bool = False,
    sort: str = "started",
    group: str | None = None,
    read_only: bool = False,
) -> RoundtableApp:
    """The app exactly as ``roundtable tui`` builds it, with a clock the test controls and no
    automatic refresh unless asked for (tests press ctrl+r or wait on purpose). ``staged``: as
    on a current SQLite store, the first rows come from the quick read and the store opens
    after them. ``sort``: the list's first order, the reference order unless a test asks for
    the console's default (tests/test_tui_attention.py, the snapshots)."""
    app = build_app(
        url=url,
        settings=Settings(refresh_seconds=refresh_seconds, theme=theme, sort=sort, group=group),
        operator=OPERATOR,
        adapters=adapters or {},
        clock=clock or FakeClock(FROZEN),
        demo=demo,
        staged=staged,
        read_only=read_only,
    )
    app.ctx.cursor_blink = False
    if page_size is not None:
        app.ctx.page_size = page_size
    if window_pages is not None:
        app.ctx.window_pages = window_pages
    return app


async def settle(pilot: Pilot[Any], rounds: int = 4) -> None:
    """Let workers finish and their messages be handled (which may start more workers). A read
    replaced by a newer one (the store changed meanwhile) is cancelled: it is not waited for. A
    worker that ended in an exception (a refusal, by design) is the app's to report: the test
    reads what it shows; whether it was still listed here was a race."""
    for _ in range(rounds):
        await pilot.pause()
        for worker in list(pilot.app.workers):
            if worker.state != WorkerState.CANCELLED:
                with suppress(WorkerCancelled, WorkerFailed):
                    await worker.wait()
    await pilot.pause()


async def until(pilot: Pilot[Any], check: Callable[[], object], seconds: float = 15) -> None:
    """Until ``check()`` holds (bounded: what the console waits for is done in a thread, and
    a loaded machine takes its time), then settled."""
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"not so within {seconds} s"
        await pilot.pause(0.05)
    await settle(pilot)


async def press(pilot: Pilot[Any], *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


# A line of text in the SVG that ``App.export_screenshot`` writes: its place and its characters.
_SVG_TEXT = re.compile(
    r'<text class="[^"]*" x="([0-9.]+)" y="[0-9.]+" textLength="[0-9.]+" '
    r'clip-path="url\(#[a-z0-9-]+-line-(\d+)\)">([^<]*)</text>'
)
# Rich's SVG export: 20-pixel characters 0.61 as wide as high.
_SVG_CHAR_WIDTH = 20 * 0.61


def screen_text(app: App[Any]) -> str:
    """Exactly the characters on the terminal, as a user would read them: read back from the
    screenshot the app exports (its public ``export_screenshot``)."""
    width, height = app.size
    lines: list[list[tuple[int, str]]] = [[] for _ in range(height)]
    for x, line, text in _SVG_TEXT.findall(app.export_screenshot()):
        if int(line) < height:
            characters = html.unescape(text).replace("\n", "")
            lines[int(line)].append((round(float(x) / _SVG_CHAR_WIDTH), characters))
    shown = []
    for parts in lines:
        row = ""
        for column, text in sorted(parts):
            row += " " * max(column - cell_len(row), 0) + text
        shown.append(row.rstrip())
    # A no-break space reads as a space.
    return "\n".join(shown).replace("\u00a0", " ")


def notifications(app: RoundtableApp) -> list[str]:
    """What the console told the operator lately, oldest first."""
    return [message for _title, message in app.notified]


def footer(app: RoundtableApp) -> ConsoleFooter:
    return app.screen.query_one(ConsoleFooter)


def dimmed_keys(app: RoundtableApp) -> set[str]:
    """The actions the footer shows dimmed (shown, but not for the selected session)."""
    return {key.action for key in footer(app).keys() if not key.enabled}


def footer_keys(app: RoundtableApp) -> set[str]:
    """The actions the footer offers right now (shown and enabled)."""
    return {
        active.binding.action
        for active in app.screen.active_bindings.values()
        if active.binding.show and active.enabled
    }


def grid(app: Any) -> SessionGrid:
    """The session list's grid."""
    return app.screen.query_one("#sessions", SessionGrid)  # type: ignore[no-any-return]


def row_ids(app: Any) -> list[str]:
    """The sessions the list holds (the rows in and around the view), in list order."""
    return [session.id for session in app.screen.model.sessions()]


def selected(app: Any) -> str | None:
    """The session under the list's cursor."""
    session = app.screen.selected_session()
    return None if session is None else str(session.id)


def cell(app: Any, session_id: str, column: str) -> str:
    """The text of one cell of the list, as drawn."""
    screen = app.screen
    index = screen.model.index_of(session_id)
    assert index is not None, f"{session_id} is not held"
    row = screen.grid_row(index)
    return str(row.cells[list(screen.painter.widths).index(column)].plain)


def filter_line(app: Any) -> str:
    """The filter line's text whole (a narrow terminal wraps it), then the cursor's place."""
    screen = app.screen
    return f"{screen.query_one('#filter-line').render()} · {screen.query_one('#position').render()}"
