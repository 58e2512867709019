"""The change feed: what happened to sessions since a position, as one line each.

Read after the store says it changed (``Store.wait_for_change``: PostgreSQL's notifications,
SQLite's data version), never on a timer. A position is the last history id read, plus the stale
bound: sessions unseen since before it were already stale at the last read. Each read takes the
``agent_session_events`` rows after that id (one range of the primary key; each row's previous
row of the same session comes from the (session_id, id) index) and turns them into changes. Going
stale writes nothing, so it is computed from the clock: the feed knows when the next fresh
session will go stale (``next_to_go_stale``) and the caller wakes then.

Both ``roundtable watch`` and the console's notifications read through here.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, and_, func, or_, select, true
from sqlalchemy.orm import aliased

from roundtable_console.store.clock import Clock, format_ts, parse_ts, system_clock
from roundtable_console.store.db.models import AgentSession, AgentSessionEvent
from roundtable_console.store.db.session_rows import SESSIONS
from roundtable_console.store.errors import InvalidEventCursor
from roundtable_console.store.reads.keyset import filter_conditions
from roundtable_console.store.reads.listing import SessionFilter
from roundtable_console.store.reads.sessions import gone_stale, next_to_go_stale
from roundtable_console.store.records import Change
from roundtable_console.store.requests.records import DECIDED_EVENT, SIDE_EVENTS, WAITING_AFTER
from roundtable_console.store.rules import QUIET_EVENTS
from roundtable_console.store.safety.display import short_duration
from roundtable_console.store.safety.redaction import redact_text
from roundtable_console.store.validation import whole_number

_EVENTS = AgentSessionEvent.__table__  # type: ignore[attr-defined]
_PREVIOUS = aliased(_EVENTS)
# History rows read per statement; a read continues until it has them all.
BATCH = 500
# On PostgreSQL an id is taken when a row is inserted and becomes visible when its transaction
# commits, so a lower id may appear after a higher one was read. Ids skipped over are looked for
# again on each read for this long (a rolled-back insert leaves a gap that never fills), and at
# most this many are remembered.
GAP_SECONDS = 30.0
MAX_GAPS = 2000
_TICK = timedelta(microseconds=1)
# How soon the deadline is looked at again when the next session to go stale has a time the
# store and Python read differently.
UNREADABLE_RETRY = timedelta(seconds=1)

# What a change can be. ``heartbeat``: seen again, nothing else changed.
CHANGE_KINDS: tuple[str, ...] = (
    "registered",
    "status",
    "waiting_started",
    "waiting_stopped",
    "turn_done",
    "stale",
    "ended",
    "heartbeat",
)


@dataclass(frozen=True)
class ChangeFilter:
    """Which changes are wanted: of sessions of this agent, run, workspace; from or to one of
    ``statuses``; heartbeats only when asked."""

    statuses: tuple[str, ...] = ()
    agent_id: str | None = None
    run_id: str | None = None
    workspace_id: str | None = None
    heartbeats: bool = False

    @property
    def sessions(self) -> SessionFilter:
        return SessionFilter(
            agent_id=self.agent_id, run_id=self.run_id, workspace_id=self.workspace_id
        )

    def admits(self, change: Change) -> bool:
        if change.change == "heartbeat" and not self.heartbeats:
            return False
        if self.statuses:
            return change.status in self.statuses or change.previous_status in self.statuses
        return True


def _decode(payload: str | None) -> dict[str, Any]:
    if not payload:
        return {}
    try:
        decoded = json.loads(payload)
    except (json.JSONDecodeError, TypeError, ValueError, RecursionError):
        return {}
    return decoded if isinstance(decoded, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _reason(value: Any) -> str | None:
    text = _text(value)
    return None if text is None else redact_text(text)


def changes_of_row(
    *,
    session_id: str,
    event_type: str,
    payload: str | None,
    at: str,
    previous: str | None,
    agent_id: str | None,
) -> list[Change]:
    """What one history row says happened, given the session's row before it (``previous``)."""
    return changes_of_decoded(
        session_id=session_id,
        event_type=event_type,
        now=_decode(payload),
        before=_decode(previous),
        at=at,
        agent_id=agent_id,
    )


def changes_of_decoded(
    *,
    session_id: str,
    event_type: str,
    now: dict[str, Any],
    before: dict[str, Any],
    at: str,
    agent_id: str | None,
) -> list[Change]:
    """``changes_of_row`` of payloads already decoded: the row's (``now``) and its previous
    row's (``before``)."""
    status = _text(now.get("status"))
    previous_status = _text(now.get("previous_status")) or _text(before.get("status"))
    actor = _text(now.get("actor")) or agent_id
    was_waiting = _waiting_of(before)
    # A row that says nothing of the session's wait (a request asked, a reply, a decision
    # written before decisions said it) changes none.
    says_wait = event_type not in SIDE_EVENTS and (
        event_type != DECIDED_EVENT or WAITING_AFTER in now
    )
    waiting = _waiting_of(now) if says_wait else was_waiting
    turn, was_turn = _text(now.get("turn_done")), _text(before.get("turn_done"))
    found: list[Change] = []

    def add(kind: str, reason: str | None = None) -> None:
        found.append(
            Change(
                at=at,
                session_id=session_id,
                change=kind,
                status=status,
                previous_status=previous_status,
                actor=actor,
                reason=reason,
            )
        )

    if was_waiting and waiting is None:
        add("waiting_stopped")
    if event_type == "registered":
        add("registered")
    elif event_type == "ended":
        add("ended")
    elif previous_status is not None and status is not None and status != previous_status:
        add("status", _reason(now.get("impact_details")))
    elif waiting is None and turn is not None and turn != was_turn:
        add("turn_done", _reason(turn))
    elif waiting is None or waiting == was_waiting:
        add("heartbeat")
    if waiting is not None and waiting != was_waiting:
        add("waiting_started", _reason(waiting))
    return found


def _waiting_of(payload: dict[str, Any]) -> str | None:
    """What a row says its session waits on: a snapshot's ``waiting``, a decision's
    ``waiting_after``."""
    if WAITING_AFTER in payload:
        return _text(payload[WAITING_AFTER])
    return _text(payload.get("waiting"))


@dataclass(frozen=True)
class FeedPosition:
    """A place in the change feed a reader may come back to: every history row up to
    ``last_id`` read (but for that row's changes after ``index``, when given), and every
    session unseen since before ``stale_bound`` told as stale. As text (an SSE event id):
    ``<last_id>.<index or ->.<stale bound in Unix microseconds>``."""

    last_id: int
    index: int | None
    stale_bound: datetime

    def token(self) -> str:
        return _token(self.last_id, self.index, _micros(self.stale_bound))

    @classmethod
    def parse(cls, text: str) -> FeedPosition:
        """The position a token names; ``invalid_event_cursor`` for anything else."""
        parts = text.strip().split(".")
        try:
            last_id, index, micros = (whole_number(part) if part != "-" else -1 for part in parts)
            if last_id is None or index is None or micros is None or last_id < 0 or micros < 0:
                raise ValueError(text)
            bound = datetime.fromtimestamp(micros / 1_000_000, tz=UTC)
        except (ValueError, OverflowError, OSError):
            raise InvalidEventCursor(
                f"{text[:80]!r} is not a position of this feed: give the id of the last event "
                "received, as it came."
            ) from None
        return cls(last_id, None if index == -1 else index, bound)


def _micros(bound: datetime) -> int:
    return round(bound.timestamp() * 1_000_000)


def _token(last_id: int, index: int | None, micros: int) -> str:
    return f"{last_id}.{'-' if index is None else index}.{micros}"


class ChangeFeed:
    """A position in the store's changes, and the reads that move it. Not thread-safe: one
    reader (a thread) owns it. ``start`` first, then ``read`` after each change of the store and
    whenever ``seconds_to_deadline`` reaches 0."""

    def __init__(
        self,
        *,
        filters: ChangeFilter | None = None,
        stale_after_seconds: float,
        clock: Clock = system_clock,
    ) -> None:
        self.filters = filters or ChangeFilter()
        self.stale_after = timedelta(seconds=stale_after_seconds)
        self.clock = clock
        self.last_id = 0
        self.started = False
        self._gaps: dict[int, float] = {}  # id skipped over → when first skipped (monotonic)
        self._stale_bound: datetime | None = None
        self._deadline: datetime | None = None
        # After ``resume`` within a row: (row id, its last change already read).
        self._resumed_within: tuple[int, int] | None = None

    def start(self, *, db: Connection) -> None:
        """From now on: the newest history row, the stale bound of this moment."""
        newest = db.execute(select(func.max(_EVENTS.c.id))).scalar()
        self.last_id = int(newest or 0)
        self._stale_bound = self.clock() - self.stale_after
        self._find_deadline(db)
        self.started = True

    def seconds_to_deadline(self) -> float | None:
        """Seconds until the next session goes stale (0: now); None when none will."""
        if self._deadline is None:
            return None
        return max((self._deadline - self.clock()).total_seconds(), 0.0)

    def read(self, *, db: Connection) -> list[Change]:
        """The changes since the position, oldest first, filtered; the position moves past."""
        return [change for change, _position in self.read_positioned(db=db)]

    def read_positioned(self, *, db: Connection) -> list[tuple[Change, str]]:
        """``read``, each change with the position just after it (``FeedPosition.token``): a
        reader that comes back with it (``resume``) gets what follows, nothing twice."""
        if not self.started:
            self.start(db=db)
            return []
        bound = self._stale_bound or self.clock() - self.stale_after
        micros = _micros(bound)  # each change's token is made of it, not of a FeedPosition
        found: list[tuple[Change, str]] = []
        newest = self.last_id
        for row_id, changes in self._history(db):
            newest = max(newest, row_id)
            for index, change in enumerate(changes):
                skipped = self._resumed_within
                if skipped is not None and row_id == skipped[0] and index <= skipped[1]:
                    continue
                # A row of a gap (an id below one already read) is after everything read.
                in_order = row_id == newest
                token = _token(row_id, index, micros) if in_order else _token(newest, None, micros)
                found.append((change, token))
        self._resumed_within = None
        for change, seen in self._gone_stale(db):
            found.append((change, FeedPosition(self.last_id, None, seen + _TICK).token()))
        self._find_deadline(db)
        return [(change, token) for change, token in found if self.filters.admits(change)]

    def resume(self, *, db: Connection, position: FeedPosition) -> None:
        """From just after ``position``: its row's later changes, later rows, and the sessions
        that went stale after its stale bound."""
        if position.index is None:
            self.last_id = position.last_id
            self._resumed_within = None
        else:
            self.last_id = max(position.last_id - 1, 0)
            self._resumed_within = (position.last_id, position.index)
        self._stale_bound = position.stale_bound
        self._find_deadline(db)
        self.started = True

    def position(self) -> FeedPosition:
        """Where the feed is: after every row and every stale session read so far."""
        return FeedPosition(
            self.last_id, None, self._stale_bound or self.clock() - self.stale_after
        )

    def _history(self, db: Connection) -> list[tuple[int, list[Change]]]:
        wanted = and_(true(), *filter_conditions(self.filters.sessions))
        # A reveal (an operator read a masked field) or a launch is history, not a change of the
        # session.
        previous = (
            select(_PREVIOUS.c.payload_json)
            .where(
                _PREVIOUS.c.session_id == _EVENTS.c.session_id,
                _PREVIOUS.c.id < _EVENTS.c.id,
                _PREVIOUS.c.event_type.not_in((*QUIET_EVENTS, *SIDE_EVENTS)),
            )
            .order_by(_PREVIOUS.c.id.desc())
            .limit(1)
            .scalar_subquery()
        )
        found: list[tuple[int, list[Change]]] = []
        # Each session's last row read here, as stored and decoded: it is most often the next
        # row's previous one, decoded once for both (a fleet beats many times between reads).
        last: dict[str, tuple[str | None, dict[str, Any]]] = {}
        self._forget_old_gaps()
        while True:
            after = _EVENTS.c.id > self.last_id
            where = or_(after, _EVENTS.c.id.in_(sorted(self._gaps))) if self._gaps else after
            statement = (
                select(
                    _EVENTS.c.id,
                    _EVENTS.c.session_id,
                    _EVENTS.c.event_type,
                    _EVENTS.c.payload_json,
                    _EVENTS.c.created_at,
                    _EVENTS.c.actor,
                    SESSIONS.c.agent_id,
                    wanted.label("wanted"),
                    previous.label("previous"),
                )
                .select_from(_EVENTS.outerjoin(SESSIONS, SESSIONS.c.id == _EVENTS.c.session_id))
                .where(where)
                .order_by(_EVENTS.c.id)
                .limit(BATCH)
            )
            rows = db.execute(statement).all()
            for row in rows:
                row_id, session_id, event_type, payload, at, by, agent_id, admitted, before_raw = (
                    row
                )
                self._advance(int(row_id))
                if not admitted or event_type in QUIET_EVENTS:
                    continue
                now = _decode(payload)
                if by and "actor" not in now:  # a decision's or a reply's human
                    now["actor"] = by
                known = last.get(session_id)
                if known is not None and known[0] == before_raw:
                    before = known[1]
                else:
                    before = _decode(before_raw)
                last[session_id] = (payload, now)
                changes = changes_of_decoded(
                    session_id=session_id,
                    event_type=event_type,
                    now=now,
                    before=before,
                    at=at,
                    agent_id=agent_id,
                )
                found.append((int(row_id), changes))
            if len(rows) < BATCH:
                return found

    def _advance(self, seen: int) -> None:
        self._gaps.pop(seen, None)
        if seen <= self.last_id:
            return
        now = time.monotonic()
        for skipped in range(self.last_id + 1, min(seen, self.last_id + 1 + MAX_GAPS)):
            if len(self._gaps) >= MAX_GAPS:
                break
            self._gaps[skipped] = now
        self.last_id = seen

    def _forget_old_gaps(self) -> None:
        oldest = time.monotonic() - GAP_SECONDS
        self._gaps = {gap: since for gap, since in self._gaps.items() if since >= oldest}

    def _gone_stale(self, db: Connection) -> list[tuple[Change, datetime]]:
        """The sessions that went stale since the last read, each with the time it was last
        seen (its place on the stale bound)."""
        bound = self.clock() - self.stale_after
        since = self._stale_bound or bound
        self._stale_bound = bound
        if bound <= since:
            return []
        return [
            self._stale_change(session, bound)
            for session in gone_stale(
                db=db, since=since, until=bound, filters=self.filters.sessions, limit=MAX_GAPS
            )
        ]

    def _stale_change(self, session: AgentSession, bound: datetime) -> tuple[Change, datetime]:
        seen = parse_ts(session.last_seen_at) or parse_ts(session.started_at)
        went = seen + self.stale_after if seen is not None else self.clock()
        change = Change(
            at=format_ts(went),
            session_id=session.id,
            change="stale",
            status=session.status,
            previous_status=session.status,
            actor=None,
            reason=f"not seen for {short_duration(self.stale_after.total_seconds())}",
        )
        return change, min(seen, bound) if seen is not None else bound

    def _find_deadline(self, db: Connection) -> None:
        bound = self._stale_bound or self.clock() - self.stale_after
        upcoming = next_to_go_stale(db=db, stale_before=bound, filters=self.filters.sessions)
        if upcoming is None:
            self._deadline = None
            return
        seen = parse_ts(upcoming.last_seen_at) or parse_ts(upcoming.started_at)
        # Stale is "unseen since before now - stale_after": strictly after this instant.
        self._deadline = None if seen is None else seen + self.stale_after + _TICK
        now = self.clock()
        if self._deadline is not None and self._deadline <= now:
            # Python reads its time otherwise than the store does (a form SQL cannot parse,
            # so SQL falls back to its start): fresh to the store, which decides. Look again
            # in a while, not over and over at once.
            self._deadline = now + UNREADABLE_RETRY
