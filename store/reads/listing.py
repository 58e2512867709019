"""What a session list shows and in which order, and the cursors of its keyset pages.

Plain data, no database: ``store.reads.keyset`` turns these into SQL, and the console's list screen
uses them before SQLAlchemy is loaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from roundtable_console.store.clock import parse_ts
from roundtable_console.store.reads.paging import encode_cursor
from roundtable_console.store.records import ClaimCount, SessionFields
from roundtable_console.store.rules import ACTIVE_STATES, GROUP_COLUMNS, SORT_COLUMNS
from roundtable_console.store.safety.display import one_line, short_duration

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
    "host",
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
    # Only sessions waiting for a human.
    waiting: bool = False
    # Only sessions without a workspace (neither the column nor the metadata names one).
    without_workspace: bool = False
    # Only sessions on this machine (the host their hooks named).
    host: str | None = None


def group_filter(filters: SessionFilter, grouping: str, key: str | None) -> SessionFilter:
    """``filters`` narrowed to one group of a grouped list (``store.rules.GROUP_COLUMNS``; key
    None: the sessions without a workspace): what ``*`` on a group's header marks."""
    if grouping == "agent":
        return replace(filters, agent_id=key)
    if grouping == "run":
        return replace(filters, run_id=key)
    if key is None:
        return replace(filters, workspace_id=None, without_workspace=True)
    return replace(filters, workspace_id=key, without_workspace=False)


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
    ids they stand for: a selection of a million sessions is a few values. ``store.reads.matching``
    decides it for a session in hand, ``store.reads.sessions.selection_condition`` in SQL."""

    ids: frozenset[str] = frozenset()
    by_filter: tuple[FilterSelection, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.ids or self.by_filter)


def countable_total(filters: SessionFilter, counts: Mapping[str, int]) -> int | None:
    """How many sessions ``filters`` lets through, when the counts by status say it (no filter,
    statuses, active only); None when only a count in SQL can say."""
    narrowed = filters.without_workspace or any(
        value is not None
        for value in (filters.agent_id, filters.run_id, filters.workspace_id, filters.host)
    )
    if (
        narrowed
        or filters.stale_before is not None
        or filters.waiting
        or (filters.text or "").strip()
    ):
        return None
    statuses = filters.statuses or tuple(counts)
    if filters.active_only:
        statuses = tuple(status for status in statuses if status in ACTIVE_STATES)
    return sum(counts.get(status, 0) for status in set(statuses))


@dataclass(frozen=True)
class SessionOrder:
    """A list's sort: one of ``SORT_COLUMNS`` and a direction. The reference order (ascending
    start, then id) is the default; ties in status or agent fall back to it. A grouped list is
    read in its group's order (``GROUP_COLUMNS``): ``agent``, ``run`` or ``workspace``, then
    start, then id.

    ``last_seen``: sessions never seen (or with unreadable text) come first ascending, last
    descending, in id order.

    ``attention``: what needs a human first (``ATTENTION_SEGMENTS``). Which live sessions are
    stale depends on the time, so a read in this order needs ``stale_before`` (``at``); it is
    not part of the order's identity."""

    column: str = "started"
    descending: bool = False
    stale_before: datetime | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.column not in SORT_COLUMNS and self.column not in GROUP_COLUMNS:
            raise ValueError(f"Sessions cannot be sorted by {self.column!r}.")

    def flipped(self) -> SessionOrder:
        return replace(self, descending=not self.descending)

    def at(self, stale_before: datetime) -> SessionOrder:
        """This order as read at a time: live sessions seen before ``stale_before`` are stale."""
        return replace(self, stale_before=stale_before)


DEFAULT_ORDER = SessionOrder()


@dataclass(frozen=True)
class SortKey:
    """One sort key: a column, compared chronologically when it holds timestamp text; or a
    key computed in SQL (``store.reads.sqlfuncs.COMPUTED_KEYS``) from the ``sources`` columns."""

    column: str
    timestamp: bool = False
    sources: tuple[str, ...] = ()

    @property
    def columns(self) -> tuple[str, ...]:
        return self.sources or (self.column,)


STARTED_KEY = SortKey("started_at", timestamp=True)
ID_KEY = SortKey("id")
ATTENTION_SOURCES = ("status", "waiting_since", "last_seen_at", "started_at")
ATTENTION_TIER = SortKey("attention_tier", sources=ATTENTION_SOURCES[:2])
ATTENTION_KEY = SortKey("attention_key", sources=ATTENTION_SOURCES)
# A session's workspace: its column, else workspace_id in its metadata (store.reads.sqlfuncs), as
# SQL reads it; a cursor holds both sources, and the database computes the key from them.
WORKSPACE_SOURCES = ("workspace_id", "metadata_json")
WORKSPACE_KEY = SortKey("effective_workspace", sources=WORKSPACE_SOURCES)
# Each order follows an index: (ts_key(started_at), id), (status, ts_key(started_at), id), ...
ORDER_KEYS: dict[str, tuple[SortKey, ...]] = {
    "attention": (ATTENTION_TIER, ATTENTION_KEY, ID_KEY),
    "started": (STARTED_KEY, ID_KEY),
    "last_seen": (SortKey("last_seen_at", timestamp=True), ID_KEY),
    "status": (SortKey("status"), STARTED_KEY, ID_KEY),
    "agent": (SortKey("agent_id"), STARTED_KEY, ID_KEY),
    # The grouped lists' orders (the agent's is the one above).
    "run": (SortKey("run_id"), STARTED_KEY, ID_KEY),
    "workspace": (WORKSPACE_KEY, STARTED_KEY, ID_KEY),
}


@dataclass(frozen=True)
class AttentionSegment:
    """A run of the attention order: one tier, and for live sessions the stale or the fresh
    ones. Within a segment sessions go by attention time (since when they wait, else when they
    were last seen: the longest first), then id; the fresh live ones by start, then id
    (``attention_segment_keys``)."""

    tier: int
    # For the live tier: True holds the stale sessions, False the fresh ones.
    stale: bool | None = None

    @property
    def fresh(self) -> bool:
        return self.tier == LIVE_TIER and self.stale is False


# The attention tiers (store.reads.sqlfuncs.attention_tier; migration 0007 indexes them).
WAITING_TIER, UNKNOWN_TIER, LIVE_TIER, HELD_TIER, FINISHED_TIER = range(5)
# What needs a human first: waiting; a status outside the vocabulary (failed, error …); stale
# live sessions; paused and stopped; fresh live sessions; finished ones.
ATTENTION_SEGMENTS: tuple[AttentionSegment, ...] = (
    AttentionSegment(WAITING_TIER),
    AttentionSegment(UNKNOWN_TIER),
    AttentionSegment(LIVE_TIER, stale=True),
    AttentionSegment(HELD_TIER),
    AttentionSegment(LIVE_TIER, stale=False),
    AttentionSegment(FINISHED_TIER),
)
# The keys within a segment. Fresh live sessions go by start: a heartbeat then moves a row only
# when it changes segment (a stale session seen again), so a fleet's beats leave the rows in
# view where they are. In the others the longest waiting or unseen comes first.
ATTENTION_TIME_KEYS: tuple[SortKey, ...] = (ATTENTION_KEY, ID_KEY)
FRESH_KEYS: tuple[SortKey, ...] = (STARTED_KEY, ID_KEY)


def attention_segment_keys(segment: AttentionSegment) -> tuple[SortKey, ...]:
    return FRESH_KEYS if segment.fresh else ATTENTION_TIME_KEYS


# The segments a session needs a human in (the header counts them, up to ATTENTION_CAP).
NEEDS_ATTENTION: tuple[AttentionSegment, ...] = ATTENTION_SEGMENTS[:3]
ATTENTION_CAP = 1000
LIVE_STATES: tuple[str, ...] = ("starting", "active", "running", "resuming")
HELD_STATES: tuple[str, ...] = ("paused", "stopped")
FINISHED_STATES: tuple[str, ...] = ("ended", "terminated", "completed", "done")


def attention_tier(status: str, waiting: bool) -> int:
    """The tier of a session (store.reads.sqlfuncs.attention_tier, in Python)."""
    if waiting and status in ACTIVE_STATES:
        return WAITING_TIER
    if status in LIVE_STATES:
        return LIVE_TIER
    if status in HELD_STATES:
        return HELD_TIER
    return FINISHED_TIER if status in FINISHED_STATES else UNKNOWN_TIER


def attention_segments(
    filters: SessionFilter, stale_before: datetime | None
) -> tuple[AttentionSegment, ...]:
    """The segments of the attention order that may hold a session ``filters`` lets through:
    a read skips the others, which it would otherwise walk to the end to find nothing."""
    statuses: tuple[str, ...] | None = filters.statuses or None
    if filters.active_only or filters.stale_before is not None or filters.waiting:
        statuses = tuple(s for s in statuses or ACTIVE_STATES if s in ACTIVE_STATES)
    if statuses is None:
        tiers = set(range(FINISHED_TIER + 1))
    else:
        tiers = {attention_tier(status, waiting=False) for status in statuses}
        if any(status in ACTIVE_STATES for status in statuses):
            tiers.add(WAITING_TIER)
    if filters.waiting:
        tiers &= {WAITING_TIER}
    fresh_excluded = (
        filters.stale_before is not None
        and stale_before is not None
        and filters.stale_before <= stale_before
    )
    return tuple(
        segment
        for segment in ATTENTION_SEGMENTS
        if segment.tier in tiers and not (segment.stale is False and fresh_excluded)
    )


# On PostgreSQL the two timestamp keys of agent_sessions are stored generated columns (migration
# 0006): PostgreSQL would otherwise compute rt_ts_key for every row an OFFSET passes.
PG_STORED_KEYS: dict[str, str] = {"started_at": "rt_started_key", "last_seen_at": "rt_seen_key"}
# Orders whose leading key may be NULL: the NULL rows form a segment of their own, read apart,
# because the dialects disagree on where NULL sorts and a comparison never matches NULL.
NULLABLE_LEAD = frozenset({"last_seen", "workspace"})

_CURSOR_KIND = "sessions"


def cursor_kind(order: SessionOrder) -> str:
    # A cursor is a position in its column's order, valid in either direction; the reference
    # order keeps the kind and form the CLI has always issued.
    return _CURSOR_KIND if order.column == "started" else f"{_CURSOR_KIND}.{order.column}"


def cursor_columns(order: SessionOrder) -> tuple[str, ...]:
    """The columns whose values a cursor of ``order`` holds: those its keys are made of."""
    columns: dict[str, None] = {}
    for key in ORDER_KEYS[order.column]:
        columns.update(dict.fromkeys(key.columns))
    return tuple(columns)


def session_cursor(session: SessionFields, order: SessionOrder | None = None) -> str:
    """The cursor of this session's position in ``order``: ``list_sessions`` continues after
    it, ``list_sessions_before`` before it."""
    order = order or DEFAULT_ORDER
    values = [getattr(session, column) for column in cursor_columns(order)]
    return encode_cursor(cursor_kind(order), *values)


def attention_reason(
    session: SessionFields, counts: ClaimCount | None, now: datetime, stale_after: timedelta
) -> str:
    """Why the session is where the attention order puts it, in a few words: "waiting 4m:
    approve deleting build/", "status failed", "turn done 2m: Tests pass.", "stale 12m",
    "paused 3m"; then what its agent
    leaves waiting: "2 claims expired", "3 proposals wait". Empty for a fresh live session or a
    finished one with nothing waiting."""
    parts: list[str] = []
    waiting = session.waiting
    tier = attention_tier(session.status, waiting is not None)
    seen = session.last_seen()
    if waiting is not None:
        parts.append(f"waiting {_age(parse_ts(waiting.since), now)}: {one_line(waiting.reason)}")
    elif tier == UNKNOWN_TIER:
        parts.append(f"status {one_line(session.status, 20)}")
    elif tier == LIVE_TIER and session.turn_done is not None:
        # Below every question (live, not waiting), yet said: it awaits a prompt.
        stale = " (stale)" if session.is_stale(now, stale_after) else ""
        parts.append(f"turn done {_age(seen, now)}{stale}: {one_line(session.turn_done)}")
    elif tier == LIVE_TIER and session.is_stale(now, stale_after):
        parts.append(f"stale {_age(seen, now)}")
    elif tier == HELD_TIER:
        parts.append(f"{session.status} {_age(seen, now)}")
    if counts is not None and counts.expired:
        parts.append(f"{counts.expired} claim{'s' if counts.expired != 1 else ''} expired")
    if counts is not None and counts.proposals:
        many = counts.proposals != 1
        parts.append(f"{counts.proposals} proposal{'s wait' if many else ' waits'}")
    return " · ".join(parts)


def _age(moment: datetime | None, now: datetime) -> str:
    return "?" if moment is None else short_duration((now - moment).total_seconds())
