"""`roundtable resume --session S --exec`, run as a user runs it (a process of its own): the
lifecycle resume, then the process becomes the fake agent in the session's working directory,
so the exit status is the agent's. On SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from roundtable_console.store.db.database import Store
from tests.helpers import history, session_row
from tests.test_launch import FAKE_AGENT, agent_bin, dump, paused_session

ROOT = Path(__file__).resolve().parent.parent
CONFIG = """
[adapters.fake]
resume_pattern = "fake-agent --resume {{external_session_id}}"
"""


def environment(tmp_path: Path, *, path: str, exit_status: int = 7) -> dict[str, str]:
    config = tmp_path / "xdg-config" / "roundtable"
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(CONFIG)
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("ROUNDTABLE_", "FAKE_AGENT_"))
    }
    env.update(
        PATH=path,
        XDG_CONFIG_HOME=str(tmp_path / "xdg-config"),
        XDG_DATA_HOME=str(tmp_path / "xdg-data"),
        ROUNDTABLE_OPERATOR="olivia",
        FAKE_AGENT_RECORD=str(tmp_path / "record.json"),
        FAKE_AGENT_EXIT=str(exit_status),
    )
    return env


def roundtable(url: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "roundtable_console.tui.cli", *args, "--db", url],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_exec_resumes_then_becomes_the_agent_whose_exit_status_it_returns(
    store: Store, store_url: str, tmp_path: Path
) -> None:
    workdir = paused_session(store, tmp_path)
    env = environment(tmp_path, path=f"{agent_bin(tmp_path)}{os.pathsep}{os.environ['PATH']}")
    result = roundtable(store_url, env, "resume", "--session", "s1", "--exec")
    assert result.returncode == 7, result.stderr
    record = json.loads((tmp_path / "record.json").read_text())
    assert record["cwd"] == str(workdir)
    assert record["session"] == "s1"  # the agent's hooks report on this session
    argv = record["argv"]
    assert Path(argv[0]).name == "fake-agent"  # found on PATH, as execvp finds it
    assert argv[1:3] == ["--resume", "ext-42"]
    assert argv[3].startswith("# Roundtable Resume Briefing\n\nYou are resuming as ada.")
    assert len(argv) == 4
    assert "fake agent: 3 arguments in " + str(workdir) in result.stdout
    assert session_row(store)["status"] == "resuming"
    events = history(store)
    assert [event for event, _ in events] == ["registered", "resuming"]
    assert events[-1][1]["actor"] == "olivia"
    assert "Session s1 resumed (now resuming, idempotency key " in result.stderr
    assert "Traceback" not in result.stderr


def test_the_same_key_again_launches_without_resuming_twice(
    store: Store, store_url: str, tmp_path: Path
) -> None:
    paused_session(store, tmp_path)
    env = environment(tmp_path, path=f"{agent_bin(tmp_path)}{os.pathsep}{os.environ['PATH']}")
    env["FAKE_AGENT_EXIT"] = "0"
    args = ("resume", "--session", "s1", "--exec", "--idempotency-key", "launch-1")
    assert roundtable(store_url, env, *args).returncode == 0
    (tmp_path / "record.json").unlink()
    again = roundtable(store_url, env, *args)
    assert again.returncode == 0, again.stderr
    assert "already resumed with this key" in again.stderr
    assert (tmp_path / "record.json").exists()
    assert [event for event, _ in history(store)] == ["registered", "resuming"]
    # Another key: the session is resuming already, and resume is refused; nothing runs.
    (tmp_path / "record.json").unlink()
    other = roundtable(store_url, env, "resume", "--session", "s1", "--exec", "--json")
    assert other.returncode == 1
    error = json.loads(other.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "illegal_session_transition"
    assert not (tmp_path / "record.json").exists()


def test_a_program_not_found_is_refused_before_the_resume(
    store: Store, store_url: str, tmp_path: Path
) -> None:
    paused_session(store, tmp_path)
    before = dump(store)
    env = environment(tmp_path, path=str(tmp_path / "nowhere"))
    result = roundtable(store_url, env, "resume", "--session", "s1", "--exec", "--json")
    assert result.returncode == 1
    error = json.loads(result.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "not_launchable"
    assert error["details"] == {"reason": "program_not_found"}
    assert "'fake-agent'" in error["message"] and "was not found" in error["message"]
    assert not (tmp_path / "record.json").exists()
    assert dump(store) == before
    human = roundtable(store_url, env, "resume", "--session", "s1", "--exec")
    assert human.returncode == 1
    assert human.stderr.strip().splitlines()[-1].startswith("error: The program 'fake-agent'")


def test_a_program_that_cannot_be_started_says_how_to_retry(
    store: Store, store_url: str, tmp_path: Path
) -> None:
    # An executable that the kernel will not run (a script with a missing interpreter): found
    # on PATH, so the session is resumed, then exec fails and the key to retry with is given.
    bin_dir = tmp_path / "broken"
    bin_dir.mkdir()
    broken = bin_dir / "fake-agent"
    broken.write_text("#!/nonexistent/interpreter\n")
    broken.chmod(0o755)
    paused_session(store, tmp_path)
    env = environment(tmp_path, path=str(bin_dir))
    result = roundtable(
        store_url, env, "resume", "--session", "s1", "--exec", "--idempotency-key", "k9", "--json"
    )
    assert result.returncode == 1
    error = json.loads(result.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "not_launchable"
    assert error["details"] == {"reason": "exec_failed", "idempotency_key": "k9"}
    assert "--idempotency-key k9" in error["message"]
    assert session_row(store)["status"] == "resuming"


def test_exec_options_without_exec_are_a_usage_error() -> None:
    from click.testing import CliRunner

    from roundtable_console.tui.cli import cli

    result = CliRunner().invoke(cli, ["resume", "--session", "s1", "--idempotency-key", "k"])
    assert result.exit_code == 2
    assert "--idempotency-key and --operator go with --exec or --launch." in result.output


def test_the_fake_agent_is_an_executable_program() -> None:
    assert os.access(FAKE_AGENT, os.X_OK)
    assert FAKE_AGENT.read_text().startswith("#!/usr/bin/env python3\n")
