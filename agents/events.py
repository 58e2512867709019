"""What an agent's hook event means for its session, whatever the agent: one ``AgentEvent``.

A NamedTuple, not a dataclass: every hook is a fresh process, and a dataclass compiles its methods
at import.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from roundtable_console.store.writes.tool_calls import SENT_LENGTH, UNNAMED, tool_subject

# typing is not imported at run time: every hook's process would pay ~3 ms for it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# What an event does to the session (``docs/agents.md#connect-your-agents``).
START = "start"  # register (again, on resume, clear or compact: started_at is kept)
WORK = "work"  # a heartbeat: working
WAIT = "wait"  # waiting for a human, with the agent's words
TURN = "turn"  # the turn is done: it awaits a prompt
END = "end"
IGNORE = "ignore"  # known, but nothing to write (or a payload of another thread)

# The store takes a waiting reason of at most 500 printable characters.
REASON_LENGTH = 480
_CONTROL = r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+"  # compiled when a reason is made
# An agent's own session id as the store keeps it (and as the resume plan accepts it): never
# beginning with "-", which the agent's resume command would read as an option.
_ID_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-")


def is_external_id(value: object) -> bool:
    """``^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$``, without a regular expression to compile at
    every hook's start."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= 128
        and value[0] not in "._:-"
        and all(char in _ID_CHARACTERS for char in value)
    )


class Ask:
    """What an agent asks a human to allow: the tool, its input, its own suggestions (Claude
    Code's ``permission_suggestions``)."""

    __slots__ = ("tool_name", "tool_input", "suggestions")

    def __init__(self, tool_name: str, tool_input: Any, suggestions: Any = None) -> None:
        self.tool_name = tool_name
        self.tool_input = tool_input
        self.suggestions = suggestions


class ToolRun:
    """A tool the agent ran, as its hook saw it: the tool's name, what it was about (one line,
    ``tool_subject``), its outcome (ok, error, denied) and how long it took, where the agent
    says (``store.writes.tool_calls`` checks it and hides credentials)."""

    __slots__ = ("tool", "summary", "outcome", "duration_ms")

    def __init__(self, tool: str, summary: str, outcome: str, duration_ms: float | None) -> None:
        self.tool = tool
        self.summary = summary
        self.outcome = outcome
        self.duration_ms = duration_ms

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"tool": self.tool, "summary": self.summary}
        found["outcome"] = self.outcome
        if self.duration_ms is not None:
            found["duration_ms"] = self.duration_ms
        return found


def tool_run(payload: Mapping[str, Any], outcome: str) -> ToolRun:
    """The tool call a tool event's payload tells of (``tool_name``, ``tool_input``,
    ``duration_ms``: Claude Code's, Codex's and Gemini's shape)."""
    tool_name = payload.get("tool_name")
    name = one_line(tool_name, 400) if isinstance(tool_name, str) else ""
    duration = payload.get("duration_ms")
    if isinstance(duration, bool) or not isinstance(duration, int | float):
        duration = None
    elif not 0 <= duration <= 86_400_000:
        duration = None
    # Sent long: the store hides credentials in it whole, then cuts it (store.writes.tool_calls).
    summary = one_line(tool_subject(name, payload.get("tool_input")), SENT_LENGTH)
    return ToolRun(name or UNNAMED, summary, outcome, duration)


class AgentEvent:
    """One hook event, read: ``kind`` (above), the agent's own session id, and what it says
    (``ask``: a permission request a human may answer; ``tool``: a tool it ran). A plain class:
    a NamedTuple would be built (exec'd) at every hook's start."""

    __slots__ = (
        "kind", "name", "external_id", "cwd", "model", "reason", "transcript", "ask", "tool",
    )  # fmt: skip

    def __init__(
        self,
        kind: str,
        name: str,
        external_id: str,
        cwd: str | None = None,
        model: str | None = None,
        reason: str | None = None,
        transcript: str | None = None,
        ask: Ask | None = None,
        tool: ToolRun | None = None,
    ) -> None:
        self.ask = ask
        self.tool = tool
        self.kind = kind
        self.name = name
        self.external_id = external_id
        self.cwd = cwd
        self.model = model
        self.reason = reason
        self.transcript = transcript


class PayloadError(ValueError):
    """A payload this hook cannot read (said in one line on stderr; the agent goes on)."""


def one_line(value: Any, limit: int = REASON_LENGTH) -> str:
    """``value`` as one printable line of at most ``limit`` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = re.sub(_CONTROL, " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def text_field(payload: Mapping[str, Any], name: str) -> str | None:
    value = payload.get(name)
    return value if isinstance(value, str) and value.strip() else None


def asks_to_run(tool_name: Any, tool_input: Any) -> str:
    """A permission request's reason: ``asks to run Bash: rm -rf build/``."""
    name = one_line(tool_name, 60) if isinstance(tool_name, str) and tool_name else "a tool"
    subject = tool_subject(name, tool_input)
    return one_line(f"asks to run {name}: {subject}" if subject else f"asks to run {name}")


def base_fields(payload: Mapping[str, Any]) -> tuple[str, str | None, str | None]:
    """The agent's own session id (checked), cwd and transcript path every event carries."""
    external_id = payload.get("session_id")
    if not is_external_id(external_id):
        raise PayloadError("the event has no usable session_id")
    cwd = text_field(payload, "cwd")
    if cwd is not None and (not cwd.startswith("/") or "\x00" in cwd):
        cwd = None
    transcript = text_field(payload, "transcript_path")
    if transcript is not None and (not transcript.startswith("/") or "\x00" in transcript):
        transcript = None
    return external_id, cwd, transcript


def permission_ask(payload: Mapping[str, Any]) -> Ask:
    """A ``PermissionRequest`` payload's ask (Claude Code's and Codex's shape)."""
    tool_name = payload.get("tool_name")
    name = one_line(tool_name, 60) if isinstance(tool_name, str) and tool_name else "a tool"
    return Ask(name, payload.get("tool_input"), payload.get("permission_suggestions"))
