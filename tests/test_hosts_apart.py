"""Two machines on one (issue 41 point 6): the laptop — its own HOME, its own tmux server, its
agent and its transcript — and the server, which cannot see the laptop's files at all (a mount
namespace with an empty tmpfs over each of them). Nothing here can pass by reading a disk the
server could not read on a real team: the transcript, the pane, the launch, the reply and the
stop reach the laptop only through its host's link. The agent is a stand-in for Claude Code
(it records how it was started, echoes what it is typed, and exits on SIGINT)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from roundtable_console.store.db.database import Store
from roundtable_console.store.hosts import protocol
from tests import http_calls
from tests import test_agents_real as real
from tests.fake_models import SHELL_COMMAND
from tests.helpers import history, register_session
from tests.hosts_support import Team, ended, team_serving, wait_until

api = real.api  # the agents' model stand-in (a fixture), shared
CLAUDE_ID = "3f0c8a52-7c1e-4b8e-9a57-2f1d7c0e9b11"
STAND_IN = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "2.1.0 (Claude Code)"; exit 0; fi
printf '%s\\n' "$PWD" "$ROUNDTABLE_SESSION_ID" "$HOME" > "$HOME/started.txt"
echo "the agent is ready"
exec cat
"""


@pytest.fixture
def laptop(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The laptop's files: its HOME (its transcript, its project), its tmux directory, its
    PATH with the agent on it."""
    home = tmp_path / "laptop-home"
    project = home / "src" / "api"
    project.mkdir(parents=True)
    transcript = home / ".claude" / "projects" / "-src-api" / f"{CLAUDE_ID}.jsonl"
    transcript.parent.mkdir(parents=True)
    lines = [{"type": "user", "message": {"role": "user", "content": "only on the laptop"}}]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    bin_dir = home / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text(STAND_IN)
    (bin_dir / "claude").chmod(0o755)
    tmux_dir = Path(tempfile.mkdtemp(prefix="rt-laptop-", dir="/tmp"))
    env = {
        "HOME": str(home),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "TMUX_TMPDIR": str(tmux_dir),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
    }
    yield {"home": home, "project": project, "transcript": transcript, "tmux": tmux_dir,
           "env": env}  # fmt: skip
    subprocess.run(["tmux", "-L", protocol.TMUX_LABEL, "kill-server"],
                   env={**os.environ, **env}, capture_output=True, check=False)  # fmt: skip
    shutil.rmtree(tmux_dir, ignore_errors=True)


@pytest.fixture
def team(sqlite_store: Store, tmp_path: Path, laptop: dict[str, Any]) -> Iterator[Team]:
    url = f"sqlite:///{tmp_path / 'roundtable.db'}"
    hidden = (laptop["home"], laptop["tmux"])
    yield from team_serving(sqlite_store, url, tmp_path / "server-home", hidden=hidden)


@pytest.fixture
def each_team(
    store: Store, store_url: str, tmp_path: Path, laptop: dict[str, Any]
) -> Iterator[Team]:
    """The team's server on each engine, kept from the laptop's files."""
    hidden = (laptop["home"], laptop["tmux"])
    yield from team_serving(store, store_url, tmp_path / "server-home", hidden=hidden)


def test_the_server_reaches_the_laptops_agent_only_through_its_host(
    each_team: Team, laptop: dict[str, Any]
) -> None:
    team = each_team
    base = f"{team.served.url}/api/v1/workspaces/ws-1/sessions"
    ops = team.bearer("ops")
    with team.store.write() as db:
        for session_id, host in (("on-laptop", "laptop"), ("no-host", None)):
            register_session(
                db, session_id, adapter="claude", host=host, workspace_id="ws-1",
                working_directory=str(laptop["project"]), external_session_id=CLAUDE_ID,
                resume_command=f"claude --resume {CLAUDE_ID}",
                metadata={"hooks": "claude-code", "transcript_path": str(laptop["transcript"])},
            )  # fmt: skip
    # The control: read by the server itself, the laptop's transcript is not there.
    alone = http_calls.get(f"{base}/no-host/transcript", headers=ops).json()
    assert alone["available"] is False and "not here to read" in alone["reason"], alone
    host = team.host("--project", str(laptop["project"]), env=laptop["env"])
    try:
        wait_until(lambda: team.online("laptop"), "the laptop's host online")
        page = http_calls.get(f"{base}/on-laptop/transcript", headers=ops).json()
        assert page["available"] is True, page
        assert page["items"][-1]["text"] == "only on the laptop"
        # Started on the laptop, in its HOME, by an operator elsewhere.
        with team.store.write() as db:
            db.execute(text("UPDATE agent_sessions SET status = 'ended' WHERE id = 'on-laptop'"))
        key = {"Idempotency-Key": uuid.uuid4().hex}
        started = http_calls.post(f"{base}/on-laptop/launch", headers={**ops, **key}, timeout=60)
        assert started.status_code == 200, started.text
        said = laptop["home"] / "started.txt"
        wait_until(said.exists, "the agent started on the laptop")
        assert said.read_text().split("\n")[:3] == [
            str(laptop["project"].resolve()), "on-laptop", str(laptop["home"])
        ]  # fmt: skip
        # Its turn done: a reply typed into its pane on the laptop, then read from that pane.
        with team.store.write() as db:
            db.execute(text(
                "UPDATE agent_sessions SET status = 'active', waiting_since = NULL,"
                " waiting_reason = 'its turn is done', metadata_json = NULL"
                " WHERE id = 'on-laptop'"
            ))  # fmt: skip
        replied = http_calls.post(f"{base}/on-laptop/reply", json={"message": "go on, please"},
                             headers={**ops, "Idempotency-Key": "r1"}, timeout=30)  # fmt: skip
        assert replied.status_code == 200, replied.text
        wait_until(
            lambda: (
                "go on, please"
                in json.dumps(http_calls.get(f"{base}/on-laptop/transcript", headers=ops).json())
            ),
            "the reply on the laptop's pane",
        )
        stopped = http_calls.post(f"{base}/on-laptop/stop-agent", headers=ops,
                             json={"grace_seconds": 5}, timeout=60)  # fmt: skip
        assert stopped.status_code == 200 and stopped.json()["exited"] is True, stopped.text
        events = dict(history(team.store, "on-laptop"))
        assert events["launched"]["via_host"] == "laptop"
        assert events["agent_stopped"]["signal"] == "SIGINT"
    finally:
        host.send_signal(signal.SIGTERM)
    assert ended(host)[0] == 0


def test_real_claude_code_on_the_laptop_is_answered_and_read_from_elsewhere(
    team: Team, laptop: dict[str, Any], api: Any
) -> None:
    """The real Claude Code (its model a loopback stand-in) on the laptop, its hooks reporting
    through the server with an agent token: its permission request is allowed over HTTP by an
    operator on another "machine", and its transcript — on the laptop only — is read through
    the laptop's host."""
    place = {"home": laptop["home"], "project": laptop["project"],
             "spool": laptop["home"] / "spool.jsonl"}  # fmt: skip
    env = real._claude_env(place, api, ROUNDTABLE_HOST="laptop", RT_AGENT=team.tokens["hooks"])
    env["PATH"] = f"{laptop['env']['PATH']}{os.pathsep}{env['PATH']}"
    installed = subprocess.run(
        [sys.executable, "-m", "roundtable_console", "hooks", "install", "claude-code",
         "--project", str(laptop["project"]), "--server", team.served.url,
         "--token-env", "RT_AGENT", "--workspace", "ws-1", "--permission-wait", "60"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    # The laptop's host starts the real Claude Code (its dir on PATH) with the model stand-in.
    real_bin = str(real._need(real.CLAUDE).parent)
    machine = {**env, "TMUX_TMPDIR": laptop["env"]["TMUX_TMPDIR"],
               "PATH": f"{real_bin}{os.pathsep}{env['PATH']}"}  # fmt: skip
    host = team.host("--project", str(laptop["project"]), env=machine)
    claude = subprocess.Popen(
        [str(real._need(real.CLAUDE)), "-p", "make the marker file", "--output-format", "json"],
        cwd=laptop["project"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    base = f"{team.served.url}/api/v1/workspaces/ws-1/sessions"
    ops = team.bearer("ops")
    try:
        wait_until(lambda: team.online("laptop"), "the laptop's host online")

        def asked() -> list[dict[str, Any]]:
            for found in http_calls.get(base, headers=ops).json()["items"]:
                pending = http_calls.get(f"{base}/{found['id']}/requests", headers=ops).json()
                if pending["items"]:
                    return [found, *pending["items"]]
            return []

        found, request = wait_until(asked, "its permission request, seen through the server", 90)
        assert found["host"] == "laptop" and request["tool_input"]["command"] == SHELL_COMMAND
        allowed = http_calls.post(
            f"{base}/{found['id']}/requests/{request['id']}/decision", json={"decision": "allow"},
            headers={**ops, "Idempotency-Key": "allow-1"}, timeout=30,
        )  # fmt: skip
        assert allowed.status_code == 200, allowed.text
        out, err = claude.communicate(timeout=real.RUN_SECONDS)
        assert claude.returncode == 0, err[-3000:]
        assert json.loads(out)["permission_denials"] == []
        assert (laptop["project"] / SHELL_COMMAND.split()[-1]).is_file()
        page = http_calls.get(f"{base}/{found['id']}/transcript", headers=ops).json()
        assert page["available"] is True, page
        assert any(item["text"] == "make the marker file" for item in page["items"]), page

        # Ended; resumed on the laptop by the operator elsewhere: interactive, in the host's
        # tmux, continuing its own conversation (onboarding done and the project trusted, as a
        # user's first start leaves them), its hooks bringing the same session back.
        seen = laptop["home"] / ".claude.json"
        profile = json.loads(seen.read_text()) if seen.exists() else {}
        profile.update(hasCompletedOnboarding=True, customApiKeyResponses={
            "approved": [env["ANTHROPIC_API_KEY"][-20:]], "rejected": []})  # fmt: skip
        profile.setdefault("projects", {})[str(laptop["project"])] = {
            "hasTrustDialogAccepted": True
        }
        seen.write_text(json.dumps(profile))
        before = len(api.requests)
        launched = http_calls.post(f"{base}/{found['id']}/launch", timeout=60,
                              headers={**ops, "Idempotency-Key": uuid.uuid4().hex})  # fmt: skip
        assert launched.status_code == 200, launched.text
        wait_until(lambda: len(api.requests) > before, "the resumed agent asking its model", 90)
        resumed = json.dumps(api.requests[before][1].get("messages"))
        assert "make the marker file" in resumed and "Roundtable Resume Briefing" in resumed

        # Its hooks (ROUNDTABLE_SESSION_ID given by the host) report on the same session.
        def reported() -> bool:
            kinds = [kind for kind, _ in history(team.store, found["id"])]
            return kinds[kinds.index("launched") :].count("heartbeat") > 0

        try:
            wait_until(reported, "the resumed agent's hooks on the same session", 30)
        except AssertionError:
            raise AssertionError(history(team.store, found["id"])) from None
        stopped = http_calls.post(f"{base}/{found['id']}/stop-agent", headers=ops,
                             json={"grace_seconds": 3}, timeout=60)  # fmt: skip
        assert stopped.status_code == 200 and stopped.json()["exited"] is True, stopped.text
    finally:
        if claude.poll() is None:
            claude.kill()
        host.send_signal(signal.SIGTERM)
    assert ended(host)[0] == 0
