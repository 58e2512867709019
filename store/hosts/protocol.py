"""The messages of a host's connection to ``roundtable serve`` (one WebSocket, opened by the
host: no port is opened on its machine). Plain JSON shapes, shared by the server (``api.hosts``)
and the host (``hosts``); no transport here.

1. The host opens ``CONNECT_PATH`` with its token (``Authorization: Bearer``, role ``host``).
2. It sends ``{"kind": "hello", …HostFacts}`` within ``HELLO_SECONDS``.
3. The server answers ``{"kind": "welcome", "name", "connection_id", "seen_every"}``, or
   ``{"kind": "refused", "code", "detail"}`` and closes (``CLOSE_REFUSED``: the host does not
   retry what it was refused, a bad name say; every other close it retries).
4. The connection stays open; the WebSocket's own pings keep it and find it gone. While it
   holds its host, another connection of the same name is closed with ``CLOSE_HELD`` (a second
   process, a stolen token): it tries again later, and takes the host once the holder is gone.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from roundtable_console.store.records import SessionFields

CONNECT_PATH = "/api/v1/hosts/connect"
HELLO = "hello"
WELCOME = "welcome"
REFUSED = "refused"
HELLO_SECONDS = 10.0
# WebSocket close codes (the private-use range): refused for good, the host held by another
# connection (try again later), or its token no longer holds.
CLOSE_REFUSED = 4400
CLOSE_HELD = 4409
CLOSE_TOKEN_ENDED = 4401

# 5. The server asks; the host answers. ``{"kind": "call", "id", "op", "args"}`` names one of
#    the fixed ``OPERATIONS`` (a host runs nothing else, whatever it is sent); the host answers
#    ``{"kind": "answer", "id", "ok": {…}}``, or ``{"kind": "answer", "id", "unavailable":
#    REASON}`` (said to the reader as it is), or ``"refused": REASON`` (not for this host). An
#    answer comes within ``CALL_SECONDS`` or the server stops waiting for it.
CALL = "call"
ANSWER = "answer"
ACTIVITY = "activity"  # a page of the session's transcript, else of its tmux pane
LAUNCH = "launch"  # the session's agent started in tmux (``check``: only whether it can be)
PANE = "pane"  # whether the pane a launch names runs its agent still (a reply can be typed)
TYPE = "type"  # a reply's line typed into that pane
STOP_AGENT = "stop-agent"  # the agent in that pane: SIGINT, then SIGTERM after a grace
START = "start"  # a new session: its worktree made, its agent started with its first prompt
CHANGES = "changes"  # what the session changed: commits, files, a page of the patch
FINISH = "finish"  # the session's worktree removed (its branch kept)
OPERATIONS = frozenset({ACTIVITY, LAUNCH, PANE, TYPE, STOP_AGENT, START, CHANGES, FINISH})
TYPE_SECONDS = 3.0  # a reply is typed inside the store's write: not kept waiting long
CALL_SECONDS = 10.0
CALLS_AT_ONCE = 16  # per host: more wait for none, they are refused
MESSAGE_MOST_BYTES = 1 << 20  # a message either way: a page that would be longer is shortened
PROMPT_MOST_BYTES = 12 * 1024  # a launch's prompt: with its command, one message to tmux

# The tmux server (``tmux -L``) a host starts agents in, and the only one whose panes it reads:
# an operator on that machine sees them with ``tmux -L roundtable-host attach -t SESSION``.
TMUX_LABEL = "roundtable-host"

# What a call says of its session: these fields only, each text of at most FIELD_MOST
# characters, or null (a session's metadata can be a megabyte: it is not sent).
SESSION_FIELDS = (
    "id", "host", "adapter", "external_session_id", "working_directory", "workspace_id",
    "transcript_path",
)  # fmt: skip
FIELD_MOST = 4096
_TMUX_NAME = re.compile(r"[^A-Za-z0-9_-]+")


def call_session(session: SessionFields) -> dict[str, Any]:
    """The session as a call names it (``SESSION_FIELDS``; its effective workspace)."""
    path = (session.metadata_dict or {}).get("transcript_path")
    values = {
        "id": session.id,
        "host": session.host,
        "adapter": session.adapter,
        "external_session_id": session.external_session_id,
        "working_directory": session.working_directory,
        "workspace_id": session.effective_workspace_id,
        "transcript_path": path if isinstance(path, str) else None,
    }
    return {
        key: value if isinstance(value, str) and len(value) <= FIELD_MOST else None
        for key, value in values.items()
    }


def tmux_session_name(session_id: str) -> str:
    """The tmux session a host starts the session's agent in: letters, digits, ``_ -``, and a
    digest of the whole id (two ids never share a name, however alike)."""
    digest = hashlib.sha256(session_id.encode()).hexdigest()[:8]
    shown = _TMUX_NAME.sub("-", session_id).strip("-")[:48] or "session"
    return f"{shown}-{digest}"


SIGNALS = frozenset({"SIGINT", "SIGTERM"})  # what a stop sends (agents.panes.stop_agent)


def stop_outcome(body: dict[str, Any]) -> tuple[str, bool]:
    """A host's answer to ``STOP_AGENT``, as kept: the signal it took last (one of two, else
    "unknown"), and whether the agent exited."""
    signal_name = body.get("signal")
    return (signal_name if signal_name in SIGNALS else "unknown"), body.get("exited") is True


def activity_args(
    session: SessionFields, launch: Any, *, before: int | None, limit: int
) -> dict[str, Any]:
    """What an ``ACTIVITY`` call says: the session's few fields, its launch, the page."""
    return {
        "session": call_session(session),
        "launch": dict(launch) if launch else None,
        "before": before,
        "limit": limit,
    }


class HostUnreachable(Exception):
    """The host cannot be asked, or did not answer: why, in one sentence."""


class HostRefused(Exception):
    """The host would not do what it was asked (not its session, say): its words."""


def outcome_of(name: str, answer: dict[str, Any]) -> dict[str, Any]:
    """A host's answer, however it came (a link, another server, the store): its ``ok`` part;
    ``HostUnreachable`` or ``HostRefused`` in its words."""
    from roundtable_console.store.safety.display import printable

    if isinstance(answer.get("ok"), dict):
        return answer["ok"]  # type: ignore[no-any-return]
    for key, error in (("unavailable", HostUnreachable), ("refused", HostRefused)):
        if isinstance(answer.get(key), str):
            raise error(printable(answer[key][:500]))
    raise HostUnreachable(
        f"The host {printable(name)} answered with something that cannot be read."
    )
