"""A finished turn's hook listening for a reply: what the hook writes (its listening row, then
how it ended: the reply delivered, expired, withdrawn) and what the surfaces read of it.

Each write is one transaction. The hook waits between them on the store's change signal
(``agents.listening``), never by reading the table in a loop.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import Connection, bindparam, text

from roundtable_console.store.clock import Clock, format_ts, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.reads.sessions import get_session
from roundtable_console.store.requests.records import LISTENING_ENDED_EVENT, LISTENING_EVENT
from roundtable_console.store.writes.history import append_session_event

LISTENING = "listening"
REPLIED = "replied"  # a human replied; its hook has not taken it yet
DELIVERED = "delivered"
EXPIRED = "expired"
WITHDRAWN = "withdrawn"  # the agent stopped the hook, ended, or finished another turn
# A hook listens at most this long (and never longer than the install's --reply-wait).
MAX_LISTEN_SECONDS = 3600

_INSERT = text(
    "INSERT INTO reply_listeners (id, session_id, agent, opened_at, expires_at, state,"
    " hook_host, hook_pid) VALUES (:id, :session_id, :agent, :opened_at, :expires_at,"
    " 'listening', :hook_host, :hook_pid)"
)
_ONE = text("SELECT * FROM reply_listeners WHERE id = :id")
_OLDER = text(
    "UPDATE reply_listeners SET state = 'withdrawn', ended_at = :now"
    " WHERE session_id = :session_id AND state = 'listening'"
)
_END = text(
    "UPDATE reply_listeners SET state = :state, ended_at = :now"
    " WHERE id = :id AND state = 'listening'"
)
_TAKE = text(
    "UPDATE reply_listeners SET state = 'delivered', delivered_at = :now"
    " WHERE id = :id AND state = 'replied'"
)
_ENDED_AMONG = text(
    "SELECT id FROM reply_listeners WHERE id IN :ids AND state <> 'listening'"
).bindparams(bindparam("ids", expanding=True))
_LISTENING_OF_SESSION = text(
    "SELECT * FROM reply_listeners WHERE session_id = :session_id AND state = 'listening'"
    " AND expires_at > :now ORDER BY opened_at DESC LIMIT 1"
)


@dataclass(frozen=True)
class ReplyListenerRecord:
    id: str
    session_id: str
    agent: str
    opened_at: str
    expires_at: str
    state: str
    message: str | None
    replied_by: str | None
    replied_at: str | None
    delivered_at: str | None

    @classmethod
    def from_row(cls, row: Any) -> ReplyListenerRecord:
        values = row._mapping
        return cls(**{name: values[name] for name in cls.__dataclass_fields__})

    def state_at(self, now: str) -> str:
        """As it stands at ``now``: a listening row past its wait has expired, even when its
        hook could not say so."""
        return EXPIRED if self.state == LISTENING and self.expires_at <= now else self.state

    def to_json(self, now: str, *, with_message: bool = False) -> dict[str, Any]:
        """As the API answers it; the reply's text only to the hook it is for
        (``with_message``), once it took it."""
        shown: dict[str, Any] = {
            "id": self.id,
            "session_id": self.session_id,
            "agent": self.agent,
            "opened_at": self.opened_at,
            "expires_at": self.expires_at,
            "state": self.state_at(now),
            "replied_by": self.replied_by,
            "replied_at": self.replied_at,
            "delivered_at": self.delivered_at,
        }
        if with_message:
            shown["message"] = self.message
        return shown


def get_listener(db: Connection, listener_id: str) -> ReplyListenerRecord:
    row = db.execute(_ONE, {"id": listener_id}).one_or_none()
    if row is None:
        raise LookupError(listener_id)
    return ReplyListenerRecord.from_row(row)


def listening_for(db: Connection, session_id: str, now: str) -> ReplyListenerRecord | None:
    """The session's hook listening for a reply at ``now``, if one is."""
    row = db.execute(_LISTENING_OF_SESSION, {"session_id": session_id, "now": now}).one_or_none()
    return None if row is None else ReplyListenerRecord.from_row(row)


def open_listener(
    store: Store,
    *,
    session_id: str,
    agent: str,
    wait_seconds: float,
    clock: Clock = system_clock,
    hook_host: str | None = None,
    hook_pid: int | None = None,
) -> ReplyListenerRecord:
    """``session_id``'s hook listens for ``wait_seconds`` (an older listening row of the
    session, whose hook went away unseen, is withdrawn: this turn is the one to reply to). The
    hook is ``hook_pid`` on ``hook_host`` (default: this process; a server records the hook
    that listens through it)."""
    import socket

    moment = clock()
    now = format_ts(moment)
    values = {
        "id": "reply-" + os.urandom(10).hex(),
        "session_id": session_id,
        "agent": agent,
        "opened_at": now,
        "expires_at": format_ts(moment + timedelta(seconds=min(wait_seconds, MAX_LISTEN_SECONDS))),
        "hook_host": socket.gethostname() if hook_host is None else hook_host[:255],
        "hook_pid": os.getpid() if hook_pid is None else hook_pid,
    }
    with store.write() as db:
        get_session(db=db, session_id=session_id)
        db.execute(_OLDER, {"session_id": session_id, "now": now})
        db.execute(_INSERT, values)
        append_session_event(
            db,
            session_id=session_id,
            event_type=LISTENING_EVENT,
            payload={"listener_id": values["id"], "until": values["expires_at"]},
            now=now,
        )
        return get_listener(db, values["id"])


def read_listener(store: Store, listener_id: str) -> ReplyListenerRecord:
    with store.read() as db:
        return get_listener(db, listener_id)


def take_reply(
    store: Store, listener_id: str, clock: Clock = system_clock
) -> ReplyListenerRecord | None:
    """The reply as its hook delivers it (marked delivered, once); None when there is none to
    take (it was taken already)."""
    with store.write() as db:
        if db.execute(_TAKE, {"id": listener_id, "now": format_ts(clock())}).rowcount == 0:
            return None
        return get_listener(db, listener_id)


def end_listener(store: Store, listener_id: str, state: str, clock: Clock = system_clock) -> bool:
    """The hook stops listening (expired, withdrawn); False when a reply came first (the hook
    reads it again)."""
    now = format_ts(clock())
    with store.write() as db:
        changed = db.execute(_END, {"id": listener_id, "state": state, "now": now})
        if changed.rowcount == 0:
            return False
        ended = get_listener(db, listener_id)
        append_session_event(
            db,
            session_id=ended.session_id,
            event_type=LISTENING_ENDED_EVENT,
            payload={"listener_id": listener_id, "state": state},
            now=now,
        )
        return True


def ended_among(db: Connection, listener_ids: list[str]) -> set[str]:
    """Which of ``listener_ids`` no longer listen (replied, delivered, expired, withdrawn), in
    one read per change for every hook listening through a server."""
    from roundtable_console.store.requests.reads import IDS_PER_STATEMENT

    ended: set[str] = set()
    for start in range(0, len(listener_ids), IDS_PER_STATEMENT):
        chunk = listener_ids[start : start + IDS_PER_STATEMENT]
        ended.update(row[0] for row in db.execute(_ENDED_AMONG, {"ids": chunk}))
    return ended


def withdraw_listening(store: Store, session_id: str, clock: Clock = system_clock) -> int:
    """The session's agent moved on (a new turn, its end): a hook still listening for a reply
    to its last turn is withdrawn. Returns how many were."""
    with store.read() as db:
        listening = [
            row[0]
            for row in db.execute(
                text(
                    "SELECT id FROM reply_listeners WHERE session_id = :session_id"
                    " AND state = 'listening'"
                ),
                {"session_id": session_id},
            )
        ]
    return sum(end_listener(store, listener_id, WITHDRAWN, clock) for listener_id in listening)
