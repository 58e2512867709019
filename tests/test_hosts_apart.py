"""Two machines on one (issue 41 point 6): the laptop — its own HOME, its own tmux server, its
agent and its transcript — and the server, which cannot see the laptop's files at all (a mount
namespace with an empty tmpfs over each of them). Nothing here can pass by reading a disk the
server could not read on a real team: the transcript, the pane, the launch, the reply and the
stop reach the laptop only through its host's link. The agent is a stand-in for Claude Code
(it records how it was started, echoes what it is typed, and exits on SIGINT). The laptop is
also a user of its own (``nobody``): its host, its hooks and its agents cannot read the server's
files either (the store's among them), and the operator's command line runs on a third
"machine" that cannot see the laptop's. The real Claude Code, Codex and Gemini CLI run on the
laptop too (their models a loopback stand-in)."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
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

from roundtable_console.store.access.tokens import create_token
from roundtable_console.store.db.database import Store
from roundtable_console.store.hosts import protocol
from tests import http_calls
from tests import test_agents_real as real
from tests.fake_models import ESCALATE_MARK, REPLY_MARK, SHELL_COMMAND
from tests.helpers import history, register_session
from tests.hosts_support import Team, ended, team_serving, wait_until
from tests.serve_support import ROOT, apart, serve_env

api = real.api  # the agents' model stand-in (a fixture), shared
CLAUDE_ID = "3f0c8a52-7c1e-4b8e-9a57-2f1d7c0e9b11"
STAND_IN = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "2.1.0 (Claude Code)"; exit 0; fi
printf '%s\\n' "$PWD" "$ROUNDTABLE_SESSION_ID" "$HOME" > "$HOME/started.txt"
echo "the agent is ready"
exec cat
"""


LAPTOP_USER = pwd.getpwnam("nobody")
# The laptop's user, in a mount namespace of its own that leaves it the suite's Python and
# repository (where root's private home holds them: tests/as_machine.py).
AS_LAPTOP = ("unshare", "--mount", "--propagation", "private", sys.executable, "-I", "-S",
             str(ROOT / "tests" / "as_machine.py"), str(LAPTOP_USER.pw_uid),
             str(LAPTOP_USER.pw_gid), sys.base_prefix, str(ROOT), "--")  # fmt: skip


def _owned_by_the_laptop(top: Path) -> None:
    for folder, _dirs, files in os.walk(top):
        for name in (folder, *(os.path.join(folder, file) for file in files)):
            os.chown(name, LAPTOP_USER.pw_uid, LAPTOP_USER.pw_gid)


@pytest.fixture
def laptop() -> Iterator[dict[str, Any]]:
    """The laptop's files, its user's own: its HOME (its transcript, its project, its temporary
    files), its tmux directory, its PATH with the agent on it."""
    top = Path(tempfile.mkdtemp(prefix="rt-laptop-"))  # not under the suite's private tmp_path
    home = top / "home"
    project = home / "src" / "api"
    project.mkdir(parents=True)
    (home / "tmp").mkdir()
    transcript = home / ".claude" / "projects" / "-src-api" / f"{CLAUDE_ID}.jsonl"
    transcript.parent.mkdir(parents=True)
    lines = [{"type": "user", "message": {"role": "user", "content": "only on the laptop"}}]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    bin_dir = home / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text(STAND_IN)
    (bin_dir / "claude").chmod(0o755)
    tmux_dir = top / "tmux"
    tmux_dir.mkdir(mode=0o700)
    _owned_by_the_laptop(top)
    env = {
        "HOME": str(home),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "TMPDIR": str(home / "tmp"),
        "TMUX_TMPDIR": str(tmux_dir),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
    }
    yield {"top": top, "home": home, "project": project, "transcript": transcript,
           "tmux": tmux_dir, "env": env}  # fmt: skip
    subprocess.run([*AS_LAPTOP, "tmux", "-L", protocol.TMUX_LABEL, "kill-server"],
                   env={**os.environ, **env}, capture_output=True, check=False)  # fmt: skip
    _end_what_runs_from(top)
    shutil.rmtree(top, ignore_errors=True)


def _end_what_runs_from(top: Path) -> None:
    """Interactive Codex leaves a daemon of its own (``codex app-server --managed-daemon``) that
    outlives its tmux server: whatever still runs a program under the laptop's files ends with
    it."""
    for entry in Path("/proc").iterdir():
        try:
            program = (entry / "cmdline").read_bytes().split(b"\0", 1)[0].decode()
        except (OSError, ValueError):
            continue
        if entry.name.isdigit() and program.startswith(f"{top}/"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)


def elsewhere(team: Team, hidden: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """The operator's command line on a third "machine": the store's URL, none of the laptop's
    files."""
    home = team.home.parent / "operator-home"
    home.mkdir(exist_ok=True)
    return subprocess.run(
        apart((hidden,), [sys.executable, "-m", "roundtable_console", *argv, "--db", team.url]),
        env={**serve_env(home), "HOME": str(home)}, capture_output=True, text=True, timeout=90,
    )  # fmt: skip


@pytest.fixture
def team(sqlite_store: Store, tmp_path: Path, laptop: dict[str, Any]) -> Iterator[Team]:
    url = f"sqlite:///{tmp_path / 'roundtable.db'}"
    hidden = (laptop["top"],)
    yield from team_serving(sqlite_store, url, tmp_path / "server-home", hidden=hidden)


@pytest.fixture
def each_team(
    store: Store, store_url: str, tmp_path: Path, laptop: dict[str, Any]
) -> Iterator[Team]:
    """The team's server on each engine, kept from the laptop's files."""
    hidden = (laptop["top"],)
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
    host = team.host("--project", str(laptop["project"]), env=laptop["env"], user=AS_LAPTOP)
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


def _on_the_laptop(laptop: dict[str, Any], env: dict[str, str]) -> dict[str, str]:
    """An agent's environment on the laptop: its own files, and the model stand-in's."""
    return {**laptop["env"], **env, "PATH": f"{laptop['env']['PATH']}{os.pathsep}{env['PATH']}"}


def _hooks_through(team: Team, agent: str, laptop: dict[str, Any], env: dict[str, str],
                   *more: str) -> None:  # fmt: skip
    installed = subprocess.run(
        [*AS_LAPTOP, sys.executable, "-m", "roundtable_console", "hooks", "install", agent,
         "--server", team.served.url, "--token-env", "RT_AGENT", "--workspace", "ws-1", *more],
        env=env, capture_output=True, text=True, timeout=60, cwd=laptop["project"],
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr


def _the_laptops_session(team: Team) -> dict[str, Any]:
    listed = http_calls.get(f"{team.served.url}/api/v1/workspaces/ws-1/sessions",
                            headers=team.bearer("ops")).json()["items"]  # fmt: skip
    assert len(listed) == 1, listed
    return listed[0]


REPLY = f"Carry on from the laptop, please ({REPLY_MARK})."  # answered in words
REPLY_WAIT = 10  # the first finished turn is answered within it; the second runs it out


def test_real_claude_code_on_the_laptop_is_answered_and_read_from_elsewhere(
    each_team: Team, laptop: dict[str, Any], api: Any
) -> None:
    """The real Claude Code (its model a loopback stand-in) on the laptop, as the laptop's user,
    its hooks reporting through the server with an agent token: its permission request is
    allowed and its finished turn replied to by an operator on another "machine" (over HTTP on
    SQLite; with the command line, on the store, on PostgreSQL), its transcript — on the laptop
    only — is read through the laptop's host, it is resumed there by that operator, and stopped
    (over HTTP, or from that command line)."""
    team = each_team
    by_cli = team.url.startswith("postgresql")
    place = {"home": laptop["home"], "project": laptop["project"],
             "spool": laptop["home"] / "spool.jsonl"}  # fmt: skip
    env = _on_the_laptop(laptop, real._claude_env(
        place, api, ROUNDTABLE_HOST="laptop", RT_AGENT=team.tokens["hooks"]))  # fmt: skip
    _hooks_through(team, "claude-code", laptop, env, "--project", str(laptop["project"]),
                   "--permission-wait", "60", "--reply-wait", str(REPLY_WAIT))  # fmt: skip
    # The laptop's host starts the real Claude Code (its dir on PATH) with the model stand-in.
    real_bin = str(real._need(real.CLAUDE).parent)
    machine = {**env, "PATH": f"{real_bin}{os.pathsep}{env['PATH']}"}
    host = team.host("--project", str(laptop["project"]), env=machine, user=AS_LAPTOP)
    claude = subprocess.Popen(
        [*AS_LAPTOP, str(real._need(real.CLAUDE)), "-p", "make the marker file",
         "--output-format", "json"],
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

        try:
            found, request = wait_until(asked, "its permission request, through the server", 90)
        except AssertionError:
            claude.kill()
            spool = place["spool"]
            said = spool.read_text()[-2000:] if spool.exists() else "(no spool)"
            raise AssertionError(f"{claude.communicate()[1][-3000:]}\n{said}") from None
        assert found["host"] == "laptop" and request["tool_input"]["command"] == SHELL_COMMAND
        if by_cli:
            allowed = elsewhere(team, laptop["top"], "requests", "allow", request["id"],
                                "--operator", "olga")  # fmt: skip
            assert allowed.returncode == 0, allowed.stderr
        else:
            decided = http_calls.post(
                f"{base}/{found['id']}/requests/{request['id']}/decision",
                json={"decision": "allow"}, headers={**ops, "Idempotency-Key": "allow-1"},
                timeout=30,
            )  # fmt: skip
            assert decided.status_code == 200, decided.text

        # Its turn done, its Stop hook listens through the server: the reply is heard.
        def listening() -> bool:
            shown = http_calls.get(f"{base}/{found['id']}/reply", headers=ops)
            return shown.status_code == 200 and shown.json()["via"] == "hook"

        wait_until(listening, "its finished turn's hook listening through the server", 90)
        if by_cli:
            replied = elsewhere(team, laptop["top"], "reply", found["id"], REPLY,
                                "--operator", "olga")  # fmt: skip
            assert replied.returncode == 0, replied.stderr
        else:
            replied = http_calls.post(f"{base}/{found['id']}/reply", json={"message": REPLY},
                                      headers={**ops, "Idempotency-Key": "reply-1"},
                                      timeout=30)  # fmt: skip
            assert replied.status_code == 200 and replied.json()["via"] == "hook", replied.text
        out, err = claude.communicate(timeout=real.RUN_SECONDS)  # its second wait runs out
        assert claude.returncode == 0, err[-3000:]
        assert json.loads(out)["permission_denials"] == []
        assert any(REPLY in json.dumps(body.get("messages") or []) for _, body in api.requests)
        marker = laptop["project"] / SHELL_COMMAND.split()[-1]
        assert marker.is_file() and marker.stat().st_uid == LAPTOP_USER.pw_uid
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
        os.chown(seen, LAPTOP_USER.pw_uid, LAPTOP_USER.pw_gid)
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
        if by_cli:
            stopped = elsewhere(team, laptop["top"], "sessions", "stop-agent", "--session",
                                found["id"], "--grace", "3", "--json")  # fmt: skip
            assert stopped.returncode == 0, stopped.stderr
            assert json.loads(stopped.stdout)["exited"] is True, stopped.stdout
        else:
            stopped = http_calls.post(f"{base}/{found['id']}/stop-agent", headers=ops,
                                 json={"grace_seconds": 3}, timeout=60)  # fmt: skip
            assert stopped.status_code == 200 and stopped.json()["exited"] is True, stopped.text
        events = history(team.store, found["id"])
        decided_by = [payload for kind, payload in events if kind == "permission_decided"]
        assert [payload["decision"] for payload in decided_by] == ["allow"]
        heard = [payload for kind, payload in events if kind == "replied"]
        assert heard == [{"via": "hook", "message": REPLY}]
    finally:
        if claude.poll() is None:
            claude.kill()
        host.send_signal(signal.SIGTERM)
    assert ended(host)[0] == 0


HEADLESS = {
    "codex": (real.CODEX, real._codex_env, ["exec", "--skip-git-repo-check"]),
    "gemini": (real.GEMINI, real._gemini_env, ["-m", "gemini-2.5-flash", "--approval-mode",
                                               "yolo", "--output-format", "json", "-p"]),
}  # fmt: skip


@pytest.mark.parametrize("agent", ["codex", "gemini"])
def test_codex_and_gemini_on_the_laptop_are_read_resumed_and_stopped_from_elsewhere(
    team: Team, laptop: dict[str, Any], api: Any, agent: str
) -> None:
    """Codex and Gemini CLI as far as their hooks allow: on the laptop, as its user, reporting
    through the server. Interactive Codex asks before it leaves its sandbox, and its hook's
    request is allowed over HTTP (Gemini's hooks cannot allow: it runs headless). Their
    transcript is read through the laptop's host; they are resumed there by an operator
    elsewhere, continuing their own conversation, and stopped from a third machine's command
    line."""
    program, env_of, flags = HEADLESS[agent]
    place = {"home": laptop["home"], "project": laptop["project"],
             "spool": laptop["home"] / "spool.jsonl"}  # fmt: skip
    token = create_token(store=team.store, name=f"{agent}-hooks", role="agent", agent_id=agent)
    env = _on_the_laptop(laptop, {**env_of(place, api), "ROUNDTABLE_HOST": "laptop",
                                  "RT_AGENT": token.token})  # fmt: skip
    env["PATH"] = f"{real._need(program).parent}{os.pathsep}{env['PATH']}"
    prompt = "make the marker file"
    if agent == "codex":
        prompt += f" ({ESCALATE_MARK})"  # its shell call asks to leave the sandbox
    _owned_by_the_laptop(laptop["top"])  # the agent's settings, written here
    _hooks_through(team, agent, laptop, env, "--project", str(laptop["project"]))
    host = team.host("--project", str(laptop["project"]), env=env, user=AS_LAPTOP)
    base = f"{team.served.url}/api/v1/workspaces/ws-1/sessions"
    ops = team.bearer("ops")
    own_tmux = [*AS_LAPTOP, "tmux", "-L", "laptop-user"]
    try:
        if agent == "codex":
            # Interactive, as its user runs it: asking before it leaves its sandbox, its
            # PermissionRequest hook waits for the operator's answer through the server.
            subprocess.run(
                [*own_tmux, "new-session", "-d", "-x", "200", "-y", "50", str(program), "-a",
                 "on-request", "-s", "read-only", prompt],
                cwd=laptop["project"], env=env, check=True, timeout=30,
            )  # fmt: skip

            def asked() -> list[dict[str, Any]]:
                for row in http_calls.get(base, headers=ops).json()["items"]:
                    got = http_calls.get(f"{base}/{row['id']}/requests", headers=ops).json()
                    if got["items"]:
                        return [row, *got["items"]]
                return []

            found, request = wait_until(asked, "interactive Codex's permission request", 90)
            assert request["tool_input"]["command"] == SHELL_COMMAND, request
            allowed = http_calls.post(
                f"{base}/{found['id']}/requests/{request['id']}/decision",
                json={"decision": "allow"}, headers={**ops, "Idempotency-Key": "codex-allow"},
                timeout=30,
            )  # fmt: skip
            assert allowed.status_code == 200, allowed.text
            marker = laptop["project"] / SHELL_COMMAND.split()[-1]
            wait_until(marker.exists, "the allowed command run on the laptop", 60)
            subprocess.run([*own_tmux, "kill-server"], env=env, check=False)
            stop = {**ops, "Idempotency-Key": "codex-stop"}
            assert http_calls.post(f"{base}/{found['id']}/stop", headers=stop).status_code == 200
            found = _the_laptops_session(team)
            assert (found["host"], found["adapter"]) == ("laptop", "codex")
        else:
            ran = subprocess.run([*AS_LAPTOP, str(program), *flags, prompt],
                                 cwd=laptop["project"], env=env, capture_output=True, text=True,
                                 timeout=real.RUN_SECONDS, stdin=subprocess.DEVNULL)  # fmt: skip
            assert ran.returncode == 0, ran.stderr[-3000:]
            found = _the_laptops_session(team)
            assert (found["host"], found["adapter"], found["status"]) == ("laptop", agent, "ended")
        wait_until(lambda: team.online("laptop"), "the laptop's host online")
        page = http_calls.get(f"{base}/{found['id']}/transcript", headers=ops).json()
        assert page["available"] is True, page
        assert any("make the marker file" in item["text"] for item in page["items"]), page

        before = len(api.requests)
        key = {"Idempotency-Key": uuid.uuid4().hex}
        launched = http_calls.post(f"{base}/{found['id']}/launch", headers={**ops, **key},
                                   timeout=60)  # fmt: skip
        assert launched.status_code == 200, launched.text
        wait_until(
            lambda: any("Roundtable Resume Briefing" in json.dumps(body)
                        for _, body in api.requests[before:]),
            "the resumed agent asking its model with the briefing", 90,
        )  # fmt: skip
        resumed = [json.dumps(body) for _, body in api.requests[before:]]
        assert any("make the marker file" in body for body in resumed)
        stopped = elsewhere(team, laptop["top"], "sessions", "stop-agent", "--session",
                            found["id"], "--grace", "5", "--json")  # fmt: skip
        assert stopped.returncode == 0, stopped.stderr
        assert json.loads(stopped.stdout)["exited"] is True, stopped.stdout
        assert dict(history(team.store, found["id"]))["launched"]["via_host"] == "laptop"
    finally:
        subprocess.run([*own_tmux, "kill-server"], env=env, capture_output=True, check=False)
        host.send_signal(signal.SIGTERM)
    assert ended(host)[0] == 0
