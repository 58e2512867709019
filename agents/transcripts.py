"""What the agent is doing: its own transcript, read from the end (never whole), as entries of a
conversation — prompts, the agent's words, each tool call with its input, a cut of each result —
redacted and printable, for the console, the web console and the API
(``docs/agents.md#connect-your-agents``).

Where each agent keeps it (``docs/reference/agent-facts.md#where-transcripts-live``): Claude Code
``…/.claude/projects/<dir>/<session id>.jsonl``, Codex
``…/sessions/YYYY/MM/DD/rollout-…-<id>.jsonl``,
Gemini CLI ``…/.gemini/tmp/<project>/chats/session-…-<id8>.jsonl``. The path a session carries
(its metadata's ``transcript_path``, as the hooks captured it) is read only when it has its
agent's shape for that session's own id and is a regular file (no link followed): a session's
metadata is the agent's to write, and must not make a reader open any other file.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from roundtable_console.store.records import SessionFields
from roundtable_console.store.safety.credentials import redact_output_text
from roundtable_console.store.safety.display import printable

BLOCK = 64 * 1024
LONGEST_LINE = 1024 * 1024  # a line longer than this is named, not parsed
READ_BUDGET = 8 * 1024 * 1024  # a page reads at most this much of the file
MESSAGE_CUT = 4000
RESULT_CUT = 1200
MAX_LIMIT = 200
# A console's page of a transcript, on the store and through a server alike.
CONSOLE_PAGE = 100
PAGE_MOST = 4 * MAX_LIMIT  # the oldest line read may add a few entries (read_page)
_EXTERNAL_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")

PROMPT, AGENT, TOOL, RESULT, NOTE = "prompt", "agent", "tool", "result", "note"
PANE = "pane"  # a line of the tmux pane the agent runs in (agents.panes)
KINDS = frozenset({PROMPT, AGENT, TOOL, RESULT, NOTE, PANE})


class Entry(NamedTuple):
    kind: str  # prompt, agent, tool, result, note
    text: str  # redacted, printable (newlines kept)
    at: str | None = None

    def to_json(self) -> dict[str, Any]:
        return self._asdict()


class Page(NamedTuple):
    """Entries oldest first; ``before``: the offset to read older entries from (None at the
    start of the file); ``size``: the file's size when read (a later read from ``size`` on is
    what it grew by)."""

    entries: list[Entry]
    before: int | None
    size: int

    def to_json(self) -> dict[str, Any]:
        return {
            "items": [e.to_json() for e in self.entries],
            "next_before": self.before,
            "size": self.size,
        }

    @classmethod
    def from_json(cls, body: Any) -> Page:
        """A page another process read (a host, ``hosts.operations``), taken as untrusted:
        its shape checked, each entry made printable, redacted and cut again, as a page read
        here is. ``ValueError`` when it is not a page."""
        if not isinstance(body, Mapping) or not isinstance(body.get("items"), list):
            raise ValueError("not a page")
        before, size = body.get("next_before"), body.get("size")
        if before is not None and (type(before) is not int or before < 0):
            raise ValueError("next_before is not an offset")
        if type(size) is not int or size < 0:
            raise ValueError("size is not a size")
        entries: list[Entry] = []
        for item in body["items"][:PAGE_MOST]:
            if not isinstance(item, Mapping) or item.get("kind") not in KINDS:
                raise ValueError("an entry is not an entry")
            text, at = item.get("text"), item.get("at")
            if not isinstance(text, str) or not (at is None or isinstance(at, str)):
                raise ValueError("an entry is not an entry")
            text = text[: 2 * MESSAGE_CUT]  # cut first: what is cleaned is bounded
            if item["kind"] == PANE:  # a screen's line keeps its indent
                shown = printable(redact_output_text(text)).rstrip()[:MESSAGE_CUT]
            else:
                shown = _clean(text, RESULT_CUT if item["kind"] == RESULT else MESSAGE_CUT)
            entries.append(Entry(item["kind"], shown, None if at is None else printable(at[:40])))
        return cls(entries, before, size)


class TranscriptUnavailable(Exception):
    """Why no transcript can be shown, in words."""


def _clean(text: str, cut: int) -> str:
    shown = printable(redact_output_text(text), keep_newlines=True).strip()
    return shown if len(shown) <= cut else shown[: cut - 1].rstrip() + "…"


def _tool(name: Any, arguments: Any) -> str:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            pass
    if isinstance(arguments, Mapping):
        for field in ("command", "cmd", "file_path", "path", "pattern", "url", "query"):
            value = arguments.get(field)
            if isinstance(value, list):
                value = " ".join(str(word) for word in value)
            if isinstance(value, str) and value.strip():
                return f"{name}: {value}"
        shown = json.dumps(arguments, ensure_ascii=False)
    else:
        shown = str(arguments)
    return f"{name}: {shown}"


def _texts(content: Any) -> Iterator[str]:
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                yield block
            elif isinstance(block, Mapping) and isinstance(block.get("text"), str):
                yield block["text"]


# ------------------------------------------------------------------ each agent's lines


def _claude(line: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    kind = line.get("type")
    message = line.get("message")
    if kind not in ("user", "assistant") or not isinstance(message, Mapping):
        return
    content = message.get("content")
    if isinstance(content, str):
        yield (PROMPT if kind == "user" else AGENT), content
        return
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, Mapping):
            continue
        btype = block.get("type")
        if btype == "text" and isinstance(block.get("text"), str):
            yield (PROMPT if kind == "user" else AGENT), block["text"]
        elif btype == "tool_use":
            yield TOOL, _tool(block.get("name"), block.get("input"))
        elif btype == "tool_result":
            text = "\n".join(_texts(block.get("content")))
            yield RESULT, ("error: " if block.get("is_error") else "") + text


def _codex(line: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    if line.get("type") != "response_item" or not isinstance(line.get("payload"), Mapping):
        return
    item = line["payload"]
    itype = item.get("type")
    if itype == "message" and item.get("role") in ("user", "assistant"):
        text = "\n".join(_texts(item.get("content")))
        if item["role"] == "user" and text.lstrip().startswith("<"):
            return  # the environment and instructions Codex sends, not a prompt
        yield (PROMPT if item["role"] == "user" else AGENT), text
    elif itype in ("function_call", "custom_tool_call", "local_shell_call"):
        yield (
            TOOL,
            _tool(
                item.get("name") or itype,
                item.get("arguments") or item.get("input") or item.get("action"),
            ),
        )
    elif itype in ("function_call_output", "custom_tool_call_output"):
        output = item.get("output")
        yield RESULT, output if isinstance(output, str) else json.dumps(output)


def _gemini(line: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    kind = line.get("type")
    if kind == "user":
        for part in line.get("content") if isinstance(line.get("content"), list) else []:
            if not isinstance(part, Mapping):
                continue
            if isinstance(part.get("text"), str):
                if not part["text"].lstrip().startswith("<session_context>"):
                    yield PROMPT, part["text"]
            elif isinstance(part.get("functionResponse"), Mapping):
                response = part["functionResponse"].get("response")
                output = response.get("output") if isinstance(response, Mapping) else response
                yield RESULT, output if isinstance(output, str) else json.dumps(output)
    elif kind == "gemini":
        text = "\n".join(_texts(line.get("content")))
        if text.strip():
            yield AGENT, text
        for call in line.get("toolCalls") if isinstance(line.get("toolCalls"), list) else []:
            if isinstance(call, Mapping):
                yield TOOL, _tool(call.get("name"), call.get("args"))


_READERS = {"claude": _claude, "codex": _codex, "gemini": _gemini}


# ------------------------------------------------------------------ where, and whether


def _shaped(adapter: str, external_id: str, path: Path) -> bool:
    parts = path.parts
    name = path.name
    if adapter == "claude":
        return (
            name == f"{external_id}.jsonl"
            and len(parts) >= 5
            and parts[-3] == "projects"
            and parts[-4] == ".claude"
        )
    if adapter == "codex":
        return (
            name.startswith("rollout-")
            and name.endswith(f"-{external_id}.jsonl")
            and len(parts) >= 6
            and parts[-5] == "sessions"
        )
    if adapter == "gemini":
        return (
            name.startswith("session-")
            and name.endswith(f"-{external_id[:8]}.jsonl")
            and len(parts) >= 6
            and parts[-2] == "chats"
            and parts[-4] == "tmp"
            and parts[-5] == ".gemini"
        )
    return False


def transcript_path(session: SessionFields) -> Path:
    """The session's transcript file, or why there is none to read."""
    if session.adapter not in _READERS:
        raise TranscriptUnavailable(
            f"Sessions of adapter {printable(session.adapter)[:40]!r} have no transcript "
            "Roundtable reads (Claude Code, Codex and Gemini CLI sessions reported by their "
            "hooks do)."
        )
    external_id = session.external_session_id or ""
    raw = (session.metadata_dict or {}).get("transcript_path")
    if not isinstance(raw, str) or not raw or not _EXTERNAL_ID.fullmatch(external_id):
        raise TranscriptUnavailable(
            "No transcript is known for this session: its agent's hooks have not reported one."
        )
    path = Path(raw)
    if not path.is_absolute() or ".." in path.parts or "\x00" in raw:
        raise TranscriptUnavailable("The transcript path this session carries is not usable.")
    if not _shaped(session.adapter, external_id, path):
        raise TranscriptUnavailable(
            "The transcript path this session carries is not where its agent keeps this "
            "session's transcript; it is not read."
        )
    return path


NOT_HERE = (
    "The transcript file is not here to read: it is on the machine the agent ran on, or not "
    "this process's user's."
)


def _open(path: Path) -> int:
    """The transcript, opened for reading: a regular file of this process's user, reached by
    a path with no symbolic link anywhere in it. Every refusal says the same words, so that a
    session's metadata learns nothing of the files here."""
    try:
        if os.path.realpath(path) != os.path.normpath(path):
            raise TranscriptUnavailable(NOT_HERE)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        raise TranscriptUnavailable(NOT_HERE) from None
    status = os.fstat(fd)
    if not stat.S_ISREG(status.st_mode) or status.st_uid != os.getuid():
        os.close(fd)
        raise TranscriptUnavailable(NOT_HERE)
    return fd


def read_page(session: SessionFields, *, before: int | None = None, limit: int = 50) -> Page:
    """The ``limit`` newest entries ending at byte ``before`` (the end when None), in whole
    lines: the oldest line read may add the few more entries it holds."""
    path = transcript_path(session)
    reader = _READERS[session.adapter]
    limit = max(1, min(limit, MAX_LIMIT))
    fd = _open(path)
    try:
        size = os.fstat(fd).st_size
        end = size if before is None else max(0, min(before, size))
        return _backwards(fd, end, size, limit, reader, dedupe=session.adapter == "gemini")
    finally:
        os.close(fd)


def _backwards(fd: int, end: int, size: int, limit: int, reader: Any, *, dedupe: bool) -> Page:
    """Whole lines before ``end``, newest first, until ``limit`` entries (or the start, or the
    read budget): each block read once, a line assembled across blocks, a line too long named
    and skipped without being held."""
    found: list[list[Entry]] = []  # per line, newest first
    seen: set[str] | None = set() if dedupe else None
    count, position, tail, spent, earliest = 0, end, b"", 0, end
    while position > 0 and count < limit and spent < READ_BUDGET:
        start = max(0, position - BLOCK)
        buffer = os.pread(fd, position - start, start) + tail
        spent += position - start
        position = start
        pieces = buffer.split(b"\n")
        offsets, offset = [], start
        for piece in pieces:
            offsets.append(offset)
            offset += len(piece) + 1
        whole = range(len(pieces) - 1, -1 if start == 0 else 0, -1)
        for index in whole:
            entries = _entries(pieces[index], reader, seen)
            earliest = offsets[index]
            if entries:
                found.append(entries)
                count += len(entries)
                if count >= limit:
                    return _page(found, earliest, size)
        tail = b"" if start == 0 else pieces[0]
        if len(tail) > LONGEST_LINE:
            found.append([Entry(NOTE, f"(a line of over {LONGEST_LINE // 1024} KiB, not shown)")])
            count += 1
            tail = b""
            # Back to the line's start, nothing of it held, within the page's budget (the next
            # page goes on from where this one stopped).
            while position > 0 and spent < READ_BUDGET:
                start = max(0, position - BLOCK)
                chunk = os.pread(fd, position - start, start)
                spent += position - start
                newline = chunk.rfind(b"\n")
                position = start if newline < 0 else start + newline + 1
                earliest = position
                if newline >= 0:
                    break
    # Out of budget inside a line: the next page ends where this one began, and reads it whole.
    return _page(found, earliest, size)


def _page(found: list[list[Entry]], before: int | None, size: int) -> Page:
    entries = [entry for line in reversed(found) for entry in line]
    return Page(entries, before if before and before > 0 else None, size)


def _entries(raw: bytes, reader: Any, seen_ids: set[str] | None) -> list[Entry]:
    if not raw.strip():
        return []
    if len(raw) > LONGEST_LINE:
        return [Entry(NOTE, f"(a line of {len(raw) // 1024} KiB, not shown)")]
    try:
        line = json.loads(raw)
    except (ValueError, RecursionError):
        return []
    if not isinstance(line, Mapping):
        return []
    if seen_ids is not None and isinstance(line.get("id"), str):
        if line["id"] in seen_ids:
            return []  # an older copy of a record written again later (Gemini)
        seen_ids.add(line["id"])
    at = line.get("timestamp") if isinstance(line.get("timestamp"), str) else None
    out = []
    for kind, text in reader(line):
        cut = RESULT_CUT if kind == RESULT else MESSAGE_CUT
        shown = _clean(text, cut)
        if shown:
            out.append(Entry(kind, shown, at))
    return out
