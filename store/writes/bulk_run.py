"""Doing a bulk action (``run_bulk``): each selected session through the lifecycle, in batched
write transactions, each session under a key derived from the run's (``session_key``), the
outcome tallied as it goes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, select

from roundtable_console.store import errors
from roundtable_console.store.access.walls import OPEN, Wall
from roundtable_console.store.clock import Clock, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.session_rows import SESSIONS
from roundtable_console.store.reads.listing import Selection
from roundtable_console.store.reads.sessions import count_selected, get_session
from roundtable_console.store.validation import MAX_LIMIT
from roundtable_console.store.writes.bulk import (
    REPLAYED,
    BulkItem,
    Tally,
    checked_order,
    failed_item,
    redacted_item,
    selected_pages,
    session_key,
    skipped_item,
)
from roundtable_console.store.writes.lifecycle import ACTIONS, key_required
from roundtable_console.store.writes.lifecycle_keys import BatchInterrupted
from roundtable_console.store.writes.lifecycle_many import PLAIN_ACTIONS, apply_many
from roundtable_console.store.writes.lifecycle_outcomes import NOT_DONE_BY_TERMINATE, ActionOutcome

# A run commits after this many sessions or this long, whichever comes first: the write lock
# (SQLite) and the row locks (PostgreSQL) are never held long enough to stall agents' heartbeats.
BATCH_SESSIONS = MAX_LIMIT
BATCH_SECONDS = 0.25
# Heartbeat, pause and stop apply a batch in a few statements
# (store.writes.lifecycle_many.apply_many); False applies every session alone, as resume and
# terminate always are.
SET_BASED = True


@dataclass(frozen=True)
class BulkOutcome:
    """What a bulk run did. ``total``: the sessions selected when it began (a filter's matches
    may change while it runs). A run that was cancelled, or stopped by ``error`` (the database
    became unavailable: the batch in flight was rolled back and its sessions are failed), lists
    only the sessions it reached."""

    action: str
    run_key: str | None
    total: int
    tally: Tally
    cancelled: bool = False
    error: errors.StoreError | None = None

    @property
    def complete(self) -> bool:
        return not self.cancelled and self.error is None

    def to_json(self) -> dict[str, Any]:
        return self.tally.to_json()


def run_bulk(
    *,
    store: Store,
    action: str,
    selection: Selection,
    actor: str,
    order: Sequence[str] | None = None,
    run_key: str | None = None,
    impact_details: str | None = None,
    clock: Clock = system_clock,
    progress: Callable[[int, int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    on_items: Callable[[Sequence[BulkItem]], None] | None = None,
    keep: int | None = None,
    wall: Wall = OPEN,
) -> BulkOutcome:
    """Apply ``action`` to each selected session through the lifecycle function, as ``actor``.

    Keys: with ``run_key``, each session's idempotency key is ``session_key(run_key, id)``, so
    running the same run again replays every session it already did (``done``, code
    "replayed") and applies the rest; without one, no keys are used (refused up front, with
    ``idempotency_key_required``, for an action that needs one: resume, terminate).

    What is applied is decided per session when it is written, not by an earlier plan: a session
    that changed since a plan is judged as it is now (skipped when the status rule no longer
    lets the action apply, failed for any other refusal). No version is expected, so a session
    an agent merely heartbeated since is still acted on; a compare-and-swap that loses a race
    with another writer is retried once, then failed (``session_transition_conflict``). A filter
    is read a keyset page at a time as the run goes, so a session that starts or stops matching
    while it runs may be reached or not (``selected_pages``, which ``order`` is for).

    Transactions: a session's change, its history and its key commit together or not at all, and one
    session's refusal never undoes another's. Heartbeat, pause and stop apply a batch of sessions in
    a few statements (``store.writes.lifecycle_many.apply_many``, which decides every refusal before
    its first write and writes what each session would alone); resume and terminate, which check
    more than the status, apply each session alone, in a SAVEPOINT of its own (on PostgreSQL only
    once a statement has failed, see ``_batch``). Sessions are grouped into transactions of up to
    ``BATCH_SESSIONS`` (applied alone: or ``BATCH_SECONDS``, whichever comes first), so the write
    lock (SQLite) and the rows' locks (PostgreSQL) are never held for long. If a transaction cannot
    commit (the database became unavailable), its sessions are failed with that error, the run
    stops, and ``error`` says why; what earlier transactions committed stays.

    ``progress(done so far, total)`` is called before the first session and after each
    transaction; ``cancelled()`` is asked before each session (the run commits what it did and
    stops); ``on_items`` receives each transaction's items once they are final; ``keep`` bounds
    the items the outcome holds (``Tally``). ``wall``: the caller's reach (``store.access.walls``):
    each session beyond it fails as not found, judged in its own transaction (a session that
    joins another workspace while the run goes is not acted on), and a terminate asks an impact
    text for the claims it sees. Safe to call from a worker thread.
    """
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}")
    order = checked_order(selection, order)
    perform = ACTIONS[action]
    key = (run_key or "").strip() or None
    if key is None and key_required(action):
        raise errors.IdempotencyKeyRequired(
            f"To {action} sessions in bulk, give the run an idempotency key: each session's "
            "key is derived from it, so a retry of the run never applies twice."
        )
    extra: dict[str, Any] = {"wall": wall}
    if action == "terminate":
        extra["impact_details"] = impact_details
    total = _count(store, selection)
    tally = Tally(keep)
    report = progress or (lambda _done, _total: None)
    stop = cancelled or (lambda: False)
    report(0, total)

    def own_key(session_id: str) -> str | None:
        return session_key(key, session_id) if key is not None else None

    def apply(db: Connection, session_id: str, savepoint: bool) -> BulkItem:
        key = own_key(session_id)
        return _apply_one(db, perform, action, session_id, actor, key, clock, extra, savepoint)

    def apply_set(db: Connection, session_ids: list[str], savepoint: bool) -> list[BulkItem]:
        requests = [(session_id, own_key(session_id)) for session_id in session_ids]
        applied = apply_many(
            db=db, action=action, requests=requests, actor=actor, clock=clock, wall=wall
        )
        items = []
        for session_id in session_ids:
            found = applied[session_id]
            if found.outcome is not None:
                items.append(_done(found.outcome))
            elif isinstance(found.error, errors.IllegalSessionTransition):
                items.append(skipped_item(session_id, action, found.status or ""))
            elif found.error is not None:
                items.append(failed_item(session_id, found.error))
            else:  # changed since the batch read it: judged again alone, as it is now
                items.append(apply(db, session_id, savepoint))
        return items

    many = apply_set if SET_BASED and action in PLAIN_ACTIONS else None

    chunks = _run_chunks(store, selection, order)
    while True:
        try:
            chunk = next(chunks, None)
        except errors.StoreError as error:  # the next page of a filter could not be read
            return BulkOutcome(action, key, total, tally, error=error)
        if chunk is None:
            break
        pending = list(reversed(chunk))
        while pending:
            if stop():
                return BulkOutcome(action, key, total, tally, cancelled=True)
            batch, error = _batch(store, pending, apply, many, stop)
            for item in batch:
                tally.add(item)
            if on_items is not None and batch:
                on_items(batch)
            report(tally.total, max(total, tally.total))
            if error is not None:
                return BulkOutcome(action, key, total, tally, error=error)
    return BulkOutcome(action, key, total, tally)


def _count(store: Store, selection: Selection) -> int:
    """How many sessions the run is for: each id chosen by itself (a session or not), and each
    session a filter lets through."""
    if not selection.by_filter:
        return len(selection.ids)
    with store.read() as db:
        found = count_selected(db=db, selection=selection)
        ids = sorted(selection.ids)
        for start in range(0, len(ids), MAX_LIMIT):
            chunk = ids[start : start + MAX_LIMIT]
            known = db.execute(select(SESSIONS.c.id).where(SESSIONS.c.id.in_(chunk))).all()
            found += len(chunk) - len(known)
    return found


def _run_chunks(
    store: Store, selection: Selection, order: tuple[str, ...] | None
) -> Iterator[list[str]]:
    """The selected ids a page at a time. Ids alone need no read; a filter's pages are read
    each in its own short read transaction, between the run's write transactions."""
    if not selection.by_filter:
        ids = order if order is not None else tuple(sorted(selection.ids))
        for start in range(0, len(ids), BATCH_SESSIONS):
            yield list(ids[start : start + BATCH_SESSIONS])
        return
    for page in selected_pages(store.read, selection, size=BATCH_SESSIONS):
        yield [session_id for session_id, _row in page]


class _TransactionLost(Exception):
    """A statement failed in a session run without a savepoint, and PostgreSQL aborted the
    whole transaction with it."""


# Applies a batch of sessions at once (store.writes.lifecycle_many.apply_many), given whether a
# session applied alone takes a savepoint.
ApplyMany = Callable[[Connection, list[str], bool], list[BulkItem]]


def _batch(
    store: Store,
    pending: list[str],
    apply: Callable[[Connection, str, bool], BulkItem],
    many: ApplyMany | None,
    stop: Callable[[], bool],
) -> tuple[list[BulkItem], errors.StoreError | None]:
    """One write transaction over sessions taken from the end of ``pending``, until the batch is
    full, its time is up or the run is cancelled.

    With ``many`` (heartbeat, pause, stop) the batch is applied in a few statements for all its
    sessions, which write exactly what each would alone; a session whose row changed between
    the batch's read and its update is applied alone. Otherwise each session is applied alone.

    On PostgreSQL the sessions first run without a savepoint each: there a savepoint costs two
    round trips and makes every trigger of the row's update cost about twice as much, and it
    protects nothing, since every refusal of a lifecycle action comes before its first write
    (``store.writes.lifecycle._apply``) and a failed statement aborts the whole transaction,
    which is seen. Then (and whenever a write of ``many`` fails) the batch is rolled back and its
    sessions run again, each alone in a savepoint."""
    taken: list[str] = []
    try:
        try:
            return _run_batch(store, pending, taken, apply, many, stop, careful=False), None
        except (_TransactionLost, BatchInterrupted):
            pending.extend(reversed(taken))
            taken.clear()
            return _run_batch(store, pending, taken, apply, None, stop, careful=True), None
    except errors.StoreError as error:
        # Nothing of this transaction was committed: each of its sessions failed with it.
        return [failed_item(session_id, error) for session_id in taken], error


def _run_batch(
    store: Store,
    pending: list[str],
    taken: list[str],
    apply: Callable[[Connection, str, bool], BulkItem],
    many: ApplyMany | None,
    stop: Callable[[], bool],
    *,
    careful: bool,
) -> list[BulkItem]:
    savepoints = careful or store.dialect != "postgresql"
    items: list[BulkItem] = []
    with store.write(durable=True) as db:
        if many is not None:
            while pending and len(taken) < BATCH_SESSIONS:
                if taken and stop():
                    break
                taken.append(pending.pop())
            return many(db, taken, savepoints)
        deadline = time.monotonic() + BATCH_SECONDS
        while pending and len(taken) < BATCH_SESSIONS and time.monotonic() < deadline:
            if taken and stop():
                break
            taken.append(pending.pop())
            items.append(apply(db, taken[-1], savepoints))
    return items


def _apply_one(
    db: Connection,
    perform: Callable[..., ActionOutcome],
    action: str,
    session_id: str,
    actor: str,
    key: str | None,
    clock: Clock,
    extra: dict[str, Any],
    savepoint: bool,
) -> BulkItem:
    """One session in the run's transaction, in a SAVEPOINT of its own with ``savepoint``: a
    refusal then rolls back only what that session wrote."""
    for attempt in (1, 2):
        try:
            with _savepoint(db) if savepoint else _watched(db):
                outcome = perform(
                    db=db,
                    session_id=session_id,
                    actor=actor,
                    idempotency_key=key,
                    clock=clock,
                    **extra,
                )
        except errors.IllegalSessionTransition:
            status = get_session(db=db, session_id=session_id).status
            return skipped_item(session_id, action, status)
        except errors.SessionTransitionConflict as error:
            if attempt == 1:
                continue  # another writer won a race for the row: judge it again as it is now
            return failed_item(session_id, error)
        except errors.StoreError as error:
            return failed_item(session_id, error)
        return _done(outcome)
    raise AssertionError("unreachable")  # pragma: no cover


@contextmanager
def _savepoint(db: Connection) -> Iterator[None]:
    """A SAVEPOINT sent straight to the DBAPI connection: ``Connection.begin_nested`` compiles
    and runs its statements through SQLAlchemy, a fifth of a bulk pause's time on its own. The
    statements are the same; nothing else holds on to this savepoint's state."""
    raw = db.connection.driver_connection
    _run_raw(raw, "SAVEPOINT rt_bulk_session")
    try:
        yield
    except BaseException:
        try:
            _run_raw(raw, "ROLLBACK TO SAVEPOINT rt_bulk_session")
        except Exception:  # noqa: BLE001 - the connection is lost; the first error says why
            pass
        raise
    _run_raw(raw, "RELEASE SAVEPOINT rt_bulk_session")


@contextmanager
def _watched(db: Connection) -> Iterator[None]:
    """No savepoint (PostgreSQL): a refusal is passed on as it is when the transaction is still
    usable, and turned into ``_TransactionLost`` when a failed statement aborted it."""
    try:
        yield
    except errors.StoreError as error:
        from psycopg import pq

        status = db.connection.driver_connection.info.transaction_status  # type: ignore[union-attr]
        if status == pq.TransactionStatus.INERROR:
            raise _TransactionLost() from error
        raise


def _run_raw(raw: Any, statement: str) -> None:
    cursor = raw.cursor()
    try:
        cursor.execute(statement)
    finally:
        cursor.close()


def _done(outcome: ActionOutcome) -> BulkItem:
    session = outcome.session
    state = f"{session.status!r} (version {session.version})"
    notes = [note for note in outcome.notes if note != NOT_DONE_BY_TERMINATE]
    if outcome.replayed:
        message = f"already done under this run's key (replayed, not applied again): {state}"
        code: str | None = REPLAYED
    else:
        message = f"{outcome.action}: now {state}"
        code = None
    return redacted_item(session.id, "done", code, " ".join([message, *notes]))
