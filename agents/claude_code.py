"""Claude Code (``@anthropic-ai/claude-code``): its hook events, settings files and resume
(``docs/reference/agent-facts.md``, observed from the real CLI)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from roundtable_console.agents.answers import answer_permission, continue_with
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

# typing is not imported at run time: every hook's process would pay ~3 ms for it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Interactive sessions tell these while they wait on a human; the others are not a wait. A
# permission prompt's notification is not among them: the PermissionRequest before it has made
# the session wait in the agent's own words ("asks to run Bash: …"), and the notification, some
# seconds later, would put its vaguer ones ("Claude needs your permission") in their place.
_WAITING_NOTIFICATIONS = frozenset({"elicitation_dialog"})
_QUESTION_TOOLS = frozenset({"AskUserQuestion"})
# The events that tell how a tool call ended. PermissionDenied: auto mode's classifier refused it
# (a human's denial is written with the decision, ``store.requests``).
_TOOL_OUTCOMES = {"PostToolUse": "ok", "PostToolUseFailure": "error", "PermissionDenied": "denied"}


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
    if name == "PreToolUse" and payload.get("tool_name") in _QUESTION_TOOLS:
        return event(WAIT, _question(payload.get("tool_input")))
    if name == "Notification":
        kind = payload.get("notification_type")
        message = text_field(payload, "message")
        if kind in _WAITING_NOTIFICATIONS:
            return event(WAIT, one_line(message or "asks for your input"))
        if kind == "idle_prompt":
            return event(TURN, one_line(message) if message else None)
        return event(IGNORE)
    if name == "Stop":
        return event(TURN, _last_words(payload))
    if name in _TOOL_OUTCOMES:
        outcome = _TOOL_OUTCOMES[name]
        tool = tool_run(payload, outcome)
        return AgentEvent(WORK, name, external_id, cwd, model, None, transcript, tool=tool)
    if name in {
        "UserPromptSubmit",
        "PreToolUse",
        "SubagentStart",
        "SubagentStop",
        "PreCompact",
    }:
        return event(WORK)
    return event(IGNORE)


def _question(tool_input: Any) -> str:
    if isinstance(tool_input, Mapping):
        questions = tool_input.get("questions")
        if isinstance(questions, list) and questions and isinstance(questions[0], Mapping):
            question = questions[0].get("question")
            if isinstance(question, str) and question.strip():
                return one_line(f"asks: {question}")
    return "asks a question"


def _last_words(payload: Mapping[str, Any]) -> str | None:
    message = text_field(payload, "last_assistant_message")
    return one_line(message, 200) if message else None


def user_file(home: Path) -> Path:
    return home / ".claude" / "settings.json"


def project_file(project: Path) -> Path:
    return project / ".claude" / "settings.json"


SPEC = AgentSpec(
    name="claude-code",
    adapter="claude",
    provider="anthropic",
    read_event=read_event,
    user_file=user_file,
    project_file=project_file,
    answer_permission=answer_permission,
    continue_turn=continue_with,
    events=(
        HookEvent("SessionStart"),
        HookEvent("UserPromptSubmit"),
        HookEvent("PreToolUse", matcher="*"),
        HookEvent("PermissionRequest", matcher="*", asks=True),
        HookEvent("PostToolUse", matcher="*"),
        HookEvent("PostToolUseFailure", matcher="*"),
        HookEvent("PermissionDenied", matcher="*"),
        HookEvent("Notification"),
        HookEvent("Stop", listens=True),
        HookEvent("SubagentStop"),
        HookEvent("PreCompact"),
        HookEvent("SessionEnd"),
    ),
    timeout_unit=1,
)
