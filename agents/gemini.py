"""Gemini CLI (``@google/gemini-cli``): its hook events, settings files and resume
(``docs/reference/agent-facts.md``, observed from the real CLI). Its hooks can deny a tool but
not allow one."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roundtable_console.agents.events import (
    END,
    IGNORE,
    START,
    TURN,
    WAIT,
    WORK,
    AgentEvent,
    Ask,
    asks_to_run,
    base_fields,
    one_line,
    text_field,
    tool_run,
)
from roundtable_console.agents.spec import AgentSpec, HookEvent


def read_event(payload: Mapping[str, Any]) -> AgentEvent:
    external_id, cwd, transcript = base_fields(payload)
    name = text_field(payload, "hook_event_name") or ""

    def event(kind: str, reason: str | None = None) -> AgentEvent:
        return AgentEvent(kind, name, external_id, cwd, None, reason, transcript)

    if name == "SessionStart":
        return event(START)
    if name == "SessionEnd":
        return event(END)  # sent up to three times in one exit: the end is written once
    if name == "Notification":
        if payload.get("notification_type") == "ToolPermission":
            details = payload.get("details")
            if isinstance(details, Mapping) and details.get("command"):
                reason = asks_to_run("run_shell_command", details)
                ask = Ask("run_shell_command", dict(details))
                return AgentEvent(WAIT, name, external_id, cwd, None, reason, transcript, ask)
            message = text_field(payload, "message")
            return event(WAIT, one_line(message or "asks for permission"))
        return event(IGNORE)
    if name == "AfterAgent":
        response = text_field(payload, "prompt_response")
        return event(TURN, one_line(response, 200) if response else None)
    if name == "AfterTool":  # a failed tool's response carries its error
        response = payload.get("tool_response")
        failed = isinstance(response, Mapping) and bool(response.get("error"))
        tool = tool_run(payload, "error" if failed else "ok")
        return AgentEvent(WORK, name, external_id, cwd, None, None, transcript, tool=tool)
    if name in {"BeforeAgent", "BeforeTool", "PreCompress"}:
        return event(WORK)
    return event(IGNORE)


def user_file(home: Path) -> Path:
    return home / ".gemini" / "settings.json"


def project_file(project: Path) -> Path:
    return project / ".gemini" / "settings.json"


SPEC = AgentSpec(
    name="gemini",
    adapter="gemini",
    provider="google",
    read_event=read_event,
    user_file=user_file,
    project_file=project_file,
    events=(
        HookEvent("SessionStart"),
        HookEvent("BeforeAgent"),
        HookEvent("BeforeTool", matcher="*"),
        HookEvent("AfterTool", matcher="*"),
        HookEvent("Notification"),
        HookEvent("AfterAgent"),
        HookEvent("SessionEnd"),
    ),
    timeout_unit=1000,
    named_handlers=True,
)
