"""What a session changed (issue 43, point 2), as its host reads it (``protocol.CHANGES``): its
working directory (its worktree, or its cwd) against its base — the commits on its branch since
the base, the files changed (committed or not, and files not yet added), and the patch, a page
at a time by byte offset (a 50 MB diff costs a page, not its whole).

Shared by the server (``api.hosts.changes``) and the command line on the store: what a call
says (``changes_args``), and the host's answer taken only in its own shapes (``ChangesPage.of``:
a host's words are not trusted), its text redacted as every output is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from roundtable_console.store.hosts import protocol
from roundtable_console.store.records import SessionFields
from roundtable_console.store.safety.display import printable

PAGE_BYTES = 256 * 1024  # a patch's page: with the rest, well within a host's message
MOST_COMMITS = 200
MOST_FILES = 1000
COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
STATUSES = frozenset({"added", "modified", "deleted", "renamed", "untracked"})


def _key_tail_hidden(patch: str) -> str:
    """A page that begins inside a private key's block (its ``-----BEGIN`` on an earlier page)
    shows ``[REDACTED]`` up to the block's end: the redaction of a page alone would not know."""
    ended = patch.find("-----END")
    if ended < 0 or 0 <= patch.find("-----BEGIN") < ended:
        return patch
    line_end = patch.find("\n", ended)
    return "[REDACTED]" + (patch[line_end:] if line_end >= 0 else "")


def base_of(session: SessionFields) -> str | None:
    """The commit a session's worktree was made from (``roundtable new``), else None (its
    directory's HEAD: what is not committed)."""
    worktree = (session.metadata_dict or {}).get("worktree")
    base = worktree.get("base") if isinstance(worktree, dict) else None
    return base if isinstance(base, str) and COMMIT.fullmatch(base) else None


def changes_args(
    session: SessionFields, *, offset: int = 0, limit: int = PAGE_BYTES
) -> dict[str, Any]:
    """What a ``CHANGES`` call says: the session's few fields, its base, the patch's page."""
    return {
        "session": protocol.call_session(session),
        "base": base_of(session),
        "offset": offset,
        "limit": limit,
    }


@dataclass(frozen=True)
class ChangedFile:
    path: str
    status: str
    added: int | None  # None: a binary file (named, not shown)
    deleted: int | None

    @property
    def binary(self) -> bool:
        return self.added is None


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str


@dataclass(frozen=True)
class ChangesPage:
    directory: str
    branch: str | None
    base: str
    commits: tuple[Commit, ...]
    files: tuple[ChangedFile, ...]
    patch: str  # this page of it, whole lines (tabs as spaces: a view of it, not a file)
    offset: int
    next_offset: int | None  # None: the patch ends in this page

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> ChangesPage:
        """A host's answer, each value in its shape, its text printable and redacted;
        ``ValueError`` when it is not one."""

        def text(value: Any, most: int) -> str:
            if not isinstance(value, str) or len(value) > most:
                raise ValueError("not text")
            return printable(value)

        def count(value: Any) -> int | None:
            if value is None:
                return None
            if type(value) is not int or value < 0:
                raise ValueError("not a count")
            return int(value)

        base = body.get("base")
        if not isinstance(base, str) or not COMMIT.fullmatch(base):
            raise ValueError("no base")
        commits, files = body.get("commits"), body.get("files")
        if not isinstance(commits, list) or len(commits) > MOST_COMMITS:
            raise ValueError("commits")
        if not isinstance(files, list) or len(files) > MOST_FILES:
            raise ValueError("files")
        offset, following = body.get("offset"), body.get("next_offset")
        if type(offset) is not int or offset < 0:
            raise ValueError("offset")
        if following is not None and (type(following) is not int or following <= offset):
            raise ValueError("next_offset")
        branch = body.get("branch")
        patch = body.get("patch")
        if not isinstance(patch, str) or len(patch.encode()) > 2 * PAGE_BYTES:
            raise ValueError("patch")
        return cls(
            directory=text(body.get("directory"), protocol.FIELD_MOST),
            branch=text(branch, 255) if branch is not None else None,
            base=base,
            commits=tuple(
                Commit(
                    sha=commit["sha"] if COMMIT.fullmatch(str(commit.get("sha"))) else "?",
                    subject=text(commit.get("subject"), 1000),
                )
                for commit in commits
                if isinstance(commit, Mapping)
            ),
            files=tuple(
                ChangedFile(
                    path=text(item.get("path"), protocol.FIELD_MOST),
                    status=item["status"] if item.get("status") in STATUSES else "modified",
                    added=count(item.get("added")),
                    deleted=count(item.get("deleted")),
                )
                for item in files
                if isinstance(item, Mapping)
            ),
            patch=printable(_key_tail_hidden(patch).expandtabs(4), keep_newlines=True),
            offset=offset,
            next_offset=following,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "directory": self.directory,
            "branch": self.branch,
            "base": self.base,
            "commits": [{"sha": c.sha, "subject": c.subject} for c in self.commits],
            "files": [
                {
                    "path": f.path,
                    "status": f.status,
                    "added": f.added,
                    "deleted": f.deleted,
                    "binary": f.binary,
                }
                for f in self.files
            ],  # fmt: skip
            "patch": self.patch,
            "offset": self.offset,
            "next_offset": self.next_offset,
        }


CHANGES_SECONDS = 30.0
NO_HOST = (
    "The session runs on a machine with no host (roundtable host run): its changes are read "
    "there, with git."
)


def not_changes(host: str) -> str:
    return f"The host {printable(host)} answered with something that is not a session's changes."


def changes_on_store(
    store: Any, session: SessionFields, *, offset: int = 0, clock: Any = None
) -> dict[str, Any]:
    """A page of what ``session`` changed, asked of its host through the store by a process that
    holds no link (the command line, the console): the route's answer (``available``, and the
    page or the ``reason`` there is none). Blocking: for a worker."""
    from roundtable_console.store.clock import system_clock
    from roundtable_console.store.hosts.calls import ask_and_wait
    from roundtable_console.store.hosts.registry import get_host

    def unavailable(reason: str) -> dict[str, Any]:
        return {"available": False, "reason": reason}

    if not session.host:
        return unavailable(NO_HOST)
    with store.read() as db:
        host = get_host(db, session.host, clock=clock or system_clock)
    if host is None or not host.online:
        seen = host.last_seen_at if host is not None else None
        return unavailable(
            f"The session runs on {printable(session.host)}, whose host is offline (last seen "
            f"{seen or 'never'}). Its changes are read through it."
        )
    answer = ask_and_wait(store, host.name, protocol.CHANGES, changes_args(session, offset=offset),
                          seconds=CHANGES_SECONDS)  # fmt: skip
    try:
        body = protocol.outcome_of(host.name, answer)
        return {"available": True, "reason": None, **ChangesPage.of(body).to_json()}
    except (protocol.HostUnreachable, protocol.HostRefused) as error:
        return unavailable(str(error))
    except ValueError:
        return unavailable(not_changes(host.name))
