"""Issue 46 point 1: each tool an agent runs is an event of its session (``tool.call``, written by
its hook with the beat, ``store.writes.tool_calls``), listed by the reference's tool-calls
projection: Claude Code's, Codex's and Gemini's tool events, a human's denial, a burst that is
still one heartbeat row, the server's path with an agent token, and what is refused. Each engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from roundtable_console.store.access.tokens import create_token
from roundtable_console.store.db.database import Store, open_store
from roundtable_console.store.errors import InvalidSession
from roundtable_console.store.reads import projections
from roundtable_console.store.requests import asking
from roundtable_console.store.requests.deciding import decide_request
from roundtable_console.store.writes import agent_writes, quick_writes
from tests.api_support import seed_workspace
from tests.hook_support import (
    CLAUDE_ID,
    CODEX_ID,
    GEMINI_ID,
    claude,
    codex,
    gemini,
    history,
    hook,
    hook_process,
)
from tests.serve_support import serving

pytestmark = pytest.mark.usefixtures("isolated_env")

CLAUDE = f"claude-{CLAUDE_ID}"
SECRET = "sk-ant-api03-" + "Q" * 40


def tool_calls(url: str, session_id: str) -> list[tuple[Any, ...]]:
    store = open_store(url)
    try:
        with store.read() as db:
            items = projections.tool_calls(db=db, session_id=session_id, limit=200).items
    finally:
        store.dispose()
    return [(i["tool"], i["action"], i["status"], i["duration_ms"], i["actor"]) for i in items]


def beats(url: str, session_id: str) -> int:
    return sum(1 for kind, _payload in history(url, session_id) if kind == "heartbeat")


def stored_history(url: str) -> str:
    store = open_store(url)
    try:
        with store.read() as db:
            rows = db.execute(text("SELECT * FROM agent_session_events"))
            return json.dumps([list(row) for row in rows])
    finally:
        store.dispose()


def stored_events(url: str) -> str:
    store = open_store(url)
    try:
        with store.read() as db:
            return json.dumps([list(row) for row in db.execute(text("SELECT * FROM events"))])
    finally:
        store.dispose()


def test_each_agents_tool_calls_are_its_sessions_own(store_url: str) -> None:
    db = ("--db", store_url)
    hook("claude-code", claude("SessionStart"), *db)
    hook("claude-code", claude("PreToolUse", tool_name="Bash", tool_input={"command": "ls"}), *db)
    hook("claude-code", claude("PostToolUse", tool_name="Bash", tool_input={"command": "ls -la"},
                               tool_response={"stdout": "x"}, duration_ms=35), *db)  # fmt: skip
    hook("claude-code", claude("PostToolUseFailure", tool_name="Read",
                               tool_input={"file_path": "/work/project/gone.py"},
                               error="File does not exist.", duration_ms=3), *db)  # fmt: skip
    command = f"curl -H 'Authorization: Bearer {SECRET}' https://example.test"
    hook("claude-code", claude("PermissionDenied", tool_name="Bash",
                               tool_input={"command": command}, reason="risky"), *db)  # fmt: skip
    hook("codex", codex("SessionStart"), *db)
    hook("codex", codex("PostToolUse", tool_name="Bash", tool_input={"command": "pytest -q"},
                        tool_response="3 passed"), *db)  # fmt: skip
    hook("gemini", gemini("SessionStart"), *db)
    failed = {"llmContent": "", "error": {"message": "exit 2"}}
    made = {"command": "make\x1b[2J"}
    hook("gemini", gemini("AfterTool", tool_name="run_shell_command", tool_input=made,
                          tool_response=failed), *db)  # fmt: skip

    assert tool_calls(store_url, CLAUDE) == [
        ("Bash", "ls -la", "ok", 35, "claude-code"),
        ("Read", "/work/project/gone.py", "error", 3, "claude-code"),
        ("Bash", "curl -H 'Authorization: Bearer [REDACTED] https://example.test", "denied",
         None, "claude-code"),
    ]  # fmt: skip
    assert tool_calls(store_url, f"codex-{CODEX_ID}") == [
        ("Bash", "pytest -q", "ok", None, "codex")
    ]
    assert tool_calls(store_url, f"gemini-{GEMINI_ID}") == [
        ("run_shell_command", "make [2J", "error", None, "gemini")
    ]
    assert SECRET not in stored_history(store_url)  # hidden before it is stored, not only shown
    # Each session's own: the three agents' sessions share a run ("project"), not their calls,
    # and the run's activity stream (``events``) carries none of them.
    assert stored_events(store_url) == "[]"


def test_a_blank_tool_name_is_a_tool_and_a_credential_cut_in_two_is_hidden_whole(
    store_url: str,
) -> None:
    db = ("--db", store_url)
    hook("claude-code", claude("SessionStart"), *db)
    token = "ghp_" + "A1b2C3d4E5" * 4
    long = "x" * 180 + f" --token {token} and more"  # a cut at 200 would split the token
    hook("claude-code", claude("PostToolUse", tool_name="  ", tool_input={"command": long}), *db)
    hook("claude-code", claude("PostToolUse", tool_name=f"mcp-gh-{token}",
                               tool_input={}), *db)  # fmt: skip
    [(blank, action, *_), (named, *_)] = tool_calls(store_url, CLAUDE)
    assert blank == "a tool" and "ghp_" not in action and action.endswith("…")
    assert "A1b2C3d4" not in named and "A1b2C3d4" not in stored_history(store_url)


def test_a_burst_of_thirty_tool_calls_is_thirty_events_and_one_heartbeat(store_url: str) -> None:
    db = ("--db", store_url)
    hook("claude-code", claude("SessionStart"), *db)
    before = beats(store_url, CLAUDE)
    for number in range(30):
        hook("claude-code", claude("PostToolUse", tool_name="Bash",
                                   tool_input={"command": f"echo {number}"}), *db)  # fmt: skip
    assert beats(store_url, CLAUDE) == before + 1
    calls = tool_calls(store_url, CLAUDE)
    assert [call[1] for call in calls] == [f"echo {number}" for number in range(30)]


def test_a_tool_call_is_written_once_when_its_hook_is_replayed(tmp_path: Path) -> None:
    """A spooled beat replayed writes its tool calls once (the write's idempotency key)."""
    url = f"sqlite:///{tmp_path / 'rt.db'}"
    spool = tmp_path / "spool.jsonl"
    env = {"ROUNDTABLE_HOOK_SPOOL": str(spool)}
    start = hook_process("claude-code", claude("SessionStart"), "--db", url, env=env)
    assert start.returncode == 0 and "kept in" in start.stderr  # no store yet: spooled
    open_store(url).dispose()
    post = claude("PostToolUse", tool_name="Bash", tool_input={"command": "ls"})
    for _ in range(2):
        done = hook_process("claude-code", post, "--db", url, env=env)
        assert done.returncode == 0 and done.stderr == "", done.stderr
    assert [call[1] for call in tool_calls(url, CLAUDE)] == ["ls", "ls"]  # two runs, no more


def test_a_human_denial_is_a_denied_tool_call(store: Store, store_url: str) -> None:
    hook("claude-code", claude("SessionStart"), "--db", store_url)
    asked = [
        asking.open_request(
            store,
            session_id=CLAUDE,
            agent="claude-code",
            tool_name="Bash",
            tool_input={"command": command},
            suggestions=None,
            reason=f"asks to run {command}",
            wait_seconds=60,
            hook_pid=1,
        )  # fmt: skip
        for command in ("rm -rf build", "make")
    ]
    decide_request(store=store, request_id=asked[0].id, decision="deny", actor="olivia",
                   message="not now")  # fmt: skip
    decide_request(store=store, request_id=asked[1].id, decision="allow", actor="olivia")
    assert tool_calls(store_url, CLAUDE) == [
        ("Bash", "rm -rf build", "denied", None, "claude-code")
    ]


@pytest.mark.parametrize(
    ("calls", "said"),
    [
        ("Bash", "a list"),
        ([{"tool": 5, "outcome": "ok"}], "its name, as text"),
        ([{"tool": "Bash", "outcome": "maybe"}], "outcome is one of"),
        ([{"tool": "Bash", "outcome": "ok", "duration_ms": -5}], "between 0 and a day"),
        ([{"tool": "Bash", "outcome": "ok", "duration_ms": True}], "milliseconds"),
        ([{"tool": "Bash", "outcome": "ok", "summary": 7}], "summary is text"),
        ([{"tool": "Bash", "outcome": "ok"}] * 51, "at most 50"),
    ],
    ids=["text", "tool-number", "outcome", "negative", "bool", "summary", "too-many"],
)
def test_bad_tool_calls_are_refused_and_nothing_is_written(
    store: Store, store_url: str, calls: Any, said: str
) -> None:
    hook("claude-code", claude("SessionStart"), "--db", store_url)
    before = history(store_url, CLAUDE)
    with pytest.raises(InvalidSession, match=said), store.write() as db:
        agent_writes.heartbeat(db=db, session_id=CLAUDE, tool_calls=calls)
    with pytest.raises(InvalidSession, match=said):
        quick_writes.heartbeat(store_url, session_id=CLAUDE, tool_calls=calls)
    assert history(store_url, CLAUDE) == before and tool_calls(store_url, CLAUDE) == []


def test_through_the_server_with_an_agent_token(store: Store, store_url: str, tmp_path: Path):
    """The hook's beat carries its tool call to ``roundtable serve``; a burst is one heartbeat
    row there too (the server keeps a quiet beat quiet); the body is checked like any other."""
    seed_workspace(store, "ws-t")
    made = {"agent": create_token(store=store, name="bot", role="agent",
                                  agent_id="claude-code").token}  # fmt: skip
    with serving(store_url, tmp_path / "home") as served:
        options = ("--server", served.url, "--workspace", "ws-t", "--token-env", "RT_TOKEN")
        env = {"RT_TOKEN": made["agent"], "ROUNDTABLE_HOOK_SPOOL": str(tmp_path / "spool")}
        for payload in [claude("SessionStart")] + [
            claude("PostToolUse", tool_name="Edit", tool_input={"file_path": f"/w/{n}.py"},
                   duration_ms=n)
            for n in range(4)
        ]:  # fmt: skip
            done = hook_process("claude-code", payload, *options, env=env)
            assert done.returncode == 0 and done.stderr == "", done.stderr
        assert beats(store_url, CLAUDE) == 1  # the first beat after the start; the rest quiet
        assert tool_calls(store_url, CLAUDE) == [
            ("Edit", f"/w/{n}.py", "ok", n, "claude-code") for n in range(4)
        ]
        url = f"{served.url}/api/v1/workspaces/ws-t/sessions/{CLAUDE}/heartbeat"
        auth = {"Authorization": f"Bearer {made['agent']}"}
        listed = httpx.get(url.replace("/heartbeat", "/tool-calls"), headers=auth, timeout=10)
        assert [(i["tool"], i["action"], i.get("duration_ms")) for i in listed.json()["items"]] == [
            ("Edit", f"/w/{n}.py", n) for n in range(4)
        ]  # the reference's route, with ours: a duration of 0 is kept
        for body, code in (
            ({"tool_calls": "Bash"}, "invalid_request_body"),
            ({"tool_calls": [{"tool": "Bash", "outcome": "maybe"}]}, "invalid_session"),
            ({"tool_calls": [], "quiet_seconds": 600}, "invalid_request_body"),
            ({"quiet_seconds": True}, "invalid_request_body"),
        ):
            answer = httpx.post(url, json=body, headers=auth, timeout=10)
            assert answer.status_code == 400 and answer.json()["code"] == code, answer.text
        assert len(tool_calls(store_url, CLAUDE)) == 4


def test_the_quick_and_full_paths_write_the_same_beats_and_tool_calls(tmp_path: Path) -> None:
    """The hooks' quick writes (the driver alone) and the store's (SQLAlchemy) keep a beat quiet
    and write its tool calls alike: the same history and the same events, row for row."""
    from tests.conftest import FakeClock

    script = [  # (seconds later, status, tool calls)
        (0, "running", [{"tool": "Bash", "summary": "ls", "outcome": "ok", "duration_ms": 4}]),
        (1, "running", [{"tool": "Read", "summary": "/w/a.py", "outcome": "error"}]),
        (2, "running", None),
        (1, "active", [{"tool": "Bash", "summary": "token=abcdef123456", "outcome": "ok"}]),
        (9, "active", [{"tool": "Edit", "summary": "/w/b.py", "outcome": "ok"}]),
    ]
    written = []
    for path in ("quick", "full"):
        url = f"sqlite:///{tmp_path / path}.db"
        store = open_store(url)
        clock = FakeClock()
        with store.write() as db:
            agent_writes.register(db=db, session_id="s-1", agent_id="a-1", run_id="r-1",
                                  adapter="claude", working_directory="/w",
                                  clock=clock)  # fmt: skip
        for seconds, status, calls in script:
            clock.advance(seconds=seconds)
            beat = {"session_id": "s-1", "status": status, "quiet_seconds": 5.0,
                    "tool_calls": calls, "clock": clock}  # fmt: skip
            if path == "quick":
                assert quick_writes.heartbeat(url, **beat) is not None
            else:
                with store.write() as db:
                    agent_writes.heartbeat(db=db, **beat)
        with store.read() as db:
            written.append([
                tuple(row)
                for row in db.execute(text("SELECT * FROM agent_session_events ORDER BY id"))
            ])  # fmt: skip
        store.dispose()
    quick, full = written
    assert quick == full
    calls = [row for row in quick if row[2] == "tool.call"]
    assert len(calls) == 4 and "abcdef123456" not in json.dumps(calls)
    beats_written = [row for row in quick if row[2] == "heartbeat"]
    assert len(beats_written) == 3  # the first, the status change, the one 9 s later


def test_a_replay_through_the_full_path_writes_its_tool_calls_once(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the quick writes do not take a store (a schema behind, say), the normal path writes
    a spooled beat under the same key: replayed, it is written once."""
    from roundtable_console.agents.operations import Operation
    from roundtable_console.agents.reporting import LocalReporter

    hook("claude-code", claude("SessionStart"), "--db", store_url)
    monkeypatch.setattr(quick_writes, "heartbeat", lambda *args, **kwargs: None)
    call = {"tool": "Bash", "summary": "make", "outcome": "ok"}
    fields = {"status": "running", "waiting": None, "turn": None, "tool_calls": [call]}
    beat = Operation("beat", CLAUDE, fields, "2026-12-07T10:00:00.000000Z", "hook:replayed")
    reporter = LocalReporter(store_url)
    for _ in range(2):
        assert reporter.apply(beat) == CLAUDE
    assert [call[1] for call in tool_calls(store_url, CLAUDE)] == ["make"]


def test_a_tool_call_is_no_change_of_its_session(store: Store, clock: Any) -> None:
    """The change feed (the console's live list, the server's stream, the notices) tells what
    happened to a session; a tool call of a quiet beat is not that."""
    from roundtable_console.store.reads.changes import ChangeFeed, ChangeFilter

    with store.write() as db:
        agent_writes.register(db=db, session_id="s-1", agent_id="a", run_id="r",
                              adapter="claude", working_directory="/w", clock=clock)  # fmt: skip
    feed = ChangeFeed(filters=ChangeFilter(), stale_after_seconds=300, clock=clock)
    with store.read() as db:
        feed.start(db=db)
    with store.write() as db:
        agent_writes.heartbeat(db=db, session_id="s-1", clock=clock, quiet_seconds=5.0,
                               tool_calls=[{"tool": "Bash", "outcome": "ok"}])  # fmt: skip
    with store.read() as db:
        assert feed.read(db=db) == []
    with store.write() as db:  # a change is still told
        agent_writes.heartbeat(db=db, session_id="s-1", clock=clock, status="running",
                               tool_calls=[{"tool": "Bash", "outcome": "ok"}])  # fmt: skip
    with store.read() as db:
        assert [change.change for change in feed.read(db=db)] == ["status"]
