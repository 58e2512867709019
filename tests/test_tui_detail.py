"""The session detail screen: fields, masking, redacted metadata, projections, actions."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from sqlalchemy import insert
from textual.widgets import DataTable

from roundtable_console.screens.list.screen import SessionListScreen
from roundtable_console.screens.session.detail import SessionDetailScreen
from roundtable_console.store.clock import fixed_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.models import Event, Proposal
from roundtable_console.store.writes import agent_writes
from tests.console_ways import ConsoleWay
from tests.helpers import history, session_row
from tests.test_tui_support import (
    FROZEN,
    OPERATOR,
    add_claim,
    add_session,
    cell,
    console,
    footer_keys,
    notifications,
    press,
    screen_text,
    settle,
    sqlite_url,
    until,
)

SECRET_ID = "ext-9f8e7d"
SECRET_COMMAND = "codex resume ext-9f8e7d"


def rich_session(db: Store) -> None:
    add_session(
        db,
        "sess-42",
        agent_id="ada",
        run_id="run-7",
        provider="openai",
        model="gpt-5",
        external_session_id=SECRET_ID,
        resume_command=SECRET_COMMAND,
        mcp_socket="/tmp/mcp.sock",
        metadata={
            "workspace_id": "ws-atlas",
            "branch": "main",
            "api_key": "sk-live-123",
            "notes": "token=abc123 and more",
            "usage": {"input_tokens": 1200, "output_tokens": 300, "secret_cost": 9},
        },
    )


def table_rows(app, name: str) -> list[list[str]]:  # type: ignore[no-untyped-def]
    table = app.screen.query_one(f"#table-{name}", DataTable)
    return [[cell.plain for cell in table.get_row_at(index)] for index in range(table.row_count)]


async def open_detail(pilot) -> None:  # type: ignore[no-untyped-def]
    await settle(pilot)
    await press(pilot, "enter")


async def test_detail_shows_every_field_masks_secrets_and_redacts_metadata(
    tmp_path: Path, db: Store
) -> None:
    rich_session(db)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 50)) as pilot:
        await open_detail(pilot)
        assert isinstance(app.screen, SessionDetailScreen)
        shown = screen_text(app)
        for text in (
            "sess-42",
            "ada",
            "run-7",
            "ws-atlas  (from metadata)",
            "openai",
            "gpt-5",
            "/work/repo",
            "/tmp/mcp.sock",
            "2026-09-17 17:26:35 UTC  (0s ago)",
            '"branch": "main"',
            '"api_key": "[REDACTED]"',
            "token=[REDACTED] and more",
            "Version",
        ):
            assert text in shown, text
        assert SECRET_ID not in shown and "codex resume" not in shown
        assert "sk-live-123" not in shown and "abc123" not in shown
        assert shown.count("(v to reveal)") == 2
        await press(pilot, "v")
        shown = screen_text(app)
        assert SECRET_ID in shown and SECRET_COMMAND in shown
        await press(pilot, "v")
        assert SECRET_ID not in screen_text(app)
        await press(pilot, "escape")
        assert isinstance(app.screen, SessionListScreen)


async def test_projection_tabs_show_history_claims_proposals_metrics_environment(
    way: ConsoleWay,
) -> None:
    """On the store, and through a server (its projections route)."""
    db = way.store
    rich_session(db)
    add_claim(db, "c1", agent_id="ada", resource_id="src/app.py", expires_in=timedelta(hours=1))
    with db.write() as conn:
        conn.execute(
            insert(Proposal.__table__).values(  # type: ignore[attr-defined]
                id="prop-1",
                task_id="task-1",
                agent_id="ada",
                title="Fix [bold]login[/]",
                summary_md="Uses password=hunter2",
                patch_path="/p",
                status="pending",
                created_at="2026-09-17T17:00:00Z",
            )
        )
        conn.execute(
            insert(Event.__table__).values(  # type: ignore[attr-defined]
                run_id="run-7",
                type="tool.shell",
                actor_id="ada",
                payload_json='{"action": "run", "status": "ok"}',
                created_at="2026-09-17T17:10:00Z",
            )
        )
    app = way.console()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_detail(pilot)
        await press(pilot, "2")
        assert table_rows(app, "logs")[0][2] == "registered"
        assert '"adapter":"codex"' in table_rows(app, "logs")[0][3]
        await press(pilot, "3")
        assert table_rows(app, "tool-calls")[0][2:7] == ["shell", "run", "ok", "—", "ada"]
        await press(pilot, "4")
        assert table_rows(app, "claims")[0][:3] == ["src/app.py", "task-1", "write"]
        await press(pilot, "5")
        proposal = table_rows(app, "proposals")[0]
        assert proposal[2] == "Fix [bold]login[/]"
        assert "hunter2" not in proposal[6]
        await press(pilot, "6")
        shown = screen_text(app)
        assert "input_tokens" in shown and "1200" in shown and "secret_cost" not in shown
        await press(pilot, "7")
        shown = screen_text(app)
        assert "python_version" in shown and "viewer's own process" in shown


async def test_the_metrics_tab_says_what_the_cost_is(way: ConsoleWay) -> None:
    """A hook's usage (issue 46): its tokens, and its cost said as an estimate (tab 6)."""
    rich_session(way.store)
    with way.store.write() as conn:
        usage = {"input_tokens": 2_000_000, "output_tokens": 100_000, "model": "claude-haiku-4-5"}
        agent_writes.heartbeat(db=conn, session_id="sess-42", usage=usage)
    app = way.console()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_detail(pilot)
        await press(pilot, "6")
        shown = screen_text(app)
        assert "total_tokens" in shown and "2100000" in shown and "2.5" in shown
        assert "cost: an estimate, from the prices of 2026-12" in shown


async def test_logs_are_paged_with_n(tmp_path: Path, db: Store) -> None:
    add_session(db, "s1")
    with db.write() as conn:
        for second in range(55):
            agent_writes.heartbeat(
                db=conn, session_id="s1", clock=fixed_clock(FROZEN + timedelta(seconds=second))
            )
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_detail(pilot)
        await press(pilot, "2")
        assert len(table_rows(app, "logs")) == 50
        assert "next_page" in footer_keys(app)
        assert "n reads the next page" in screen_text(app)
        await press(pilot, "n")
        assert len(table_rows(app, "logs")) == 56
        assert "next_page" not in footer_keys(app)
        assert "56 rows" in screen_text(app)


async def test_actions_work_from_the_detail_screen(way: ConsoleWay) -> None:
    """On the store, and through a server (its routes for people's actions)."""
    db = way.store
    add_session(db, "s1")
    app = way.console()
    async with app.run_test(size=(120, 40)) as pilot:
        await open_detail(pilot)
        await press(pilot, "h")  # the operator's heartbeat
        await until(pilot, lambda: len(history(db, "s1")) == 2)
        event, payload = history(db, "s1")[-1]
        assert (event, payload["actor"]) == ("heartbeat", OPERATOR)
        await press(pilot, "p")
        assert "Paused s1 (active → paused)." in notifications(app)[-1]
        assert "paused" in screen_text(app).splitlines()[1]
        assert "resume" in footer_keys(app) and "pause" not in footer_keys(app)
        await press(pilot, "s", "y")
        assert session_row(db, "s1")["status"] == "stopped"
        assert [event for event, _ in history(db, "s1")][-2:] == ["paused", "stopped"]
        await press(pilot, "escape")
        assert cell(app, "s1", "status") == ("stopped")


async def test_detail_of_a_session_deleted_meanwhile_says_so(tmp_path: Path, db: Store) -> None:
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        with db.write() as conn:
            conn.exec_driver_sql("DELETE FROM agent_sessions")
        await press(pilot, "enter")
        assert "No session has the id 's1'. [session_not_found]" in screen_text(app)
        assert "pause" not in footer_keys(app)


async def test_the_detail_follows_a_change_made_elsewhere_without_the_timer(
    tmp_path: Path, db: Store
) -> None:
    """The timed refresh is an hour away; the store's change signal brings the new status."""
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path), refresh_seconds=3600)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "enter")
        assert isinstance(app.screen, SessionDetailScreen)
        assert app.screen.session is not None and app.screen.session.status == "active"
        with db.write() as conn:
            agent_writes.end(db=conn, session_id="s1", status="ended")
        for _ in range(50):
            await pilot.pause(0.1)
            if app.screen.session is not None and app.screen.session.status == "ended":
                break
        assert app.screen.session is not None and app.screen.session.status == "ended"
        assert "ended" in screen_text(app)


async def test_the_transcript_tab_follows_the_agents_own_transcript(
    way: ConsoleWay, tmp_path: Path
) -> None:
    """What the agent is doing: its transcript's tail in a tab (8), literal text, following the
    file as it grows (each refresh), older entries with n. On the store, and through a server
    (which reads the transcript: the agent's machine is its own here)."""
    db = way.store
    import json

    external = "3f0c8a52-7c1e-4b8e-9a57-2f1d7c0e9b11"
    path = tmp_path / "home" / ".claude" / "projects" / "-w" / f"{external}.jsonl"
    path.parent.mkdir(parents=True)

    def say(*lines: tuple[str, str]) -> None:
        with path.open("a") as handle:
            for role, words in lines:
                line = {"type": role, "message": {"role": role, "content": words}}
                handle.write(json.dumps(line) + "\n")

    say(*[("user", f"old prompt {n}") for n in range(120)])
    say(("user", "fix [bold red]the[/] build"), ("assistant", "On it: api_key=sk-1 \x1b[2J"))
    add_session(
        db, "sess-t", adapter="claude", external_session_id=external,
        metadata={"transcript_path": str(path)},
    )  # fmt: skip
    app = way.console()
    async with app.run_test(size=(120, 50)) as pilot:
        await open_detail(pilot)
        await press(pilot, "8")
        shown = screen_text(app)
        assert "you   › fix [bold red]the[/] build" in shown
        assert "agent › On it: api_key=[REDACTED]" in shown
        assert "sk-1" not in shown
        assert "n reads older entries" in shown and "next_page" in footer_keys(app)
        say(("assistant", "Now the build is green."))
        app.screen.reload()  # as the refresh timer does
        await settle(pilot)
        assert "agent › Now the build is green." in screen_text(app)
        await press(pilot, "n")
        pane = app.screen.query_one("#transcript")
        assert len(pane.older) > 0 and pane.older[0].text == "old prompt 0"
        assert "next_page" not in footer_keys(app)


async def test_the_transcript_tab_says_why_there_is_none(tmp_path: Path, db: Store) -> None:
    add_session(db, "sess-n", adapter="codex")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_detail(pilot)
        await press(pilot, "8")
        assert "No transcript is known for this session" in screen_text(app)
