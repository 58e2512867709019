"""What the agent is doing (``docs/agents.md#connect-your-agents``): its own transcript read from
the end, never whole, as a conversation's entries — redacted, printable, paged — and only from
where its agent keeps that session's transcript."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from roundtable_console.agents import transcripts
from roundtable_console.agents.transcripts import TranscriptUnavailable, read_page
from roundtable_console.store.records import SESSION_COLUMNS, SessionRecord

CLAUDE_ID = "3f0c8a52-7c1e-4b8e-9a57-2f1d7c0e9b11"
CODEX_ID = "019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b"
GEMINI_ID = "b7e3c9d1-2a4f-4c6e-8b0d-1f3a5c7e9b2d"


def _session(adapter: str, external: str, path: Path | str | None) -> SessionRecord:
    values: dict[str, Any] = dict.fromkeys(SESSION_COLUMNS)
    values.update(
        id="s",
        agent_id="a",
        run_id="r",
        adapter=adapter,
        working_directory="/w",
        status="active",
        started_at="2026-12-05T06:00:00.000000Z",
        version=0,
        external_session_id=external,
        metadata_json=json.dumps({"transcript_path": str(path)}) if path else None,
    )
    return SessionRecord(values)


def _claude_lines(turns: int) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = [{"type": "queue-operation", "operation": "enqueue"}]
    for n in range(turns):
        lines += [
            {
                "type": "user",
                "timestamp": f"t{n}",
                "message": {"role": "user", "content": f"prompt {n}"},
            },
            {
                "type": "assistant",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": f"working on {n}"},
                        {
                            "type": "tool_use",
                            "id": f"tu{n}",
                            "name": "Bash",
                            "input": {"command": f"make step-{n}"},
                        },
                    ],
                },
            },
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": f"tu{n}", "content": f"ok {n}"}
                    ],
                },
            },
        ]
    return lines


def _write(path: Path, lines: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _claude_file(home: Path, lines: list[Any]) -> Path:
    return _write(home / ".claude" / "projects" / "-w" / f"{CLAUDE_ID}.jsonl", lines)


def test_claude_code_the_conversations_tail(tmp_path: Path) -> None:
    path = _claude_file(tmp_path, _claude_lines(3))
    page = read_page(_session("claude", CLAUDE_ID, path), limit=4)
    assert [(e.kind, e.text) for e in page.entries] == [
        ("prompt", "prompt 2"),
        ("agent", "working on 2"),
        ("tool", "Bash: make step-2"),
        ("result", "ok 2"),
    ]
    assert page.entries[0].at == "t2"
    assert page.before is not None and page.size == path.stat().st_size


def test_pages_go_back_to_the_start_without_gaps_or_repeats(tmp_path: Path) -> None:
    path = _claude_file(tmp_path, _claude_lines(25))
    session = _session("claude", CLAUDE_ID, path)
    seen: list[str] = []
    before = None
    for _ in range(200):
        page = read_page(session, before=before, limit=7)
        seen = [e.text for e in page.entries] + seen
        before = page.before
        if before is None:
            break
    expected = [
        text
        for n in range(25)
        for text in (f"prompt {n}", f"working on {n}", f"Bash: make step-{n}", f"ok {n}")
    ]
    assert seen == expected


def test_codex_and_gemini_transcripts(tmp_path: Path) -> None:
    rollout = tmp_path / ".codex" / "sessions" / "2026" / "12" / "05"
    codex = _write(rollout / f"rollout-2026-12-05T06-38-29-{CODEX_ID}.jsonl", [
        {"type": "session_meta", "payload": {"id": CODEX_ID}},
        {"type": "response_item", "payload": {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>cwd</environment_context>"}]}},
        {"type": "response_item", "payload": {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "ship it"}]}},
        {"type": "response_item", "payload": {"type": "function_call", "name": "exec_command",
                                              "arguments": '{"cmd": "git push"}'}},
        {"type": "response_item", "payload": {"type": "function_call_output",
                                              "output": "pushed"}},
        {"type": "event_msg", "payload": {"type": "agent_message", "message": "dup"}},
        {"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                              "content": [{"type": "output_text",
                                                           "text": "Shipped."}]}},
    ])  # fmt: skip
    page = read_page(_session("codex", CODEX_ID, codex))
    assert [(e.kind, e.text) for e in page.entries] == [
        ("prompt", "ship it"),
        ("tool", "exec_command: git push"),
        ("result", "pushed"),
        ("agent", "Shipped."),
    ]
    chats = tmp_path / ".gemini" / "tmp" / "w" / "chats"
    gemini = _write(chats / f"session-2026-12-05T06-40-{GEMINI_ID[:8]}.jsonl", [
        {"sessionId": GEMINI_ID, "kind": "main"},
        {"id": "u1", "type": "user", "content": [{"text": "clean"}]},
        {"id": "g1", "type": "gemini", "content": ""},
        {"$set": {"lastUpdated": "x"}},
        {"id": "g1", "type": "gemini", "content": "",
         "toolCalls": [{"name": "run_shell_command", "args": {"command": "rm -rf dist"}}]},
        {"id": "u2", "type": "user", "content": [{"functionResponse": {
            "name": "run_shell_command", "response": {"output": "(empty)"}}}]},
        {"id": "g2", "type": "gemini", "content": "Cleaned."},
    ])  # fmt: skip
    page = read_page(_session("gemini", GEMINI_ID, gemini))
    assert [(e.kind, e.text) for e in page.entries] == [
        ("prompt", "clean"),
        ("tool", "run_shell_command: rm -rf dist"),
        ("result", "(empty)"),
        ("agent", "Cleaned."),
    ]


def test_every_entry_is_redacted_and_printable(tmp_path: Path) -> None:
    path = _claude_file(tmp_path, [
        {"type": "user", "message": {"role": "user",
                                     "content": "deploy with api_key=sk-live-123 [bold]x[/]"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "\x1b[2J\x1b]0;pwned\x07cleared <script>alert(1)</script>"}]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "content": "Authorization: Bearer abc.def " + "z" * 5000}]}},
    ])  # fmt: skip
    entries = read_page(_session("claude", CLAUDE_ID, path)).entries
    joined = "\n".join(e.text for e in entries)
    assert "sk-live-123" not in joined and "abc.def" not in joined
    assert "[REDACTED]" in joined
    assert "\x1b" not in joined and "\x07" not in joined
    assert "[bold]x[/]" in joined and "<script>" in joined  # text, for the front end to escape
    assert len(entries[-1].text) <= transcripts.RESULT_CUT


@pytest.mark.parametrize(
    "where",
    [
        "/etc/passwd",
        "/home/u/.claude/projects/-w/other-id.jsonl",
        "relative/x.jsonl",
        "/home/u/.claude/projects/../../../etc/{id}.jsonl",
        "/tmp/{id}.jsonl",
    ],
)
def test_a_path_not_where_its_agent_keeps_it_is_not_read(where: str) -> None:
    session = _session("claude", CLAUDE_ID, where.format(id=CLAUDE_ID))
    with pytest.raises(TranscriptUnavailable):
        read_page(session)


def test_a_link_or_a_folder_at_the_right_place_is_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text(json.dumps({"type": "user", "message": {"content": "SECRET"}}) + "\n")
    place = tmp_path / ".claude" / "projects" / "-w" / f"{CLAUDE_ID}.jsonl"
    place.parent.mkdir(parents=True)
    place.symlink_to(secret)
    with pytest.raises(TranscriptUnavailable, match="not here to read"):
        read_page(_session("claude", CLAUDE_ID, place))
    place.unlink()
    place.mkdir()
    with pytest.raises(TranscriptUnavailable, match="not here to read"):
        read_page(_session("claude", CLAUDE_ID, place))
    # A link anywhere on the way (a folder linked elsewhere) is not followed either.
    place.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / f"{CLAUDE_ID}.jsonl").write_text(secret.read_text())
    place.parent.rmdir()
    place.parent.symlink_to(elsewhere)
    with pytest.raises(TranscriptUnavailable, match="not here to read"):
        read_page(_session("claude", CLAUDE_ID, place))


def test_no_transcript_known_or_on_this_machine_is_said(tmp_path: Path) -> None:
    with pytest.raises(TranscriptUnavailable, match="No transcript is known"):
        read_page(_session("claude", CLAUDE_ID, None))
    with pytest.raises(TranscriptUnavailable, match="no transcript"):
        read_page(_session("generic", CLAUDE_ID, "/x.jsonl"))
    missing = tmp_path / ".claude" / "projects" / "-w" / f"{CLAUDE_ID}.jsonl"
    with pytest.raises(TranscriptUnavailable, match="not here to read"):
        read_page(_session("claude", CLAUDE_ID, missing))


def test_a_huge_line_is_named_not_held_and_broken_lines_skipped(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "projects" / "-w" / f"{CLAUDE_ID}.jsonl"
    path.parent.mkdir(parents=True)
    huge = json.dumps({"type": "user", "message": {"content": "x" * (3 * 1024 * 1024)}})
    with path.open("w") as handle:
        handle.write(json.dumps({"type": "user", "message": {"content": "before"}}) + "\n")
        handle.write(huge + "\n")
        handle.write("{broken json\n")
        handle.write(json.dumps({"type": "user", "message": {"content": "after"}}) + "\n")
    texts = [e.text for e in read_page(_session("claude", CLAUDE_ID, path)).entries]
    assert texts[0] == "before" and texts[-1] == "after"
    assert any("not shown" in text for text in texts)


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of every read the transcript reader makes from now on."""
    read_bytes: list[int] = []
    real = os.pread

    def counting(fd: int, size: int, offset: int) -> bytes:
        read_bytes.append(size)
        return real(fd, size, offset)

    monkeypatch.setattr(transcripts.os, "pread", counting)
    return read_bytes


def test_a_big_transcript_is_read_from_its_end_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 200 MB transcript costs a page what a small one does: the bytes read are bounded by the
    page, not the file (bench/transcript_tail.py times it)."""
    path = tmp_path / ".claude" / "projects" / "-w" / f"{CLAUDE_ID}.jsonl"
    path.parent.mkdir(parents=True)
    block = "".join(json.dumps(line) + "\n" for line in _claude_lines(200)).encode()
    with path.open("wb") as handle:
        for _ in range((200 * 1024 * 1024) // len(block) + 1):
            handle.write(block)
    assert path.stat().st_size > 200 * 1024 * 1024
    read_bytes = _count_reads(monkeypatch)
    page = read_page(_session("claude", CLAUDE_ID, path), limit=50)
    # Whole lines: the limit, or the few more the last line read holds.
    assert 50 <= len(page.entries) <= 52 and page.entries[-1].text == "ok 199"
    assert sum(read_bytes) <= 2 * transcripts.BLOCK


def test_a_line_as_long_as_the_file_costs_a_page_its_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A transcript of one endless line (a sparse file of a terabyte, say) is not walked whole
    by one page: the read stops at the page's budget, and says so."""
    path = tmp_path / ".claude" / "projects" / "-w" / f"{CLAUDE_ID}.jsonl"
    path.parent.mkdir(parents=True)
    with path.open("wb") as handle:
        handle.truncate(64 * 1024 * 1024 * 1024)  # 64 GiB, sparse: no newline anywhere
    read_bytes = _count_reads(monkeypatch)
    page = read_page(_session("claude", CLAUDE_ID, path))
    assert sum(read_bytes) <= transcripts.READ_BUDGET + transcripts.BLOCK
    assert page.before is not None and any("not shown" in e.text for e in page.entries)
