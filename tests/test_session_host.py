"""Sessions know their machine (issue 41 point 3): the hooks record the host a session runs on
(``ROUNDTABLE_HOST``, else the machine's name), over the store and over HTTP; the CLI (``--host``)
and the API (``?host=``, ``host`` in the session) show it and filter on it, bulk actions too; a
name that is not a machine's is refused in words."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.api_support import BASE, Api, assert_problem
from tests.helpers import Cli
from tests.hook_support import CLAUDE_ID, claude, hook, session

SID = f"claude-{CLAUDE_ID}"


def test_a_hook_records_the_machine_its_session_runs_on(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = ("--db", store_url, "--spool", str(tmp_path / "spool.jsonl"))
    monkeypatch.delenv("ROUNDTABLE_HOST", raising=False)
    hook("claude-code", claude("SessionStart", source="startup"), *options)
    assert session(store_url, SID).host == socket.gethostname()
    # A machine named in the team, as its host is: the name the console shows.
    monkeypatch.setenv("ROUNDTABLE_HOST", "  laptop-7 ")
    hook("claude-code", {**claude("SessionStart", source="startup"), "session_id": "other"},
         *options)  # fmt: skip
    assert session(store_url, "claude-other").host == "laptop-7"
    # A later event of the session keeps it (beats do not re-register).
    hook("claude-code", claude("UserPromptSubmit"), *options)
    assert session(store_url, SID).host == socket.gethostname()


def test_the_cli_registers_lists_and_filters_by_host(rt: Cli) -> None:
    rt.register("s1", "--host", "laptop-7")
    rt.register("s2", "--host", "build-box")
    rt.register("s3")
    assert rt.json("sessions", "show", "--session", "s1")["host"] == "laptop-7"
    assert rt.json("sessions", "show", "--session", "s3")["host"] is None
    listed = rt.json("sessions", "list", "--host", "laptop-7")["items"]
    assert [item["id"] for item in listed] == ["s1"]
    # A bulk action narrowed to one machine acts on its sessions only.
    done = rt("sessions", "pause", "--all-matching", "--host", "build-box")
    assert done.exit_code == 0, done.stderr
    assert [rt.session(s).status for s in ("s1", "s2", "s3")] == ["active", "paused", "active"]
    refused = rt("sessions", "register", "--id", "s4", "--agent", "a1", "--run", "r1",
                 "--adapter", "codex", "--cwd", "/w", "--host", "bad\x1bname")  # fmt: skip
    assert refused.exit_code == 2 and "host" in refused.stderr.lower()


def test_the_api_shows_and_filters_by_host(api: Api) -> None:
    agent = api.token("hooks", "agent", agent_id="agent-session")
    viewer = api.token("watcher", "viewer")
    assert api.register("s1", headers=agent, host="laptop-7").status_code == 201
    assert api.register("s2", headers=agent, host="build-box").status_code == 201
    assert api.register("s3", headers=agent).status_code == 201
    one = api.client.get(f"{BASE}/s1", headers=viewer).json()
    assert one["host"] == "laptop-7"
    assert "host" not in api.client.get(f"{BASE}/s3", headers=viewer).json()
    page = api.client.get(f"{BASE}?host=build-box", headers=viewer).json()
    assert [item["id"] for item in page["items"]] == ["s2"]
    assert api.client.get(f"{BASE}?host=nowhere", headers=viewer).json()["items"] == []
    for bad in ("a\nb", "x" * 256, 7):
        refused = api.register("s4", headers=agent, host=bad)
        assert_problem(refused, 400, "invalid_session")
    assert api.client.get(f"{BASE}/s4", headers=viewer).status_code == 404
