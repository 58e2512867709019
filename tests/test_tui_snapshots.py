"""SVG snapshots of every screen and dialog, with a frozen clock and fixed data.

Update after a deliberate change with ``pytest tests/test_tui_snapshots.py --snapshot-update``
and look at the report before committing the new SVGs.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import text
from textual.pilot import Pilot

from roundtable_console.store import service
from roundtable_console.store.budgets.limits import Budget
from roundtable_console.store.budgets.spend_days import ADD_SPEND
from roundtable_console.store.clock import fixed_clock, format_ts
from roundtable_console.store.db.database import Store
from roundtable_console.store.resume.adapters import AdapterConfig
from roundtable_console.store.writes.agent_writes import heartbeat
from roundtable_console.tui.console_app import RoundtableApp
from tests.test_tui_support import (
    FROZEN,
    SNAPSHOT_DESCRIPTION,
    add_agent,
    add_claim,
    add_session,
    console,
    press,
    screen_text,
    settle,
    sqlite_url,
    until,
)

SIZE = (120, 40)
LIST = {"sort": "attention"}


def seed(db: Store) -> None:
    """A small store with every kind of row the screens show differently."""
    add_agent(db, "ada")
    add_session(
        db,
        "sess-01",
        agent_id="ada",
        run_id="run-atlas",
        provider="openai",
        model="gpt-5",
        external_session_id="ext-123",
        at=FROZEN - timedelta(hours=3),
        metadata={"workspace_id": "ws-atlas", "branch": "main", "token": "t0k3n"},
    )
    add_session(
        db,
        "sess-02",
        agent_id="grace",
        run_id="run-harbor",
        status="paused",
        provider="anthropic",
        model="claude",
        at=FROZEN - timedelta(hours=2),
    )
    add_session(
        db,
        "sess-03",
        agent_id="linus",
        run_id="run-harbor",
        status="running",
        at=FROZEN - timedelta(hours=1, minutes=30),
    )
    add_session(
        db,
        "sess-04",
        agent_id="knuth",
        run_id="run-lumen",
        status="stopped",
        at=FROZEN - timedelta(minutes=50),
    )
    add_session(
        db,
        "[bold]x[/]",
        agent_id="[link=http://x]y[/link]",
        run_id="run\x1b[2J",
        status="terminated",
        at=FROZEN - timedelta(minutes=40),
    )
    add_session(db, "sess-06", agent_id="ada", run_id="run-atlas", at=FROZEN - timedelta(seconds=8))
    add_session(
        db, "sess-07", agent_id="hopper", run_id="run-atlas", at=FROZEN - timedelta(minutes=6)
    )
    with db.write() as conn:  # an agent that asks a human, and one that failed
        heartbeat(
            db=conn,
            session_id="sess-07",
            waiting="approve deleting build/",
            clock=fixed_clock(FROZEN - timedelta(minutes=4)),
        )
    add_session(
        db, "sess-08", agent_id="turing", status="failed", at=FROZEN - timedelta(minutes=20)
    )
    add_claim(db, "c1", agent_id="ada", resource_id="src/api.py", expires_in=timedelta(hours=1))
    add_claim(db, "c2", agent_id="ada", resource_id="src/db.py", expires_in=-timedelta(minutes=5))


def app_for(tmp_path: Path, **options: Any) -> RoundtableApp:
    """The console; the list pictures open as it opens by default, in the attention order
    (``LIST``), the others in the reference order, so their first row is sess-01."""
    app = console(sqlite_url(tmp_path), **options)
    app.ctx.description = SNAPSHOT_DESCRIPTION  # tmp_path differs on every run
    return app


def driving(*keys: str) -> Callable[[Pilot[Any]], Any]:
    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        # Toasts expire on a wall-clock timer; a slow run would lose them from the picture. They
        # are cleared after each key: one left on a screen a later key covered with a dialog
        # showed through it, half drawn, on a loaded machine (`*` then `t`).
        for key in keys:
            await press(pilot, key)
            await settle(pilot)
            pilot.app.clear_notifications()
        await settle(pilot)

    return run_before


def test_session_list(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)
    assert snap_compare(app_for(tmp_path, **LIST), terminal_size=SIZE, run_before=driving())


def test_session_list_small_terminal(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)
    assert snap_compare(app_for(tmp_path, **LIST), terminal_size=(80, 24), run_before=driving())


def test_session_list_large_terminal(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)
    assert snap_compare(app_for(tmp_path, **LIST), terminal_size=(200, 60), run_before=driving())


def test_session_list_sorted_by_status(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)  # o o o: status ascending; d: descending; the header and the filter line say so
    run_before = driving("o", "o", "o", "d")
    assert snap_compare(app_for(tmp_path, **LIST), terminal_size=SIZE, run_before=run_before)


def test_session_list_at_the_end(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)  # pages of two: end reads the last page only, and says what lies above
    app = app_for(tmp_path, page_size=2, window_pages=2, **LIST)
    assert snap_compare(app, terminal_size=SIZE, run_before=driving("end"))


def test_session_list_filtered(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)
    keys = ("a", "slash", "s", "e", "s", "s", "enter")
    assert snap_compare(app_for(tmp_path, **LIST), terminal_size=SIZE, run_before=driving(*keys))


def test_session_list_with_marks(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)  # sess-01 by id; run-harbor's by filter, less sess-03 unmarked
    keys = ("space", "slash", "h", "a", "r", "b", "o", "r", "enter", "asterisk", "down", "space")
    run_before = driving(*keys, "escape")
    assert snap_compare(app_for(tmp_path), terminal_size=SIZE, run_before=run_before)


def test_session_list_grouped_with_a_group_folded(
    snap_compare: Any, tmp_path: Path, db: Store
) -> None:
    seed(db)  # g g: grouped by run (a run named with an escape sequence first); run-harbor folded
    keys = ("g", "g", "home", *["down"] * 8, "enter")
    assert snap_compare(app_for(tmp_path), terminal_size=SIZE, run_before=driving(*keys))


def test_empty_store(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    assert snap_compare(app_for(tmp_path, **LIST), terminal_size=SIZE, run_before=driving())


def test_session_detail(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)
    assert snap_compare(app_for(tmp_path), terminal_size=SIZE, run_before=driving("enter"))


def test_session_detail_logs_tab(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)
    run_before = driving("down", "enter", "p", "2")
    assert snap_compare(app_for(tmp_path), terminal_size=SIZE, run_before=run_before)


def test_session_detail_transcript_tab(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    """The agent's own transcript's tail: prompts, its words, a tool call and a cut result, and
    a turn done in the list's words."""
    import json

    external = "3f0c8a52-7c1e-4b8e-9a57-2f1d7c0e9b11"
    path = tmp_path / "home" / ".claude" / "projects" / "-w" / f"{external}.jsonl"
    path.parent.mkdir(parents=True)
    lines = [
        {"type": "user", "message": {"role": "user", "content": "Fix the failing test in api/"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Running the tests first."},
            {"type": "tool_use", "name": "Bash", "input": {"command": "pytest -q api/"}}]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "content": "1 failed, 41 passed\nFAILED test_auth.py"}]}},
        {"type": "assistant", "message": {"role": "assistant", "content": "Fixed [bold]x[/]."}},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    add_session(
        db, "sess-t", agent_id="ada", adapter="claude", external_session_id=external,
        metadata={"transcript_path": str(path)}, at=FROZEN - timedelta(minutes=1),
    )  # fmt: skip
    with db.write() as conn:
        heartbeat(db=conn, session_id="sess-t", status="active", turn_done="Fixed.",
                  clock=fixed_clock(FROZEN - timedelta(seconds=30)))  # fmt: skip
    run_before = driving("enter", "8")
    assert snap_compare(app_for(tmp_path), terminal_size=SIZE, run_before=run_before)


def test_stop_dialog(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)
    assert snap_compare(app_for(tmp_path), terminal_size=SIZE, run_before=driving("s"))


def test_resume_dialog_after_a_refusal(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)  # grace is not a registered agent: resume is refused, the dialog stays
    run_before = driving("down", "r", "y")
    assert snap_compare(app_for(tmp_path), terminal_size=SIZE, run_before=run_before)


def test_terminate_dialog_with_claims(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)
    assert snap_compare(app_for(tmp_path), terminal_size=SIZE, run_before=driving("t"))


def test_terminate_dialog_of_an_agent_roundtable_started(
    snap_compare: Any, tmp_path: Path, db: Store
) -> None:
    seed(db)  # sess-01's agent started by its host: it may still run; stopping it is offered
    service.record_launch(
        store=db, session_id="sess-01", tmux_pane="%7", tmux_socket=None, actor="ops",
        machine="laptop", via_host="laptop", clock=fixed_clock(FROZEN),
    )  # fmt: skip
    run_before = driving("t", "tab", "space")
    assert snap_compare(app_for(tmp_path), terminal_size=SIZE, run_before=run_before)


def test_terminate_dialog_refuses_blank(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)
    run_before = driving("t", "ctrl+s")
    assert snap_compare(app_for(tmp_path), terminal_size=SIZE, run_before=run_before)


def test_help(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)
    run_before = driving("question_mark")
    assert snap_compare(app_for(tmp_path), terminal_size=SIZE, run_before=run_before)


def test_session_log(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)
    run_before = driving("p", "h", "l")
    assert snap_compare(app_for(tmp_path), terminal_size=SIZE, run_before=run_before)


def test_briefing(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)
    adapters = {
        "codex": AdapterConfig(name="codex", resume_pattern="codex resume {{external_session_id}}")
    }
    app = app_for(tmp_path, adapters=adapters)
    assert snap_compare(app, terminal_size=SIZE, run_before=driving("b"))


# sess-01 active, sess-02 paused, sess-03 running, sess-04 stopped (the reference order).
FIRST_FOUR_MARKED = ("space", "down", "space", "down", "space", "down", "space")


def test_bulk_pause_preview(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)  # two to pause; skipped, each with its reason: already paused, stopped
    run_before = driving(*FIRST_FOUR_MARKED, "p")
    assert snap_compare(app_for(tmp_path), terminal_size=SIZE, run_before=run_before)


def test_bulk_terminate_preview_with_claims(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)  # every session marked: ada's claims, one live and one expired; three skipped
    run_before = driving("asterisk", "t")
    assert snap_compare(app_for(tmp_path), terminal_size=SIZE, run_before=run_before)


def test_bulk_outcome(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)  # the outcome stays on screen (its toast lasts 20 s): done ones are unmarked

    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await press(pilot, *FIRST_FOUR_MARKED, "p")
        pilot.app.clear_notifications()
        await press(pilot, "y")
        await settle(pilot)

    assert snap_compare(app_for(tmp_path), terminal_size=SIZE, run_before=run_before)


def test_fleet_overview(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)  # and usage for three agents over two runs; O opens the overview
    for number, (agent, run, tokens, cost) in enumerate(
        (
            ("ada", "run-atlas", 1_250_000, 18.4),
            ("grace", "run-harbor", 480_000, 6.1),
            ("linus", "run-harbor", 95_000, 0.9),
        )
    ):
        add_session(
            db,
            f"sess-u{number}",
            agent_id=agent,
            run_id=run,
            status="ended",
            at=FROZEN - timedelta(hours=5 * number + 1),
            metadata={"usage": {"total_tokens": tokens, "cost_usd": cost}},
        )
        spent_today(db, f"sess-u{number}", agent, run, tokens, cost)
    app = app_for(tmp_path)
    app.ctx.budgets = BUDGETS
    told_before(db, BUDGETS, [(0, 80), (1, 80), (1, 100)])  # no notice over the picture
    assert snap_compare(app, terminal_size=SIZE, run_before=driving("O"))


# Ada at 92 % of her day, the harbor run past its limit, the fleet well within its own.
BUDGETS = (
    Budget("ada daily", "dollars", 20.0, per="day", agent="ada", stop=True),
    Budget("harbor run", "tokens", 500_000, run="run-harbor"),
    Budget("fleet", "tokens", 10_000_000),
)


def spent_today(db: Store, session_id: str, agent: str, run: str, tokens: int, cost: float) -> None:
    with db.write() as write:
        write.execute(text(ADD_SPEND), spent_row(session_id, agent, run, tokens, cost))


def spent_row(session_id: str, agent: str, run: str, tokens: int, cost: float) -> dict[str, Any]:
    return {"session_id": session_id, "day": format_ts(FROZEN)[:10], "agent_id": agent,
            "run_id": run, "workspace_id": "", "tokens": tokens, "cost_usd": cost,
            "unpriced_tokens": 0, "changed_at": format_ts(FROZEN)}  # fmt: skip


def told_before(db: Store, budgets: tuple[Budget, ...], levels: list[tuple[int, int]]) -> None:
    """Crossings claimed an hour before the console opened: it tells none of them again."""
    with db.write() as write:
        for index, level in levels:
            budget = budgets[index]
            write.execute(
                text("INSERT INTO budget_crossings (id, budget_key, period, level, name,"
                     " workspace_id, unit, limit_amount, spent, stop, crossed_at) VALUES"
                     " (:id, :key, :period, :level, :name, NULL, :unit, :limit, 0, :stop, :at)"),
                {"id": f"c-{index}-{level}", "key": budget.key, "period": budget.period(FROZEN),
                 "level": level, "name": budget.name, "unit": budget.unit, "limit": budget.limit,
                 "stop": budget.stop, "at": format_ts(FROZEN - timedelta(hours=1))},
            )  # fmt: skip


def launchable(db: Store, monkeypatch: Any, **values: Any) -> dict[str, AdapterConfig]:
    """A paused session first in the reference order, its agent's program ``true`` found on a
    fixed PATH and its directory /tmp, so the dialog's paths are the same on every run; the
    console as if in a terminal of its own (no tmux, able to lend it)."""
    from roundtable_console.screens.session import launcher

    monkeypatch.setenv("PATH", "/usr/bin")
    monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.setattr(launcher, "can_hand_over", lambda _app: True)
    add_agent(db, "ada")
    fields = {
        "agent_id": "ada",
        "run_id": "run-atlas",
        "status": "paused",
        "external_session_id": "ext-123",
        "working_directory": "/tmp",
        "at": FROZEN - timedelta(hours=4),
        **values,
    }
    add_session(db, "sess-00", **fields)
    pattern = "true resume {{external_session_id}} --model 'gpt 5'"
    return {"codex": AdapterConfig(name="codex", resume_pattern=pattern)}


def test_launch_dialog(snap_compare: Any, tmp_path: Path, db: Store, monkeypatch: Any) -> None:
    adapters = launchable(db, monkeypatch)  # the argv, the id masked, program, directory, where
    app = app_for(tmp_path, adapters=adapters)
    assert snap_compare(app, terminal_size=SIZE, run_before=driving("R"))


def test_launch_dialog_refused(
    snap_compare: Any, tmp_path: Path, db: Store, monkeypatch: Any
) -> None:
    adapters = launchable(db, monkeypatch, working_directory="/nonexistent/repo")
    app = app_for(tmp_path, adapters=adapters)
    assert snap_compare(app, terminal_size=SIZE, run_before=driving("R"))


def test_launch_dialog_on_a_host(
    snap_compare: Any, tmp_path: Path, db: Store, monkeypatch: Any
) -> None:
    """R for a session of another machine: its host starts it there (issue 41, point 4)."""
    from roundtable_console.store.hosts import registry
    from roundtable_console.store.hosts.facts import AgentFound, HostFacts
    from roundtable_console.store.resume.adapters import AGENT_RESUME_PATTERNS, PLACEHOLDER

    monkeypatch.setenv("ROUNDTABLE_HOST", "desk")
    launchable(
        db, monkeypatch, adapter="claude", host="laptop", metadata={"hooks": "claude-code"},
        resume_command=AGENT_RESUME_PATTERNS["claude"].replace(PLACEHOLDER, "ext-123"),
    )  # fmt: skip
    facts = HostFacts(name="laptop", agents=(AgentFound("claude-code", "2.1.328"),),
                      projects=("/tmp",))  # fmt: skip
    with db.write() as conn:
        registry.connect(conn, facts, connection_id="laptop-1", clock=fixed_clock(FROZEN))
    assert snap_compare(app_for(tmp_path), terminal_size=SIZE, run_before=driving("R"))


def test_stop_agent_dialog(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    seed(db)  # X on the first row: its agent's process, asked first
    assert snap_compare(app_for(tmp_path), terminal_size=SIZE, run_before=driving("X"))


def test_session_detail_changes_tab(
    snap_compare: Any, tmp_path: Path, db: Store, monkeypatch: Any
) -> None:
    """What a session changed, read by its host: branch, base, a commit, its files with their
    counts (a binary one named), the patch coloured as a diff, the next page offered."""
    from tests.test_tui_changes import FIRST
    from tests.test_tui_through_host import StandInHost, on_laptop

    on_laptop(db, tmp_path, monkeypatch)
    with StandInHost(db, "laptop", [{"ok": FIRST}]):
        run_before = driving("enter", "9")
        assert snap_compare(app_for(tmp_path), terminal_size=SIZE, run_before=run_before)


def test_new_session_dialog(snap_compare: Any, tmp_path: Path, db: Store) -> None:
    """N: the host, its projects and agents, a worktree with its branch and base, the prompt,
    how much the agent asks, the model."""
    from roundtable_console.store.hosts import registry
    from roundtable_console.store.hosts.facts import AgentFound, HostFacts
    from tests.conftest import FakeClock

    seed(db)
    facts = HostFacts(name="buildbox", agents=(AgentFound("claude-code", "2.1.328"),
                      AgentFound("codex", "0.169.0")),
                      projects=("/home/dev/src/api", "/home/dev/src/web"))  # fmt: skip
    with db.write() as conn:
        registry.connect(conn, facts, connection_id="buildbox-1", clock=FakeClock(FROZEN))
    from roundtable_console.screens.dialogs.new_session import NewSessionDialog

    async def run_before(pilot: Pilot[Any]) -> None:
        await driving("N")(pilot)
        # The hosts are read in a worker, then the dialog opens and fills in its host's choices.
        await until(pilot, lambda: isinstance(pilot.app.screen, NewSessionDialog))
        await until(pilot, lambda: "/home/dev/src/api" in screen_text(pilot.app))
        await settle(pilot)

    assert snap_compare(app_for(tmp_path), terminal_size=SIZE, run_before=run_before)
