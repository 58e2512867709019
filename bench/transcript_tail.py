"""What the agent is doing (issue 29): a page of its transcript read from the end. The newest 50
entries of a 200 MB Claude Code transcript against the same page of a small one (the whole of
which is read), paired: a big transcript opens as fast as a small one (within 1.5x).

What it spent (issue 46): a hook adds the usage of an answer appended to a 200 MB transcript
(read before, up to its end) in the time it does for a small one (within 1.5x)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.figures import Figure, paired_medians
from roundtable_console.agents.transcripts import read_page
from roundtable_console.agents.usage import read_usage
from roundtable_console.store.records import SESSION_COLUMNS, SessionRecord

EXTERNAL_ID = "3f0c8a52-7c1e-4b8e-9a57-2f1d7c0e9b11"


def _turns(count: int) -> bytes:
    lines = []
    for n in range(count):
        lines.append({"type": "user", "message": {"role": "user", "content": f"prompt {n}"}})
        lines.append(
            {
                "type": "assistant",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": f"working on {n} " + "words " * 40},
                        {
                            "type": "tool_use",
                            "name": "Bash",
                            "input": {"command": f"make step-{n}"},
                        },
                    ],
                },
            }
        )
        lines.append(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "content": "output line\n" * 20}],
                },
            }
        )
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def _session(path: Path) -> SessionRecord:
    values: dict[str, Any] = dict.fromkeys(SESSION_COLUMNS)
    values.update(
        id="s",
        agent_id="a",
        run_id="r",
        adapter="claude",
        working_directory="/w",
        status="active",
        started_at="2026-12-05T00:00:00.000000Z",
        version=0,
        external_session_id=EXTERNAL_ID,
        metadata_json=json.dumps({"transcript_path": str(path)}),
    )
    return SessionRecord(values)


def _transcript(directory: Path, name: str, size: int) -> Path:
    path = directory / name / ".claude" / "projects" / "-w" / f"{EXTERNAL_ID}.jsonl"
    path.parent.mkdir(parents=True)
    block = _turns(100)
    with path.open("wb") as handle:
        written = 0
        while written < size:
            handle.write(block)
            written += len(block)
    return path


def bench_transcript_tail(directory: Path, repeats: int, big_mb: int) -> list[Figure]:
    small = _session(_transcript(directory, "small", 60 * 1024))
    big = _session(_transcript(directory, "big", big_mb * 1024 * 1024))
    for session in (small, big):
        read_page(session, limit=50)  # the page cache warm for both
    ours, floor = paired_medians(
        lambda: read_page(big, limit=50), lambda: read_page(small, limit=50), repeats
    )
    return [
        Figure(
            f"transcript: newest 50 entries of {big_mb} MB",
            ours,
            "the same of a 60 KB transcript",
            floor,
            limit=1.5,
        )
    ]


def bench_usage_reads(directory: Path, repeats: int, big_mb: int) -> list[Figure]:
    """``agents.usage.read_usage`` after one more answer is appended, on a transcript read up
    to its end before: the big one against the small one, paired."""
    places = {}
    for name, size in (("small-usage", 60 * 1024), ("big-usage", big_mb * 1024 * 1024)):
        path = _transcript(directory, name, size)
        first = {"type": "assistant", "message": {"id": "m0", "usage": {"input_tokens": 1}}}
        with path.open("a") as handle:  # at its end: told once the whole file is read
            handle.write(json.dumps(first) + "\n")
        state = directory / f"{name}-state"
        for _ in range(2 + size // (8 * 1024 * 1024)):  # a read is at most 16 MiB
            if read_usage("claude", str(path), state) is not None:
                break
        else:
            raise AssertionError(f"the {name} transcript was not read to its end")
        places[name] = (path, state)
    answers = iter(range(10**9))

    def answered(name: str) -> None:
        path, state = places[name]
        usage = {"input_tokens": 10, "output_tokens": next(answers) % 97 + 1}
        line = {"type": "assistant", "message": {"id": f"m{next(answers)}", "usage": usage}}
        with path.open("a") as handle:
            handle.write(json.dumps(line) + "\n")
        assert read_usage("claude", str(path), state) is not None

    ours, floor = paired_medians(
        lambda: answered("big-usage"), lambda: answered("small-usage"), repeats
    )
    return [
        Figure(
            f"usage: one answer added to {big_mb} MB read before",
            ours,
            "the same on a 60 KB transcript",
            floor,
            limit=1.5,
        )
    ]
