"""Helpers for the TUI tests: a SQLite store in tmp_path, rows written directly, the console
built by the same factory the CLI uses, and ways to read what is on the screen."""

from __future__ import annotations

import io
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rich.console import Console
from sqlalchemy import insert
from textual.pilot import Pilot
from textual.widgets import DataTable
from textual.widgets._footer import FooterKey
from textual.worker import WorkerCancelled, WorkerState

from store.adapters import AdapterConfig
from store.clock import Clock, fixed_clock, format_ts
from store.database import Store
from store.models import Agent, Claim
from tests.conftest import FakeClock
from tests.helpers import register_session
from tui.app import RoundtableApp, build_app
from tui.config import Settings

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
) -> RoundtableApp:
    """The app exactly as ``roundtable tui`` builds it, with a clock the test controls and no
    automatic refresh unless asked for (tests press ctrl+r or wait on purpose). ``staged``: as
    on a current SQLite store, the first rows come from the quick read and the store opens
    after them."""
    app = build_app(
        url=url,
        settings=Settings(refresh_seconds=refresh_seconds, theme=theme),
        operator=OPERATOR,
        adapters=adapters or {},
        clock=clock or FakeClock(FROZEN),
        demo=demo,
        staged=staged,
    )
    app.ctx.cursor_blink = False
    if page_size is not None:
        app.ctx.page_size = page_size
    if window_pages is not None:
        app.ctx.window_pages = window_pages
    return app


async def settle(pilot: Pilot[Any], rounds: int = 4) -> None:
    """Let workers finish and their messages be handled (which may start more workers). A read
    replaced by a newer one (the store changed meanwhile) is cancelled: it is not waited for."""
    for _ in range(rounds):
        await pilot.pause()
        for worker in list(pilot.app.workers):
            if worker.state != WorkerState.CANCELLED:
                with suppress(WorkerCancelled):
                    await worker.wait()
    await pilot.pause()


async def press(pilot: Pilot[Any], *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


def screen_text(app: RoundtableApp) -> str:
    """Exactly the characters on the terminal, as a user would read them."""
    width, height = app.size
    console_ = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
        record=True,
        legacy_windows=False,
        safe_box=False,
    )
    console_.print(
        app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    )
    # A no-break space reads as a space.
    return console_.export_text().replace("\u00a0", " ")


def notifications(app: RoundtableApp) -> list[str]:
    return [notification.message for notification in app._notifications]


def dimmed_keys(app: RoundtableApp) -> set[str]:
    """The actions the footer widget shows dimmed (shown, but not for the selected session)."""
    return {key.action for key in app.screen.query(FooterKey) if key.has_class("-disabled")}


def footer_keys(app: RoundtableApp) -> set[str]:
    """The actions the footer offers right now (shown and enabled)."""
    return {
        active.binding.action
        for active in app.screen.active_bindings.values()
        if active.binding.show and active.enabled
    }


def table(app: Any) -> DataTable[Any]:
    """The session list's table."""
    return app.screen.query_one("#sessions", DataTable)


def row_ids(app: Any) -> list[str]:
    return [str(key.value) for key in table(app).rows]


def selected(app: Any) -> str | None:
    return app.screen.selected_id  # type: ignore[no-any-return]


def filter_line(app: Any) -> str:
    """The filter line's text whole (a narrow terminal wraps it)."""
    return str(app.screen.query_one("#filter-line").render())
