"""What a session list shows and in which order, and the cursors of its keyset pages.

Plain data, no database: ``store.sessions`` turns these into SQL, and the console's list screen
uses them before SQLAlchemy is loaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from store.paging import encode_cursor
from store.records import SessionFields
from store.rules import ACTIVE_STATES

# The columns the text filter looks in (the column ``workspace_id``, not the metadata's).
TEXT_COLUMNS: tuple[str, ...] = (
    "id",
    "agent_id",
    "run_id",
    "adapter",
    "provider",
    "model",
    "status",
    "workspace_id",
)


@dataclass(frozen=True)
class SessionFilter:
    """What a list shows. Every field narrows; the defaults show everything."""

    statuses: tuple[str, ...] = ()
    agent_id: str | None = None
    run_id: str | None = None
    workspace_id: str | None = None
    active_only: bool = False
    # Only active sessions last seen before this instant (the stale ones).
    stale_before: datetime | None = None
    # A part of one of ``TEXT_COLUMNS``, ASCII letters in either case (blank: no filter).
    text: str | None = None


@dataclass(frozen=True)
class FilterSelection:
    """Every session ``filters`` lets through (as the filter was when it was chosen: a stale
    cutoff is an instant), less the sessions in ``excluded``."""

    filters: SessionFilter
    excluded: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Selection:
    """Sessions chosen by id and by filter: a session is selected when its id is in ``ids``, or
    when a filter selection lets it through and does not exclude it. Held as filters, not as the
    ids they stand for: a selection of a million sessions is a few values. ``store.matching``
    decides it for a session in hand, ``store.sessions.selection_condition`` in SQL."""

    ids: frozenset[str] = frozenset()
    by_filter: tuple[FilterSelection, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.ids or self.by_filter)


def countable_total(filters: SessionFilter, counts: Mapping[str, int]) -> int | None:
    """How many sessions ``filters`` lets through, when the counts by status say it (no filter,
    statuses, active only); None when only a count in SQL can say."""
    narrowed = filters.agent_id or filters.run_id or filters.workspace_id
    if narrowed or filters.stale_before is not None or (filters.text or "").strip():
        return None
    statuses = filters.statuses or tuple(counts)
    if filters.active_only:
        statuses = tuple(status for status in statuses if status in ACTIVE_STATES)
    return sum(counts.get(status, 0) for status in set(statuses))


SORT_COLUMNS: tuple[str, ...] = ("started", "last_seen", "status", "agent")


@dataclass(frozen=True)
class SessionOrder:
    """A list's sort: one of ``SORT_COLUMNS`` and a direction. The reference order (ascending
    start, then id) is the default; ties in status or agent fall back to it.

    ``last_seen``: sessions never seen (or with unreadable text) come first ascending, last
    descending, in id order."""

    column: str = "started"
    descending: bool = False

    def __post_init__(self) -> None:
        if self.column not in SORT_COLUMNS:
            raise ValueError(f"Sessions cannot be sorted by {self.column!r}.")

    def flipped(self) -> SessionOrder:
        return SessionOrder(self.column, not self.descending)


DEFAULT_ORDER = SessionOrder()


@dataclass(frozen=True)
class SortKey:
    """One sort key: a column, compared chronologically when it holds timestamp text."""

    column: str
    timestamp: bool = False


STARTED_KEY = SortKey("started_at", timestamp=True)
ID_KEY = SortKey("id")
# Each order follows an index: (ts_key(started_at), id), (status, ts_key(started_at), id), ...
ORDER_KEYS: dict[str, tuple[SortKey, ...]] = {
    "started": (STARTED_KEY, ID_KEY),
    "last_seen": (SortKey("last_seen_at", timestamp=True), ID_KEY),
    "status": (SortKey("status"), STARTED_KEY, ID_KEY),
    "agent": (SortKey("agent_id"), STARTED_KEY, ID_KEY),
}
# On PostgreSQL the two timestamp keys of agent_sessions are stored generated columns (migration
# 0006): PostgreSQL would otherwise compute rt_ts_key for every row an OFFSET passes.
PG_STORED_KEYS: dict[str, str] = {"started_at": "rt_started_key", "last_seen_at": "rt_seen_key"}
# Orders whose leading key may be NULL: the NULL rows form a segment of their own, read apart,
# because the dialects disagree on where NULL sorts and a comparison never matches NULL.
NULLABLE_LEAD = frozenset({"last_seen"})

_CURSOR_KIND = "sessions"


def cursor_kind(order: SessionOrder) -> str:
    # A cursor is a position in its column's order, valid in either direction; the reference
    # order keeps the kind and form the CLI has always issued.
    return _CURSOR_KIND if order.column == "started" else f"{_CURSOR_KIND}.{order.column}"


def session_cursor(session: SessionFields, order: SessionOrder | None = None) -> str:
    """The cursor of this session's position in ``order``: ``list_sessions`` continues after
    it, ``list_sessions_before`` before it."""
    order = order or DEFAULT_ORDER
    values = [getattr(session, key.column) for key in ORDER_KEYS[order.column]]
    return encode_cursor(cursor_kind(order), *values)
