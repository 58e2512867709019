"""One lifecycle action on many sessions, for the CLI's repeated ``--session`` /
``--all-matching`` and the console's marks: what it would do (``store.writes.bulk_plan.
plan_bulk``) and doing it (``store.writes.bulk_run.run_bulk``). Here, what both are made of: the
sessions a selection holds, read a page at a time (``selected_pages``), each session's item and
the tally of them, and the key a run derives for each session (``session_key``).

What they act on is a ``store.reads.listing.Selection``: ids chosen one by one, and filters (less
the ids each excludes), as the console's marks hold them (``screens.list.marks``) and as the CLI
builds them. Its sessions are read a keyset page at a time, by id (``store.reads.sessions.
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
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Row, select

from roundtable_console.store import errors
from roundtable_console.store.db.session_rows import SESSIONS
from roundtable_console.store.reads.listing import Selection
from roundtable_console.store.reads.sessions import selection_condition
from roundtable_console.store.rules import ALLOWED_FROM
from roundtable_console.store.safety.redaction import redact_text
from roundtable_console.store.validation import MAX_LIMIT
from roundtable_console.store.writes.lifecycle import result_status

OUTCOMES: tuple[str, ...] = ("done", "skipped", "failed")
REPLAYED = "replayed"
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


def redacted_item(session_id: str, outcome: str, code: str | None, message: str) -> BulkItem:
    return BulkItem(session_id, outcome, code, redact_text(message))


def failed_item(session_id: str, error: errors.StoreError) -> BulkItem:
    return redacted_item(session_id, "failed", error.code, error.message)


def skipped_item(session_id: str, action: str, status: str) -> BulkItem:
    return redacted_item(
        session_id, "skipped", errors.IllegalSessionTransition.code, skip_reason(action, status)
    )


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


def checked_order(selection: Selection, order: Sequence[str] | None) -> tuple[str, ...] | None:
    """``order`` each id once; it must name exactly the ids of a selection of ids alone."""
    if order is None:
        return None
    ordered = tuple(dict.fromkeys(order))
    if selection.by_filter or set(ordered) != selection.ids:
        raise ValueError("an order names exactly the ids of a selection of ids alone")
    return ordered
