"""Ours: the tools an agent ran, each an event of its session's run (``events``, type
``tool.call``), which the reference's tool-calls projection lists
(``store.reads.projections.tool_calls``).

A hook's beat carries the tool calls it saw (``agents.events.ToolRun``); they are written in the
beat's own transaction, also when the beat itself writes nothing (a quiet beat of a burst), so a
burst of tool calls is one row each and still one heartbeat row. A permission request a human
denies is its tool call too, written with the decision (``store.requests.deciding``).

Standard library only (the hooks' quick writes use it): the statement is written here, for both
the driver's own paths and SQLAlchemy's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from roundtable_console.store.errors import InvalidSession

TOOL_CALL_EVENT = "tool.call"
OUTCOMES = ("ok", "error", "denied")
# One write carries at most this many (a hook carries one; a batch replayed from a spool few).
MAX_CALLS = 50
TOOL_LENGTH = 100
SUMMARY_LENGTH = 200
# A tool's duration as the agent gives it: at most a day, in milliseconds.
MAX_DURATION_MS = 86_400_000

INSERT_TOOL_CALL = """
INSERT INTO events (run_id, type, actor_id, task_id, payload_json, created_at)
VALUES (:run_id, :type, :actor_id, NULL, :payload_json, :now)"""


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
        return _one_line(tool_input, SUMMARY_LENGTH)
    import json

    return _one_line(json.dumps(tool_input, ensure_ascii=False), SUMMARY_LENGTH)


def _one_line(value: str, limit: int) -> str:
    text = " ".join("".join(" " if not char.isprintable() else char for char in value).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def tool_call_payload(call: Any, session_id: str) -> dict[str, Any]:
    """One tool call as its event's payload (``tool``, ``action``: a one-line summary of its
    input with any credential hidden, ``status``: its outcome, ``duration_ms``), or
    ``InvalidSession`` in words."""
    from roundtable_console.store.safety.credentials import redact_output_text

    if not isinstance(call, Mapping):
        raise InvalidSession("A tool call is an object with tool, summary and outcome.")
    tool, summary, outcome = call.get("tool"), call.get("summary", ""), call.get("outcome")
    if not isinstance(tool, str) or not tool.strip():
        raise InvalidSession("A tool call names its tool.")
    if not isinstance(summary, str):
        raise InvalidSession("A tool call's summary is text.")
    if outcome not in OUTCOMES:
        raise InvalidSession(f"A tool call's outcome is one of {', '.join(OUTCOMES)}.")
    payload: dict[str, Any] = {
        "session_id": session_id,
        "tool": _one_line(tool, TOOL_LENGTH),
        "action": redact_output_text(_one_line(summary, SUMMARY_LENGTH)),
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
    calls: Sequence[Any] | None, *, session_id: str, run_id: str, agent_id: str, now: str
) -> list[dict[str, Any]]:
    """The ``events`` rows of ``calls`` for the session (checked: ``InvalidSession``)."""
    if not calls:
        return []
    from roundtable_console.store.writes.write_values import to_json_text

    if isinstance(calls, str | bytes | Mapping) or not isinstance(calls, Sequence):
        raise InvalidSession("tool_calls is a list of tool calls.")
    if len(calls) > MAX_CALLS:
        raise InvalidSession(f"A write carries at most {MAX_CALLS} tool calls.")
    return [
        {
            "run_id": run_id,
            "type": TOOL_CALL_EVENT,
            "actor_id": agent_id,
            "payload_json": to_json_text(tool_call_payload(call, session_id)),
            "now": now,
        }
        for call in calls
    ]


def checked_tool_calls(calls: Any) -> list[dict[str, Any]]:
    """``calls`` checked before anything is written (the same words as at the write)."""
    tool_call_rows(calls, session_id="-", run_id="-", agent_id="-", now="-")
    return list(calls or ())
