"""The agent-facing commands stay light: no Textual, Rich or Alembic on a heartbeat, and no
PostgreSQL dialect on a SQLite store; schema work happens once, on the first open, and says so.

Each case runs the real CLI in a fresh interpreter (the test process has imported everything),
once with ``-X importtime`` and once checking ``sys.modules`` after ``main()`` returns.
"""

from __future__ import annotations

import importlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from roundtable_console.store.db.database import open_store
from roundtable_console.store.writes import agent_writes

# From this size on, the migrations say which index they are building.
LARGE_TABLE_ROWS = importlib.import_module(
    "roundtable_console.store.db.migrations.versions.0002_console_additions"
).LARGE_TABLE_ROWS

HEAVY = ("textual", "rich", "alembic")
# What the agent's writes leave unloaded on a current store (store.writes.quick_writes).
DATABASE_LAYER = ("sqlalchemy", "sqlmodel", "pydantic", "textual", "alembic")
QUICK = ("heartbeat", "end", "register")
# Needed only to write to a PostgreSQL store (imported by the dialect that uses it).
NEEDLESS_ON_SQLITE = ("sqlalchemy.dialects.postgresql",)
PROJECT = Path(__file__).resolve().parents[1]
COMMANDS = {
    "heartbeat": ["sessions", "heartbeat", "--session", "s1"],
    "end": ["sessions", "end", "--session", "s1"],
    "register": [
        "sessions", "register", "--id", "s2", "--agent", "a", "--run", "r",
        "--adapter", "codex", "--cwd", ".",
    ],
    "list": ["sessions", "list"],
}  # fmt: skip


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'roundtable.db'}"
    store = open_store(url)
    with store.write() as db:
        agent_writes.register(
            db=db, session_id="s1", agent_id="a", run_id="r", adapter="codex",
            working_directory="/w",
        )  # fmt: skip
    store.dispose()
    return url


def _env(tmp_path: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "ROUNDTABLE_DB"}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"))
    return env


def _imported_modules(importtime_log: str) -> set[str]:
    names = set()
    for line in importtime_log.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


def _top_level_imports(importtime_log: str) -> set[str]:
    return {name.split(".")[0] for name in _imported_modules(importtime_log)}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_agent_commands_import_no_ui_or_migration_code(
    command: str, db_url: str, tmp_path: Path
) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "roundtable_console.tui.cli",
            *COMMANDS[command],
            "--db",
            db_url,
        ],
        capture_output=True,
        text=True,
        cwd=PROJECT,
        env=_env(tmp_path),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("s")
    imported = _top_level_imports(result.stderr)
    assert "click" in imported  # the log really was read
    assert imported.isdisjoint(HEAVY), sorted(imported & set(HEAVY))
    modules = _imported_modules(result.stderr)
    if command in QUICK:
        # On a current store the agent's writes take the quick path (tests/test_quick_writes.py).
        assert "roundtable_console.store.writes.quick_writes" in modules
        assert imported.isdisjoint(DATABASE_LAYER), sorted(imported & set(DATABASE_LAYER))
        return
    assert "sqlalchemy.dialects.sqlite" in modules
    assert modules.isdisjoint(NEEDLESS_ON_SQLITE), sorted(modules & set(NEEDLESS_ON_SQLITE))


def test_an_agents_read_back_loads_no_action_or_briefing_code(db_url: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "roundtable_console.tui.cli"]
        + ["sessions", "show", "--session", "s1", "--json", "--db", db_url],
        capture_output=True,
        text=True,
        cwd=PROJECT,
        env=_env(tmp_path),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout)["id"] == "s1"
    modules = _imported_modules(result.stderr)
    assert "roundtable_console.store.service" in modules  # the log really was read
    needless = {
        "roundtable_console.store.writes.lifecycle",
        "roundtable_console.store.writes.lifecycle_outcomes",
        "roundtable_console.store.writes.lifecycle_keys",
        "roundtable_console.store.writes.lifecycle_many",
        "roundtable_console.store.resume.briefing",
        "roundtable_console.store.reads.projections",
        "roundtable_console.store.resume.plan",
    }
    assert modules.isdisjoint(needless), sorted(modules & needless)


def test_heartbeat_leaves_no_heavy_module_loaded(db_url: str, tmp_path: Path) -> None:
    report = tmp_path / "modules.json"
    script = (
        "import json, sys\n"
        "from roundtable_console.tui.cli import main\n"
        "try:\n"
        f"    main({[*COMMANDS['heartbeat'], '--db', db_url]!r})\n"
        "except SystemExit as stop:\n"
        "    code = stop.code\n"
        f"open({str(report)!r}, 'w').write(json.dumps({{'code': code, "
        "'modules': sorted(m for m in sys.modules if m == 'roundtable_console.tui.app' "
        "or m.startswith('roundtable_console.screens') or m.split('.')[0] in "
        "('textual', 'rich', 'alembic', 'yaml', 'fastapi', 'starlette', 'uvicorn'))}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=PROJECT,
        env=_env(tmp_path),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(report.read_text()) == {"code": 0, "modules": []}


def _reference_store(path: Path, sessions: int) -> str:
    """A store as the reference system leaves it (its DDL, no migrations), with sessions s0…"""
    raw = sqlite3.connect(path)
    raw.executescript((PROJECT / "tests" / "reference_ddl.sql").read_text())
    raw.executemany(
        "INSERT INTO agent_sessions (id, agent_id, run_id, adapter, working_directory, status,"
        " started_at) VALUES (?, 'a', 'r', 'codex', '/w', 'active', '2026-09-17 17:26:35')",
        ((f"s{number}",) for number in range(sessions)),
    )
    raw.commit()
    raw.close()
    return f"sqlite:///{path}"


def test_first_open_of_a_large_store_reports_each_index_later_opens_are_silent(
    tmp_path: Path,
) -> None:
    url = _reference_store(tmp_path / "reference.db", LARGE_TABLE_ROWS)
    argv = [sys.executable, "-m", "roundtable_console.tui.cli", *COMMANDS["heartbeat"], "--db", url]

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv, capture_output=True, text=True, cwd=PROJECT, env=_env(tmp_path), timeout=60
        )

    first = run()
    assert first.returncode == 0, first.stderr[-2000:]
    assert first.stdout.startswith("s1")
    lines = first.stderr.splitlines()
    assert lines[0].startswith("Bringing the store's schema up to date")
    steps = [line.strip() for line in lines[1:-1]]
    # The session indexes, which are the large table's; the empty tables' go unmentioned.
    assert [step.split(":")[0] for step in steps] == [
        *(f"index {number} of 12" for number in range(1, 6)),
        "index 12 of 12",
        "index ix_agent_sessions_last_seen on agent_sessions…",  # 0006: the id added
        "index ix_agent_sessions_attention on agent_sessions…",  # 0007: the attention order
        "session counts by group…",  # 0008: the grouped list's counts
        "usage totals by agent and run…",  # 0009: the overview's tokens and cost
        "index ix_agent_sessions_attention_started on agent_sessions…",  # 0011: fresh by start
        "what each session spent, by day, for the budgets…",  # 0024: the budgets' spend
    ]
    assert steps[0].endswith("ix_agent_sessions_started on agent_sessions…")
    assert lines[-1].startswith("The store's schema is up to date (")

    later = run()
    assert later.returncode == 0, later.stderr[-2000:]
    assert later.stdout.startswith("s1")
    assert later.stderr == ""


def test_first_open_of_a_small_store_says_one_line(tmp_path: Path) -> None:
    url = _reference_store(tmp_path / "reference.db", 3)
    result = subprocess.run(
        [sys.executable, "-m", "roundtable_console.tui.cli", *COMMANDS["heartbeat"], "--db", url],
        capture_output=True,
        text=True,
        cwd=PROJECT,
        env=_env(tmp_path),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stderr.splitlines() == [
        "Bringing the store's schema up to date (first open only)…"
    ]


def _modules_after_console_script(argv: list[str], tmp_path: Path) -> dict[str, Any]:
    """Run the console script's entry (``tui.quick_cli.main``) in a fresh interpreter; its exit
    code, its output and the top-level packages loaded when it is done."""
    report = tmp_path / "modules.json"
    script = (
        "import json, sys\n"
        "from roundtable_console.tui.quick_cli import main\n"
        "code = 0\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit as stop:\n"
        "    code = stop.code\n"
        f"open({str(report)!r}, 'w').write(json.dumps({{'code': code, "
        "'modules': sorted({m.split('.')[0] for m in sys.modules})}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=PROJECT,
        env=_env(tmp_path),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    found = json.loads(report.read_text())
    found["stdout"] = result.stdout
    return found


QUICK_FORMS = [[*COMMANDS[name], *extra] for name in QUICK for extra in ([], ["--json"])] + [
    [*COMMANDS["heartbeat"], "--status", "running", "--waiting", "approve token=x"]
]


@pytest.mark.parametrize("argv", QUICK_FORMS, ids=" ".join)
def test_the_agents_writes_load_no_database_layer(
    argv: list[str], db_url: str, tmp_path: Path
) -> None:
    found = _modules_after_console_script([*argv, "--db", db_url], tmp_path)
    assert found["code"] == 0
    assert found["stdout"].startswith(("s1", "s2", '{"id": "s'))
    assert "sqlite3" in found["modules"] and "click" in found["modules"]  # really recorded
    assert set(found["modules"]).isdisjoint(DATABASE_LAYER)


def test_the_agents_writes_on_postgresql_load_no_database_layer(
    pg_server: Any, tmp_path: Path
) -> None:
    from tests.conftest import new_pg_database

    url = new_pg_database(pg_server)
    for argv in (COMMANDS["register"], [*COMMANDS["heartbeat"][:-1], "s2", "--json"]):
        found = _modules_after_console_script([*argv, "--db", url], tmp_path)
        assert found["code"] == 0, found
        assert "psycopg" in found["modules"]
        assert set(found["modules"]).isdisjoint(DATABASE_LAYER)


def test_a_refused_quick_write_loads_no_database_layer(db_url: str, tmp_path: Path) -> None:
    report = _modules_after_console_script(
        ["sessions", "heartbeat", "--session", "nope", "--json", "--db", db_url], tmp_path
    )
    assert report["code"] == 1
    assert set(report["modules"]).isdisjoint(DATABASE_LAYER)


def test_what_the_quick_path_does_not_read_goes_to_the_full_cli(
    db_url: str, tmp_path: Path
) -> None:
    found = _modules_after_console_script(
        ["sessions", "heartbeat", "--session", "s1", "--session", "s1", "--json", "--db", db_url],
        tmp_path,
    )
    assert found["code"] == 0
    assert json.loads(found["stdout"])["done"] == 1  # the operator's heartbeat of several
    assert "sqlalchemy" in found["modules"]


# What a hook's process never loads: each costs every event of every agent its import (typing
# about 3 ms of a 30 ms floor; dataclasses, platformdirs, click 10 ms or more).
NOT_IN_A_HOOK = ("typing", "dataclasses", "platformdirs", "click", *DATABASE_LAYER)


def test_no_hook_event_loads_typing_or_any_heavy_module(db_url: str, tmp_path: Path) -> None:
    """Each event of a Claude Code session, its transcript's usage read and its tool calls and
    spend written, through the console script's own entry (``tui.entry``)."""
    transcript = tmp_path / "t.jsonl"
    answer = {"type": "assistant", "message": {"id": "m", "model": "claude-sonnet-4",
                                                "usage": {"input_tokens": 5}}}  # fmt: skip
    transcript.write_text(json.dumps(answer) + "\n")
    base = {"session_id": "0d3c1a52-7c1e-4b8e-9a57-2f1d7c0e9b11", "cwd": str(tmp_path),
            "transcript_path": str(transcript)}  # fmt: skip
    events = {
        "SessionStart": {"source": "startup"},
        "PreToolUse": {"tool_name": "Bash", "tool_input": {"command": "ls"}},
        "PostToolUse": {"tool_name": "Bash", "tool_input": {"command": "ls"}, "duration_ms": 4},
        "Stop": {"last_assistant_message": "done"},
        "SessionEnd": {"reason": "other"},
    }
    env = {**_env(tmp_path), "ROUNDTABLE_HOOK_SPOOL": str(tmp_path / "spool.jsonl"),
           "HOME": str(tmp_path)}  # fmt: skip
    script = (
        "import json, sys\n"
        "from roundtable_console.tui.entry import main\n"
        "try:\n"
        f"    main(['hooks', 'run', 'claude-code', '--db', {db_url!r}])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})), file=sys.stderr)\n"
    )
    for name, fields in events.items():
        payload = json.dumps({**base, "hook_event_name": name, **fields})
        done = subprocess.run([sys.executable, "-c", script], input=payload, capture_output=True,
                              text=True, cwd=PROJECT, env=env, timeout=60)  # fmt: skip
        loaded = json.loads(done.stderr.splitlines()[-1])
        assert "sqlite3" in loaded and "json" in loaded, (name, done.stderr)  # really recorded
        assert set(loaded).isdisjoint(NOT_IN_A_HOOK), (name, set(loaded) & set(NOT_IN_A_HOOK))
    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as db:
        written = db.execute("SELECT count(*) FROM usage_days").fetchone()[0]
        calls = db.execute("SELECT count(*) FROM agent_session_events"
                           " WHERE event_type = 'tool.call'").fetchone()[0]  # fmt: skip
    assert (written, calls) == (1, 1)
