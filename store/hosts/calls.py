"""Calls for a host held by another server of the store (``host_calls``, migration 0020): the
server asked writes one (``ask``), the server holding the host takes the open ones for its hosts
(``open_for``, then ``take``) and writes each answer (``answer``), and the asker reads it
(``answer_of``) and deletes it (``forget``), or gives it up (``abandon``: taken by nobody after).
Each write is one transaction of the caller's.

Only ``RELAYED`` operations go this way (a reply typed into a pane never does: it is typed inside
the store's write). A call past its time is taken by nobody; one whose time is further away than
any call's (``LONGEST_SECONDS``: a row not written by a server) is left alone; calls past their
time are deleted as another is asked. Answers are the host's own shapes
(``store.hosts.protocol``): ``{"ok": …}``, ``{"unavailable": REASON}`` or ``{"refused": REASON}``.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Collection
from datetime import timedelta
from typing import Any, NamedTuple

from sqlalchemy import Connection, text

from roundtable_console.store.clock import Clock, format_ts, parse_ts, system_clock
from roundtable_console.store.hosts import protocol

RELAYED = frozenset(
    {
        protocol.ACTIVITY,
        protocol.LAUNCH,
        protocol.STOP_AGENT,
        protocol.START,
        protocol.CHANGES,
        protocol.FINISH,
    }
)
LONGEST_SECONDS = 120.0  # no call is asked for longer (a stop's grace, 60 s, and its margin)
ABANDONED = "abandoned"
MARGIN_SECONDS = 1.0  # a call with less time left than this is not begun: its asker gives up

_ASK = text(
    "INSERT INTO host_calls (id, host, op, args_json, asked_at, expires_at)"
    " VALUES (:id, :host, :op, :args_json, :now, :expires_at)"
)
# The open calls (a few at most: each is answered or past its time within seconds), oldest
# first; the server's own hosts are picked out in Python (a thousand names bound into each look
# would cost more than the rows). The partial index of migration 0020 holds these rows only.
_OPEN = text(
    "SELECT id, host, op, args_json, expires_at FROM host_calls"
    " WHERE answered_at IS NULL AND taken_by IS NULL AND expires_at > :now"
    " ORDER BY asked_at LIMIT :most"
)
_TAKE = text(
    "UPDATE host_calls SET taken_by = :taker"
    " WHERE id = :id AND taken_by IS NULL AND expires_at > :now"
)
_ANSWER = text(
    "UPDATE host_calls SET answer_json = :answer_json, answered_at = :now"
    " WHERE id = :id AND taken_by = :taker AND answered_at IS NULL"
)
_ANSWER_OF = text("SELECT answer_json FROM host_calls WHERE id = :id")
_ABANDON = text(
    "UPDATE host_calls SET taken_by = :abandoned, answered_at = :now"
    " WHERE id = :id AND taken_by IS NULL"
)
_FORGET = text("DELETE FROM host_calls WHERE id = :id AND answered_at IS NOT NULL")
_PRUNE = text("DELETE FROM host_calls WHERE expires_at < :now")


class OpenCall(NamedTuple):
    id: str
    host: str
    op: str
    args: Any  # an object, when the row holds one
    expires_at: str

    def answer_unasked(self, clock: Clock = system_clock) -> dict[str, Any] | None:
        """The answer to a call its host is not asked: one no server writes, or one with too
        little time left to be done before its asker gives up; else None (ask it)."""
        if self.op not in RELAYED or not isinstance(self.args, dict):
            return {"refused": "Not a call a host is asked through the store."}
        if self.seconds_left(clock) < MARGIN_SECONDS:
            return {"unavailable": "The call came too late to be done in its time."}
        return None

    def seconds_left(self, clock: Clock = system_clock) -> float:
        expires = parse_ts(self.expires_at)
        return 0.0 if expires is None else (expires - clock()).total_seconds()


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
    if op not in RELAYED or not 0 < seconds <= LONGEST_SECONDS:
        raise ValueError(f"{op!r} is not asked through the store for {seconds} s")
    now = clock()
    call_id = secrets.token_hex(12)
    db.execute(_PRUNE, {"now": format_ts(now)})
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
    now = clock()
    latest = format_ts(now + timedelta(seconds=LONGEST_SECONDS))
    found = db.execute(_OPEN, {"now": format_ts(now), "most": 16 * most})
    open_calls: list[OpenCall] = []
    for row in found:
        if row.host not in held or row.expires_at > latest or len(open_calls) >= most:
            continue
        try:
            args = json.loads(row.args_json)
        except (ValueError, RecursionError):
            args = None
        open_calls.append(OpenCall(row.id, row.host, row.op, args, row.expires_at))
    return open_calls


def take(
    db: Connection, open_calls: list[OpenCall], taker: str, *, clock: Clock = system_clock
) -> list[OpenCall]:
    """Those of ``open_calls`` ``taker`` takes now, within their time (another server taking
    one first keeps it)."""
    now = format_ts(clock())
    return [
        call
        for call in open_calls
        if db.execute(_TAKE, {"taker": taker, "id": call.id, "now": now}).rowcount
    ]


def answer(
    db: Connection,
    call_id: str,
    body: dict[str, Any],
    taker: str,
    *,
    clock: Clock = system_clock,
) -> None:
    """The answer of a call ``taker`` took (once)."""
    db.execute(
        _ANSWER,
        {
            "id": call_id,
            "taker": taker,
            "answer_json": json.dumps(body),
            "now": format_ts(clock()),
        },
    )


def answer_of(db: Connection, call_id: str) -> dict[str, Any] | None:
    """The call's answer once written; None before."""
    raw = db.execute(_ANSWER_OF, {"id": call_id}).scalar()
    if raw is None:
        return None
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        return {"unavailable": "The host's answer could not be read."}
    return body if isinstance(body, dict) else {"unavailable": "The host's answer was not one."}


def abandon(db: Connection, call_id: str, *, clock: Clock = system_clock) -> bool:
    """The asker stops waiting: a call no server has taken is taken by nobody now (False when
    one already has: it may still be done)."""
    done = db.execute(_ABANDON, {"id": call_id, "abandoned": ABANDONED, "now": format_ts(clock())})
    return bool(done.rowcount)


def forget(db: Connection, call_id: str) -> None:
    """The asker has read the answer: the row (a page, a prompt) is not kept."""
    db.execute(_FORGET, {"id": call_id})


def ask_and_wait(
    store: Any,
    host: str,
    op: str,
    args: dict[str, Any],
    *,
    seconds: float,
    clock: Clock = system_clock,
) -> dict[str, Any]:
    """A call for ``host`` from a process that holds no link (the console on the store), and
    its answer once the server or host that holds it has written it (woken by the store's
    change signal); ``{"unavailable": …}`` when none does within ``seconds``. Blocking: for a
    worker thread."""
    import time

    with store.write() as db:
        call_id = ask(db, host, op, args, seconds=seconds, clock=clock)
    deadline = time.monotonic() + seconds
    token = store.change_token()
    while True:
        with store.read() as db:
            answered = answer_of(db, call_id)
        if answered is not None:
            with store.write() as db:
                forget(db, call_id)
            return answered
        left = deadline - time.monotonic()
        if left <= 0:
            with store.write() as db:
                abandon(db, call_id, clock=clock)
            return {
                "unavailable": f"The host {host} did not answer within {seconds:.0f} s: no "
                "server of this store holds it now."
            }
        token = store.wait_for_change(token, min(left, 1.0))
