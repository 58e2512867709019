"""Helpers for the TUI tests: a SQLite store in tmp_path, rows written directly, the console
built by the same factory the CLI uses, and ways to read what is on the screen."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rich.console import Console
from sqlalchemy import insert, text
from textual.pilot import Pilot

from store import sessions
from store.adapters import AdapterConfig
from store.clock import Clock, fixed_clock, format_ts
from store.database import Store, open_store
from store.models import Agent, Claim
from tests.conftest import FakeClock
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
    arguments: dict[str, Any] = {
        "agent_id": "agent-1",
        "run_id": "run-1",
        "adapter": "codex",
        "working_directory": "/work/repo",
    }
    arguments.update(values)
    with store.write() as db:
        sessions.register(db=db, session_id=session_id, clock=fixed_clock(at), **arguments)


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


def session_row(store: Store, session_id: str) -> dict[str, Any]:
    with store.read() as db:
        found = db.execute(
            text("SELECT * FROM agent_sessions WHERE id = :id"), {"id": session_id}
        ).one()
    return dict(found._mapping)


def history(store: Store, session_id: str) -> list[tuple[str, dict[str, Any]]]:
    with store.read() as db:
        rows = db.execute(
            text(
                "SELECT event_type, payload_json FROM agent_session_events "
                "WHERE session_id = :id ORDER BY id"
            ),
            {"id": session_id},
        ).all()
    return [(event_type, json.loads(payload)) for event_type, payload in rows]


def count(store: Store, table: str) -> int:
    with store.read() as db:
        return int(db.execute(text(f"SELECT COUNT(*) FROM {table}")).scalar_one())


def console(
    url: str,
    *,
    clock: Clock | None = None,
    refresh_seconds: float = 3600,
    page_size: int | None = None,
    window_pages: int | None = None,
    adapters: dict[str, AdapterConfig] | None = None,
) -> RoundtableApp:
    """The app exactly as ``roundtable tui`` builds it, with a clock the test controls and no
    automatic refresh unless asked for (tests press ctrl+r or wait on purpose)."""
    app = build_app(
        url=url,
        settings=Settings(refresh_seconds=refresh_seconds),
        operator=OPERATOR,
        adapters=adapters or {},
        clock=clock or FakeClock(FROZEN),
    )
    app.ctx.cursor_blink = False
    if page_size is not None:
        app.ctx.page_size = page_size
    if window_pages is not None:
        app.ctx.window_pages = window_pages
    return app


async def settle(pilot: Pilot[Any], rounds: int = 4) -> None:
    """Let workers finish and their messages be handled (which may start more workers)."""
    for _ in range(rounds):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
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


def footer_keys(app: RoundtableApp) -> set[str]:
    """The actions the footer offers right now (shown and enabled)."""
    return {
        active.binding.action
        for active in app.screen.active_bindings.values()
        if active.binding.show and active.enabled
    }


def open_test_store(tmp_path: Path) -> Store:
    return open_store(sqlite_url(tmp_path))
