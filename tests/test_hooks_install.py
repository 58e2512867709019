"""``roundtable hooks install|uninstall|status``: the agent's own settings merged (every other
setting and hook kept), idempotent, reversible, refused in words when unreadable, written
atomically with the file's mode; Codex's trust entries
(``docs/reference/agent-facts.md#codex-runs-only-trusted-hooks``)."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from tests.helpers import Cli

THEIR_HOOK = {"type": "command", "command": "/usr/local/bin/lint-on-edit", "timeout": 30}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return folder


def _ours(settings: dict, event: str) -> list[dict]:
    return [
        handler
        for group in settings["hooks"].get(event, [])
        for handler in group["hooks"]
        if " hooks run " in handler.get("command", "")
    ]


def test_install_merges_into_a_project_and_is_idempotent(rt: Cli, home: Path, tmp_path: Path):
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    settings_path = project / ".claude" / "settings.json"
    theirs = {
        "model": "opus",
        "permissions": {"allow": ["Bash(npm test:*)"]},
        "hooks": {"PostToolUse": [{"matcher": "Edit", "hooks": [THEIR_HOOK]}]},
    }
    settings_path.write_text(json.dumps(theirs))
    os.chmod(settings_path, 0o640)

    result = rt("hooks", "install", "claude-code", "--project", str(project))
    assert result.exit_code == 0, result.output
    settings = json.loads(settings_path.read_text())
    assert settings["model"] == "opus" and settings["permissions"] == theirs["permissions"]
    assert settings["hooks"]["PostToolUse"][0] == {"matcher": "Edit", "hooks": [THEIR_HOOK]}
    for event in (
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PermissionRequest",
        "PostToolUse",
        "Notification",
        "Stop",
        "SessionEnd",
    ):
        (handler,) = _ours(settings, event)
        # A permission request waits for a human (120 s by default): its timeout is above that.
        waits = event == "PermissionRequest"
        assert handler["type"] == "command" and handler["timeout"] == (135 if waits else 10)
        assert "hooks run claude-code --db sqlite:///" in handler["command"]
        assert handler["command"].endswith("--permission-wait 120")
    assert "matcher" not in settings["hooks"]["SessionStart"][0]
    assert settings["hooks"]["PreToolUse"][0]["matcher"] == "*"
    assert stat.S_IMODE(settings_path.stat().st_mode) == 0o640  # its mode kept

    written = settings_path.read_text()
    again = rt("hooks", "install", "claude-code", "--project", str(project))
    assert again.exit_code == 0 and "Nothing to change" in again.output
    assert settings_path.read_text() == written

    status = rt("hooks", "status", "--project", str(project), "--json")
    (item,) = json.loads(status.output)["items"]
    assert item["agent"] == "claude-code" and item["path"] == str(settings_path)
    assert item["reports_to"].startswith("sqlite:///")

    removed = rt("hooks", "uninstall", "claude-code", "--project", str(project))
    assert removed.exit_code == 0, removed.output
    assert json.loads(settings_path.read_text()) == theirs
    assert "No hooks installed" in rt("hooks", "status", "--project", str(project)).output


def test_dry_run_prints_the_change_and_writes_nothing(rt: Cli, home: Path) -> None:
    result = rt("hooks", "install", "gemini", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "+++" in result.output and "BeforeTool" in result.output
    assert "Dry run: nothing was written." in result.output
    assert not (home / ".gemini").exists()


def test_a_new_settings_file_is_its_owners_only(rt: Cli, home: Path) -> None:
    assert rt("hooks", "install", "claude-code").exit_code == 0
    path = home / ".claude" / "settings.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_gemini_timeouts_are_milliseconds_and_handlers_named(rt: Cli, home: Path) -> None:
    (home / ".gemini").mkdir()
    auth = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    (home / ".gemini" / "settings.json").write_text(json.dumps(auth))
    assert rt("hooks", "install", "gemini").exit_code == 0
    settings = json.loads((home / ".gemini" / "settings.json").read_text())
    assert settings["security"] == auth["security"]
    (handler,) = _ours(settings, "BeforeTool")
    assert handler["timeout"] == 10_000 and handler["name"] == "roundtable"


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"hooks": {"Stop": {"x": 1}}}'])
def test_a_file_it_cannot_read_is_refused_and_left_untouched(
    rt: Cli, home: Path, content: str
) -> None:
    (home / ".claude").mkdir()
    path = home / ".claude" / "settings.json"
    path.write_text(content)
    result = rt("hooks", "install", "claude-code")
    assert result.exit_code != 0
    assert "nothing was changed" in result.output.lower()
    assert "Traceback" not in result.output
    assert path.read_text() == content


def test_server_mode_names_the_server_and_the_variable_never_the_token(
    rt: Cli, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RT_AGENT_TOKEN", "rt_secret_value")
    result = rt(
        "hooks",
        "install",
        "claude-code",
        "--server",
        "http://127.0.0.1:8080",
        "--token-env",
        "RT_AGENT_TOKEN",
        "--workspace",
        "ws-a",
        "--reply-wait",
        "300",
    )
    assert result.exit_code == 0, result.output
    text = (home / ".claude" / "settings.json").read_text()
    assert "--server http://127.0.0.1:8080 --token-env RT_AGENT_TOKEN --workspace ws-a" in text
    assert "rt_secret_value" not in text and "--db" not in text
    # Through the server, as against a store: the waits, and the agent's timeouts above them.
    settings = json.loads(text)
    [asked] = settings["hooks"]["PermissionRequest"][0]["hooks"]
    assert "--permission-wait 120" in asked["command"] and asked["timeout"] > 120
    [stop] = settings["hooks"]["Stop"][0]["hooks"]
    assert "--reply-wait 300" in stop["command"] and stop["timeout"] > 300
    refused = rt("hooks", "install", "codex", "--server", "http://127.0.0.1:8080")
    assert refused.exit_code != 0 and "--workspace" in refused.output


def _codex_hash(event: str, matcher: str | None, command: str, timeout: int) -> str:
    described = {
        "event_name": event,
        "hooks": [{"type": "command", "command": command, "timeout": timeout, "async": False}],
    }
    if matcher is not None:
        described["matcher"] = matcher
    text = json.dumps(described, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def test_codex_hooks_are_trusted_in_its_config(rt: Cli, home: Path, tmp_path: Path) -> None:
    import tomllib

    codex_home = home / ".codex"
    codex_home.mkdir()
    config = codex_home / "config.toml"
    theirs = '# my settings\nmodel = "gpt-5-codex"\n\n[projects."/w"]\ntrust_level = "trusted"\n'
    config.write_text(theirs)
    project = tmp_path / "proj"
    project.mkdir()
    assert rt("hooks", "install", "codex", "--project", str(project)).exit_code == 0
    hooks_file = project / ".codex" / "hooks.json"
    settings = json.loads(hooks_file.read_text())
    (pre,) = _ours(settings, "PreToolUse")
    (end,) = _ours(settings, "SessionEnd")
    assert end["timeout"] == 3  # Codex holds SessionEnd's hooks to 3 s
    text = config.read_text()
    assert text.startswith(theirs)  # their lines, comment included, as they were
    state = tomllib.loads(text)["hooks"]["state"]
    assert state[f"{hooks_file}:pre_tool_use:0:0"]["trusted_hash"] == _codex_hash(
        "pre_tool_use", "*", pre["command"], 10
    )
    assert state[f"{hooks_file}:session_end:0:0"]["trusted_hash"] == _codex_hash(
        "session_end", None, end["command"], 3
    )
    assert len(state) == 7
    status = json.loads(rt("hooks", "status", "--project", str(project), "--json").output)
    assert [item["trusted"] for item in status["items"]] == [True]

    assert rt("hooks", "uninstall", "codex", "--project", str(project)).exit_code == 0
    assert config.read_text() == theirs
    assert "hooks" not in json.loads(hooks_file.read_text())


def test_codex_with_hooks_in_its_config_is_refused_in_words(rt: Cli, home: Path) -> None:
    (home / ".codex").mkdir()
    config = home / ".codex" / "config.toml"
    content = '[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = "command"\ncommand = "notify"\n'
    config.write_text(content)
    result = rt("hooks", "install", "codex")
    assert result.exit_code != 0 and "one place per layer" in result.output
    assert config.read_text() == content and not (home / ".codex" / "hooks.json").exists()
