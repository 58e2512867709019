"""The fleet at a glance (issue 10 point 4): the aggregates the console's overview shows, each
read from a table the triggers keep or a bounded walk of an index, never a scan of the sessions.

- sessions by status: ``session_status_counts`` (migration 0004);
- why sessions need a human: the attention order's segments (``store.listing``), counted on its
  index up to a cap, the statuses outside the vocabulary and the paused and stopped ones exactly
  from the status counts;
- usage per agent and per run: ``session_usage_totals`` (migration 0009), the leaders by tokens
  or cost and the rest summed;
- sessions started per hour over the last day: a range of the start index, counted per hour;
- a session's heartbeats per hour over the last day: its newest history rows, at most
  ``HISTORY_CAP`` of them, counted per hour in SQL.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import Connection, func, literal, select

from store.clock import format_ts
from store.database import Store
from store.listing import (
    HELD_STATES,
    HELD_TIER,
    LIVE_TIER,
    UNKNOWN_TIER,
    WAITING_TIER,
    AttentionSegment,
    attention_tier,
)
from store.models import AgentSessionEvent, SessionUsageTotal
from store.sessions import SESSIONS, count_by_status, count_in_segment
from store.sqlfuncs import hours_after, ts_key

_TOTALS = SessionUsageTotal.__table__  # type: ignore[attr-defined]
_EVENTS = AgentSessionEvent.__table__  # type: ignore[attr-defined]

Grouping = Literal["agent", "run"]
Measure = Literal["tokens", "cost"]
USAGE_GROUPINGS: tuple[Grouping, ...] = ("agent", "run")
USAGE_MEASURES: tuple[Measure, ...] = ("tokens", "cost")
# The attention bars count a segment on the index up to this many sessions ("100,000+").
ATTENTION_COUNT_CAP = 100_000
TOP_GROUPS = 5
HOURS = 24
# A session's heartbeat sparkline reads at most its newest this many history rows: a session
# beating every second writes 86,400 a day.
HISTORY_CAP = 100_000


def usage_amounts(usage: Any) -> tuple[float, float] | None:
    """A session's (tokens, cost) from its ``metadata.usage``, None without a usage object:
    tokens are ``total_tokens`` when it is a number, else ``input_tokens`` + ``output_tokens``;
    cost is ``cost_usd``, else ``cost``. Migration 0009's triggers apply the same rule in SQL."""
    if not isinstance(usage, Mapping):
        return None

    def number(key: str) -> float | None:
        value = usage.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value) if math.isfinite(value) else None

    total = number("total_tokens")
    tokens = (
        total
        if total is not None
        else (number("input_tokens") or 0.0) + (number("output_tokens") or 0.0)
    )
    cost = number("cost_usd")
    if cost is None:
        cost = number("cost")
    return tokens, cost or 0.0


@dataclass(frozen=True)
class AttentionCount:
    """Sessions that need a human for one reason; ``capped``: there are at least that many."""

    reason: str
    sessions: int
    capped: bool = False


@dataclass(frozen=True)
class UsageTotal:
    """The usage of one agent or run (``name``), or of several summed (``groups`` of them)."""

    name: str | None
    sessions: int
    tokens: float
    cost: float
    groups: int = 1


@dataclass(frozen=True)
class UsageBars:
    """The agents or runs with the most tokens or cost, the rest summed, and the whole."""

    grouping: Grouping
    measure: Measure
    leaders: list[UsageTotal]
    rest: UsageTotal | None
    total: UsageTotal


@dataclass(frozen=True)
class Overview:
    at: datetime
    statuses: dict[str, int]
    attention: list[AttentionCount]
    usage: dict[tuple[Grouping, Measure], UsageBars] = field(default_factory=dict)
    # Sessions started in each of the last ``HOURS`` hours, the oldest hour first.
    started: list[int] = field(default_factory=list)


def attention_counts(
    *,
    db: Connection,
    stale_before: datetime,
    statuses: Mapping[str, int] | None = None,
    cap: int = ATTENTION_COUNT_CAP,
) -> list[AttentionCount]:
    """Why sessions need a human, by the attention order's reasons: waiting for a human, a
    status outside the vocabulary, stale while live (the header's count), then paused or
    stopped. ``statuses``: the counts by status, when already read."""
    counts = count_by_status(db=db) if statuses is None else statuses
    waiting = count_in_segment(
        db=db, segment=AttentionSegment(WAITING_TIER), stale_before=stale_before, cap=cap
    )
    stale = count_in_segment(
        db=db,
        segment=AttentionSegment(LIVE_TIER, stale=True),
        stale_before=stale_before,
        cap=cap,
    )
    unknown = sum(
        count
        for status, count in counts.items()
        if attention_tier(status, waiting=False) == UNKNOWN_TIER
    )
    # A paused session that waits for a human is counted as waiting.
    held_waiting = count_in_segment(
        db=db,
        segment=AttentionSegment(WAITING_TIER),
        stale_before=stale_before,
        cap=cap,
        statuses=HELD_STATES,
    )
    held = sum(
        count
        for status, count in counts.items()
        if attention_tier(status, waiting=False) == HELD_TIER
    )
    return [
        AttentionCount("waiting for a human", waiting, waiting >= cap),
        AttentionCount("unknown status", unknown),
        AttentionCount("stale (not seen)", stale, stale >= cap),
        AttentionCount("paused or stopped", max(held - held_waiting, 0), held_waiting >= cap),
    ]


def usage_bars(
    *, db: Connection, grouping: Grouping, measure: Measure, top: int = TOP_GROUPS
) -> UsageBars:
    """The ``top`` agents or runs with the most ``measure``, the rest summed, and the whole,
    from the usage totals the triggers keep (a row per agent or run)."""
    columns = (_TOTALS.c.group_key, _TOTALS.c.sessions, _TOTALS.c.tokens, _TOTALS.c.cost)
    ranked = _TOTALS.c[measure]
    rows = db.execute(
        select(*columns)
        .where(_TOTALS.c.grouping == grouping, _TOTALS.c.sessions > 0)
        .order_by(ranked.desc(), _TOTALS.c.group_key)
        .limit(top)
    ).all()
    leaders = [
        UsageTotal(str(key), int(n), float(tokens), float(cost)) for key, n, tokens, cost in rows
    ]
    whole = db.execute(
        select(
            func.count(),
            func.coalesce(func.sum(_TOTALS.c.sessions), 0),
            func.coalesce(func.sum(_TOTALS.c.tokens), 0),
            func.coalesce(func.sum(_TOTALS.c.cost), 0),
        ).where(_TOTALS.c.grouping == grouping, _TOTALS.c.sessions > 0)
    ).one()
    groups, sessions, tokens, cost = int(whole[0]), int(whole[1]), float(whole[2]), float(whole[3])
    total = UsageTotal(None, sessions, tokens, cost, groups)
    rest = None
    if groups > len(leaders):
        rest = UsageTotal(
            None,
            sessions - sum(item.sessions for item in leaders),
            max(tokens - sum(item.tokens for item in leaders), 0.0),
            max(cost - sum(item.cost for item in leaders), 0.0),
            groups - len(leaders),
        )
    return UsageBars(grouping, measure, leaders, rest, total)


def _per_hour(rows: Sequence[Any], hours: int) -> list[int]:
    found = [0] * hours
    for hour, count in rows:
        if hour is not None and hour >= 0:
            found[min(int(hour), hours - 1)] += int(count)
    return found


def started_per_hour(*, db: Connection, now: datetime, hours: int = HOURS) -> list[int]:
    """Sessions started in each of the last ``hours`` hours, the oldest hour first (a session
    started after ``now``, by a clock ahead of ours, counts in the last hour): a range of the
    start index, whatever form the start time was written in."""
    since = ts_key(literal(format_ts(now - timedelta(hours=hours))))
    started = ts_key(SESSIONS.c.started_at)
    hour = hours_after(started, since)
    rows = db.execute(select(hour, func.count()).where(started >= since).group_by(hour)).all()
    return _per_hour(rows, hours)


def heartbeats_per_hour(
    *,
    db: Connection,
    session_id: str,
    now: datetime,
    hours: int = HOURS,
    cap: int = HISTORY_CAP,
) -> list[int]:
    """The session's heartbeats in each of the last ``hours`` hours, the oldest hour first,
    counted in SQL over at most its newest ``cap`` history rows (by the (session_id, id)
    index), however long its history."""
    newest = (
        select(_EVENTS.c.event_type, _EVENTS.c.created_at)
        .where(_EVENTS.c.session_id == session_id)
        .order_by(_EVENTS.c.id.desc())
        .limit(cap)
        .subquery()
    )
    since = ts_key(literal(format_ts(now - timedelta(hours=hours))))
    at = ts_key(newest.c.created_at)
    hour = hours_after(at, since)
    rows = db.execute(
        select(hour, func.count())
        .where(newest.c.event_type == "heartbeat", at >= since)
        .group_by(hour)
    ).all()
    return _per_hour(rows, hours)


def read_overview(
    *, db: Connection, now: datetime, stale_after: timedelta, top: int = TOP_GROUPS
) -> Overview:
    """Everything the overview shows, in the caller's read transaction (one snapshot)."""
    statuses = count_by_status(db=db)
    return Overview(
        at=now,
        statuses=statuses,
        attention=attention_counts(db=db, stale_before=now - stale_after, statuses=statuses),
        usage={
            (grouping, measure): usage_bars(db=db, grouping=grouping, measure=measure, top=top)
            for grouping in USAGE_GROUPINGS
            for measure in USAGE_MEASURES
        },
        started=started_per_hour(db=db, now=now),
    )


def fleet_overview(*, store: Store, now: datetime, stale_after: timedelta) -> Overview:
    """``read_overview`` in a read transaction of its own: what the console's worker calls."""
    with store.read() as db:
        return read_overview(db=db, now=now, stale_after=stale_after)


def session_heartbeats(*, store: Store, session_id: str, now: datetime) -> list[int]:
    """``heartbeats_per_hour`` in a read transaction of its own."""
    with store.read() as db:
        return heartbeats_per_hour(db=db, session_id=session_id, now=now)
