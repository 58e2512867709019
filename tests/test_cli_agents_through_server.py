"""The commands about an agent through a server (issue 42 point 1): ``resume`` (the briefing and
plan the server makes, ``--exec`` here, ``--launch`` by the session's host), ``reply`` and
``watch`` with ``--server URL --token-env VAR``: what they print is what they print on the store,
who acted is the token's person, and every refusal is one sentence. A real ``roundtable serve``,
a real tmux pane, each engine."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from roundtable_console.store import service
from roundtable_console.store.access.tokens import create_token
from roundtable_console.store.db.database import Store
from roundtable_console.store.reads.audit import AuditFilter, audit_page
from roundtable_console.store.records import Change
from roundtable_console.store.service import record_launch
from roundtable_console.tui.server_watch import ServerWatcher
from roundtable_console.tui.watch import change_line
from tests import test_cli_through_server as through_server
from tests.api_support import seed_workspace
from tests.helpers import history, session_row
from tests.hook_support import CLAUDE_ID
from tests.serve_support import serving
from tests.test_cli_launch import CONFIG
from tests.test_launch import agent_bin, paused_session
from tests.test_replies import pane_of, turn_done
from tests.web_support import OTHER_WORKSPACE, WORKSPACE

pytestmark = pytest.mark.usefixtures("isolated_env")
ROOT = Path(__file__).resolve().parent.parent
HOOKED = f"claude-{CLAUDE_ID}"


@dataclass
class Team(through_server.Team):
    """``tests.test_cli_through_server``'s team, whose commands may also run as processes."""

    def process(self, *args: str, role: str = "operator", **env: str) -> subprocess.Popen[str]:
        """The command as a person runs it: a process of its own, through the server."""
        environment = {k: v for k, v in os.environ.items() if not k.startswith("ROUNDTABLE_")}
        environment.update(RT_TOKEN=self.made[role], **env)
        return subprocess.Popen(
            [sys.executable, "-m", "roundtable_console.tui.cli", *args,
             "--server", self.served.url, "--token-env", "RT_TOKEN"],
            cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip

    def exec_resume(self, tmp_path: Path, exit_status: int) -> tuple[int, str, Path]:
        """``resume --session s1 --exec`` with the fake agent on PATH: its exit status, its
        stderr, and where the agent wrote what it was run with."""
        record = tmp_path / "record.json"
        ran = self.process(
            "resume", "--session", "s1", "--exec",
            PATH=f"{agent_bin(tmp_path)}{os.pathsep}{os.environ['PATH']}",
            FAKE_AGENT_RECORD=str(record), FAKE_AGENT_EXIT=str(exit_status),
        )  # fmt: skip
        _out, err = ran.communicate(timeout=120)
        return ran.returncode, err, record


@pytest.fixture
def team(
    store: Store, store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Team]:
    """A paused session of the fake adapter in a workspace; the server and this command line
    both configured with that adapter (the server's plan is what a command through it shows)."""
    seed_workspace(store, WORKSPACE)
    seed_workspace(store, OTHER_WORKSPACE)
    paused_session(store, tmp_path, workspace_id=WORKSPACE)
    made = {
        role: create_token(store=store, name=name, role=role).token
        for name, role in (("olivia", "operator"), ("vic", "viewer"))
    }
    made["bound"] = create_token(store=store, name="bea", role="operator",
                                 workspaces=(OTHER_WORKSPACE,)).token  # fmt: skip
    for config in (tmp_path / "home" / "config", Path(os.environ["XDG_CONFIG_HOME"])):
        (config / "roundtable").mkdir(parents=True, exist_ok=True)
        (config / "roundtable" / "config.toml").write_text(CONFIG)
    with serving(store_url, tmp_path / "home") as served:
        yield Team(served, store, store_url, made, monkeypatch)
        log = served.log.read_text() if served.log else ""
        assert not any(token in log for token in made.values())


def test_resume_shows_the_servers_briefing_and_runs_the_agent_here_as_the_token(
    team: Team, tmp_path: Path
) -> None:
    through = json.loads(team.run("resume", "--session", "s1", "--json", role="viewer").stdout)
    direct = json.loads(team.run("resume", "--session", "s1", "--json", server=False).stdout)
    assert through == direct
    assert through["resumable"] and through["resume_argv"][:3] == ["fake-agent", "--resume",
                                                                  "ext-42"]  # fmt: skip
    text = team.run("resume", "--agent", "ada", role="viewer")
    assert text.exit_code == 0 and text.stdout == team.run("resume", "--agent", "ada",
                                                           server=False).stdout  # fmt: skip
    # No host on the session's machine: --launch is refused by the server, in words.
    code, error = team.refused("resume", "--session", "s1", "--launch")
    assert (code, error["code"]) == (1, "not_launchable")
    assert "runs on a machine with no host" in error["message"]
    # --operator is the store's: through a server, who acts is the token's.
    refused = team.run("resume", "--session", "s1", "--exec", "--operator", "mallory")
    assert refused.exit_code == 2 and "token's own name is recorded" in refused.stderr
    # --exec: the server's plan, checked here, its resume as the token, then the agent here.
    code, err, record = team.exec_resume(tmp_path, 7)
    assert code == 7, err
    assert json.loads(record.read_text())["argv"][1:3] == ["--resume", "ext-42"]
    assert "Session s1 resumed (now resuming" in err and "Traceback" not in err
    assert session_row(team.store)["status"] == "resuming"
    events = history(team.store)
    assert [event for event, _ in events] == ["registered", "resuming"]
    assert events[-1][1]["actor"] == "olivia"
    # Beyond a bound token's workspaces, the session is not there at all.
    code, error = team.refused("resume", "--session", "s1", role="bound")
    assert (code, error["code"]) == (1, "session_not_found")


def test_reply_goes_through_the_server_as_the_token_into_the_agents_pane(
    team: Team, tmp_path: Path, tmux_server: Any
) -> None:
    code, error = team.refused("reply", "s1")  # nothing can carry one: the store's words
    direct = team.run("reply", "s1", "--json", server=False)
    assert code == direct.exit_code == 1
    assert error == json.loads(direct.stderr.strip().splitlines()[-1])["error"]
    # A hooked session of no workspace, started in a tmux pane of this machine (the server's).
    server, socket = tmux_server
    out = tmp_path / "typed.txt"
    pane, pid = pane_of(server, out)
    turn_done(team.url, tmp_path)
    record_launch(store=team.store, session_id=HOOKED, tmux_pane=pane, tmux_socket=str(socket),
                  actor="olivia", tmux_server_pid=pid)  # fmt: skip
    way = team.run("reply", HOOKED, role="viewer")
    assert way.exit_code == 0 and f"typed into tmux pane {pane}" in way.stdout
    code, error = team.refused("reply", HOOKED, "go on", role="viewer")
    assert (code, error["code"]) == (1, "forbidden")
    assert not out.exists()
    words = "yes, $(touch pwned) and go on"
    sent = team.run("reply", HOOKED, words, "--json")
    assert sent.exit_code == 0, sent.stderr
    assert json.loads(sent.stdout)["replied_by"] == "olivia"
    deadline = time.monotonic() + 30
    while not (out.exists() and out.stat().st_size) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert out.read_text() == words and not (tmp_path / "pwned").exists()
    with team.store.read() as db:
        entries = audit_page(db=db, filters=AuditFilter(action="reply")).items
    assert [(entry.actor, entry.session_id) for entry in entries] == [("olivia", HOOKED)]


def test_watch_follows_the_servers_changes_the_token_may_read(team: Team) -> None:
    watching = team.process("watch", "--json")
    bound = team.process("watch", role="bound")
    elsewhere = team.process("watch", "--workspace", WORKSPACE, role="bound")
    try:
        assert watching.stderr is not None and bound.stderr is not None
        assert "watching" in watching.stderr.readline()  # said once it has started
        # Started before it is stopped: a Ctrl-C during its start-up is Python's own (130).
        assert "watching" in bound.stderr.readline()
        time.sleep(0.5)  # its stream open (the line comes just before it)
        service.perform_action(store=team.store, action="resume", session_id="s1",
                               actor="olivia", idempotency_key="k-1")  # fmt: skip
        assert watching.stdout is not None
        line = json.loads(watching.stdout.readline())
        assert (line["session_id"], line["change"], line["status"]) == ("s1", "status",
                                                                        "resuming")  # fmt: skip
        assert line["actor"] == "olivia"
        # A token bound to another workspace: its own workspace's stream, nothing of this one;
        # a workspace beyond it, refused for good (exit 1), in words.
        assert elsewhere.wait(timeout=30) == 1
        assert "No workspace has the id" in (elsewhere.stderr.read() if elsewhere.stderr else "")
        watching.send_signal(signal.SIGINT)
        assert watching.wait(timeout=30) == 0
        bound.send_signal(signal.SIGINT)
        assert bound.wait(timeout=30) == 0
        assert bound.stdout is not None and bound.stdout.read() == ""
    finally:
        for process in (watching, bound, elsewhere):
            if process.poll() is None:
                process.kill()
                process.wait()


def test_exec_runs_what_this_machines_adapters_plan_never_the_servers(
    store: Store, store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server (or whatever answers at its address) that plans another program: --exec
    checks and runs the plan this machine's own adapters make of the session."""
    seed_workspace(store, WORKSPACE)
    paused_session(store, tmp_path, workspace_id=WORKSPACE)
    pwned = tmp_path / "pwned"
    server_config = tmp_path / "home" / "config" / "roundtable" / "config.toml"
    server_config.parent.mkdir(parents=True)
    evil = f"/bin/sh -c 'touch {pwned}' {{{{external_session_id}}}}"
    server_config.write_text(f'[adapters.fake]\nresume_pattern = "{evil}"\n')
    local = Path(os.environ["XDG_CONFIG_HOME"]) / "roundtable"
    local.mkdir(parents=True, exist_ok=True)
    (local / "config.toml").write_text(CONFIG)
    made = {"operator": create_token(store=store, name="olivia", role="operator").token}
    with serving(store_url, tmp_path / "home") as served:
        team = Team(served, store, store_url, made, monkeypatch)
        shown = json.loads(team.run("resume", "--session", "s1", "--json").stdout)
        assert shown["resume_argv"][0] == "/bin/sh"  # the server's plan, shown as it says
        code, err, record = team.exec_resume(tmp_path, 0)
    assert code == 0, err
    assert Path(json.loads(record.read_text())["argv"][0]).name == "fake-agent"
    assert not pwned.exists()


def test_what_a_server_sends_on_its_stream_is_text_and_a_wrong_one_is_skipped() -> None:
    """A change's words from the network print as text (no escape sequence reaches the
    terminal); an event that is not a change is skipped, the stream going on."""
    hostile = Change.from_json({"session_id": "s\x1b[2J", "at": "t",
                                "change": "\x1b]52;c;aGk=\x07\x1b[2J"})  # fmt: skip
    line = change_line(hostile)
    assert "\x1b" not in line and "\x07" not in line
    for wrong in ({"session_id": "s", "at": 7}, {"session_id": 1}, [], "x"):
        with pytest.raises(ValueError):
            Change.from_json(wrong)  # type: ignore[arg-type]
    told: list[Any] = []
    with stream_of(["event: ready\ndata: {}\n\n",
                    'event: change\ndata: {"session_id": "s", "at": 7}\n\n',
                    "event: change\ndata: not json\n\n",
                    'id: 9\nevent: change\ndata: {"session_id": "s", "change": "status"}\n\n',
                    ]) as url:  # fmt: skip
        watcher = ServerWatcher(url, "rt_x", lambda: None, on_changes=told.append,
                                on_link=lambda _words: None, gap=0.0)  # fmt: skip
        watcher.start()
        deadline = time.monotonic() + 15
        while not told and time.monotonic() < deadline:
            time.sleep(0.02)
        watcher.stop()
    assert [change.session_id for batch in told for change in batch] == ["s"]


@contextmanager
def stream_of(events: list[str]) -> Iterator[str]:
    """A server on loopback whose stream of changes sends ``events``, then ends."""

    class Stream(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the standard library's name
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for event in events:
                self.wfile.write(event.encode())
                self.wfile.flush()

        def log_message(self, *_args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Stream)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
