"""Calls for a host held by another server of the store (``host_calls``, migration 0020): the
server asked writes one (``ask``), the server holding the host takes the open ones for its hosts
(``take``) and writes each answer (``answer``), and the asker reads it (``answer_of``). Each
write is one transaction of the caller's. A call past its time is taken by nobody; calls are
pruned an hour after their time, as another is asked.

Answers are the host's own shapes (``store.hosts.protocol``): ``{"ok": …}``, ``{"unavailable":
REASON}`` or ``{"refused": REASON}``.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Collection
from datetime import timedelta
from typing import Any, NamedTuple

from sqlalchemy import Connection, text

from roundtable_console.store.clock import Clock, format_ts, system_clock

KEPT_AFTER = timedelta(hours=1)

_ASK = text(
    "INSERT INTO host_calls (id, host, op, args_json, asked_at, expires_at)"
    " VALUES (:id, :host, :op, :args_json, :now, :expires_at)"
)
# Every open call (a few at most: each is answered or past its time within seconds), the
# server's own hosts picked out in Python: a thousand names bound into each look would cost
# more than the rows.
_OPEN = text(
    "SELECT id, host, op, args_json, expires_at FROM host_calls"
    " WHERE answered_at IS NULL AND taken_by IS NULL AND expires_at > :now"
    " ORDER BY asked_at LIMIT :most"
)
_TAKE = text("UPDATE host_calls SET taken_by = :taker WHERE id = :id AND taken_by IS NULL")
_ANSWER = text(
    "UPDATE host_calls SET answer_json = :answer_json, answered_at = :now"
    " WHERE id = :id AND answered_at IS NULL"
)
_ANSWER_OF = text("SELECT answer_json FROM host_calls WHERE id = :id")
_PRUNE = text("DELETE FROM host_calls WHERE expires_at < :before")


class OpenCall(NamedTuple):
    id: str
    host: str
    op: str
    args: Any  # an object, as asked (``take`` keeps those only)
    expires_at: str


def ask(
    db: Connection,
    host: str,
    op: str,
    args: dict[str, Any],
    *,
    seconds: float,
    clock: Clock = system_clock,
) -> str:
    """A call for ``host``, answered within ``seconds`` or not at all; its id."""
    now = clock()
    call_id = secrets.token_hex(12)
    db.execute(_PRUNE, {"before": format_ts(now - KEPT_AFTER)})
    db.execute(
        _ASK,
        {
            "id": call_id,
            "host": host,
            "op": op,
            "args_json": json.dumps(args),
            "now": format_ts(now),
            "expires_at": format_ts(now + timedelta(seconds=seconds)),
        },
    )
    return call_id


def open_for(
    db: Connection, hosts: Collection[str], *, most: int = 16, clock: Clock = system_clock
) -> list[OpenCall]:
    """The calls for ``hosts`` no server has taken, within their time (a read: a server holding
    hosts looks at every change of a busy store, and takes the write lock only to take one)."""
    if not hosts:
        return []
    held = set(hosts)
    found = db.execute(_OPEN, {"now": format_ts(clock()), "most": 4 * most})
    open_calls = []
    for row in found:
        if row.host not in held or len(open_calls) >= most:
            continue
        try:
            args = json.loads(row.args_json)
        except ValueError:
            args = None
        open_calls.append(OpenCall(row.id, row.host, row.op, args, row.expires_at))
    return open_calls


def take(db: Connection, open_calls: list[OpenCall], taker: str) -> list[OpenCall]:
    """Those of ``open_calls`` ``taker`` takes now (another server taking one first keeps it;
    one whose arguments are not an object is answered by nobody)."""
    taken = []
    for call in open_calls:
        if not isinstance(call.args, dict):
            continue
        if db.execute(_TAKE, {"taker": taker, "id": call.id}).rowcount:
            taken.append(call)
    return taken


def answer(
    db: Connection, call_id: str, body: dict[str, Any], *, clock: Clock = system_clock
) -> None:
    db.execute(
        _ANSWER,
        {"id": call_id, "answer_json": json.dumps(body), "now": format_ts(clock())},
    )


def answer_of(db: Connection, call_id: str) -> dict[str, Any] | None:
    """The call's answer once written; None before."""
    raw = db.execute(_ANSWER_OF, {"id": call_id}).scalar()
    if raw is None:
        return None
    try:
        body = json.loads(raw)
    except ValueError:
        return {"unavailable": "The host's answer could not be read."}
    return body if isinstance(body, dict) else {"unavailable": "The host's answer was not one."}
