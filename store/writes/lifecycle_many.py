"""A plain lifecycle action (heartbeat, pause, stop: no check of its own, no key required) on
many sessions at once, in a few statements for them all, as ``store.writes.bulk_run`` applies a
batch: the same checks, refusals and rows as ``store.writes.lifecycle`` writes for each session
alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, select, tuple_, update

from roundtable_console.store import errors
from roundtable_console.store.access.walls import OPEN, Wall
from roundtable_console.store.clock import Clock, format_ts, system_clock
from roundtable_console.store.db.models import AgentSession
from roundtable_console.store.db.session_rows import SESSIONS, as_session
from roundtable_console.store.reads.sessions import get_session
from roundtable_console.store.writes.history import append_events
from roundtable_console.store.writes.lifecycle import RULES, Rule, Written, refuse_illegal, swapped
from roundtable_console.store.writes.lifecycle_keys import find_keys, record_keys, replayed
from roundtable_console.store.writes.lifecycle_outcomes import ActionOutcome

# The actions whose rule alone decides (no check of their own, no key required): many sessions
# can be applied in a few statements (``apply_many``), as store.writes.bulk_run does.
PLAIN_ACTIONS = frozenset({"heartbeat", "pause", "stop"})


@dataclass(frozen=True)
class Applied:
    """What ``apply_many`` did to a session: its ``outcome`` (applied, or replayed), or its
    refusal (``error``; ``status``: the session's status when the status rule refused it), or
    neither when the row changed between the batch's read and its update: the caller then
    applies that session alone, which judges it as it is now."""

    outcome: ActionOutcome | None = None
    error: errors.StoreError | None = None
    status: str | None = None


_ALONE = Applied()


def apply_many(
    *,
    db: Connection,
    action: str,
    requests: Sequence[tuple[str, str | None]],
    actor: str,
    clock: Clock = system_clock,
    wall: Wall = OPEN,
) -> dict[str, Applied]:
    """``action`` (one of ``PLAIN_ACTIONS``, the operator's heartbeat setting no status) on each
    ``(session id, idempotency key or None)`` of ``requests`` (each session once, each key its
    own), in the caller's transaction: exactly what ``store.writes.lifecycle._apply`` does for
    each of them one after the other, the same checks in the same order with the same refusals,
    writing the same rows (each table's in the order of ``requests``), in a few statements for
    them all: the keys read, the rows read, one compare-and-swap update of every row the action
    applies to, then the history, the runs' events and the keys, each table's rows in one
    ``executemany``. The time is read once, for them all. ``wall``: the actor's reach, whose
    beyond is not found (``store.access.walls``).

    Every refusal is decided before the first write. A write that fails raises
    ``BatchInterrupted`` (``store.writes.lifecycle_keys``; the transaction must be rolled back);
    any other error of the store is raised as it is."""
    if action not in PLAIN_ACTIONS:
        raise ValueError(f"{action!r} checks more than its rule: apply it one session at a time")
    rule = RULES[action]
    done: dict[str, Applied] = {}
    requests = [(session_id, (key or "").strip() or None) for session_id, key in requests]
    keys = {key: session_id for session_id, key in requests if key}
    if keys:
        for row in find_keys(db, list(keys)):
            session_id = keys[row.key]
            try:
                done[session_id] = Applied(replayed(row, row.key, action, session_id))
            except errors.StoreError as error:
                done[session_id] = Applied(error=error)
    wanted = [session_id for session_id, _key in requests if session_id not in done]
    read = {}
    if wanted:
        statement = select(SESSIONS).where(SESSIONS.c.id.in_(wanted))
        read = {row.id: as_session(row._mapping) for row in db.execute(statement)}
    applies: list[AgentSession] = []
    for session_id in wanted:
        session = read.get(session_id)
        try:
            if session is None:
                get_session(db=db, session_id=session_id)  # refuses, in its own words
                done[session_id] = _ALONE  # written since the batch's read
                continue
            wall.checked(session)
            refuse_illegal(action, session)
        except errors.StoreError as error:
            status = None if session is None else session.status
            done[session_id] = Applied(error=error, status=status)
            continue
        applies.append(session)
    if applies:
        _write_many(db, rule, applies, dict(requests), actor, format_ts(clock()), done)
    return {session_id: done[session_id] for session_id, _key in requests}


def _write_many(
    db: Connection,
    rule: Rule,
    sessions: list[AgentSession],
    keys: dict[str, str | None],
    actor: str,
    now: str,
    done: dict[str, Applied],
) -> None:
    """The compare-and-swap of ``store.writes.lifecycle._apply`` for every session at once, then
    what each one writes besides."""
    read = [(session.id, session.version) for session in sessions]
    statement = (
        update(SESSIONS)
        .where(
            SESSIONS.c.id.in_([session_id for session_id, _ in read]),
            tuple_(SESSIONS.c.id, SESSIONS.c.version).in_(read),
        )
        .values(swapped(rule, now))
        .returning(*SESSIONS.c)
    )
    updated = {row.id: as_session(row._mapping) for row in db.execute(statement)}
    written: list[Written] = []
    for session in sessions:
        row = updated.get(session.id)
        if row is None:
            done[session.id] = _ALONE  # changed since it was read
            continue
        outcome = ActionOutcome(action=rule.action, session=row)
        written.append(Written(rule, session, outcome, actor, now))
        done[session.id] = Applied(outcome)
    append_events(db, [w.session_event() for w in written], [w.run_event() for w in written])
    key_rows = [w.key_row(key) for w in written if (key := keys[w.session.id])]
    if key_rows:
        record_keys(db, key_rows, many=True)
