"""What a session row knows about itself, without the database layer.

``SessionFields`` holds the behaviour of a session row (decoded metadata, active, stale, its
JSON form). The SQLModel table ``store.db.models.AgentSession`` and the plain, slotted
``SessionRecord`` both use it, with the same field names, so a screen can show either: the
console paints its first rows from ``SessionRecord``s read with ``sqlite3`` alone
(``store.reads.first_window``) before SQLAlchemy is loaded.
"""

from __future__ import annotations

import json
from collections import namedtuple
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from roundtable_console.store.clock import parse_ts
from roundtable_console.store.rules import ACTIVE_STATES

# typing is not imported at run time: every hook's process would pay ~3 ms for it. The named
# tuples below are collections' own for the same reason.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The columns of agent_sessions, in table order (tests check them against the table).
SESSION_COLUMNS: tuple[str, ...] = (
    "id",
    "agent_id",
    "run_id",
    "adapter",
    "provider",
    "model",
    "external_session_id",
    "external_resume_command",
    "working_directory",
    "mcp_socket",
    "status",
    "started_at",
    "last_seen_at",
    "ended_at",
    "metadata_json",
    "workspace_id",
    "version",
    "waiting_reason",
    "waiting_since",
    "host",
)
# A session in JSON: its column names as keys, with ``metadata`` decoded in place of
# ``metadata_json`` and ``waiting`` in place of the two waiting columns; ``version`` comes last.
SESSION_JSON_COLUMNS: tuple[str, ...] = tuple(
    name
    for name in SESSION_COLUMNS
    if name not in ("metadata_json", "version", "waiting_reason", "waiting_since")
)


class Waiting(namedtuple("Waiting", ("reason", "since"))):
    """Why and since when a session waits for a human (its reason is stored redacted)."""

    __slots__ = ()
    reason: str
    since: str


class SessionFields:
    """The behaviour of a session row, for any class with the agent_sessions columns as
    attributes."""

    __slots__ = ()

    if TYPE_CHECKING:  # declared for type checkers only: the table class declares its own
        id: str
        agent_id: str
        run_id: str
        adapter: str
        provider: str | None
        model: str | None
        external_session_id: str | None
        external_resume_command: str | None
        working_directory: str
        mcp_socket: str | None
        status: str
        started_at: str
        last_seen_at: str | None
        ended_at: str | None
        metadata_json: str | None
        workspace_id: str | None
        version: int
        waiting_reason: str | None
        waiting_since: str | None
        host: str | None

    @property
    def metadata_dict(self) -> dict[str, Any] | None:
        if not self.metadata_json:
            return None
        try:
            decoded = json.loads(self.metadata_json)
        except (json.JSONDecodeError, TypeError):
            return None
        return decoded if isinstance(decoded, dict) else None

    @property
    def reported_by_hooks(self) -> bool:
        """Whether ``roundtable hooks`` registered it: its metadata names the agent CLI whose
        hooks report it (``hooks``)."""
        hooks = (self.metadata_dict or {}).get("hooks")
        return isinstance(hooks, str) and bool(hooks)

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_STATES

    @property
    def effective_workspace_id(self) -> str | None:
        """Its ``workspace_id`` column, else ``workspace_id`` in its metadata (ref), read as
        the SQL of ``store.reads.sqlfuncs.effective_workspace`` reads it, so a session is in
        the same workspace by id as in a list: a column set to anything (even empty) wins
        over the metadata. Where the engines' JSON would read the metadata otherwise (the key
        twice, a value not text), the session is of no workspace: out of every bound
        caller's reach (``store.access.walls``)."""
        if self.workspace_id is not None:
            return self.workspace_id or None
        if not self.metadata_json:
            return None
        # The hook sees every object, the outermost last: its own workspace_id keys are those.
        keys: list[list[Any]] = []

        def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
            keys.append([value for key, value in items if key == "workspace_id"])
            return dict(items)

        try:
            top = json.loads(self.metadata_json, object_pairs_hook=pairs)
        except (json.JSONDecodeError, TypeError, ValueError, RecursionError):
            return None
        if not isinstance(top, dict) or not keys or len(keys[-1]) != 1:
            return None
        value = keys[-1][0]
        return value if isinstance(value, str) and value else None

    def last_seen(self) -> datetime | None:
        return parse_ts(self.last_seen_at) or parse_ts(self.started_at)

    def is_stale(self, now: datetime, stale_after: timedelta) -> bool:
        """Active, and not seen for longer than ``stale_after`` — shown, never written."""
        seen = self.last_seen()
        return self.is_active and seen is not None and now - seen > stale_after

    @property
    def waiting(self) -> Waiting | None:
        """The human the session waits for, while it is in an active state (a row the
        reference wrote after an agent's ``--waiting`` does not wait once it ended)."""
        if self.waiting_since is None or not self.is_active:
            return None
        return Waiting(reason=self.waiting_reason or "", since=self.waiting_since)

    @property
    def turn_done(self) -> str | None:
        """The words an agent's turn ended with, while it awaits a prompt (ours): kept as the
        reason with no waiting time, for no human is waited on; a heartbeat that is not a
        turn's end, and every action, clear it."""
        if self.waiting_since is not None or self.waiting_reason is None or not self.is_active:
            return None
        return self.waiting_reason

    def to_json(self) -> dict[str, Any]:
        """Column names as keys, ``metadata`` decoded to an object or null, ``waiting`` as
        ``{"reason", "since"}`` or null, ``turn_done`` as ``{"message", "at"}`` or null."""
        body: dict[str, Any] = {name: getattr(self, name) for name in SESSION_JSON_COLUMNS}
        body["metadata"] = self.metadata_dict
        waiting = self.waiting
        body["waiting"] = None if waiting is None else waiting._asdict()
        done = self.turn_done
        body["turn_done"] = None if done is None else {"message": done, "at": self.last_seen_at}
        body["version"] = self.version
        return body

    def column_values(self) -> dict[str, Any]:
        """Every column's value, by name, exactly as stored."""
        return {name: getattr(self, name) for name in SESSION_COLUMNS}


class SessionRecord(SessionFields):
    """A session row as plain values: no ORM, no validation, nothing but the columns."""

    __slots__ = SESSION_COLUMNS

    def __init__(self, values: Mapping[str, Any]) -> None:
        for name in SESSION_COLUMNS:
            setattr(self, name, values[name])

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> SessionRecord:
        """A row whose values come in ``SESSION_COLUMNS`` order."""
        return cls(dict(zip(SESSION_COLUMNS, row, strict=True)))

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> SessionRecord:
        """A session as ``to_json`` wrote it (a server's answer): its columns again, the waiting
        and the turn's end folded back into the columns that hold them."""
        values = {name: body.get(name) for name in SESSION_JSON_COLUMNS}
        metadata = body.get("metadata")
        values["metadata_json"] = None if metadata is None else json.dumps(metadata)
        waiting, done = body.get("waiting"), body.get("turn_done")
        if isinstance(waiting, Mapping):
            values.update(waiting_reason=waiting.get("reason"), waiting_since=waiting.get("since"))
        else:
            values.update(
                waiting_reason=done.get("message") if isinstance(done, Mapping) else None,
                waiting_since=None,
            )
        values["version"] = body.get("version")
        return cls(values)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SessionRecord):
            return NotImplemented
        return self.column_values() == other.column_values()

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __repr__(self) -> str:
        return f"SessionRecord(id={self.id!r}, status={self.status!r}, version={self.version!r})"


class ClaimCount(namedtuple("ClaimCount", ("live", "expired", "proposals"), defaults=(0, 0, 0))):
    """How many ``active``-status claims an agent holds: still live, and expired but unreleased;
    and how many of its proposals wait for a decision (neither accepted nor rejected)."""

    __slots__ = ()
    live: int
    expired: int
    proposals: int

    @property
    def total(self) -> int:
        return self.live + self.expired


# What one change of a session says (store.reads.changes reads them; a server streams them).
CHANGE_FIELDS = ("at", "session_id", "change", "status", "previous_status", "actor", "reason")


# A named tuple, not a dataclass: every hook imports this module, and importing dataclasses
# costs a hook about 10 ms at its start.
class Change(namedtuple("Change", CHANGE_FIELDS, defaults=(None, None, None))):
    """One change of one session. ``actor``: the operator of a lifecycle action; for what an
    agent writes itself (register, heartbeat, end), the session's agent. ``reason``: why it
    waits, the impact details of a termination, or how long a stale session went unseen;
    redacted like any text from the store."""

    __slots__ = ()
    at: str
    session_id: str
    change: str
    status: str | None
    previous_status: str | None
    actor: str | None
    reason: str | None

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Change:
        """A change a server sent (``to_json``'s); ValueError when it is not one."""
        if not isinstance(body, Mapping) or not isinstance(body.get("session_id"), str):
            raise ValueError("a change is an object naming its session")
        if not all(isinstance(body.get(name), (str, type(None))) for name in CHANGE_FIELDS):
            raise ValueError("a change's fields are text")
        return cls(**{name: body.get(name) for name in CHANGE_FIELDS})

    def to_json(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "session_id": self.session_id,
            "change": self.change,
            "status": self.status,
            "previous_status": self.previous_status,
            "actor": self.actor,
            "reason": self.reason,
        }
