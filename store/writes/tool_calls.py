"""Ours: the tools an agent ran, each a row of its session's own history (``agent_session_events``,
type ``tool.call``), which the tool-calls projection lists with the reference's tool events of
the session's run (``store.reads.projections.tool_calls``). The session's, not its run's: runs
are named freely and may be shared across workspaces, a session's history never is.

A hook's beat carries the tool calls it saw (``agents.events.ToolRun``); they are written in the
beat's own transaction, also when the beat itself writes nothing (a quiet beat of a burst), so a
burst of tool calls is one row each and still one heartbeat row. A permission request a human
denies is its tool call too, written with the decision (``store.requests.deciding``). What a
call was about is redacted whole, then cut to one line.

Standard library only (the hooks' quick writes use it): the statement is written here, for both
the driver's own paths and SQLAlchemy's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from roundtable_console.store.errors import InvalidSession
from roundtable_console.store.rules import TOOL_CALL_EVENT

# typing is not imported at run time: every hook's process would pay ~3 ms for it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

OUTCOMES = ("ok", "error", "denied")
# One write carries at most this many (a hook carries one; a batch replayed from a spool few).
MAX_CALLS = 50
TOOL_LENGTH = 100
SUMMARY_LENGTH = 200
UNNAMED = "a tool"
# What a hook sends of a call's input, at most: whole enough that a credential in it is seen,
# and hidden, before the summary is cut to SUMMARY_LENGTH.
SENT_LENGTH = 4000
# A tool's duration as the agent gives it: at most a day, in milliseconds.
MAX_DURATION_MS = 86_400_000

INSERT_TOOL_CALL = f"""
INSERT INTO agent_session_events (session_id, event_type, payload_json, created_at)
VALUES (:session_id, '{TOOL_CALL_EVENT}', :payload_json, :now)"""


SHELL_TOOLS = frozenset({"Bash", "run_shell_command", "exec_command", "shell", "local_shell"})
FILE_FIELDS = ("file_path", "path", "notebook_path", "absolute_path", "dir_path")


def tool_subject(tool_name: str, tool_input: Any) -> str:
    """What a tool call is about, in words: a shell tool's command, a file tool's file, else its
    input (as JSON, on one line)."""
    if isinstance(tool_input, Mapping):
        if tool_name in SHELL_TOOLS or "command" in tool_input or "cmd" in tool_input:
            command = tool_input.get("command", tool_input.get("cmd"))
            if isinstance(command, list):
                command = " ".join(str(word) for word in command)
            if isinstance(command, str) and command.strip():
                return command
        for field in FILE_FIELDS:
            value = tool_input.get(field)
            if isinstance(value, str) and value.strip():
                return value
        if not tool_input:
            return ""
    if isinstance(tool_input, str):
        return _one_line(tool_input, SENT_LENGTH)
    import json

    return _one_line(json.dumps(tool_input, ensure_ascii=False), SENT_LENGTH)


def _one_line(value: str, limit: int) -> str:
    text = " ".join("".join(" " if not char.isprintable() else char for char in value).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def tool_call_payload(call: Any) -> dict[str, Any]:
    """One tool call as its history row's payload (``tool``, ``action``: a one-line summary of
    its input, credentials hidden before it is cut, ``status``: its outcome, ``duration_ms``),
    or ``InvalidSession`` in words. A tool with no usable name is "a tool"."""
    from roundtable_console.store.safety.credentials import redact_output_text

    if not isinstance(call, Mapping):
        raise InvalidSession("A tool call is an object with tool, summary and outcome.")
    unknown = set(call) - {"tool", "summary", "outcome", "duration_ms"}
    if unknown:
        raise InvalidSession(f"A tool call holds no {sorted(map(str, unknown))[0][:40]!r}.")
    tool, summary, outcome = call.get("tool"), call.get("summary", ""), call.get("outcome")
    if not isinstance(tool, str):
        raise InvalidSession("A tool call's tool is its name, as text.")
    if not isinstance(summary, str):
        raise InvalidSession("A tool call's summary is text.")
    if outcome not in OUTCOMES:
        raise InvalidSession(f"A tool call's outcome is one of {', '.join(OUTCOMES)}.")
    named = _one_line(redact_output_text(tool), TOOL_LENGTH) or UNNAMED
    payload: dict[str, Any] = {
        "tool": named,
        "action": _one_line(redact_output_text(summary), SUMMARY_LENGTH),
        "status": outcome,
    }
    duration = call.get("duration_ms")
    if duration is not None:
        if isinstance(duration, bool) or not isinstance(duration, int | float):
            raise InvalidSession("A tool call's duration_ms is a number of milliseconds.")
        if not 0 <= duration <= MAX_DURATION_MS:
            raise InvalidSession("A tool call's duration_ms is between 0 and a day.")
        payload["duration_ms"] = int(duration)
    return payload


def tool_call_rows(
    calls: Sequence[Any] | None, *, session_id: str, now: str
) -> list[dict[str, Any]]:
    """The history rows of ``calls`` for the session (checked: ``InvalidSession``)."""
    if not calls:
        return []
    from roundtable_console.store.writes.write_values import to_json_text

    if isinstance(calls, str | bytes | Mapping) or not isinstance(calls, Sequence):
        raise InvalidSession("tool_calls is a list of tool calls.")
    if len(calls) > MAX_CALLS:
        raise InvalidSession(f"A write carries at most {MAX_CALLS} tool calls.")
    return [
        {"session_id": session_id, "payload_json": to_json_text(tool_call_payload(call)),
         "now": now}
        for call in calls
    ]  # fmt: skip
