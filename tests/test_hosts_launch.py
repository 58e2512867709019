"""A session resumed and its agent started on its own machine by that machine's host (issue 41
point 4: ``POST …/sessions/{id}/launch``), through a real ``roundtable serve`` and a real
``roundtable host run`` whose PATH has an agent CLI standing in for Claude Code (it records how
it was started, says a line, and waits). The host starts it in tmux on its own tmux server, in
the session's directory, with the session's id; every refusal changes nothing (point 5: a
directory outside the host's projects, an agent it does not have, a host that is offline)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from roundtable_console.store import service
from roundtable_console.store.db.database import Store
from roundtable_console.store.hosts import protocol
from roundtable_console.store.resume.adapters import AGENT_RESUME_PATTERNS, PLACEHOLDER
from tests import http_calls
from tests.helpers import history, register_session
from tests.hosts_support import Team, ended, stand_in_machine, team_serving, wait_until
from tests.serve_support import ROOT, serve_env

CLAUDE_ID = "3f0c8a52-7c1e-4b8e-9a57-2f1d7c0e9b11"
FAKE_CLAUDE = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "2.1.0 (Claude Code)"; exit 0; fi
python3 -c 'import json, os, sys
json.dump({"argv": sys.argv[1:], "cwd": os.getcwd(),
           "session": os.environ.get("ROUNDTABLE_SESSION_ID"),
           "host": os.environ.get("ROUNDTABLE_HOST")}, open(os.environ["FAKE_OUT"], "w"))' "$@"
echo "the agent is ready"
exec sleep 120
"""


@pytest.fixture
def team(sqlite_store: Store, tmp_path: Path) -> Iterator[Team]:
    url = f"sqlite:///{tmp_path / 'roundtable.db'}"
    yield from team_serving(sqlite_store, url, tmp_path / "server-home")


@pytest.fixture
def machine(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The laptop's environment: Claude Code (a stand-in) on its PATH, its own tmux directory."""
    yield from stand_in_machine(tmp_path, FAKE_CLAUDE, "started.json")


def stopped_session(
    store: Store, session_id: str, cwd: Path, *, adapter: str = "claude", host: str = "laptop"
) -> None:
    with store.write() as db:
        register_session(
            db, session_id, adapter=adapter, host=host, workspace_id="ws-1",
            working_directory=str(cwd), external_session_id=CLAUDE_ID,
            resume_command=AGENT_RESUME_PATTERNS[adapter].replace(PLACEHOLDER, CLAUDE_ID),
            metadata={"hooks": "claude-code"},
        )  # fmt: skip
    service.perform_action(
        store=store, action="stop", session_id=session_id, actor="ops", idempotency_key=None
    )


def written(out: Path) -> dict[str, Any] | None:
    """What the stand-in wrote of how it was started, once it has written all of it."""
    try:
        return dict(json.loads(out.read_text()))
    except (OSError, ValueError):
        return None


def launch(team: Team, session_id: str, token: str = "ops") -> httpx.Response:
    return http_calls.post(
        f"{team.served.url}/api/v1/workspaces/ws-1/sessions/{session_id}/launch",
        headers={**team.bearer(token), "Idempotency-Key": uuid.uuid4().hex}, timeout=60,
    )  # fmt: skip


def stop_agent(team: Team, session_id: str, token: str = "ops") -> httpx.Response:
    return http_calls.post(
        f"{team.served.url}/api/v1/workspaces/ws-1/sessions/{session_id}/stop-agent",
        json={"grace_seconds": 2}, headers=team.bearer(token), timeout=60,
    )  # fmt: skip


def cli(team: Team, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "roundtable_console", *args, "--db", team.url,
         "--operator", "olivia"], capture_output=True, text=True, cwd=ROOT,
        env=serve_env(team.home), timeout=60,
    )  # fmt: skip


@contextmanager
def operator_page(team: Team) -> Iterator[Any]:
    """A page of the team's web console in Chromium, signed in as the operator."""
    from playwright.sync_api import sync_playwright

    from tests.test_web_browser import CHROMIUM

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.set_default_timeout(15_000)
            page.goto(team.served.url + "/sessions")
            page.fill("#token", team.tokens["ops"])
            page.click("button[type=submit]")
            page.wait_for_url("**/sessions")
            yield page
        finally:
            browser.close()


def agent_of(store: Store, session_id: str) -> str:
    with store.read() as db:
        return str(service.sessions.get_session(db=db, session_id=session_id).agent_id)


def status(store: Store, session_id: str) -> str:
    with store.read() as db:
        return str(service.sessions.get_session(db=db, session_id=session_id).status)


def test_an_operator_anywhere_starts_a_sessions_agent_on_its_host(
    team: Team, tmp_path: Path, machine: dict[str, str]
) -> None:
    project = tmp_path / "api"
    (project / "src").mkdir(parents=True)
    stopped_session(team.store, "s-laptop", project / "src")
    host = team.host("--project", str(project), env=machine)
    try:
        wait_until(lambda: team.online("laptop"), "the host online")
        answer = launch(team, "s-laptop")
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["host"] == "laptop" and body["session"]["status"] == "resuming"
        name = protocol.tmux_session_name("s-laptop")
        assert body["tmux_session"] == name and body["attach"].endswith(f"attach -t ={name}")
        out = Path(machine["FAKE_OUT"])
        started: dict[str, Any] = wait_until(lambda: written(out), "the agent started")
        # The host's own resume, the briefing as the prompt, in the session's directory.
        assert started["argv"][:2] == ["--resume", CLAUDE_ID]
        assert len(started["argv"]) == 3 and "Roundtable Resume Briefing" in started["argv"][2]
        assert started["cwd"] == str((project / "src").resolve())
        assert started["session"] == "s-laptop" and started["host"] == "laptop"
        launched = [payload for event, payload in history(team.store, "s-laptop")
                    if event == "launched"]  # fmt: skip
        assert len(launched) == 1 and launched[0]["via_host"] == "laptop"
        # What it shows is read through the host, from the pane it started.
        base = f"{team.served.url}/api/v1/workspaces/ws-1/sessions"

        def shown() -> dict[str, Any] | None:  # it says so just after writing FAKE_OUT
            page = http_calls.get(f"{base}/s-laptop/transcript", headers=team.bearer("vic")).json()
            assert page["available"] is True, page
            ready = any("the agent is ready" in item["text"] for item in page["items"])
            return page if ready else None

        wait_until(shown, "the pane's words read through the host")
        # Its turn done, a reply is typed into that pane by the host.
        with team.store.write() as db:
            db.execute(text(
                "UPDATE agent_sessions SET status = 'active', waiting_since = NULL,"
                " waiting_reason = 'its turn is done' WHERE id = 's-laptop'"
            ))  # fmt: skip
        route = http_calls.get(f"{base}/s-laptop/reply", headers=team.bearer("vic")).json()
        assert route["via"] == "pane" and "on laptop" in route["words"], route
        refused = http_calls.post(
            f"{base}/s-laptop/reply", json={"message": "/exit"},
            headers={**team.bearer("ops"), "Idempotency-Key": "r2"}, timeout=30,
        )  # fmt: skip
        assert refused.status_code == 400, refused.text  # a prompt's command is never typed
        replied = http_calls.post(
            f"{base}/s-laptop/reply", json={"message": "please go on", "via": "pane"},
            headers={**team.bearer("ops"), "Idempotency-Key": "r1"}, timeout=30,
        )  # fmt: skip
        assert replied.status_code == 200, replied.text
        wait_until(
            lambda: (
                "please go on"
                in json.dumps(
                    http_calls.get(f"{base}/s-laptop/transcript", headers=team.bearer("vic")).json()
                )
            ),
            "the reply typed into the pane",
        )
        # Running already: the lifecycle refuses a second resume; nothing more is started.
        again = launch(team, "s-laptop")
        assert again.status_code == 409, again.text
        # Its agent stopped by the host: SIGINT first (the stand-in exits on it).
        assert stop_agent(team, "s-laptop", token="vic").status_code == 403
        stopped = stop_agent(team, "s-laptop")
        assert stopped.status_code == 200, stopped.text
        assert stopped.json() | {"session_id": "s-laptop"} == {
            "session_id": "s-laptop", "signal": "SIGINT", "exited": True, "via_host": "laptop"
        }  # fmt: skip
        events = [(event, payload) for event, payload in history(team.store, "s-laptop")
                  if event == "agent_stopped"]  # fmt: skip
        assert events == [("agent_stopped", {"signal": "SIGINT", "exited": True,
                                             "via_host": "laptop"})]  # fmt: skip
        gone = stop_agent(team, "s-laptop")
        assert gone.status_code == 409 and gone.json()["code"] == "agent_not_running"
    finally:
        host.send_signal(signal.SIGTERM)
    assert ended(host)[0] == 0


def test_a_launch_refused_changes_nothing(
    team: Team, tmp_path: Path, machine: dict[str, str]
) -> None:
    project, elsewhere = tmp_path / "api", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / "out").symlink_to(elsewhere)  # a link leading out of the project is out
    stopped_session(team.store, "outside", elsewhere)
    stopped_session(team.store, "by-link", project / "out")
    stopped_session(team.store, "codex", project, adapter="codex")
    stopped_session(team.store, "nowhere", project, host="no-such-host")
    stopped_session(team.store, "inside", project)
    theirs = tmp_path / "theirs"  # a project the host serves for workspace ws-2 only
    theirs.mkdir()
    stopped_session(team.store, "other-workspace", theirs)
    host = team.host("--project", str(project), "--project", f"{theirs}=ws-2", env=machine)
    try:
        wait_until(lambda: team.online("laptop"), "the host online")
        refusals = {
            "outside": (409, "not_launchable", "not inside a project"),
            "by-link": (409, "not_launchable", "not inside a project"),
            "codex": (409, "not_launchable", "has no codex"),
            "nowhere": (409, "not_launchable", "no host"),
            "other-workspace": (409, "not_launchable", "serves for another workspace"),
        }
        for session_id, (code, problem, words) in refusals.items():
            answer = launch(team, session_id)
            assert answer.status_code == code, (session_id, answer.text)
            assert answer.json()["code"] == problem and words in answer.json()["detail"]
            assert status(team.store, session_id) == "stopped", session_id
        viewer = launch(team, "inside", token="vic")
        assert viewer.status_code == 403
        without_key = http_calls.post(
            f"{team.served.url}/api/v1/workspaces/ws-1/sessions/inside/launch",
            headers=team.bearer("ops"),
        )  # fmt: skip
        assert without_key.status_code == 400
        assert launch(team, "inside", token="laptop").status_code == 403  # a host's token
    finally:
        host.send_signal(signal.SIGTERM)
    assert ended(host)[0] == 0
    wait_until(lambda: not team.online("laptop"), "the host offline")
    offline = launch(team, "inside")
    assert offline.status_code == 409 and offline.json()["code"] == "host_unavailable"
    assert "is offline" in offline.json()["detail"]
    assert status(team.store, "inside") == "stopped"
    assert not Path(machine["FAKE_OUT"]).exists()  # nothing ever started


def test_the_web_console_starts_a_session_on_its_host(
    team: Team, tmp_path: Path, machine: dict[str, str]
) -> None:
    """The briefing page of a session whose machine runs a host offers to start it there; the
    operator confirms, and the agent runs on that machine."""
    from playwright.sync_api import expect

    project = tmp_path / "api"
    project.mkdir()
    stopped_session(team.store, "s-web", project)
    host = team.host("--project", str(project), env=machine)
    try:
        wait_until(lambda: team.online("laptop"), "the host online")
        with operator_page(team) as page:
            page.goto(team.served.url + "/sessions/s-web/briefing")
            start = page.get_by_role("button", name="Start s-web on laptop")
            expect(start).to_be_visible()
            start.click()
            expect(page.locator("#dialog-title")).to_have_text("Start s-web on its machine?")
            page.screenshot(path=str(tmp_path / "confirm.png"))
            page.click("#dialog-confirm")
            expect(page.locator("#notice")).to_contain_text("Started s-web on laptop")
            page.screenshot(path=str(tmp_path / "started.png"))
            wait_until(Path(machine["FAKE_OUT"]).exists, "the agent started")
            # Then stopped from its page, confirmed as a stop is.
            page.goto(team.served.url + "/sessions/s-web")
            page.get_by_role("button", name="Stop the agent of s-web").click()
            expect(page.locator("#dialog-title")).to_have_text("Stop the agent of s-web?")
            page.click("#dialog-confirm")
            expect(page.locator("#notice")).to_contain_text(
                "Sent SIGINT to the agent of s-web: it exited."
            )
            page.screenshot(path=str(tmp_path / "stopped.png"))
        wait_until(Path(machine["FAKE_OUT"]).exists, "the agent started")
        assert status(team.store, "s-web") == "resuming"
    finally:
        host.send_signal(signal.SIGTERM)
    assert ended(host)[0] == 0


def test_the_web_console_terminates_and_stops_the_agent_too_when_asked(
    team: Team, tmp_path: Path, machine: dict[str, str]
) -> None:
    """Terminate says the agent a host started may still run, and offers to stop it too."""
    from playwright.sync_api import expect

    project = tmp_path / "api"
    project.mkdir()
    stopped_session(team.store, "s-end", project)
    host = team.host("--project", str(project), env=machine)
    try:
        wait_until(lambda: team.online("laptop"), "the host online")
        assert launch(team, "s-end").status_code == 200
        wait_until(Path(machine["FAKE_OUT"]).exists, "the agent started")
        with operator_page(team) as page:
            page.goto(team.served.url + "/sessions/s-end")
            page.get_by_role("button", name="Terminate s-end").click()
            dialog = page.locator("#dialog")
            expect(dialog).to_contain_text("on host laptop) and may still run")
            page.get_by_label("Also stop its agent (SIGINT, then SIGTERM)").check()
            page.screenshot(path=str(tmp_path / "terminate.png"))
            page.click("#dialog-confirm")
            expect(page.locator("#notice")).to_contain_text(
                "Sent SIGINT to the agent of s-end: it exited."
            )
        assert status(team.store, "s-end") == "terminated"
        kinds = [kind for kind, _ in history(team.store, "s-end")]
        assert kinds[-2:] == ["terminated", "agent_stopped"], kinds
    finally:
        host.send_signal(signal.SIGTERM)
    assert ended(host)[0] == 0


def test_an_agent_started_here_is_stopped_here_and_one_started_by_hand_is_said(
    team: Team, tmp_path: Path, machine: dict[str, str]
) -> None:
    """With no host: the pane ``R`` started in this machine's tmux, as before hosts."""
    stopped_session(team.store, "here", tmp_path, host=None)  # type: ignore[arg-type]
    stopped_session(team.store, "by-hand", tmp_path, host=None)  # type: ignore[arg-type]
    socket = Path(machine["TMUX_TMPDIR"]) / "console"

    def started_in_a_pane(session_id: str) -> str:
        """An agent (a sleep) in a pane of this machine's tmux, recorded as R records it."""
        pane, pid = subprocess.run(
            ["tmux", "-S", str(socket), "new-session", "-d", "-P", "-F", "#{pane_id} #{pid}",
             "sleep", "100"], capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
        service.record_launch(
            store=team.store, session_id=session_id, tmux_pane=pane, tmux_socket=str(socket),
            tmux_server_pid=pid, actor="ops",
        )  # fmt: skip
        return pane

    try:
        started_in_a_pane("here")
        answer = stop_agent(team, "here")
        assert answer.status_code == 200, answer.text
        assert answer.json()["signal"] == "SIGINT" and answer.json()["exited"] is True
        by_hand = stop_agent(team, "by-hand")
        assert by_hand.status_code == 409 and "stop it in its own terminal" in by_hand.text
        # The command line, on the store, the same.
        started_in_a_pane("here")
        said = cli(team, "sessions", "stop-agent", "--session", "here", "--grace", "2", "--json")
        assert said.returncode == 0, said.stderr
        assert json.loads(said.stdout) == {"session_id": "here", "signal": "SIGINT",
                                           "exited": True, "via_host": None}  # fmt: skip
        refused = cli(team, "sessions", "stop-agent", "--session", "by-hand")
        assert refused.returncode == 1 and "stop it in its own terminal" in refused.stderr
        actors = [payload for event, payload in history(team.store, "here")
                  if event == "agent_stopped"]  # fmt: skip
        assert len(actors) == 2
        # Terminate, and its agent stopped too: one JSON object says both.
        for session_id in ("here", "by-hand"):  # terminable: resuming, as R leaves them
            service.perform_action(store=team.store, action="resume", session_id=session_id,
                                   actor="ops", idempotency_key=f"r-{session_id}")  # fmt: skip
        started_in_a_pane("here")
        both = cli(team, "sessions", "terminate", "--session", "here", "--idempotency-key",
                   "t-here", "--stop-agent", "--json")  # fmt: skip
        assert both.returncode == 0, both.stderr
        done = json.loads(both.stdout)
        assert done["session"]["status"] == "terminated", done
        assert done["agent_stopped"] == {"signal": "SIGINT", "exited": True, "via_host": None}
        # Terminated all the same when its agent cannot be stopped; that is said (exit 1).
        alone = cli(team, "sessions", "terminate", "--session", "by-hand", "--idempotency-key",
                    "t-hand", "--stop-agent")  # fmt: skip
        assert alone.returncode == 1 and "by-hand is now terminated" in alone.stdout, alone
        assert "Its agent: " in alone.stderr and "own terminal" in alone.stderr, alone.stderr
        assert status(team.store, "by-hand") == "terminated"
        # Without --stop-agent, the terminate says its agent may still run, and how to stop it.
        stopped_session(team.store, "left", tmp_path, host=None)  # type: ignore[arg-type]
        service.perform_action(store=team.store, action="resume", session_id="left",
                               actor="ops", idempotency_key="r-left")  # fmt: skip
        fourth = started_in_a_pane("left")
        left = cli(team, "sessions", "terminate", "--session", "left", "--idempotency-key", "t-l")
        assert left.returncode == 0, left.stderr
        assert f"(tmux pane {fourth} on machine" in left.stdout, left.stdout
        assert "may still run: terminating does not stop it" in left.stdout
        assert "roundtable sessions stop-agent --session ID" in left.stdout
        many = cli(team, "sessions", "terminate", "--session", "here", "--session", "by-hand",
                   "--idempotency-key", "t-many", "--stop-agent")  # fmt: skip
        assert many.returncode == 2 and "--stop-agent applies to one session" in many.stderr
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True,
                       check=False)  # fmt: skip


def test_a_directory_named_like_a_tmux_format_is_only_a_name(
    team: Team, tmp_path: Path, machine: dict[str, str]
) -> None:
    """tmux runs "#(command)" in a start directory's name as a shell command: the host escapes
    it, so the agent starts in the directory of that very name and nothing else runs."""
    project = tmp_path / "api"
    odd = project / "#(touch PWNED)"
    odd.mkdir(parents=True)
    stopped_session(team.store, "odd", odd)
    host = team.host("--project", str(project), env=machine)
    try:
        wait_until(lambda: team.online("laptop"), "the host online")
        answer = launch(team, "odd")
        assert answer.status_code == 200, answer.text
        out = Path(machine["FAKE_OUT"])
        assert wait_until(lambda: written(out), "the agent started")["cwd"] == str(odd.resolve())
    finally:
        host.send_signal(signal.SIGTERM)
    assert ended(host)[0] == 0
    assert not any(Path(where, "PWNED").exists() for where in (ROOT, project, odd, "/tmp"))


def test_the_command_line_on_the_store_stops_an_agent_a_host_started(
    team: Team, tmp_path: Path, machine: dict[str, str]
) -> None:
    """``sessions stop-agent`` opens the store, not a link: it asks the host through the store,
    and the server holding the host passes the stop on."""
    project = tmp_path / "api"
    project.mkdir()
    stopped_session(team.store, "s-cli", project)
    host = team.host("--project", str(project), env=machine)
    try:
        wait_until(lambda: team.online("laptop"), "the host online")
        # Started on the laptop from the command line too: resume --launch.
        started = cli(team, "resume", "--session", "s-cli", "--launch", "--json",
                      "--idempotency-key", "k-cli")  # fmt: skip
        assert started.returncode == 0, started.stderr
        shown = json.loads(started.stdout)
        assert (shown["status"], shown["host"], shown["replayed"]) == ("resuming", "laptop", False)
        assert shown["attach"].startswith(f"tmux -L {protocol.TMUX_LABEL} attach -t =")
        out = Path(machine["FAKE_OUT"])
        assert wait_until(lambda: written(out), "the agent started")["session"] == "s-cli"
        assert dict(history(team.store, "s-cli"))["launched"]["via_host"] == "laptop"
        said = cli(team, "sessions", "stop-agent", "--session", "s-cli", "--grace", "2", "--json")
        assert said.returncode == 0, said.stderr
        assert json.loads(said.stdout) == {"session_id": "s-cli", "signal": "SIGINT",
                                           "exited": True, "via_host": "laptop"}  # fmt: skip
    finally:
        host.send_signal(signal.SIGTERM)
    assert ended(host)[0] == 0
    offline = cli(team, "sessions", "stop-agent", "--session", "s-cli")
    assert offline.returncode == 1 and "which is offline" in offline.stderr
    stopped_session(team.store, "s-later", project)
    later = cli(team, "resume", "--session", "s-later", "--launch")
    assert later.returncode == 1 and "whose host is offline" in later.stderr, later.stderr
    by_agent = cli(team, "resume", "--agent", agent_of(team.store, "s-later"), "--launch")
    assert by_agent.returncode == 1 and "whose host is offline" in by_agent.stderr
    stopped_session(team.store, "s-here", project, host=None)  # type: ignore[arg-type]
    here = cli(team, "resume", "--session", "s-here", "--launch")
    assert here.returncode == 1 and "--exec starts it here" in here.stderr, here.stderr
    assert status(team.store, "s-later") == status(team.store, "s-here") == "stopped"
    both = cli(team, "resume", "--session", "s-here", "--launch", "--exec")
    assert both.returncode == 2 and "give one" in both.stderr
