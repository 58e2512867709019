"""What was told to whom, until it is answered (issue 44; migration 0021's ``push_told``).

- **Told** (``record_told``): a row per receiver as the news leaves — the devices (``DEVICES``:
  those that are told are those that want it and may read the session, found again to close
  it) or a webhook (``webhook:`` its URL's hash) — with ``about``, what the news was of: the
  wait's start (``needs_you``) or the turn's words (``turn_done``).
- **Answered** (``still_holds``, ``take_answered``): a session that no longer holds that news —
  its request decided, its reply sent, its wait over — has its open rows closed in one
  statement that returns them, so that of several servers one closes the devices' notices and
  tells the webhooks (``answered_how`` says by whom and how, from the session's history).
- **Told again** (``take_due_again``): a wait still open after the notify-again period is taken
  once (``again_at``), never twice.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import NamedTuple

from sqlalchemy import Connection, bindparam, text

from roundtable_console.store.clock import Clock, format_ts, system_clock
from roundtable_console.store.push.subscriptions import FAILED, NEEDS_YOU, TURN_DONE
from roundtable_console.store.records import SessionFields
from roundtable_console.store.requests.records import DECIDED_EVENT, REPLY_EVENT
from roundtable_console.store.safety.display import one_line

# Every device told of a piece of news, as one receiver: a row per device would hold the store's
# writer for a thousand rows each time (the fleet's heartbeats wait on it).
DEVICES = "push:devices"
WEBHOOK = "webhook:"
# Session ids looked up per statement.
LOOKUP_BATCH = 500
# Answered news is kept this long (what a device was told), any other a week.
SEEN_FOR = timedelta(days=1)

_INSERT = text(
    "INSERT INTO push_told (id, receiver, session_id, kind, about, told_at, title, body, url,"
    " again_at) VALUES (:id, :receiver, :session_id, :kind, :about, :told_at, :title, :body,"
    " :url, :again_at)"
)
_OPEN_OF = text(
    "SELECT session_id, kind, about, min(told_at) FROM push_told"
    " WHERE answered_at IS NULL AND session_id IN :ids GROUP BY session_id, kind, about"
).bindparams(bindparam("ids", expanding=True))
_ANSWER = text(
    "UPDATE push_told SET answered_at = :now, answered_how = :how"
    " WHERE session_id = :session_id AND kind = :kind AND about = :about"
    " AND answered_at IS NULL RETURNING receiver"
)
_DUE_AGAIN = text(
    "SELECT session_id, about, min(told_at) FROM push_told WHERE answered_at IS NULL"
    " AND again_at IS NULL AND kind = 'needs_you' AND told_at <= :due"
    " GROUP BY session_id, about ORDER BY session_id LIMIT 200"
)
_TAKE_AGAIN = text(
    "UPDATE push_told SET again_at = :now WHERE session_id = :session_id AND kind = 'needs_you'"
    " AND about = :about AND answered_at IS NULL AND again_at IS NULL RETURNING receiver"
)
_OLD = text("DELETE FROM push_told WHERE told_at < :before AND answered_at IS NOT NULL")
_FORGOTTEN = text("DELETE FROM push_told WHERE told_at < :long_before")
# An operator's action or an agent's end, by its history event, in the follow-up's words.
_ACTS = {"paused": "paused", "stopped": "stopped", "resuming": "resumed",
         "terminated": "terminated", "ended": "ended"}  # fmt: skip
# The acts that answer a session: the last of them since the news was told says how.
_LAST_ACT = text(
    "SELECT event_type, actor, payload_json FROM agent_session_events"
    " WHERE session_id = :session_id AND created_at >= :since AND event_type IN :answering"
    # An agent's own heartbeat says how only when nothing else did (it often follows the act).
    " ORDER BY CASE WHEN event_type = 'heartbeat' AND actor IS NULL THEN 1 ELSE 0 END,"
    " id DESC LIMIT 1"
).bindparams(
    bindparam("answering", value=[DECIDED_EVENT, REPLY_EVENT, *_ACTS, "heartbeat"], expanding=True)
)


class Open(NamedTuple):
    """A session's news still open on some receiver."""

    session_id: str
    kind: str
    about: str
    told_at: str  # when it was first told


def about_of(session: SessionFields, kind: str) -> str | None:
    """What ``session``'s news of ``kind`` is about now; None when it holds none."""
    if kind == NEEDS_YOU:
        waiting = session.waiting
        return None if waiting is None else waiting.since
    if kind == TURN_DONE:
        return session.turn_done
    if kind == FAILED:  # until it is resumed, or seen again
        if session.status == "failed":
            return f"failed:{session.ended_at or session.last_seen_at}"
        return f"stale:{session.last_seen_at}"
    return None


def still_holds(session: SessionFields | None, told: Open) -> bool:
    """Whether the news ``told`` is still the session's: it still waits (a decision that moves
    its wait to its next request leaves it waiting), or its turn is the one told."""
    if session is None:
        return False
    if told.kind == NEEDS_YOU:
        return session.waiting is not None
    return about_of(session, told.kind) == told.about


def record_told(
    db: Connection,
    *,
    receivers: Iterable[str],
    session_id: str,
    kind: str,
    about: str,
    title: str,
    body: str,
    url: str,
    again: bool = False,
    clock: Clock = system_clock,
) -> None:
    """``again``: told as a wait still unanswered (an escalation webhook's first word), never
    told again after."""
    now = format_ts(clock())
    rows = [
        {"id": uuid.uuid4().hex, "receiver": receiver, "session_id": session_id, "kind": kind,
         "about": about, "told_at": now, "title": title, "body": body, "url": url,
         "again_at": now if again else None}
        for receiver in receivers
    ]  # fmt: skip
    if rows:
        db.execute(_INSERT, rows)


def open_news(db: Connection, session_ids: Sequence[str]) -> list[Open]:
    """The news still open of these sessions."""
    found: list[Open] = []
    unique = sorted(set(session_ids))
    for start in range(0, len(unique), LOOKUP_BATCH):
        batch = unique[start : start + LOOKUP_BATCH]
        found.extend(Open(*row) for row in db.execute(_OPEN_OF, {"ids": batch}))
    return found


def take_answered(
    db: Connection, told: Open, *, how: str, clock: Clock = system_clock
) -> list[str]:
    """Close ``told`` on every receiver; the receivers this call closed it on (none when
    another server did first)."""
    values = {"session_id": told.session_id, "kind": told.kind, "about": told.about,
              "now": format_ts(clock()), "how": how}  # fmt: skip
    return [row[0] for row in db.execute(_ANSWER, values)]


def due_again(db: Connection, *, after: timedelta, clock: Clock = system_clock) -> list[Open]:
    """Waits told at least ``after`` ago, still open, not told again."""
    due = format_ts(clock() - after)
    return [
        Open(session_id, NEEDS_YOU, about, told_at)
        for session_id, about, told_at in db.execute(_DUE_AGAIN, {"due": due})
    ]


def take_again(db: Connection, told: Open, *, clock: Clock = system_clock) -> list[str]:
    """The receivers of ``told`` this call tells again (none when another server did)."""
    values = {"session_id": told.session_id, "about": told.about, "now": format_ts(clock())}
    return [row[0] for row in db.execute(_TAKE_AGAIN, values)]


def answered_how(db: Connection, told: Open) -> tuple[str | None, str]:
    """Who answered ``told`` and how, in words, from the session's last act since it was
    told."""
    values = {"session_id": told.session_id, "since": told.told_at}
    row = db.execute(_LAST_ACT, values).one_or_none()
    if row is None:
        return None, "no longer waits" if told.kind == NEEDS_YOU else "went on"
    event_type, actor, payload_json = row
    try:
        payload = json.loads(payload_json or "{}")
    except ValueError:
        payload = {}
    payload = payload if isinstance(payload, dict) else {}
    by = one_line(actor, 80) if isinstance(actor, str) and actor else None
    if event_type == DECIDED_EVENT:
        decision = payload.get("decision") or payload.get("state")
        how = {"allow": "allowed", "deny": "denied", "expired": "expired",
               "withdrawn": "withdrawn by the agent"}.get(str(decision), "decided")  # fmt: skip
    elif event_type == REPLY_EVENT:
        how = "replied to"
    elif event_type == "heartbeat":
        how = "the agent went on" if by is None else "answered"
    else:
        how = _ACTS.get(event_type, "answered")
    return by, how


def tidy_told(db: Connection, *, clock: Clock = system_clock) -> None:
    """Answered news older than a day, and any older than a week, are dropped."""
    now = clock()
    db.execute(_OLD, {"before": format_ts(now - SEEN_FOR)})
    db.execute(_FORGOTTEN, {"long_before": format_ts(now - 7 * SEEN_FOR)})
