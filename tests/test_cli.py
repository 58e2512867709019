"""The `roundtable` CLI: every command, its JSON shapes, exit codes and error lines.

Most cases run in-process through click's CliRunner against a temporary SQLite store; a few run
the installed console script in a real subprocess; a few run on both backends (`store_url`).
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from roundtable_console.store.db.database import open_store
from roundtable_console.store.db.models import (
    Agent,
    AgentSession,
    AgentSessionEvent,
    Claim,
    Event,
    Proposal,
)
from roundtable_console.store.db.revision import HEAD_REVISION
from roundtable_console.store.reads import sessions as store_sessions
from roundtable_console.store.reads.paging import encode_cursor
from roundtable_console.store.writes import agent_writes
from roundtable_console.tui import output
from tests.conftest import FakeClock
from tests.helpers import Cli, last_stderr_line

ROUNDTABLE = Path(sys.executable).with_name("roundtable")
SESSION_KEYS = {
    "id",
    "agent_id",
    "run_id",
    "adapter",
    "provider",
    "model",
    "external_session_id",
    "external_resume_command",
    "working_directory",
    "mcp_socket",
    "status",
    "started_at",
    "last_seen_at",
    "ended_at",
    "workspace_id",
    "metadata",
    "waiting",
    "turn_done",
    "host",
    "version",
}
RESUMABLE_CONFIG = (
    "adapters:\n  codex:\n    resume_pattern: codex resume {{external_session_id}} --prompt\n"
)


# ---------------------------------------------------------------------------------------- fixtures


pytestmark = pytest.mark.usefixtures("isolated_env")


def error_of(result: Result) -> dict[str, Any]:
    """The JSON error object on the last line of stderr."""
    last = result.stderr.strip().splitlines()[-1]
    return json.loads(last)["error"]


def lines(result: Result) -> list[str]:
    return result.stdout.splitlines()


@pytest.fixture
def tty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(output, "stdout_is_tty", lambda: True)


def workspace_with_config(tmp_path: Path, text: str) -> Path:
    root = tmp_path / "workspace"
    (root / ".roundtable").mkdir(parents=True)
    (root / ".roundtable" / "config.yaml").write_text(text)
    return root


# ---------------------------------------------------------------------------------------- register


def test_register_prints_the_row_and_stores_every_value(rt: Cli) -> None:
    result = rt.register(
        "s1", "--provider", "openai", "--model", "gpt", "--external-session-id", "ext-1",
        "--resume-command", "codex resume ext-1", "--mcp-socket", "/tmp/mcp.sock",
        "--status", "running", "--metadata", '{"branch": "main"}',
    )  # fmt: skip
    assert result.stdout == "s1\trunning\ta1\tr1\tcodex\n"
    session = rt.session("s1")
    assert (session.provider, session.model) == ("openai", "gpt")
    assert session.external_session_id == "ext-1"
    assert session.external_resume_command == "codex resume ext-1"
    assert session.working_directory == "/work"
    assert session.mcp_socket == "/tmp/mcp.sock"
    assert session.metadata_dict == {"branch": "main"}
    assert [row.event_type for row in rt.rows(AgentSessionEvent)] == ["registered"]


def test_register_json_is_the_session_object(rt: Cli) -> None:
    body = rt.json(
        "sessions", "register", "--id", "s1", "--agent", "a1", "--run", "r1",
        "--adapter", "codex", "--cwd", ".", "--metadata", '{"usage": {"tokens": 3}}',
    )  # fmt: skip
    assert set(body) == SESSION_KEYS
    assert body["status"] == "active"
    assert body["metadata"] == {"usage": {"tokens": 3}}
    assert body["started_at"] == "2026-09-17T17:26:35.000000Z"


def test_register_again_replaces_the_session(rt: Cli) -> None:
    rt.register("s1", "--model", "gpt")
    rt.clock.advance(seconds=5)
    rt.register("s1", agent="a2")
    session = rt.session("s1")
    assert (session.agent_id, session.model) == ("a2", None)
    assert session.started_at == "2026-09-17T17:26:35.000000Z"


def test_register_expands_the_workspace_adapters_resume_pattern(rt: Cli, tmp_path: Path) -> None:
    root = workspace_with_config(tmp_path, RESUMABLE_CONFIG)
    rt.register("s1", "--external-session-id", "ext-1", "--root", str(root))
    assert rt.session("s1").external_resume_command == "codex resume ext-1 --prompt"
    rt.register("s2", "--external-session-id", "ext-2")
    assert rt.session("s2").external_resume_command is None


@pytest.mark.parametrize(
    ("option", "value", "code"),
    [
        ("--id", "  ", "invalid_session"),
        ("--agent", "", "invalid_session"),
        ("--cwd", " ", "invalid_session"),
        ("--metadata", "{not json", "invalid_session"),
        ("--metadata", "[1, 2]", "invalid_session"),
        ("--metadata", '"text"', "invalid_session"),
        ("--status", "x" * 65, "invalid_session_status"),
        ("--status", "ok\x1b[31m", "invalid_session_status"),
    ],
)
def test_register_refuses_bad_input_and_writes_nothing(
    rt: Cli, option: str, value: str, code: str
) -> None:
    values = {"--id": "s1", "--agent": "a1", "--run": "r1", "--adapter": "codex", "--cwd": "."}
    values[option] = value
    argv = [part for pair in values.items() for part in pair]
    result = rt("sessions", "register", *argv, "--json")
    assert result.exit_code == 2
    assert error_of(result)["code"] == code
    assert result.stdout == ""
    assert rt.rows(AgentSession) == []


def test_register_bad_metadata_in_human_mode_says_error(rt: Cli) -> None:
    result = rt(
        "sessions", "register", "--id", "s1", "--agent", "a", "--run", "r", "--adapter", "x",
        "--cwd", ".", "--metadata", "[]",
    )  # fmt: skip
    assert result.exit_code == 2
    assert last_stderr_line(result) == "error: Metadata must be a JSON object, not list."


def test_a_missing_required_option_is_a_usage_error(rt: Cli) -> None:
    result = rt("sessions", "register", "--agent", "a1", "--json")
    assert result.exit_code == 2
    error = error_of(result)
    assert error["code"] == "usage_error"
    assert "--id" in error["message"]
    human = rt("sessions", "register", "--agent", "a1")
    assert human.exit_code == 2
    assert last_stderr_line(human) == "error: Missing option '--id'."
    assert "Usage: roundtable sessions register" in human.stderr


# --------------------------------------------------------------------------------- heartbeat / end


def test_heartbeat_prints_id_status_and_last_seen(rt: Cli) -> None:
    rt.register()
    rt.clock.advance(seconds=30)
    result = rt(
        "sessions", "heartbeat", "--session", "s1", "--status", "busy",
        "--external-session-id", "ext-9",
    )  # fmt: skip
    assert result.exit_code == 0
    assert result.stdout == "s1\tbusy\t2026-09-17T17:27:05.000000Z\n"
    session = rt.session("s1")
    assert (session.status, session.external_session_id) == ("busy", "ext-9")


def test_heartbeat_with_blank_values_keeps_them(rt: Cli) -> None:
    rt.register("s1", "--external-session-id", "ext-1")
    body = rt.json("sessions", "heartbeat", "--session", "s1", "--status", " ")
    assert (body["status"], body["external_session_id"]) == ("active", "ext-1")


def test_heartbeat_of_an_unknown_session_is_refused(rt: Cli) -> None:
    result = rt("sessions", "heartbeat", "--session", "nope", "--json")
    assert result.exit_code == 1
    assert error_of(result) == {
        "code": "session_not_found",
        "message": "No session has the id 'nope'.",
    }
    human = rt("sessions", "heartbeat", "--session", "nope")
    assert human.exit_code == 1
    assert last_stderr_line(human) == "error: No session has the id 'nope'."


def test_a_blank_session_flag_is_bad_input(rt: Cli) -> None:
    result = rt("sessions", "heartbeat", "--session", "  ", "--json")
    assert result.exit_code == 2
    assert error_of(result)["code"] == "invalid_session"


def test_end_prints_id_status_and_end_time(rt: Cli) -> None:
    rt.register()
    rt.clock.advance(minutes=2)
    result = rt("sessions", "end", "--session", "s1")
    assert result.stdout == "s1\tended\t2026-09-17T17:28:35.000000Z\n"
    body = rt.json("sessions", "end", "--session", "s1", "--status", "failed")
    assert (body["status"], body["ended_at"]) == ("failed", "2026-09-17T17:28:35.000000Z")


def test_end_with_a_control_character_status_is_bad_input(rt: Cli) -> None:
    rt.register()
    result = rt("sessions", "end", "--session", "s1", "--status", "bad\x07", "--json")
    assert result.exit_code == 2
    assert error_of(result)["code"] == "invalid_session_status"
    assert rt.session("s1").status == "active"


# -------------------------------------------------------------------------------------------- list


def test_sessions_lists_reference_columns_in_start_order(rt: Cli) -> None:
    rt.register("s2", "--resume-command", "codex resume e2")
    rt.clock.advance(seconds=1)
    rt.register("s1", agent="a9")
    expected = "s2\ta1\tactive\tcodex\tcodex resume e2\ns1\ta9\tactive\tcodex\t\n"
    assert rt("sessions").stdout == expected
    assert rt("sessions", "list").stdout == expected


def test_list_on_a_terminal_has_a_header_and_aligned_columns(rt: Cli, tty: None) -> None:
    rt.register("s1", agent="agent-with-a-long-name")
    rt.register("session-two", agent="a2")
    shown = lines(rt("sessions"))
    assert shown[0].split() == ["ID", "AGENT", "STATUS", "ADAPTER", "RESUME", "COMMAND"]
    starts = {
        line.index(agent) for line, agent in zip(shown[1:], ("agent-with", "a2 "), strict=True)
    }
    assert len(starts) == 1
    assert shown[0].index("AGENT") in starts


def test_an_empty_list_says_so_on_a_terminal_and_nothing_in_a_pipe(
    rt: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert rt("sessions").stdout == ""
    monkeypatch.setattr(output, "stdout_is_tty", lambda: True)
    assert rt("sessions").stdout == "No sessions.\n"


def test_list_json_is_a_page(rt: Cli) -> None:
    rt.register("s1")
    body = rt.json("sessions", "list")
    assert set(body) == {"items", "next_cursor"}
    assert body["next_cursor"] is None
    assert [set(item) for item in body["items"]] == [SESSION_KEYS]


def test_list_filters(rt: Cli) -> None:
    rt.register("s1", "--metadata", '{"workspace_id": "w1"}')
    rt.register("s2", "--status", "paused", agent="a2")
    rt.register("s3", "--run", "r2", "--status", "crashed")
    rt("sessions", "end", "--session", "s1")

    def ids(*args: str) -> list[str]:
        return [item["id"] for item in rt.json("sessions", *args)["items"]]

    assert ids("--status", "paused", "--status", "crashed") == ["s2", "s3"]
    assert ids("--agent", "a2") == ["s2"]
    assert ids("--run", "r2") == ["s3"]
    assert ids("--workspace", "w1") == ["s1"]
    assert ids("--active") == ["s2"]
    assert ids("--text", "CRASH") == ["s3"]
    assert ids("list", "--agent", "a1") == ["s1", "s3"]
    # Filters given to the group before `list` apply too.
    assert ids("--agent", "a2", "list") == ["s2"]


def test_stale_lists_active_sessions_not_seen_for_the_configured_time(
    rt: Cli, tmp_path: Path
) -> None:
    rt.register("old")
    rt.register("gone")
    rt("sessions", "end", "--session", "gone")
    rt.clock.advance(seconds=200)
    rt.register("new")
    rt.clock.advance(seconds=150)
    assert [i["id"] for i in rt.json("sessions", "--stale")["items"]] == ["old"]
    config = tmp_path / "xdg-config" / "roundtable" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("stale_after_seconds = 100\n")
    assert [i["id"] for i in rt.json("sessions", "--stale")["items"]] == ["old", "new"]


def test_list_pages_follow_cursors(rt: Cli) -> None:
    for index in range(5):
        rt.register(f"s{index}")
    seen: list[str] = []
    cursor: str | None = None
    while True:
        args = ["sessions", "--limit", "2"] + (["--cursor", cursor] if cursor else [])
        body = rt.json(*args)
        seen += [item["id"] for item in body["items"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert seen == [f"s{index}" for index in range(5)]


def test_list_with_a_limit_shows_one_page_and_names_the_next_cursor(rt: Cli) -> None:
    for index in range(3):
        rt.register(f"s{index}")
    result = rt("sessions", "--limit", "2")
    assert [line.split("\t")[0] for line in lines(result)] == ["s0", "s1"]
    cursor = result.stderr.strip().split("--cursor ")[-1]
    rest = rt("sessions", "--cursor", cursor)
    assert [line.split("\t")[0] for line in lines(rest)] == ["s2"]


def test_human_list_without_limit_streams_every_page(
    rt: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(rt.url)
    with store.write() as db:
        for index in range(205):
            agent_writes.register(
                db=db, session_id=f"s{index:03d}", agent_id="a", run_id="r", adapter="codex",
                working_directory="/w", clock=rt.clock,
            )  # fmt: skip
    store.dispose()
    calls: list[int | None] = []
    real = store_sessions.list_sessions

    def counting(**kwargs: Any) -> Any:
        calls.append(kwargs["limit"])
        return real(**kwargs)

    monkeypatch.setattr(store_sessions, "list_sessions", counting)
    shown = lines(rt("sessions"))
    assert len(shown) == 205
    assert shown[-1].startswith("s204\t")
    assert calls == [200, 200]


@pytest.mark.parametrize("limit", ["0", "201", "-3"])
def test_out_of_range_limit_is_invalid_limit(rt: Cli, limit: str) -> None:
    result = rt("sessions", "--limit", limit, "--json")
    assert result.exit_code == 2
    assert error_of(result)["code"] == "invalid_limit"


def test_non_numeric_limit_is_a_usage_error(rt: Cli) -> None:
    result = rt("sessions", "list", "--limit", "many", "--json")
    assert result.exit_code == 2
    assert error_of(result)["code"] == "usage_error"


def test_a_foreign_cursor_is_invalid_cursor(rt: Cli) -> None:
    result = rt("sessions", "--cursor", "not-a-cursor", "--json")
    assert result.exit_code == 2
    assert error_of(result)["code"] == "invalid_cursor"
    rt.register("s1")
    logs = rt.json("sessions", "logs", "--session", "s1")
    assert logs["next_cursor"] is None
    logs_cursor = encode_cursor("logs", "s1", 1)
    other = rt("sessions", "list", "--cursor", logs_cursor, "--json")
    assert other.exit_code == 2
    assert error_of(other)["code"] == "invalid_cursor"


def test_list_filters_with_another_subcommand_are_a_usage_error(rt: Cli) -> None:
    rt.register()
    result = rt("sessions", "--status", "active", "heartbeat", "--session", "s1", db=True)
    assert result.exit_code == 2
    assert "apply only to listing" in last_stderr_line(result)


def test_store_text_never_reaches_the_terminal_raw(rt: Cli) -> None:
    rt.register("s1", "--resume-command", "run\x1b]0;pwned\x07", agent="evil\x1b[2J\u202e")
    for args in (("sessions",), ("sessions", "show", "--session", "s1")):
        shown = rt(*args).stdout
        assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
    listed = rt("sessions").stdout
    assert "evil\\e[2J\\u202e" in listed
    assert "run\\e]0;pwned\\x07" in listed
    raw_json = rt("sessions", "--json").stdout
    assert "\x1b" not in raw_json and "\\u001b" in raw_json
    assert json.loads(raw_json)["items"][0]["agent_id"] == "evil\x1b[2J\u202e"


def test_tabs_in_values_cannot_break_the_columns(rt: Cli) -> None:
    rt.register("s1", agent="a\tb")
    assert lines(rt("sessions")) == ["s1\ta\\tb\tactive\tcodex\t"]


# ------------------------------------------------------------------------------ show / projections


def test_show_prints_every_field(rt: Cli, tty: None) -> None:
    rt.register("s1", "--external-session-id", "ext-1", "--metadata", '{"k": [1]}')
    shown = lines(rt("sessions", "show", "--session", "s1"))
    fields = {line.split(":")[0]: line.split(":", 1)[1].strip() for line in shown}
    assert fields["id"] == "s1"
    assert fields["external_session_id"] == "ext-1"
    assert fields["metadata"] == '{"k":[1]}'
    assert fields["stale"] == "no"
    assert set(fields) == SESSION_KEYS | {"stale"}


def test_show_redacts_metadata_in_text_and_json_export_alone_is_raw(rt: Cli, tty: None) -> None:
    metadata = '{"api_key": "sk-live-1", "notes": "token=abc123 ok", "branch": "main"}'
    rt.register("s1", "--metadata", metadata)
    shown = rt("sessions", "show", "--session", "s1").stdout
    assert "sk-live-1" not in shown and "abc123" not in shown
    assert '"api_key":"[REDACTED]"' in shown and '"notes":"token=[REDACTED] ok"' in shown
    assert '"branch":"main"' in shown
    as_json = rt.json("sessions", "show", "--session", "s1")["metadata"]
    assert as_json == {"api_key": "[REDACTED]", "notes": "token=[REDACTED] ok", "branch": "main"}
    backup = [json.loads(line) for line in rt("export").stdout.splitlines()]
    stored = next(record for record in backup if record["kind"] == "session")
    assert json.loads(stored["metadata_json"])["api_key"] == "sk-live-1"


def test_show_json_and_refusal(rt: Cli) -> None:
    rt.register("s1")
    assert rt.json("sessions", "show", "--session", "s1") == rt.session("s1").to_json()
    result = rt("sessions", "show", "--session", "nope", "--json")
    assert result.exit_code == 1
    assert error_of(result)["code"] == "session_not_found"


def test_logs_page_through_the_session_history(rt: Cli) -> None:
    rt.register("s1")
    rt("sessions", "heartbeat", "--session", "s1")
    rt("sessions", "end", "--session", "s1")
    body = rt.json("sessions", "logs", "--session", "s1", "--limit", "2")
    assert [item["event_type"] for item in body["items"]] == ["registered", "heartbeat"]
    assert isinstance(body["items"][0]["payload"], str)
    rest = rt.json("sessions", "logs", "--session", "s1", "--cursor", body["next_cursor"])
    assert [item["event_type"] for item in rest["items"]] == ["ended"]
    assert rest["next_cursor"] is None
    human = lines(rt("sessions", "logs", "--session", "s1"))
    assert [line.split("\t")[1] for line in human] == ["registered", "heartbeat", "ended"]


def test_tool_calls_claims_and_proposals(rt: Cli) -> None:
    rt.register("s1")
    rt.insert(
        Event, run_id="r1", type="tool.bash", actor_id="a1", task_id=None,
        payload_json='{"action": "run", "status": "ok"}', created_at="2026-09-17T17:00:00Z",
    )  # fmt: skip
    rt.insert(
        Claim, id="c1", resource_id="src/x.py", agent_id="a1", task_id="t1", claim_type="edit",
        status="released", expires_at="2026-09-18T00:00:00Z", renewable=1, resume_policy="hold",
        rationale_md="password=hunter2",
    )  # fmt: skip
    rt.insert(
        Proposal, id="p1", task_id="t1", agent_id="a1", title="Fix", summary_md="Summary",
        patch_path="/secret.patch", status="pending", risk="low",
    )  # fmt: skip
    calls = rt.json("sessions", "tool-calls", "--session", "s1")["items"]
    assert [(c["tool"], c["action"], c["status"]) for c in calls] == [("bash", "run", "ok")]
    claims = rt.json("sessions", "claims", "--session", "s1")["items"]
    assert [c["id"] for c in claims] == ["c1"]
    assert "hunter2" not in json.dumps(claims)
    proposals = rt.json("sessions", "proposals", "--session", "s1")["items"]
    assert [p["id"] for p in proposals] == ["p1"]
    assert "secret.patch" not in rt("sessions", "proposals", "--session", "s1").stdout


def test_metrics_and_environment(rt: Cli) -> None:
    rt.register("s1", "--metadata", '{"usage": {"input_tokens": 5, "api_key": 1, "x": "y"}}')
    metrics = rt.json("sessions", "metrics", "--session", "s1")
    assert metrics == {
        "session_id": "s1",
        "usage": {"input_tokens": 5},
        "source": "adapter_metadata",
    }
    assert "usage.input_tokens\t5" in lines(rt("sessions", "metrics", "--session", "s1"))
    environment = rt.json("sessions", "environment", "--session", "s1")
    assert environment["fingerprint"]["adapter"] == "codex"


@pytest.mark.parametrize(
    "name", ["logs", "tool-calls", "claims", "proposals", "metrics", "environment"]
)
def test_projections_of_an_unknown_session_are_refused(rt: Cli, name: str) -> None:
    result = rt("sessions", name, "--session", "nope", "--json")
    assert result.exit_code == 1
    assert error_of(result)["code"] == "session_not_found"


def test_unpaged_projections_take_no_limit(rt: Cli) -> None:
    rt.register("s1")
    result = rt("sessions", "metrics", "--session", "s1", "--limit", "3")
    assert result.exit_code == 2
    assert "No such option" in last_stderr_line(result)


# --------------------------------------------------------------------------------------- lifecycle


def test_pause_replays_with_the_same_key(rt: Cli) -> None:
    rt.register()
    first = rt("sessions", "pause", "--session", "s1", "--idempotency-key", "k1")
    assert first.exit_code == 0
    assert first.stdout == "pause: session s1 is now paused (version 1).\n"
    again = rt("sessions", "pause", "--session", "s1", "--idempotency-key", "k1")
    assert again.exit_code == 0
    assert "(replayed: already applied with this key)" in again.stdout
    assert rt.session("s1").version == 1
    body = rt.json("sessions", "pause", "--session", "s1", "--idempotency-key", "k1")
    assert body["replayed"] is True
    assert set(body) == {"action", "session", "replayed", "notes", "claims"}


def test_actions_record_the_operator(rt: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    rt.register("s1")
    rt.register("s2")
    assert rt("sessions", "stop", "--session", "s1", "--operator", "alice").exit_code == 0
    monkeypatch.setenv("ROUNDTABLE_OPERATOR", "bob")
    assert rt("sessions", "pause", "--session", "s2").exit_code == 0
    actors = {row.type: row.actor_id for row in rt.rows(Event)}
    assert actors == {"session.stopped": "alice", "session.paused": "bob"}
    stopped = rt.session("s1")
    assert (stopped.status, stopped.ended_at) == ("stopped", "2026-09-17T17:26:35.000000Z")


def test_an_illegal_transition_is_refused(rt: Cli) -> None:
    rt.register("s1", "--status", "paused")
    result = rt("sessions", "pause", "--session", "s1", "--json")
    assert result.exit_code == 1
    assert error_of(result)["code"] == "illegal_session_transition"


def test_resume_needs_a_key_and_an_enabled_agent(rt: Cli) -> None:
    rt.register("s1", "--status", "paused")
    no_key = rt("sessions", "resume", "--session", "s1", "--json")
    assert no_key.exit_code == 2
    assert error_of(no_key)["code"] == "idempotency_key_required"
    no_agent = rt("sessions", "resume", "--session", "s1", "--idempotency-key", "k", "--json")
    assert no_agent.exit_code == 1
    assert error_of(no_agent)["code"] == "agent_not_found"
    assert rt.session("s1").status == "paused"
    rt.insert(Agent, id="a1", role="dev", name="A", adapter="codex", status="idle", is_enabled=1)
    done = rt("sessions", "resume", "--session", "s1", "--idempotency-key", "k")
    assert done.exit_code == 0
    assert done.stdout.startswith("resume: session s1 is now resuming")


def test_terminate_requires_impact_details_while_claims_are_held(rt: Cli) -> None:
    rt.register()
    rt.insert(
        Claim, id="c1", resource_id="src/app.py", agent_id="a1", task_id="t1", claim_type="edit",
        status="active", expires_at="2026-09-18T00:00:00Z", renewable=1, resume_policy="hold",
    )  # fmt: skip
    refused = rt("sessions", "terminate", "--session", "s1", "--idempotency-key", "k", "--json")
    assert refused.exit_code == 1
    assert error_of(refused)["code"] == "termination_impact_required"
    assert rt.session("s1").status == "active"
    done = rt(
        "sessions", "terminate", "--session", "s1", "--idempotency-key", "k",
        "--impact-details", "app.py edit abandoned",
    )  # fmt: skip
    assert done.exit_code == 0
    assert "terminate: session s1 is now terminated" in done.stdout
    assert "  - src/app.py (task t1, edit, expires 2026-09-18T00:00:00Z)" in done.stdout
    assert "releases no claim" in done.stdout
    replay = rt.json("sessions", "terminate", "--session", "s1", "--idempotency-key", "k")
    assert replay["replayed"] is True
    assert [claim["resource_id"] for claim in replay["claims"]] == ["src/app.py"]


def test_a_stale_expected_version_is_a_conflict(rt: Cli) -> None:
    rt.register()
    result = rt("sessions", "pause", "--session", "s1", "--expected-version", "7", "--json")
    assert result.exit_code == 1
    error = error_of(result)
    assert error["code"] == "session_transition_conflict"
    assert error["details"]["current"]["version"] == 0
    assert rt("sessions", "pause", "--session", "s1", "--expected-version", "0").exit_code == 0


def test_a_negative_expected_version_is_a_usage_error(rt: Cli) -> None:
    rt.register()
    result = rt("sessions", "pause", "--session", "s1", "--expected-version", "-1", "--json")
    assert result.exit_code == 2
    assert error_of(result)["code"] == "usage_error"


def test_a_key_reused_for_another_action_is_refused(rt: Cli) -> None:
    rt.register()
    rt("sessions", "pause", "--session", "s1", "--idempotency-key", "k")
    result = rt("sessions", "stop", "--session", "s1", "--idempotency-key", "k", "--json")
    assert result.exit_code == 1
    assert error_of(result)["code"] == "idempotency_key_reuse"


# --------------------------------------------------------------------------------- resume briefing


@pytest.mark.parametrize("args", [(), ("--session", "s1", "--agent", "a1")])
def test_resume_needs_exactly_one_of_session_or_agent(rt: Cli, args: tuple) -> None:
    rt.register()
    result = rt("resume", *args, "--json")
    assert result.exit_code == 2
    assert error_of(result) == {
        "code": "usage_error",
        "message": "Give exactly one of --session or --agent.",
    }


def test_resume_by_agent_prefers_the_active_session(rt: Cli) -> None:
    rt.register("old")
    rt.clock.advance(seconds=10)
    rt.register("older-but-active")
    rt.clock.advance(seconds=10)
    rt.register("newest")
    rt("sessions", "end", "--session", "newest")
    rt("sessions", "end", "--session", "old")
    body = rt.json("resume", "--agent", "a1")
    assert body["session_id"] == "older-but-active"
    assert set(body) == {"session_id", "briefing", "resumable", "resume_argv", "reason"}
    assert body["resumable"] is False and body["resume_argv"] is None
    assert "no external session id" in body["reason"]


def test_resume_prints_the_briefing_then_the_plan(rt: Cli) -> None:
    rt.register()
    result = rt("resume", "--session", "s1")
    assert result.exit_code == 0
    assert result.stdout.startswith("# Roundtable Resume Briefing\n")
    assert "You are resuming as a1." in result.stdout
    assert lines(result)[-1].startswith("Not resumable: The session has no external session id")


def test_resume_plan_with_a_configured_adapter(rt: Cli, tmp_path: Path) -> None:
    root = workspace_with_config(tmp_path, RESUMABLE_CONFIG)
    rt.register("s1", "--external-session-id", "ext-1")
    body = rt.json("resume", "--session", "s1", "--root", str(root))
    assert body["resumable"] is True
    assert body["resume_argv"] == ["codex", "resume", "ext-1", "--prompt", body["briefing"]]
    human = rt("resume", "--session", "s1", "--root", str(root)).stdout
    assert "codex resume ext-1 --prompt '# Roundtable Resume Briefing" in human


def test_resume_of_an_unknown_agent_is_refused(rt: Cli) -> None:
    result = rt("resume", "--agent", "ghost", "--json")
    assert result.exit_code == 1
    assert error_of(result)["code"] == "session_not_found"


# ------------------------------------------------------------------------- tui, demo, db, transfer


def test_tui_hands_the_resolved_settings_to_the_console(
    rt: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    def run_console(**kwargs: Any) -> int:
        seen.update(kwargs)
        return 3

    monkeypatch.setitem(
        sys.modules, "roundtable_console.tui.app", types.SimpleNamespace(run_console=run_console)
    )
    result = rt("tui", "--demo", "--operator", "carol")
    assert result.exit_code == 3
    assert seen["url"] == rt.url
    assert (seen["operator"], seen["demo"]) == ("carol", True)
    assert seen["adapters"] == {}
    assert seen["settings"].stale_after_seconds == 300
    assert seen["read_only"] is False
    assert rt("tui", "--read-only").exit_code == 3
    assert seen["read_only"] is True


def test_the_real_console_takes_what_the_cli_passes() -> None:
    from roundtable_console.tui.app import run_console

    parameters = inspect.signature(run_console).parameters
    required = {name for name, p in parameters.items() if p.default is inspect.Parameter.empty}
    assert required == {"url", "settings", "operator", "adapters", "demo"}
    # The rest only say how to run it (the benchmark runs it headless), hand over the first
    # rows a child process read while Textual loaded (PostgreSQL), and open it read-only.
    assert set(parameters) - required == {
        "headless",
        "size",
        "auto_pilot",
        "prefetched",
        "read_only",
    }


def test_demo_seeds_the_store(rt: Cli) -> None:
    counts = rt.json("demo", "--sessions", "3")
    assert counts["session"] == 3
    assert len(rt.json("sessions")["items"]) == 3
    assert rt("demo", "--sessions", "-1").exit_code == 2


def test_db_upgrade_says_whether_anything_ran(tmp_path: Path, clock: FakeClock) -> None:
    rt = Cli(url=f"sqlite:///{tmp_path / 'fresh.db'}", clock=clock)
    first = rt("db", "upgrade")
    assert first.exit_code == 0
    assert first.stdout.strip().endswith(f"to {HEAD_REVISION}.")
    assert "Bringing the store's schema up to date" in first.stderr
    again = rt.json("db", "upgrade")
    assert again == {"upgraded": False, "revision": HEAD_REVISION, "database": rt.url}


def test_export_then_import_loses_nothing(rt: Cli, tmp_path: Path, clock: FakeClock) -> None:
    rt.register("s1", "--metadata", '{"usage": {"n": 1}}')
    rt("sessions", "pause", "--session", "s1")
    exported = rt("export")
    assert exported.exit_code == 0
    records = [json.loads(line) for line in exported.stdout.splitlines()]
    assert {record["kind"] for record in records} >= {"session", "session_event", "event"}
    target = Cli(url=f"sqlite:///{tmp_path / 'copy.db'}", clock=clock)
    imported = target("import", "-", "--json", input=exported.stdout)
    assert imported.exit_code == 0, imported.stderr
    assert json.loads(imported.stdout)["session"] == 1
    assert target.session("s1").to_json() == rt.session("s1").to_json()
    assert target("export").stdout == exported.stdout


def test_a_bad_import_line_writes_nothing(rt: Cli, tmp_path: Path) -> None:
    good = json.dumps({"kind": "agent", "id": "a1", "role": "r", "name": "n", "adapter": "x"})
    source = tmp_path / "records.jsonl"
    source.write_text(good + "\n{broken\n")
    result = rt("import", str(source), "--json")
    assert result.exit_code == 2
    error = error_of(result)
    assert error["code"] == "invalid_import"
    assert "line 2" in error["message"]
    assert rt.rows(Agent) == []


def test_importing_a_missing_file_is_a_usage_error(rt: Cli, tmp_path: Path) -> None:
    result = rt("import", str(tmp_path / "missing.jsonl"), "--json")
    assert result.exit_code == 2
    assert error_of(result)["code"] == "usage_error"


# ------------------------------------------------------------------------------------------ errors


def test_unknown_subcommands_are_usage_errors(rt: Cli) -> None:
    result = rt("sessions", "frobnicate", "--json")
    assert result.exit_code == 2
    assert error_of(result)["code"] == "usage_error"
    human = rt("bogus", db=False)
    assert human.exit_code == 2
    assert last_stderr_line(human).startswith("error: No such command 'bogus'")


def test_blank_db_and_root_are_usage_errors(rt: Cli) -> None:
    result = rt("sessions", "--db", " ", "--json", db=False)
    assert result.exit_code == 2
    assert error_of(result)["code"] == "usage_error"
    assert rt("sessions", "--root", "", db=False).exit_code == 2


def test_a_malformed_config_is_bad_input(rt: Cli, tmp_path: Path) -> None:
    config = tmp_path / "xdg-config" / "roundtable" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("refresh_seconds = [")
    result = rt("sessions", "--json")
    assert result.exit_code == 2
    assert error_of(result)["code"] == "invalid_configuration"


def test_an_unexpected_error_is_one_line_not_a_traceback(
    rt: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(**_: Any) -> None:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(store_sessions, "get_session", broken)
    result = rt("sessions", "show", "--session", "s1", "--json")
    assert result.exit_code == 1
    error = error_of(result)
    assert error["code"] == "internal_error"
    assert error["message"].startswith("Unexpected RuntimeError: boom.")
    human = rt("sessions", "show", "--session", "s1")
    assert human.stderr.count("\n") == 1
    assert "Traceback" not in human.stderr


def test_an_interrupt_exits_130(rt: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(**_: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(store_sessions, "get_session", interrupted)
    result = rt("sessions", "show", "--session", "s1", "--json")
    assert result.exit_code == 130
    assert error_of(result)["code"] == "interrupted"


def test_help_explains_terminal_and_pipe_output(rt: Cli) -> None:
    result = rt("sessions", "--help", db=False)
    assert result.exit_code == 0
    assert "tab-separated" in result.stdout
    assert "aligned columns" in result.stdout


# ----------------------------------------------------------------------------------- both backends


def test_register_list_and_show_on_each_backend(store_url: str, clock: FakeClock) -> None:
    rt = Cli(url=store_url, clock=clock)
    rt.register("s1", "--external-session-id", "e1")
    clock.advance(seconds=1)
    rt.register("s2", agent="a2")
    assert [item["id"] for item in rt.json("sessions", "list")["items"]] == ["s1", "s2"]
    assert [item["id"] for item in rt.json("sessions", "--agent", "a2")["items"]] == ["s2"]
    assert rt.json("sessions", "show", "--session", "s1")["external_session_id"] == "e1"
    assert rt("sessions", "heartbeat", "--session", "s2").exit_code == 0
    missing = rt("sessions", "show", "--session", "nope", "--json")
    assert (missing.exit_code, error_of(missing)["code"]) == (1, "session_not_found")


def test_paging_and_logs_on_each_backend(store_url: str, clock: FakeClock) -> None:
    rt = Cli(url=store_url, clock=clock)
    for index in range(3):
        rt.register(f"s{index}")
    first = rt.json("sessions", "--limit", "2")
    second = rt.json("sessions", "--limit", "2", "--cursor", first["next_cursor"])
    assert [i["id"] for i in first["items"] + second["items"]] == ["s0", "s1", "s2"]
    logs = rt.json("sessions", "logs", "--session", "s0")["items"]
    assert [item["event_type"] for item in logs] == ["registered"]


# --------------------------------------------------------------------------------- the real script


def run_script(*args: str, cwd: Path, env_home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("ROUNDTABLE_DB", "ROUNDTABLE_OPERATOR")
    }
    env.update(XDG_CONFIG_HOME=str(env_home / "config"), XDG_DATA_HOME=str(env_home / "data"))
    return subprocess.run(
        [str(ROUNDTABLE), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def script_home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "home"
    home.mkdir()
    yield home


def test_script_root_creates_the_workspace_store_and_list_honours_it(
    tmp_path: Path, script_home: Path
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    registered = run_script(
        "sessions", "register", "--root", str(root), "--id", "s1", "--agent", "a1",
        "--run", "r1", "--adapter", "codex", "--cwd", ".",
        cwd=tmp_path, env_home=script_home,
    )  # fmt: skip
    assert registered.returncode == 0, registered.stderr
    assert (root / ".roundtable" / "roundtable.db").is_file()
    listed = run_script("sessions", "list", "--root", str(root), cwd=tmp_path, env_home=script_home)
    assert (listed.returncode, listed.stdout) == (0, "s1\ta1\tactive\tcodex\t\n")
    elsewhere = run_script("sessions", "list", "--json", cwd=tmp_path, env_home=script_home)
    assert json.loads(elsewhere.stdout)["items"] == []


def test_script_root_that_is_a_file_is_bad_input(tmp_path: Path, script_home: Path) -> None:
    afile = tmp_path / "plain.txt"
    afile.write_text("x")
    result = run_script(
        "sessions", "--root", str(afile), "--json", cwd=tmp_path, env_home=script_home
    )
    assert result.returncode == 2
    error = json.loads(result.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "invalid_configuration"
    assert "is not a directory" in error["message"]
    assert "Traceback" not in result.stderr


def test_script_refuses_a_file_that_is_not_sqlite(tmp_path: Path, script_home: Path) -> None:
    afile = tmp_path / "notes.db"
    afile.write_bytes(b"my precious notes\n")
    result = run_script(
        "sessions", "heartbeat", "--session", "s1", "--db", f"sqlite:///{afile}", "--json",
        cwd=tmp_path, env_home=script_home,
    )  # fmt: skip
    assert result.returncode == 1
    assert json.loads(result.stderr.strip().splitlines()[-1])["error"]["code"] == (
        "database_unavailable"
    )
    assert afile.read_bytes() == b"my precious notes\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["home", "notes.db"]


def test_script_reports_an_unreachable_postgresql(tmp_path: Path, script_home: Path) -> None:
    result = run_script(
        "sessions", "--db", "postgresql://127.0.0.1:1/x", cwd=tmp_path, env_home=script_home
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("error: The database ")
    json_mode = run_script(
        "sessions", "--db", "postgresql://127.0.0.1:1/x", "--json",
        cwd=tmp_path, env_home=script_home,
    )  # fmt: skip
    error = json.loads(json_mode.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "database_unavailable"


def test_python_dash_m_runs_the_cli(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "roundtable_console.tui.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert result.returncode == 0
    assert "Usage: roundtable" in result.stdout
