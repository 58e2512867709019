"""One lifecycle action on many sessions: what it would do (``plan_bulk``) and doing it
(``run_bulk``), for the CLI's repeated ``--session`` / ``--all-matching`` and the console's
marks.

What they act on is a ``store.reads.listing.Selection``: ids chosen one by one, and filters (less
the ids each excludes), as the console's marks hold them (``screens.marks``) and as the CLI builds
them. Its sessions are read a keyset page at a time, by id (``store.reads.sessions.
selection_condition``), never all at once; a selection of ids alone may be given an ``order`` (the
CLI's ``--session`` order). An id chosen by itself that no session has is a session too: it fails,
``session_not_found``.

Nothing here decides whether an action may apply to a session. ``plan_bulk`` asks the status
rule (``store.rules``) and, to terminate, the agents' claims (``store.reads.claims``), as the
lifecycle will; ``run_bulk`` calls the lifecycle function itself for each session
(``store.writes.lifecycle.ACTIONS``), which checks everything again at the moment it writes.

Each session ends up with one item ``{session_id, outcome, code, message}``:

- ``done``: applied (``code`` None), or already applied under this run's key and replayed
  (``code`` "replayed": nothing was written again);
- ``skipped``: the status rule says the action does not apply to the session as it is
  (``code`` "illegal_session_transition", ``message`` "already paused", or the status and the
  rule in ``store.rules.ALLOWED_FROM``'s words);
- ``failed``: any other refusal, with the lifecycle's code and sentence (``session_not_found``,
  ``termination_impact_required``, ``agent_unavailable``, ``idempotency_key_reuse``, …).

Messages are redacted like any text shown from the store. ``BulkItem.reason`` says why in words
shared by every session it applies to ("already paused", "no session has that id"), and a
``Tally`` counts the skipped and failed by reason, so a preview or an outcome can say "12
skipped: already paused".
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Row, select

from roundtable_console.store import errors
from roundtable_console.store.clock import Clock, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.models import AgentSession, IdempotencyKey
from roundtable_console.store.db.session_rows import SESSIONS, as_session
from roundtable_console.store.reads.claims import ActiveClaim, active_claims
from roundtable_console.store.reads.listing import Selection
from roundtable_console.store.reads.sessions import count_selected, get_session, selection_condition
from roundtable_console.store.rules import ALLOWED_FROM, is_allowed
from roundtable_console.store.safety.redaction import redact_text
from roundtable_console.store.validation import MAX_LIMIT
from roundtable_console.store.writes.lifecycle import ACTIONS, key_required, result_status
from roundtable_console.store.writes.lifecycle_keys import BatchInterrupted
from roundtable_console.store.writes.lifecycle_many import PLAIN_ACTIONS, apply_many
from roundtable_console.store.writes.lifecycle_outcomes import (
    NOT_DONE_BY_TERMINATE,
    ActionOutcome,
    TerminationImpact,
)

_KEYS = IdempotencyKey.__table__  # type: ignore[attr-defined]

OUTCOMES: tuple[str, ...] = ("done", "skipped", "failed")
REPLAYED = "replayed"
# What the console shows of a plan before its counts.
PREVIEW_ITEMS = 20
# A run commits after this many sessions or this long, whichever comes first: the write lock
# (SQLite) and the row locks (PostgreSQL) are never held long enough to stall agents' heartbeats.
BATCH_SESSIONS = MAX_LIMIT
BATCH_SECONDS = 0.25
# Heartbeat, pause and stop apply a batch in a few statements
# (store.writes.lifecycle_many.apply_many); False applies every session alone, as resume and
# terminate always are.
SET_BASED = True
# Claims named in one message; the rest are counted.
_CLAIMS_NAMED = 5
# Why a session failed, by the refusal's code, in the words its error class gives itself.
FAILURE_REASONS: dict[str, str] = {
    kind.code: (kind.__doc__ or kind.code).rstrip(".")
    for kind in errors.StoreError.__subclasses__()
}
REPLAY_REASON = "already done under this run's key (replayed, not applied again)"


@dataclass(frozen=True)
class BulkItem:
    session_id: str
    outcome: str  # one of OUTCOMES
    code: str | None
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "outcome": self.outcome,
            "code": self.code,
            "message": self.message,
        }

    @property
    def reason(self) -> str | None:
        """Why, in words that do not name the session (None: done, nothing to say): a skip's
        rule ("already paused"), a failure's kind ("No session has that id"), a replay."""
        if self.outcome == "skipped":
            return self.message
        if self.outcome == "failed":
            return FAILURE_REASONS.get(self.code or "", self.message)
        return REPLAY_REASON if self.code == REPLAYED else None


@dataclass
class Tally:
    """Counts by outcome and by reason, and the items: all of them, or with ``keep`` the first
    ``keep`` of each outcome (in the order they came), so a preview of a million sessions stays
    small."""

    keep: int | None = None
    items: list[BulkItem] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    # (outcome, reason): how many, for every item with a reason (BulkItem.reason).
    reasons: dict[tuple[str, str], int] = field(default_factory=dict)

    def add(self, item: BulkItem) -> None:
        self.counts[item.outcome] += 1
        if self.keep is None or self.counts[item.outcome] <= self.keep:
            self.items.append(item)
        reason = item.reason
        if reason is not None:
            key = (item.outcome, reason)
            self.reasons[key] = self.reasons.get(key, 0) + 1

    def by_reason(self, outcome: str) -> list[tuple[str, int]]:
        """The reasons of ``outcome``'s items with their counts, the most frequent first."""
        found = [(reason, n) for (kind, reason), n in self.reasons.items() if kind == outcome]
        return sorted(found, key=lambda pair: (-pair[1], pair[0]))

    @property
    def done(self) -> int:
        return self.counts["done"]

    @property
    def skipped(self) -> int:
        return self.counts["skipped"]

    @property
    def failed(self) -> int:
        return self.counts["failed"]

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def to_json(self) -> dict[str, Any]:
        """The CLI's shape: ``{"items": [...], "done": n, "skipped": n, "failed": n}``."""
        return {"items": [item.to_json() for item in self.items], **self.counts}


@dataclass(frozen=True)
class BulkPlan:
    """What a bulk action would do, judged on one snapshot; nothing was written.

    ``claims``: to terminate, the active claims (expired ones included, marked) of each agent
    whose sessions the action applies to, for agents holding any."""

    action: str
    tally: Tally
    claims: Mapping[str, tuple[ActiveClaim, ...]] = field(default_factory=dict)

    @property
    def requires_impact_details(self) -> bool:
        return any(self.claims.values())

    def to_json(self) -> dict[str, Any]:
        return {**self.tally.to_json(), "dry_run": True}


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


def session_key(run_key: str, session_id: str) -> str:
    """The idempotency key of one session of a bulk run: a digest of the run's key and the
    session id, so a retry of the run finds every session's key again, two runs never share
    one, and no run key and session id can be arranged to collide with another pair."""
    digest = hashlib.sha256(json.dumps([run_key, session_id]).encode()).hexdigest()
    return f"bulk:{digest}"


def skip_reason(action: str, status: str) -> str:
    """Why ``action`` does not apply to a session in ``status``, in the rule's own words."""
    if status == result_status(action):
        return f"already {status}"
    return f"status {status!r}: {action} is allowed {ALLOWED_FROM[action][1]}"


def _item(session_id: str, outcome: str, code: str | None, message: str) -> BulkItem:
    return BulkItem(session_id, outcome, code, redact_text(message))


def _failed(session_id: str, error: errors.StoreError) -> BulkItem:
    return _item(session_id, "failed", error.code, error.message)


def _skipped(session_id: str, action: str, status: str) -> BulkItem:
    return _item(
        session_id, "skipped", errors.IllegalSessionTransition.code, skip_reason(action, status)
    )


def _not_found(session_id: str) -> BulkItem:
    return _item(
        session_id,
        "failed",
        errors.SessionNotFound.code,
        f"No session has the id {session_id!r}.",
    )


# ------------------------------------------------------------------------------------- plan


def plan_bulk(
    *,
    store: Store,
    action: str,
    selection: Selection,
    order: Sequence[str] | None = None,
    impact_details: str | None = None,
    run_key: str | None = None,
    clock: Clock = system_clock,
    keep: int | None = PREVIEW_ITEMS,
) -> BulkPlan:
    """What ``run_bulk`` would do now with the same arguments, from one snapshot: per session,
    done, skipped (the status rule) or failed (unknown; to terminate, an agent holding claims
    and no ``impact_details``; with ``run_key``, a session already done under it is a replay,
    and its key used otherwise a reuse). Resume's agent and branch checks are made only when it
    runs. ``keep``: the items kept of each outcome (None: all); the counts cover every session.
    ``order``: see ``selected_pages``.
    """
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}")
    order = _checked_order(selection, order)
    details = (impact_details or "").strip()
    key = (run_key or "").strip() or None
    tally = Tally(keep)
    claims: dict[str, tuple[ActiveClaim, ...]] = {}
    with store.read() as db:

        def claims_of(agent_id: str) -> tuple[ActiveClaim, ...]:
            if agent_id not in claims:
                claims[agent_id] = tuple(active_claims(db=db, agent_id=agent_id, now=clock()))
            return claims[agent_id]

        for page in selected_pages(lambda: nullcontext(db), selection, order, rows=True):
            used = _used_keys(db, key, [session_id for session_id, _ in page])
            for session_id, row in page:
                session = None if row is None else as_session(row._mapping)
                tally.add(
                    _judge(action, session_id, session, used.get(session_id), details, claims_of)
                )
    held = {agent: found for agent, found in claims.items() if found}
    return BulkPlan(action=action, tally=tally, claims=held)


# Reads one page of a selection: a connection, for as long as the page is read.
OpenRead = Callable[[], AbstractContextManager[Connection]]


def selected_pages(
    read: OpenRead,
    selection: Selection,
    order: Sequence[str] | None = None,
    *,
    rows: bool = False,
    size: int = MAX_LIMIT,
) -> Iterator[list[tuple[str, Row[Any] | None]]]:
    """The sessions ``selection`` holds, ``size`` at a time, each read through a connection of
    its own from ``read`` (the run reads each page in a short transaction between its writes;
    the plan reads them all in one). Each id comes with its row (``rows``: every column, else
    the id alone), or None for an id chosen by itself that no session has.

    A selection of ids alone goes in ``order`` (every id once), else by id. A selection with
    filters goes by id, in keyset pages over ``selection_condition``: a session that starts or
    stops matching while the pages are read is reached or not, each at most once; its ids
    chosen by themselves that no session has come last."""
    columns = tuple(SESSIONS.c) if rows else (SESSIONS.c.id,)
    if not selection.by_filter:
        ids = tuple(order) if order is not None else tuple(sorted(selection.ids))
        for start in range(0, len(ids), size):
            wanted = ids[start : start + size]
            with read() as db:
                found = {
                    row.id: row
                    for row in db.execute(select(*columns).where(SESSIONS.c.id.in_(wanted)))
                }
            yield [(session_id, found.get(session_id)) for session_id in wanted]
        return
    condition, after = selection_condition(selection), None
    seen: set[str] = set()
    while True:
        statement = select(*columns).where(condition)
        if after is not None:
            statement = statement.where(SESSIONS.c.id > after)
        with read() as db:
            page = db.execute(statement.order_by(SESSIONS.c.id).limit(size)).all()
        seen.update(row.id for row in page if row.id in selection.ids)
        if page:
            yield [(row.id, row) for row in page]
        if len(page) < size:
            break
        after = page[-1].id
    absent = sorted(selection.ids - seen)
    for start in range(0, len(absent), size):
        yield [(session_id, None) for session_id in absent[start : start + size]]


def _checked_order(selection: Selection, order: Sequence[str] | None) -> tuple[str, ...] | None:
    """``order`` each id once; it must name exactly the ids of a selection of ids alone."""
    if order is None:
        return None
    ordered = tuple(dict.fromkeys(order))
    if selection.by_filter or set(ordered) != selection.ids:
        raise ValueError("an order names exactly the ids of a selection of ids alone")
    return ordered


def _used_keys(
    db: Connection, run_key: str | None, session_ids: Sequence[str]
) -> dict[str, tuple[str, str]]:
    """For each session whose derived key is already recorded: (action, session id) it holds."""
    if run_key is None or not session_ids:
        return {}
    keys = {session_key(run_key, session_id): session_id for session_id in session_ids}
    rows = db.execute(
        select(_KEYS.c.key, _KEYS.c.action, _KEYS.c.session_id).where(_KEYS.c.key.in_(keys))
    ).all()
    return {keys[row.key]: (row.action, row.session_id) for row in rows}


def _judge(
    action: str,
    session_id: str,
    session: AgentSession | None,
    used: tuple[str, str] | None,
    details: str,
    claims_of: Callable[[str], tuple[ActiveClaim, ...]],
) -> BulkItem:
    """One session's planned outcome, in the order the lifecycle checks: key, row, status,
    then terminate's claims."""
    if used is not None:
        if used == (action, session_id):
            return _item(
                session_id, "done", REPLAYED, "already done under this run's key: it would be "
                "replayed, not applied again",
            )  # fmt: skip
        return _item(
            session_id,
            "failed",
            errors.IdempotencyKeyReuse.code,
            f"This run's key for session {session_id!r} was already used to {used[0]} it; "
            "use a new key for this run.",
        )
    if session is None:
        return _not_found(session_id)
    if not is_allowed(action, session.status):
        return _skipped(session_id, action, session.status)
    message = f"would {action} (status {session.status!r})"
    if action == "terminate":
        impact = TerminationImpact(session=session, claims=list(claims_of(session.agent_id)))
        if impact.requires_details:
            held = _claims_text(session.agent_id, impact.claims)
            if not details:
                return _item(
                    session_id,
                    "failed",
                    errors.TerminationImpactRequired.code,
                    f"{held[0].upper()}{held[1:]}; describe the impact of terminating "
                    "(impact details) before you confirm.",
                )
            message += f"; {held}"
    return _item(session_id, "done", None, message)


def _claims_text(agent_id: str, claims: Sequence[ActiveClaim]) -> str:
    named = ", ".join(claim.resource_id for claim in claims[:_CLAIMS_NAMED])
    more = f" and {len(claims) - _CLAIMS_NAMED} more" if len(claims) > _CLAIMS_NAMED else ""
    return f"agent {agent_id!r} holds {len(claims)} active claim(s): {named}{more}"


# -------------------------------------------------------------------------------------- run


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
    the items the outcome holds (``Tally``). Safe to call from a worker thread.
    """
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}")
    order = _checked_order(selection, order)
    perform = ACTIONS[action]
    key = (run_key or "").strip() or None
    if key is None and key_required(action):
        raise errors.IdempotencyKeyRequired(
            f"To {action} sessions in bulk, give the run an idempotency key: each session's "
            "key is derived from it, so a retry of the run never applies twice."
        )
    extra: dict[str, Any] = {"impact_details": impact_details} if action == "terminate" else {}
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
        applied = apply_many(db=db, action=action, requests=requests, actor=actor, clock=clock)
        items = []
        for session_id in session_ids:
            found = applied[session_id]
            if found.outcome is not None:
                items.append(_done(found.outcome))
            elif isinstance(found.error, errors.IllegalSessionTransition):
                items.append(_skipped(session_id, action, found.status or ""))
            elif found.error is not None:
                items.append(_failed(session_id, found.error))
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
        return [_failed(session_id, error) for session_id in taken], error


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
            return _skipped(session_id, action, status)
        except errors.SessionTransitionConflict as error:
            if attempt == 1:
                continue  # another writer won a race for the row: judge it again as it is now
            return _failed(session_id, error)
        except errors.StoreError as error:
            return _failed(session_id, error)
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
    return _item(session.id, "done", code, " ".join([message, *notes]))
