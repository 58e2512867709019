"""The permission requests every surface shows: pending ones across the fleet (oldest first: the
longest-waiting agent first), and one session's, newest first."""

from __future__ import annotations

from sqlalchemy import Connection, bindparam, text

from roundtable_console.store.access.walls import OPEN, Wall
from roundtable_console.store.clock import Clock, format_ts, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.reads.sessions import get_session, get_sessions
from roundtable_console.store.requests.records import PermissionRequestRecord

MAX_LISTED = 500

_PENDING = text(
    "SELECT * FROM permission_requests WHERE state = 'pending' AND expires_at > :now"
    " ORDER BY asked_at, id LIMIT :limit"
)
_PENDING_AFTER = text(
    "SELECT * FROM permission_requests WHERE state = 'pending' AND expires_at > :now"
    " AND (asked_at > :asked OR (asked_at = :asked AND id > :id))"
    " ORDER BY asked_at, id LIMIT :limit"
)
# Behind a wall, pending requests are read a batch at a time until enough are within reach: at
# most this many batches (another workspace's backlog cannot hide this one's for long).
WALLED_BATCHES = 10
_SETTLED_AMONG = text(
    "SELECT id FROM permission_requests WHERE id IN :ids AND state <> 'pending'"
).bindparams(bindparam("ids", expanding=True))
# At most this many ids in one statement (SQLite's default bound on variables is 32,766).
IDS_PER_STATEMENT = 500
_NEWEST = text("SELECT * FROM permission_requests ORDER BY asked_at DESC, id DESC LIMIT :limit")
_OF_SESSION = text(
    "SELECT * FROM permission_requests WHERE session_id = :session_id"
    " ORDER BY asked_at DESC, id DESC LIMIT :limit"
)


def list_requests(
    *,
    store: Store,
    wall: Wall = OPEN,
    session_id: str | None = None,
    everything: bool = False,
    limit: int = MAX_LISTED,
    clock: Clock = system_clock,
) -> list[PermissionRequestRecord]:
    """Pending requests (``everything``: every state, newest first), of one session or of every
    session ``wall`` reaches. A session out of reach answers as one that does not exist."""
    now = format_ts(clock())
    with store.read() as db:
        if session_id is not None:
            wall.checked(get_session(db=db, session_id=session_id))
            rows = db.execute(_OF_SESSION, {"session_id": session_id, "limit": limit}).all()
            records = [PermissionRequestRecord.from_row(row) for row in rows]
            if everything:
                return records
            return sorted(
                (record for record in records if record.is_open(now)),
                key=lambda record: (record.asked_at, record.id),
            )
        query = _NEWEST if everything else _PENDING
        rows = db.execute(query, {"now": now, "limit": limit}).all()
        records = [PermissionRequestRecord.from_row(row) for row in rows]
        if not wall.bound:
            return records
        reached = _within(db, wall, records)
        for _ in range(WALLED_BATCHES - 1):
            if everything or len(rows) < limit or len(reached) >= limit:
                break
            last = records[-1]
            after = {"now": now, "limit": limit, "asked": last.asked_at, "id": last.id}
            rows = db.execute(_PENDING_AFTER, after).all()
            records = [PermissionRequestRecord.from_row(row) for row in rows]
            reached += _within(db, wall, records)
        return reached[:limit]


def _within(
    db: Connection, wall: Wall, records: list[PermissionRequestRecord]
) -> list[PermissionRequestRecord]:
    """The requests of sessions ``wall`` reaches."""
    sessions = get_sessions(db=db, session_ids={record.session_id for record in records})
    return [
        record
        for record in records
        if record.session_id in sessions and wall.admits(sessions[record.session_id])
    ]


def settled_among(db: Connection, request_ids: list[str]) -> set[str]:
    """Which of ``request_ids`` are no longer pending (decided, expired, withdrawn): the long
    waits of hooks asking through a server learn it in one read per change, however many."""
    settled: set[str] = set()
    for start in range(0, len(request_ids), IDS_PER_STATEMENT):
        chunk = request_ids[start : start + IDS_PER_STATEMENT]
        settled.update(row[0] for row in db.execute(_SETTLED_AMONG, {"ids": chunk}))
    return settled
