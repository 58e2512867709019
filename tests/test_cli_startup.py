"""The agent-facing commands stay light: no Textual, Rich or Alembic on a heartbeat.

Each case runs the real CLI in a fresh interpreter (the test process has imported everything),
once with ``-X importtime`` and once checking ``sys.modules`` after ``main()`` returns.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from store import sessions
from store.database import open_store

HEAVY = ("textual", "rich", "alembic")
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
        sessions.register(
            db=db, session_id="s1", agent_id="a", run_id="r", adapter="codex",
            working_directory="/w",
        )  # fmt: skip
    store.dispose()
    return url


def _env(tmp_path: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "ROUNDTABLE_DB"}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"))
    return env


def _top_level_imports(importtime_log: str) -> set[str]:
    names = set()
    for line in importtime_log.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_agent_commands_import_no_ui_or_migration_code(
    command: str, db_url: str, tmp_path: Path
) -> None:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tui.cli", *COMMANDS[command], "--db", db_url],
        capture_output=True,
        text=True,
        cwd=PROJECT,
        env=_env(tmp_path),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("s")
    imported = _top_level_imports(result.stderr)
    assert "click" in imported and "sqlalchemy" in imported  # the log really was read
    assert imported.isdisjoint(HEAVY), sorted(imported & set(HEAVY))


def test_heartbeat_leaves_no_heavy_module_loaded(db_url: str, tmp_path: Path) -> None:
    report = tmp_path / "modules.json"
    script = (
        "import json, sys\n"
        "from tui.cli import main\n"
        "try:\n"
        f"    main({[*COMMANDS['heartbeat'], '--db', db_url]!r})\n"
        "except SystemExit as stop:\n"
        "    code = stop.code\n"
        f"open({str(report)!r}, 'w').write(json.dumps({{'code': code, "
        "'modules': sorted(m for m in sys.modules if m == 'tui.app' or m.split('.')[0] in "
        "('textual', 'rich', 'alembic', 'yaml', 'screens'))}))\n"
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
