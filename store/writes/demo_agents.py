"""The agents' loop in the demo: Claude Code sessions as their hooks report them. One asks a
permission (a pending request the console can allow or deny; no hook waits for the answer, and
the console says so), one has finished its turn (a reply has no route, and the console says
why). Both have a transcript, written as Claude Code writes one, under a directory of the
demo's own beside its store.

Everything is placed relative to the seeding clock, so the same clock gives the same files and
rows.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

from sqlalchemy import Connection, text

from roundtable_console.store.clock import format_ts
from roundtable_console.store.requests.asking import kept_input, kept_suggestions
from roundtable_console.store.requests.records import ANSWERS_BY_AGENT, ASKED_EVENT

CLAUDE_CODE = "claude-code"
# The demo's request waits a day, not a hook's two minutes: a newcomer reads before answering.
REQUEST_WAIT = timedelta(days=1)
REQUEST_ID = "req-demo-0001"


class DemoRequest(NamedTuple):
    tool_name: str
    tool_input: dict[str, Any]
    suggestions: list[dict[str, Any]]

    @property
    def reason(self) -> str:
        return f"asks to run {self.tool_name}: {self.tool_input['command']}"


RELEASE_CLEANUP = DemoRequest(
    "Bash",
    {"command": "rm -rf build/", "description": "Remove the old build output before the release"},
    [
        {
            "type": "addRules",
            "rules": [{"toolName": "Bash", "ruleContent": "rm -rf build/"}],
            "behavior": "allow",
            "destination": "localSettings",
        }
    ],
)

# A conversation, oldest first: (seconds before its last line, kind, content).
# Kinds: prompt, text (the agent's words), tool (name, input), result (text, is_error).
Turn = tuple[float, str, Any]
ASKING: tuple[Turn, ...] = (
    (90, "prompt", "Cut the release build for harbor 2.4 and check the artifacts."),
    (80, "text", "I'll look at what the last build left behind first."),
    (75, "tool", ("Bash", {"command": "ls build/", "description": "List the build output"})),
    (70, "result", ("harbor-2.3.9.tar.gz\nharbor-2.3.9.whl\nstale/", False)),
    (10, "text", "The old 2.3.9 artifacts are still there. I'll remove build/ first."),
    (0, "tool", ("Bash", RELEASE_CLEANUP.tool_input)),
)
TURN_DONE = "Done: the heartbeat endpoint rejects bodies over 64 KiB; all 212 tests pass."
FINISHED: tuple[Turn, ...] = (
    (600, "prompt", "Make the heartbeat endpoint refuse bodies over 64 KiB, with a test."),
    (590, "tool", ("Read", {"file_path": "api/heartbeat.go"})),
    (585, "result", ("func Heartbeat(w http.ResponseWriter, r *http.Request) {…}", False)),
    (560, "tool", ("Edit", {"file_path": "api/heartbeat.go"})),
    (555, "result", ("The file api/heartbeat.go has been updated.", False)),
    (500, "tool", ("Bash", {"command": "go test ./...", "description": "Run the tests"})),
    (440, "result", ("--- FAIL: TestHeartbeatBody (0.01s)\n    want 413, got 400", True)),
    (400, "tool", ("Edit", {"file_path": "api/heartbeat.go"})),
    (395, "result", ("The file api/heartbeat.go has been updated.", False)),
    (330, "tool", ("Bash", {"command": "go test ./...", "description": "Run the tests"})),
    (270, "result", ("ok   harbor/api   2.1s\n212 tests passed", False)),
    (0, "text", TURN_DONE),
)


def transcript_file(home: Path, working_directory: str, external_id: str) -> Path:
    """Where Claude Code keeps a session's transcript under ``home``: its projects folder, in a
    directory named after the working directory."""
    folder = working_directory.replace("/", "-").replace(".", "-")
    return home / ".claude" / "projects" / folder / f"{external_id}.jsonl"


def write_transcript(
    path: Path, *, external_id: str, cwd: str, model: str, last: datetime, turns: Iterable[Turn]
) -> None:
    """The conversation as Claude Code's JSON lines: replaced whole, this user's only."""
    lines = []
    for number, (before, kind, content) in enumerate(turns):
        at = (last - timedelta(seconds=before)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        line: dict[str, Any] = {
            "uuid": f"{external_id[:8]}-{number:04d}",
            "sessionId": external_id,
            "cwd": cwd,
            "timestamp": at,
        }
        if kind == "prompt":
            line |= {"type": "user", "message": {"role": "user", "content": content}}
        elif kind == "text":
            block = {"type": "text", "text": content}
            line |= {"type": "assistant", "message": _assistant(model, block)}
        elif kind == "tool":
            name, tool_input = content
            block = {"type": "tool_use", "id": f"toolu_{number:04d}", "name": name}
            block["input"] = tool_input
            line |= {"type": "assistant", "message": _assistant(model, block)}
        else:
            output, is_error = content
            block = {
                "type": "tool_result",
                "tool_use_id": f"toolu_{number - 1:04d}",
                "content": output,
                "is_error": is_error,
            }
            line |= {"type": "user", "message": {"role": "user", "content": [block]}}
        lines.append(json.dumps(line, sort_keys=True))
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write("\n".join(lines) + "\n")


def as_hooks_report(
    row: dict[str, Any],
    metadata: dict[str, Any],
    *,
    asks: bool,
    last: datetime,
    home: Path | None,
) -> dict[str, Any]:
    """``metadata`` with what the hooks add (``hooks``, ``transcript_path``), the session's
    transcript (ASKING or FINISHED, its last line at ``last``) written under ``home``; with no
    home, or one that cannot be written, no transcript (its sessions say none is known)."""
    reported = {**metadata, "hooks": CLAUDE_CODE}
    if home is None:
        return reported
    path = transcript_file(home, row["working_directory"], row["external_session_id"])
    try:
        write_transcript(
            path,
            external_id=row["external_session_id"],
            cwd=row["working_directory"],
            model=row["model"],
            last=last,
            turns=ASKING if asks else FINISHED,
        )
    except OSError:
        return reported
    return {**reported, "transcript_path": str(path)}


def _assistant(model: str, block: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "model": model, "content": [block]}


_FORGET = text("DELETE FROM permission_requests WHERE id = :id")
_ASK = text(
    "INSERT INTO permission_requests (id, session_id, agent, tool_name, tool_input_json,"
    " input_cut, input_hidden, suggestions_json, answers, reason, asked_at, expires_at, state)"
    " VALUES (:id, :session_id, :agent, :tool_name, :tool_input_json, :input_cut,"
    " :input_hidden, :suggestions_json, :answers, :reason, :asked_at, :expires_at, 'pending')"
)


def ask(
    db: Connection, *, session_id: str, request: DemoRequest, asked: datetime
) -> dict[str, Any]:
    """Record the demo's pending request (replacing an earlier seeding's) with no hook waiting
    for it (no hook host nor pid); returns its history row."""
    input_json, cut, hidden = kept_input(request.tool_input)
    values = {
        "id": REQUEST_ID,
        "session_id": session_id,
        "agent": CLAUDE_CODE,
        "tool_name": request.tool_name,
        "tool_input_json": input_json,
        "input_cut": int(cut),
        "input_hidden": int(hidden),
        "suggestions_json": kept_suggestions(request.suggestions),
        "answers": ",".join(ANSWERS_BY_AGENT[CLAUDE_CODE]),
        "reason": request.reason,
        "asked_at": format_ts(asked),
        "expires_at": format_ts(asked + REQUEST_WAIT),
    }
    db.execute(_FORGET, {"id": REQUEST_ID})
    db.execute(_ASK, values)
    return {
        "session_id": session_id,
        "event_type": ASKED_EVENT,
        "payload_json": json.dumps(
            {"request_id": REQUEST_ID, "tool_name": request.tool_name},
            sort_keys=True,
            separators=(",", ":"),
        ),
        "created_at": values["asked_at"],
    }
