"""Codex CLI (``@openai/codex``): its hook events, hooks files, the trust its hooks need to run,
and resume (``docs/reference/agent-facts.md``, observed from the real CLI)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roundtable_console.agents.answers import answer_permission
from roundtable_console.agents.events import (
    END,
    IGNORE,
    START,
    TURN,
    WAIT,
    WORK,
    AgentEvent,
    asks_to_run,
    base_fields,
    one_line,
    permission_ask,
    text_field,
    tool_run,
)
from roundtable_console.agents.spec import AgentSpec, HookEvent


def read_event(payload: Mapping[str, Any]) -> AgentEvent:
    external_id, cwd, transcript = base_fields(payload)
    name = text_field(payload, "hook_event_name") or ""
    model = text_field(payload, "model")

    def event(kind: str, reason: str | None = None) -> AgentEvent:
        return AgentEvent(kind, name, external_id, cwd, model, reason, transcript)

    if name == "SessionStart":
        return event(START)
    if name == "SessionEnd":
        return event(END)
    if name == "PermissionRequest":
        reason = asks_to_run(payload.get("tool_name"), payload.get("tool_input"))
        return AgentEvent(
            WAIT, name, external_id, cwd, model, reason, transcript, permission_ask(payload)
        )
    if name == "Stop":
        message = text_field(payload, "last_assistant_message")
        return event(TURN, one_line(message, 200) if message else None)
    if name == "PostToolUse":  # its response is the output as text: no outcome but ran
        tool = tool_run(payload, "ok")
        return AgentEvent(WORK, name, external_id, cwd, model, None, transcript, tool=tool)
    if name in {
        "UserPromptSubmit",
        "PreToolUse",
        "PreCompact",
        "PostCompact",
        "SubagentStart",
        "SubagentStop",
    }:
        return event(WORK)
    return event(IGNORE)


def codex_home(home: Path) -> Path:
    configured = os.environ.get("CODEX_HOME", "").strip()
    return Path(configured) if configured else home / ".codex"


def user_file(home: Path) -> Path:
    return codex_home(home) / "hooks.json"


def project_file(project: Path) -> Path:
    return project / ".codex" / "hooks.json"


SPEC = AgentSpec(
    name="codex",
    adapter="codex",
    provider="openai",
    read_event=read_event,
    user_file=user_file,
    project_file=project_file,
    answer_permission=answer_permission,
    events=(
        HookEvent("SessionStart"),
        HookEvent("UserPromptSubmit"),
        HookEvent("PreToolUse", matcher="*"),
        HookEvent("PermissionRequest", matcher="*", asks=True),
        HookEvent("PostToolUse", matcher="*"),
        HookEvent("Stop"),
        # Codex holds SessionEnd's hooks to 3 s whatever they ask.
        HookEvent("SessionEnd", timeout=3),
    ),
    timeout_unit=1,
    needs_trust=True,
)
