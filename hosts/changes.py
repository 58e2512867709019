"""What a session changed, read by its host (``protocol.CHANGES``, ``store.hosts.changes``): in
the session's directory (inside a project the host was given, or one of its worktrees: the
checks of ``hosts.launching.checked_directory``), against the session's base.

git runs with nothing from the repository that runs a program: no external diff, no textconv
driver, no fsmonitor hook (the agent writes that repository's config). The patch is streamed
from git and read from ``offset`` to ``offset + limit`` only, cut at a line's end; files not yet
added follow the tracked ones, each as a diff against nothing. A binary file is named, not
shown (git's own "Binary files … differ").
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator, Mapping
from typing import Any

from roundtable_console.hosts.git import git_argv, git_env, run_git
from roundtable_console.hosts.refusals import Failed, Refused
from roundtable_console.store.hosts.changes import COMMIT, MOST_COMMITS, MOST_FILES, PAGE_BYTES

GIT_SECONDS = 20
PAGE_SECONDS = 15.0  # a page is read within this, however far into the patch it is
READ_BYTES = 64 * 1024
DIFF = ["--no-color", "--no-ext-diff", "--no-textconv", "--find-renames"]


def read_changes(directory: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """The changes in ``directory`` (the session's, as ``hosts.launching.checked_directory``
    found it), against the call's base."""
    offset, limit, base = args.get("offset"), args.get("limit"), args.get("base")
    if type(offset) is not int or offset < 0:
        raise Refused("offset is a byte offset.")
    if type(limit) is not int or not 1 <= limit <= PAGE_BYTES:
        raise Refused(f"limit is a whole number of bytes from 1 to {PAGE_BYTES}.")
    if base is not None and (not isinstance(base, str) or not COMMIT.fullmatch(base)):
        raise Refused("The base is a commit's full id.")
    if _git(directory, "rev-parse", "--is-inside-work-tree").stdout.strip() != "true":
        raise Failed(f"{directory} is not in a git repository: its changes cannot be read.")
    found = _git(directory, "rev-parse", "--verify", "--quiet", f"{base or 'HEAD'}^{{commit}}")
    if found.returncode != 0:
        raise Failed(
            f"The session's base {base or 'HEAD'} is not in the repository of {directory}."
        )
    base = found.stdout.strip()
    branch = _git(directory, "symbolic-ref", "--quiet", "--short", "HEAD").stdout.strip() or None
    untracked = _untracked(directory)
    patch, following = _page(directory, base, untracked, offset, limit)
    return {
        "directory": directory,
        "branch": branch,
        "base": base,
        "commits": _commits(directory, base),
        "files": _files(directory, base, untracked),
        "patch": patch,
        "offset": offset,
        "next_offset": following,
    }


def _git(directory: str, *words: str) -> subprocess.CompletedProcess[str]:
    return run_git(directory, *words, seconds=GIT_SECONDS, what=directory)


def _commits(directory: str, base: str) -> list[dict[str, str]]:
    done = _git(directory, "log", f"--max-count={MOST_COMMITS}", "--format=%H%x00%s",
                f"{base}..HEAD")  # fmt: skip
    commits = []
    for line in done.stdout.splitlines():
        sha, _, subject = line.partition("\x00")
        commits.append({"sha": sha, "subject": subject[:1000]})
    return commits


def _untracked(directory: str) -> list[str]:
    done = _git(directory, "ls-files", "--others", "--exclude-standard", "-z")
    return [path for path in done.stdout.split("\x00") if path][:MOST_FILES]


def _files(directory: str, base: str, untracked: list[str]) -> list[dict[str, Any]]:
    statuses = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed"}
    kinds: dict[str, str] = {}
    named = _git(directory, "diff", *DIFF, "--name-status", "-z", base)
    words = named.stdout.split("\x00")
    index = 0
    while index < len(words) - 1:
        letter = words[index][:1]
        if letter in ("R", "C"):
            kinds[words[index + 2]] = "renamed"
            index += 3
        else:
            kinds[words[index + 1]] = statuses.get(letter, "modified")
            index += 2
    files = []
    counted = _git(directory, "diff", *DIFF, "--numstat", "-z", base)
    words = counted.stdout.split("\x00")
    index = 0
    while index < len(words) and words[index] and len(files) < MOST_FILES:
        added, deleted, path = (words[index].split("\t", 2) + ["", ""])[:3]
        index += 1
        if not path:  # a rename: the old path and the new follow
            path = words[index + 1] if index + 1 < len(words) else ""
            index += 2
        binary = added == "-"
        files.append({"path": path, "status": kinds.get(path, "modified"),
                      "added": None if binary else int(added or 0),
                      "deleted": None if binary else int(deleted or 0)})  # fmt: skip
    for path in untracked[: MOST_FILES - len(files)]:
        lines = _lines_of(os.path.join(directory, path))
        files.append({"path": path, "status": "untracked", "added": lines, "deleted": 0
                      if lines is not None else None})  # fmt: skip
    return files


def _lines_of(path: str) -> int | None:
    """Lines of a file not yet added; None for a binary one (or one that is not a file)."""
    try:
        if not os.path.isfile(path) or os.path.islink(path):
            return 0
        with open(path, "rb") as data:
            lines, chunk = 0, data.read(READ_BYTES)
            if b"\x00" in chunk:
                return None
            while chunk:
                lines += chunk.count(b"\n")
                chunk = data.read(READ_BYTES)
            return lines
    except OSError:
        return None


def _patch(directory: str, base: str, untracked: list[str]) -> Iterator[bytes]:
    """The whole patch as git writes it, a chunk at a time: tracked files, then each file not
    yet added against nothing (git stops each diff when it is no longer read)."""
    commands = [["diff", *DIFF, base]]
    commands += [["diff", *DIFF, "--no-index", "--", "/dev/null", path] for path in untracked]
    for words in commands:
        process = subprocess.Popen(
            git_argv(directory, *words), stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=git_env(),
        )  # fmt: skip
        assert process.stdout is not None
        try:
            while chunk := process.stdout.read(READ_BYTES):
                yield chunk
        finally:
            process.kill()
            process.wait()


def _first_line(chunk: bytes, at: int, previous: bytes, keys: _KeyBlocks) -> int | None:
    """Where in ``chunk`` the first whole line at or after ``at`` begins that is not inside a
    private key's block (``previous``: the byte before ``chunk``); None when none does."""
    keys.read(chunk[:at])
    while True:
        if keys.inside:
            ended = chunk.find(b"-----END", at)
            if ended < 0:
                keys.read(chunk[at:])
                return None
            keys.read(chunk[at : ended + 8])
            at = ended + 8
        if (chunk[at - 1 : at] if at > 0 else previous) == b"\n":
            return at
        newline = chunk.find(b"\n", at)
        if newline < 0:
            keys.read(chunk[at:])
            return None
        keys.read(chunk[at : newline + 1])
        at = newline + 1


class _KeyBlocks:
    """Whether the patch read so far ends inside a private key's block (a ``-----BEGIN`` with
    no ``-----END`` after it), read a piece at a time (a marker split between two pieces is
    still seen)."""

    def __init__(self) -> None:
        self.inside = False
        self.tail = b""

    def read(self, piece: bytes) -> None:
        window = self.tail + piece
        opened, ended = window.rfind(b"-----BEGIN"), window.rfind(b"-----END")
        if opened >= 0 or ended >= 0:
            self.inside = opened > ended
        self.tail = window[-9:]


def _page(
    directory: str, base: str, untracked: list[str], offset: int, limit: int
) -> tuple[str, int | None]:
    """The patch's lines from ``offset`` (moved on to a line's start: a page never begins in
    the middle of a line, where a secret's start would be left behind), at most ``limit``
    bytes, cut at a line's end, and not inside a private key's block (it goes whole to the
    next page); the next page's offset, or None at its end. Reading stops at ``PAGE_SECONDS``."""
    deadline = time.monotonic() + PAGE_SECONDS
    kept = bytearray()
    started = more = False
    seen, start = 0, offset
    previous = b"\n"  # the byte before the patch: a line starts at 0
    keys = _KeyBlocks()
    for chunk in _patch(directory, base, untracked):
        if time.monotonic() > deadline:
            raise Failed(f"The patch is too long to be read to byte {offset:,} in time.")
        before = seen
        seen += len(chunk)
        if started:
            kept += chunk
        elif seen > start:
            at = _first_line(chunk, start - before, previous, keys)
            if at is None:  # no line outside a key's block starts in this chunk: the next one
                start, previous = seen, chunk[-1:]
                continue
            start = before + at
            started = True
            kept += chunk[at:]
        else:
            keys.read(chunk)
            previous = chunk[-1:]
            continue
        if len(kept) > limit:
            more = True
            break
    if not more:
        return kept.decode("utf-8", errors="replace"), None
    page = bytes(kept[:limit])
    cut = page.rfind(b"\n") + 1 or limit
    opened = page.rfind(b"-----BEGIN", 0, cut)
    if opened > 0 and page.find(b"-----END", opened, cut) < 0:  # a key's block: whole, next page
        cut = page.rfind(b"\n", 0, opened) + 1 or cut
    return page[:cut].decode("utf-8", errors="replace"), start + cut
