"""What a newcomer meets first: `roundtable tui --demo` on a store of its own (never the store
they work in), `roundtable --version`, shell completion, and the README's screenshot."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from roundtable_console.store.db.database import open_store
from roundtable_console.tui.cli import cli
from roundtable_console.tui.config import demo_database_path, resolve_demo_url, sqlite_url
from tests.helpers import count
from tests.test_tui_support import console, settle

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.usefixtures("isolated_env")


def console_url(monkeypatch: pytest.MonkeyPatch, *args: str) -> str:
    """The store `roundtable tui ARGS` would open (the console itself is not started)."""
    seen: dict[str, Any] = {}

    def run_console(**kwargs: Any) -> int:
        seen.update(kwargs)
        return 0

    monkeypatch.setitem(
        sys.modules, "roundtable_console.tui.app", types.SimpleNamespace(run_console=run_console)
    )
    result = CliRunner().invoke(cli, ["tui", *args])
    assert result.exit_code == 0, result.output
    assert seen["demo"] == ("--demo" in args)
    return str(seen["url"])


def test_demo_opens_demo_db_beside_the_default_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "xdg-data" / "roundtable"
    assert demo_database_path() == data / "demo.db"
    assert console_url(monkeypatch, "--demo") == sqlite_url(data / "demo.db")
    assert console_url(monkeypatch) == sqlite_url(data / "roundtable.db")


def test_demo_never_opens_a_store_the_user_works_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    demo = sqlite_url(tmp_path / "xdg-data" / "roundtable" / "demo.db")
    monkeypatch.setenv("ROUNDTABLE_DB", "postgresql://ops@db.internal/roundtable")
    assert console_url(monkeypatch, "--demo") == demo
    config = tmp_path / "xdg-config" / "roundtable"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('database = "sqlite:////srv/team.db"\n')
    assert console_url(monkeypatch, "--demo") == demo
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    assert console_url(monkeypatch, "--demo", "--root", str(workspace)) == demo
    # A store named on the command line with --demo is the demo's, as asked.
    mine = sqlite_url(tmp_path / "mine.db")
    assert console_url(monkeypatch, "--demo", "--db", mine) == mine


def test_tui_help_says_where_the_demo_lives() -> None:
    result = CliRunner().invoke(cli, ["tui", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "demo.db beside the default store in the user data directory" in text
    assert "Never the store you work in" in text


async def test_the_demo_console_seeds_its_own_store_and_leaves_the_default_alone(
    tmp_path: Path,
) -> None:
    data = tmp_path / "xdg-data" / "roundtable"
    app = console(resolve_demo_url(db=None), demo=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, rounds=6)
        assert app.ctx.store is not None
    assert (data / "demo.db").exists()
    assert not (data / "roundtable.db").exists()
    demo = open_store(sqlite_url(data / "demo.db"))
    try:
        seeded = count(demo, "agent_sessions")
        assert seeded > 0
    finally:
        demo.dispose()
    # Opened again, the demo store is not seeded twice.
    again = console(resolve_demo_url(db=None), demo=True)
    async with again.run_test(size=(120, 40)) as pilot:
        await settle(pilot, rounds=6)
        assert not any("Seeded the demo store" in message for _, message in again.notified)
    demo = open_store(sqlite_url(data / "demo.db"))
    try:
        assert count(demo, "agent_sessions") == seeded
    finally:
        demo.dispose()


def test_version_is_the_packages() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"roundtable, version {version('roundtable-console')}\n"


@pytest.mark.parametrize(
    ("shell", "marker"),
    [
        ("bash", "_roundtable_completion()"),
        ("zsh", "#compdef roundtable"),
        ("fish", "function _roundtable_completion"),
    ],
)
def test_the_completion_script_is_produced(shell: str, marker: str) -> None:
    """As the README says: _ROUNDTABLE_COMPLETE=<shell>_source roundtable (the installed
    console script)."""
    script = Path(sys.executable).with_name("roundtable")
    env = {**os.environ, "_ROUNDTABLE_COMPLETE": f"{shell}_source"}
    done = subprocess.run(
        [str(script)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert marker in done.stdout
    assert "_ROUNDTABLE_COMPLETE" in done.stdout


def test_completion_completes_commands_and_options() -> None:
    script = Path(sys.executable).with_name("roundtable")
    env = {
        **os.environ,
        "_ROUNDTABLE_COMPLETE": "bash_complete",
        "COMP_WORDS": "roundtable res",
        "COMP_CWORD": "1",
    }
    done = subprocess.run(
        [str(script)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "plain,resume" in done.stdout.splitlines()
    env.update(COMP_WORDS="roundtable resume --ex", COMP_CWORD="2")
    done = subprocess.run(
        [str(script)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert "plain,--exec" in done.stdout.splitlines()


def test_the_readme_shows_the_console_screenshot() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = readme.splitlines()
    assert lines[0] == "# Roundtable session console"
    assert "![The Roundtable console" in "\n".join(lines[:6])
    screenshot = ROOT / "docs" / "console.svg"
    svg = screenshot.read_text(encoding="utf-8")
    assert svg.startswith("<svg")
    assert "Roundtable&#160;console" in svg and "sess-00005" in svg
    assert "_ROUNDTABLE_COMPLETE=bash_source roundtable" in readme
    assert "python docs/screenshot.py" in readme


def test_the_screenshot_is_the_console_as_it_is_now(tmp_path: Path) -> None:
    """docs/screenshot.py is deterministic (demo data and clock fixed): what it makes now is
    the committed picture. After a deliberate change to the list, run it and commit the SVG."""
    made = tmp_path / "console.svg"
    done = subprocess.run(
        [sys.executable, "docs/screenshot.py", "--output", str(made)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert made.read_text(encoding="utf-8") == (ROOT / "docs" / "console.svg").read_text(
        encoding="utf-8"
    ), "docs/console.svg is out of date: run python docs/screenshot.py"
