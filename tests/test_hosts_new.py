"""A new session started on a host (issue 43, point 1), through a real ``roundtable serve`` and a
real ``roundtable host run`` whose PATH has a stand-in for Claude Code (it records how it was
started, and waits): in a project the host was given, in a git worktree of its own on a new
branch, the agent in the host's tmux with the session's id and its first prompt; the same
request again starts nothing more; every refusal (a project the host was not given, an agent
it has not, a base that does not exist, a branch or path that exists, a hostile branch name or
prompt, a viewer, a token of another workspace, a host offline) changes nothing: no session, no
branch, no worktree, no agent. And the command line, through the server and on the store."""

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

import httpx
import pytest
from sqlalchemy import text

from roundtable_console.hosts import launching
from roundtable_console.hosts.found import Project
from roundtable_console.hosts.starting import ASK_WORDS, agent_words
from roundtable_console.store.access.tokens import create_token
from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import InvalidNewSession
from roundtable_console.store.hosts import new_work, protocol
from tests import http_calls
from tests import test_agents_real as real
from tests.fake_models import SHELL_COMMAND
from tests.helpers import history
from tests.hosts_support import Team, ended, stand_in_machine, team_serving, wait_until
from tests.serve_support import ROOT, serve_env

api = real.api  # the agents' model stand-in (a fixture), shared
STAND_IN = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "2.1.0 (Claude Code)"; exit 0; fi
python3 -c 'import json, os, sys
with open(os.environ["FAKE_OUT"], "a") as out:
    out.write(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(),
                          "session": os.environ.get("ROUNDTABLE_SESSION_ID"),
                          "host": os.environ.get("ROUNDTABLE_HOST"),
                          "token": os.environ.get("RT_HOST_TOKEN")}) + "\\n")' "$@"
exec sleep 120
"""


@pytest.fixture
def team(sqlite_store: Store, tmp_path: Path) -> Iterator[Team]:
    url = f"sqlite:///{tmp_path / 'roundtable.db'}"
    yield from team_serving(sqlite_store, url, tmp_path / "server-home")


@pytest.fixture
def machine(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The laptop's environment: Claude Code (a stand-in) on its PATH, its own tmux directory."""
    yield from stand_in_machine(tmp_path, STAND_IN, "started.jsonl")


def git(cwd: Path, *words: str) -> str:
    # The test's own git runs no fsmonitor a test configures for the host to refuse to run.
    people = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
              "GIT_COMMITTER_EMAIL": "t@e"}  # fmt: skip
    done = subprocess.run(
        ["git", "-c", "core.fsmonitor=false", "-C", str(cwd), *words],
        capture_output=True, text=True, check=True, env={**os.environ, **people},
    )  # fmt: skip
    return done.stdout.strip()


def repository(where: Path) -> Path:
    where.mkdir(parents=True)
    git(where, "init", "-q", "-b", "main")
    (where / "README.md").write_text("the api\n")
    git(where, "add", "README.md")
    git(where, "commit", "-q", "-m", "first")
    return where


def started(machine: dict[str, str]) -> list[dict[str, Any]]:
    """How each agent was started, once its line is written whole."""
    out = Path(machine["FAKE_OUT"])
    whole = out.read_text().split("\n")[:-1] if out.exists() else []
    return [json.loads(line) for line in whole]


def new(team: Team, body: dict[str, Any], *, token: str = "ops", key: str | None = None,
        host: str = "laptop") -> httpx.Response:  # fmt: skip
    return http_calls.post(
        f"{team.served.url}/api/v1/hosts/{host}/sessions", json=body,
        headers={**team.bearer(token), "Idempotency-Key": key or uuid.uuid4().hex}, timeout=90,
    )  # fmt: skip


def sessions(store: Store) -> list[str]:
    with store.read() as db:
        return list(db.execute(text("SELECT id FROM agent_sessions ORDER BY id")).scalars())


def test_a_new_session_starts_in_a_worktree_of_its_own_on_its_host(
    team: Team, tmp_path: Path, machine: dict[str, str]
) -> None:
    project = repository(tmp_path / "api")
    head = git(project, "rev-parse", "HEAD")
    worktrees = tmp_path / "worktrees"
    host = team.host("--project", str(project), "--worktrees", str(worktrees), env=machine)
    try:
        wait_until(lambda: team.online("laptop"), "the host online")
        body = {"project": "api", "agent": "claude-code", "worktree": True,
                "prompt": "Fix the login form, please", "workspace_id": "ws-1"}  # fmt: skip
        answer = new(team, body, key="first")
        assert answer.status_code == 201, answer.text
        shown = answer.json()
        branch = shown["branch"]
        assert branch.startswith("rt/fix-the-login-form-please-"), branch
        assert shown["base"] == head and shown["host"] == "laptop"
        directory = Path(shown["directory"])
        assert directory.parent.parent == worktrees.resolve()
        assert directory.name == branch.replace("/", "-")
        assert shown["session"]["status"] == "starting"
        session_id = shown["session_id"]
        # The worktree on its new branch, from the project's HEAD; the project itself unmoved.
        assert git(directory, "rev-parse", "--abbrev-ref", "HEAD") == branch
        assert git(directory, "rev-parse", "HEAD") == head
        assert git(project, "rev-parse", "--abbrev-ref", "HEAD") == "main"
        # The agent started there, in the host's tmux, with its session and its first prompt.
        wait_until(lambda: started(machine), "the agent started")
        [run] = started(machine)
        assert run["argv"] == ["--permission-mode", "acceptEdits", "--",
                               "Fix the login form, please"]  # fmt: skip
        assert run["cwd"] == str(directory) and run["session"] == session_id
        assert run["host"] == "laptop" and run["token"] is None  # the host's token stays its own
        name = protocol.tmux_session_name(session_id)
        assert shown["tmux_session"] == name and shown["attach"].endswith(f"-t ={name}")
        # The session: starting, on its host, in its worktree; who started it, in its history.
        with team.store.read() as db:
            row = db.execute(text("SELECT * FROM agent_sessions WHERE id = :id"),
                             {"id": session_id}).mappings().one()  # fmt: skip
        assert (row["status"], row["host"], row["adapter"], row["agent_id"]) == (
            "starting", "laptop", "claude", "claude-code")  # fmt: skip
        assert row["working_directory"] == str(directory) and row["workspace_id"] == "ws-1"
        assert json.loads(row["metadata_json"])["worktree"]["branch"] == branch
        events = history(team.store, session_id)
        assert [kind for kind, _ in events] == ["registered", "launched"]
        launched = events[1][1]
        assert launched["via_host"] == "laptop" and launched["new"]["branch"] == branch
        assert launched["new"]["ask"] == "edits" and "prompt" not in launched["new"]
        with team.store.read() as db:
            actor = db.execute(text("SELECT actor FROM agent_session_events WHERE session_id ="
                                    " :id AND event_type = 'launched'"),
                               {"id": session_id}).scalar()  # fmt: skip
        assert actor == "ops"
        # The same request again: the session it started, nothing started again.
        again = new(team, body, key="first")
        assert again.status_code == 201 and again.json()["session_id"] == session_id
        # Without a worktree, in the project itself, asking always, with a model.
        plain = new(team, {"project": str(project), "agent": "claude-code", "ask": "always",
                           "model": "sonnet", "prompt": "-rf / is not an option"})  # fmt: skip
        assert plain.status_code == 201, plain.text
        wait_until(lambda: len(started(machine)) == 2, "the second agent started")
        second = started(machine)[1]
        assert second["cwd"] == str(project.resolve())
        assert second["argv"] == ["--permission-mode", "manual", "--model", "sonnet", "--",
                                  "-rf / is not an option"]  # fmt: skip
        assert len(sessions(team.store)) == 2
    finally:
        host.send_signal(signal.SIGTERM)
    assert ended(host)[0] == 0


def test_a_new_session_refused_changes_nothing(
    team: Team, tmp_path: Path, machine: dict[str, str]
) -> None:
    project = repository(tmp_path / "api")
    theirs = repository(tmp_path / "theirs")
    plain = tmp_path / "plain"  # not a git repository
    plain.mkdir()
    outside = repository(tmp_path / "outside")
    (tmp_path / "link").symlink_to(outside)  # a link to a project the host was not given
    git(project, "branch", "taken")
    git(project, "tag", "v1")
    worktrees = tmp_path / "worktrees"
    host = team.host("--project", str(project), "--project", f"{theirs}=ws-2",
                     "--project", str(plain), "--worktrees", str(worktrees),
                     env=machine)  # fmt: skip
    in_worktree = {"project": "api", "agent": "claude-code", "worktree": True}
    try:
        wait_until(lambda: team.online("laptop"), "the host online")
        refusals: list[tuple[dict[str, Any], int, str, str]] = [
            ({"project": "elsewhere", "agent": "claude-code"}, 409, "not_started",
             "was not given the project"),
            ({"project": str(tmp_path / "link"), "agent": "claude-code"}, 409, "not_started",
             "was not given the project"),
            ({"project": "theirs", "agent": "claude-code"}, 409, "not_started",
             "not given the project theirs for this workspace (it serves it: api, plain)"),
            ({"project": "theirs", "agent": "claude-code", "workspace_id": "ws-1"}, 409,
             "not_started", "not given the project theirs"),
            ({"project": "api", "agent": "codex"}, 409, "not_started", "has no codex"),
            ({"project": "plain", "agent": "claude-code", "worktree": True}, 409, "not_started",
             "not a git repository"),
            ({**in_worktree, "base": "no-such-branch"}, 409, "not_started", "does not exist"),
            ({**in_worktree, "branch": "taken"}, 409, "not_started", "exists already"),
            ({**in_worktree, "branch": "v1"}, 409, "not_started", "already names something"),
            ({**in_worktree, "branch": "origin/main"}, 400, "invalid_new_session", "another ref"),
            ({**in_worktree, "branch": "deadbeef"}, 400, "invalid_new_session", "another ref"),
            ({**in_worktree, "branch": "FETCH_HEAD"}, 400, "invalid_new_session", "another ref"),
            ({"project": "api", "agent": "claude-code", "prompt": "update"}, 400,
             "invalid_new_session", "its own commands"),
            ({"project": "api", "agent": "codex", "prompt": " /login"}, 400,
             "invalid_new_session", "starts with / or !"),
            ({"project": "api", "agent": "gemini", "prompt": "!rm -rf ~"}, 400,
             "invalid_new_session", "starts with / or !"),
            ({**in_worktree, "branch": "a..b"}, 400, "invalid_new_session", "not a name git"),
            ({**in_worktree, "branch": "-D"}, 400, "invalid_new_session", "is not 1–100"),
            ({**in_worktree, "branch": "two words"}, 400, "invalid_new_session", "is not 1–100"),
            ({**in_worktree, "branch": "../../etc"}, 400, "invalid_new_session", "is not 1–100"),
            ({**in_worktree, "branch": "x/../../y"}, 400, "invalid_new_session", "not a name"),
            ({**in_worktree, "base": "--output=/tmp/x"}, 400, "invalid_new_session", "base"),
            ({"project": "api", "agent": "claude-code", "branch": "b"}, 400,
             "invalid_new_session", "go with a worktree"),
            ({"project": "api", "agent": "claude-code", "prompt": "hi \x1b]0;owned\x07"}, 400,
             "invalid_new_session", "control characters"),
            ({"project": "api", "agent": "sh"}, 400, "invalid_new_session", "is one of"),
            ({"project": "api", "agent": "claude-code", "ask": "never"}, 400,
             "invalid_new_session", "--ask"),
            ({"project": "api", "agent": "claude-code", "model": "--dangerously"}, 400,
             "invalid_new_session", "model"),
            ({"project": "api", "agent": "claude-code", "argv": ["sh"]}, 400,
             "invalid_new_session", "Unknown field"),
            ({"project": "api", "agent": "claude-code", "workspace_id": "nope"}, 404,
             "workspace_not_found", ""),
        ]  # fmt: skip
        for body, status, code, words in refusals:
            answer = new(team, body)
            assert answer.status_code == status, (body, answer.text)
            assert answer.json()["code"] == code and words in answer.json()["detail"], body
        # An operator bound to ws-1 starts work only in a project bound to ws-1.
        team.tokens["ops-ws1"] = create_token(
            store=team.store, name="ops-ws1", role="operator", workspaces=["ws-1"]
        ).token
        unnamed = new(team, {"project": "api", "agent": "claude-code"}, token="ops-ws1")
        assert unnamed.status_code == 403 and "workspace_id" in unnamed.json()["detail"]
        shared = new(team, {"project": "api", "agent": "claude-code", "workspace_id": "ws-1"},
                     token="ops-ws1")  # fmt: skip
        assert shared.status_code == 409 and "(it serves it: none)" in shared.json()["detail"]
        viewer = new(team, {"project": "api", "agent": "claude-code"}, token="vic")
        assert viewer.status_code == 403
        bound = new(team, {"project": "api", "agent": "claude-code"}, token="bound")
        assert bound.status_code == 403  # a viewer bound to ws-1
        assert new(team, {"project": "api", "agent": "claude-code"},
                   token="laptop").status_code == 403  # a host's own token  # fmt: skip
        unknown = new(team, {"project": "api", "agent": "claude-code"}, host="nohost")
        assert unknown.status_code == 404, unknown.text
        without_key = http_calls.post(
            f"{team.served.url}/api/v1/hosts/laptop/sessions", headers=team.bearer("ops"),
            json={"project": "api", "agent": "claude-code"},
        )  # fmt: skip
        assert without_key.status_code == 400
    finally:
        host.send_signal(signal.SIGTERM)
    assert ended(host)[0] == 0
    wait_until(lambda: not team.online("laptop"), "the host offline")
    offline = new(team, {"project": "api", "agent": "claude-code"})
    assert offline.status_code == 409 and offline.json()["code"] == "host_unavailable"
    assert "is offline" in offline.json()["detail"]
    # Nothing anywhere: no session, no branch but the one made here, no worktree, no agent.
    assert sessions(team.store) == []
    assert git(project, "branch", "--format=%(refname:short)").split() == ["main", "taken"]
    assert git(project, "tag").split() == ["v1"]
    assert git(project, "worktree", "list").count("\n") == 0
    assert started(machine) == []


def test_a_worktree_path_that_exists_or_a_linked_folder_is_refused(
    team: Team, tmp_path: Path, machine: dict[str, str]
) -> None:
    project = repository(tmp_path / "api")
    worktrees = tmp_path / "worktrees"
    folder = Path(Project(str(project.resolve()), None).worktrees(str(worktrees.resolve())))
    (folder / "rt-there").mkdir(parents=True)
    away = tmp_path / "away"
    away.mkdir()
    host = team.host("--project", str(project), "--worktrees", str(worktrees), env=machine)
    try:
        wait_until(lambda: team.online("laptop"), "the host online")
        body = {"project": "api", "agent": "claude-code", "worktree": True, "branch": "rt/there"}
        there = new(team, body)
        assert there.status_code == 409 and "exists already" in there.json()["detail"], there.text
        shutil.rmtree(folder)
        folder.symlink_to(away)  # the project's worktrees folder, a link out
        linked = new(team, {**body, "branch": "rt/else"})
        assert linked.status_code == 409 and "is a link" in linked.json()["detail"], linked.text
    finally:
        host.send_signal(signal.SIGTERM)
    assert ended(host)[0] == 0
    assert sessions(team.store) == [] and list(away.iterdir()) == [] and started(machine) == []
    assert git(project, "branch", "--format=%(refname:short)").split() == ["main"]


def roundtable(team: Team, *args: str, env: dict[str, str] | None = None
               ) -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "roundtable_console", *args], capture_output=True, text=True,
        cwd=ROOT, env={**serve_env(team.home), **(env or {})}, timeout=120,
    )  # fmt: skip


def test_the_command_line_starts_new_sessions_through_the_server_and_on_the_store(
    team: Team, tmp_path: Path, machine: dict[str, str]
) -> None:
    project = repository(tmp_path / "api")
    host = team.host("--project", str(project), "--worktrees", str(tmp_path / "wt"),
                     env=machine)  # fmt: skip
    try:
        wait_until(lambda: team.online("laptop"), "the host online")
        through = roundtable(
            team, "new", "--host", "laptop", "--project", "api", "--agent", "claude-code",
            "--worktree", "--branch", "feature/login", "--prompt", "the login form",
            "--ask", "AGENT", "--server", team.served.url, "--token-env", "RT_OPS", "--json",
            env={"RT_OPS": team.tokens["ops"]},
        )  # fmt: skip
        assert through.returncode == 0, through.stderr
        shown = json.loads(through.stdout)
        assert shown["branch"] == "feature/login" and shown["directory"].endswith("feature-login")
        on_store = roundtable(
            team, "new", "--host", "laptop", "--project", str(project), "--agent",
            "claude-code", "--prompt", "and the tests", "--db", team.url, "--operator", "olivia",
        )  # fmt: skip
        assert on_store.returncode == 0, on_store.stderr
        assert "Started session new-" in on_store.stdout and "tmux -L roundtable-host" in (
            on_store.stdout)  # fmt: skip
        wait_until(lambda: len(started(machine)) == 2, "both agents started")
        runs = started(machine)
        assert runs[0]["argv"][:2] == ["--permission-mode", "auto"]
        assert runs[1]["argv"][-1] == "and the tests"
        with team.store.read() as db:
            actors = sorted(db.execute(text(
                "SELECT actor FROM agent_session_events WHERE event_type = 'launched'"
            )).scalars())  # fmt: skip
        assert actors == ["olivia", "ops"]
        refused = roundtable(team, "new", "--host", "laptop", "--project", "api", "--agent",
                             "claude-code", "--worktree", "--branch", "feature/login",
                             "--db", team.url)  # fmt: skip
        assert refused.returncode == 1 and "exists already" in refused.stderr
        assert "Traceback" not in refused.stderr
        bad = roundtable(team, "new", "--host", "laptop", "--project", "api", "--agent",
                         "claude-code", "--branch", "x", "--db", team.url)  # fmt: skip
        assert bad.returncode == 2 and "go with a worktree" in bad.stderr
    finally:
        host.send_signal(signal.SIGTERM)
    assert ended(host)[0] == 0
    offline = roundtable(team, "new", "--host", "laptop", "--project", "api", "--agent",
                         "claude-code", "--db", team.url)  # fmt: skip
    assert offline.returncode == 1 and "offline" in offline.stderr
    assert len(sessions(team.store)) == 2


@pytest.mark.parametrize(
    ("agent", "ask", "words"),
    [
        ("claude-code", "always", ["--permission-mode", "manual"]),
        ("claude-code", "edits", ["--permission-mode", "acceptEdits"]),
        ("claude-code", "agent", ["--permission-mode", "auto"]),
        ("codex", "always", ["--ask-for-approval", "on-request", "--sandbox", "read-only"]),
        ("codex", "edits", ["--ask-for-approval", "on-request", "--sandbox", "workspace-write"]),
        ("codex", "agent", ["--ask-for-approval", "never", "--sandbox", "workspace-write"]),
        ("gemini", "always", ["--approval-mode", "default"]),
        ("gemini", "edits", ["--approval-mode", "auto_edit"]),
        ("gemini", "agent", ["--approval-mode", "yolo"]),
    ],
)
def test_each_ask_sets_the_agents_own_permission_mode(
    agent: str, ask: str, words: list[str]
) -> None:
    assert ASK_WORDS[agent][ask] == words
    prompt = "--yolo and more"
    said = agent_words(agent, ask, "m-1", prompt)
    assert said[: len(words)] == words and said[len(words) : len(words) + 2] == ["--model", "m-1"]
    # The prompt is an operand, never an option, whatever it starts with.
    tail = said[len(words) + 2 :]
    assert tail == ([f"--prompt-interactive={prompt}"] if agent == "gemini" else ["--", prompt])
    assert agent_words(agent, ask, None, "") == words


def test_a_new_sessions_values_are_checked_before_anything_is_asked() -> None:
    good = new_work.new_work_of({"host": "laptop", "project": "api", "agent": "codex",
                                 "worktree": True, "prompt": "Add  the CSV export!"})  # fmt: skip
    assert good.adapter == "codex" and good.ask == "edits" and good.base is None
    assert good.branch is not None and good.branch.startswith("rt/add-the-csv-export-")
    assert new_work.branch_refusal(new_work.suggested_branch("")) is None
    assert new_work.suggested_branch("\u00e9\u00e9\u00e9").startswith("rt/session-")
    for values, words in [
        ({"project": "api", "agent": "codex"}, "needs its host"),
        ({"host": "a b", "project": "api", "agent": "codex"}, "not a host's name"),
        ({"host": "h", "agent": "codex"}, "needs its project"),
        ({"host": "h", "project": "a\x00b", "agent": "codex"}, "printable"),
        ({"host": "h", "project": "api", "agent": "codex", "prompt": 7}, "is text"),
        ({"host": "h", "project": "api", "agent": "codex", "prompt": "x" * 20_000}, "longer"),
        ({"host": "h", "project": "api", "agent": "codex", "worktree": "yes"}, "true or false"),
        ({"host": "h", "project": "api", "agent": "codex", "worktree": True,
          "branch": "a.lock"}, "not a name git"),
        ({"host": "h", "project": "api", "agent": "codex", "worktree": True,
          "base": "a..b"}, "base"),
        ({"host": "h", "project": "api", "agent": "codex", "workspace_id": "-w"}, "workspace"),
    ]:  # fmt: skip
        with pytest.raises(InvalidNewSession, match=words):
            new_work.new_work_of(values)
    multi = new_work.new_work_of({"host": "h", "project": "api", "agent": "gemini",
                                  "prompt": "line one\n\tline two"})  # fmt: skip
    assert multi.prompt == "line one\n\tline two"


def test_real_claude_code_starts_in_a_new_worktree_and_reports_from_its_first_event(
    team: Team, tmp_path: Path, api: Any
) -> None:
    """The real Claude Code (its model a loopback stand-in), started by the host in a new
    worktree, interactive in tmux, asking before its command (``--ask ALWAYS``: with EDITS, its
    ``touch`` counts as an edit and runs unasked): its hooks give
    the session its agent's id from the first event, its permission request is allowed through
    the server, and the file it makes is in the worktree, not in the project."""
    home, project = tmp_path / "home", repository(tmp_path / "api")
    home.mkdir()
    place = {"home": home, "project": project, "spool": home / "spool.jsonl"}
    env = real._claude_env(place, api)
    hooks = subprocess.run(
        [sys.executable, "-m", "roundtable_console", "hooks", "install", "claude-code",
         "--db", team.url, "--workspace", "ws-1", "--permission-wait", "60"],
        env=env, capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert hooks.returncode == 0, hooks.stderr
    worktrees = (tmp_path / "worktrees").resolve()
    # Onboarding done and the project trusted, as a user's first start leaves them: its
    # worktrees are trusted as it is.
    (home / ".claude.json").write_text(json.dumps({
        "hasCompletedOnboarding": True,
        "customApiKeyResponses": {"approved": [env["ANTHROPIC_API_KEY"][-20:]], "rejected": []},
        "projects": {str(project.resolve()): {"hasTrustDialogAccepted": True}},
    }))  # fmt: skip
    tmux_dir = tempfile.mkdtemp(prefix="rt-tmux-", dir="/tmp")
    claude_bin = str(real._need(real.CLAUDE).parent)
    machine = {**env, "PATH": f"{claude_bin}{os.pathsep}{env['PATH']}", "TMUX_TMPDIR": tmux_dir}
    host = team.host("--project", str(project), "--worktrees", str(worktrees), env=machine)
    base = f"{team.served.url}/api/v1/workspaces/ws-1/sessions"
    try:
        wait_until(lambda: team.online("laptop"), "the host online")
        answer = new(team, {"project": "api", "agent": "claude-code", "worktree": True,
                            "branch": "rt/marker", "prompt": "make the marker file",
                            "ask": "always", "workspace_id": "ws-1"})  # fmt: skip
        assert answer.status_code == 201, answer.text
        session_id, directory = answer.json()["session_id"], Path(answer.json()["directory"])

        def first_event() -> dict[str, Any] | None:
            shown = http_calls.get(f"{base}/{session_id}", headers=team.bearer("ops")).json()
            return shown if shown.get("external_session_id") else None

        def pane() -> str:
            shown = subprocess.run(["tmux", "-L", protocol.TMUX_LABEL, "capture-pane", "-p", "-t",
                                    protocol.tmux_session_name(session_id)], env=machine,
                                   capture_output=True, text=True, check=False)  # fmt: skip
            return shown.stdout[-3000:] + shown.stderr

        try:
            seen = wait_until(first_event, "the agent's own id, from its first event", 90)
        except AssertionError:
            raise AssertionError(pane()) from None
        assert seen["status"] != "starting" and seen["host"] == "laptop"
        assert launching.AGENT_ID.fullmatch(seen["external_session_id"])

        def asked() -> list[dict[str, Any]]:
            pending = http_calls.get(f"{base}/{session_id}/requests", headers=team.bearer("ops"))
            return list(pending.json()["items"])

        try:
            [request] = wait_until(asked, "its permission request", 90)
        except AssertionError:
            raise AssertionError(f"{pane()[-400:]}\n{json.dumps(api.requests)[:3000]}") from None
        assert request["tool_input"]["command"] == SHELL_COMMAND
        decided = http_calls.post(
            f"{base}/{session_id}/requests/{request['id']}/decision", json={"decision": "allow"},
            headers={**team.bearer("ops"), "Idempotency-Key": "allow-new"}, timeout=30,
        )  # fmt: skip
        assert decided.status_code == 200, decided.text
        marker = directory / SHELL_COMMAND.split()[-1]
        wait_until(marker.is_file, "the marker made in the worktree", 60)
        assert not (project / marker.name).exists()
        assert any("make the marker file" in json.dumps(body) for _, body in api.requests)
        stopped = http_calls.post(f"{base}/{session_id}/stop-agent", headers=team.bearer("ops"),
                                  json={"grace_seconds": 3}, timeout=60)  # fmt: skip
        assert stopped.status_code == 200 and stopped.json()["exited"] is True, stopped.text
    finally:
        host.send_signal(signal.SIGTERM)
        subprocess.run(["tmux", "-L", launching.TMUX_LABEL, "kill-server"], env=machine,
                       capture_output=True, check=False)  # fmt: skip
        shutil.rmtree(tmux_dir, ignore_errors=True)
    assert ended(host)[0] == 0
