"""The fleet at a glance (issue 10 point 4): the aggregates the console's overview shows, each
read from a table the triggers keep or a bounded walk of an index, never a scan of the sessions.

- sessions by status: ``session_status_counts`` (migration 0004);
- why sessions need a human: the attention order's segments (``store.reads.listing``), counted
  on its index up to a cap, the statuses outside the vocabulary and the paused and stopped ones
  exactly from the status counts;
- usage per agent and per run: ``session_usage_totals`` (migration 0009), the leaders by tokens
  or cost and the rest summed;
- sessions started per hour over the last 24 clock hours: a range of the start index, counted
  per hour in SQL;
- a session's heartbeats per hour over the same hours: the day's rows of its history, found by
  a binary search on the (session_id, id) index, counted per hour in SQL (a session beating
  every second writes 86,400 a day; none of them is fetched).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from sqlalchemy import Connection, func, literal, select

from roundtable_console.store.budgets.limits import Budget
from roundtable_console.store.budgets.standing import (
    BudgetState,
    budget_states,
    state_from,
    state_json,
)
from roundtable_console.store.clock import format_ts, parse_ts
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.models import AgentSessionEvent, SessionUsageTotal
from roundtable_console.store.db.session_rows import SESSIONS
from roundtable_console.store.reads.keyset import count_by_status
from roundtable_console.store.reads.listing import (
    HELD_STATES,
    HELD_TIER,
    LIVE_TIER,
    UNKNOWN_TIER,
    WAITING_TIER,
    AttentionSegment,
    attention_tier,
)
from roundtable_console.store.reads.sessions import count_in_segment
from roundtable_console.store.reads.sqlfuncs import hours_after, ts_key

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
    # Counted in "need attention" (the list header's count): every reason but paused or stopped.
    needs_human: bool = True


@dataclass(frozen=True)
class UsageTotal:
    """The usage of one agent or run (``name``), or of several summed (``groups`` of them)."""

    name: str | None
    sessions: int
    tokens: float
    cost: float
    groups: int = 1

    def amount(self, measure: Measure) -> float:
        return self.tokens if measure == "tokens" else self.cost


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
    # The configured budgets, where each stands now (store.budgets).
    budgets: list[BudgetState] = field(default_factory=list)


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
        AttentionCount(
            "paused or stopped", max(held - held_waiting, 0), held_waiting >= cap, False
        ),
    ]


def usage_bars(
    *, db: Connection, grouping: Grouping, measure: Measure, top: int = TOP_GROUPS
) -> UsageBars:
    """The ``top`` agents or runs with the most ``measure``, the rest summed, and the whole,
    from the usage totals the triggers keep (a row per agent or run). A rest of one is shown
    by its name: a bar that says "1 other" would hide it in the space it takes."""
    columns = (_TOTALS.c.group_key, _TOTALS.c.sessions, _TOTALS.c.tokens, _TOTALS.c.cost)
    ranked = _TOTALS.c[measure]
    rows = db.execute(
        select(*columns)
        .where(_TOTALS.c.grouping == grouping, _TOTALS.c.sessions > 0)
        .order_by(ranked.desc(), _TOTALS.c.group_key)
        .limit(top + 1)
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
    if groups > len(leaders):
        leaders = leaders[:top]
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


def day_start(now: datetime, hours: int = HOURS) -> datetime:
    """The start of the first of the last ``hours`` clock hours, the current one last."""
    return now.astimezone(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(
        hours=hours - 1
    )


def _per_hour(rows: Sequence[Any], hours: int) -> list[int]:
    found = [0] * hours
    for hour, count in rows:
        if hour is not None and hour >= 0:
            found[min(int(hour), hours - 1)] += int(count)
    return found


def started_per_hour(*, db: Connection, now: datetime, hours: int = HOURS) -> list[int]:
    """Sessions started in each of the last ``hours`` clock hours, the oldest first (a session
    started after ``now``, by a clock ahead of ours, counts in the last hour): a range of the
    start index, whatever form the start time was written in."""
    since = ts_key(literal(format_ts(day_start(now, hours))))
    started = ts_key(SESSIONS.c.started_at)
    hour = hours_after(started, since)
    rows = db.execute(select(hour, func.count()).where(started >= since).group_by(hour)).all()
    return _per_hour(rows, hours)


def _first_event_since(db: Connection, session_id: str, since: datetime) -> int | None:
    """The smallest id from which the session's history rows are all at ``since`` or later
    (None: none is): a binary search over ids by the (session_id, id) index, a few dozen
    one-row reads however long the history. History is appended, so its times grow with its
    ids; a row written out of order is counted by where its id puts it."""
    events = _EVENTS.c
    ends = db.execute(
        select(func.min(events.id), func.max(events.id)).where(events.session_id == session_id)
    ).one()
    if ends[0] is None:
        return None

    def recent(at_least: int) -> bool:
        created = db.execute(
            select(events.created_at)
            .where(events.session_id == session_id, events.id >= at_least)
            .order_by(events.id)
            .limit(1)
        ).scalar_one()
        moment = parse_ts(created)
        return moment is not None and moment >= since

    low, high = int(ends[0]), int(ends[1])
    if not recent(high):
        return None
    while low < high:
        middle = (low + high) // 2
        if recent(middle):
            high = middle
        else:
            low = middle + 1
    return low


def _clock_hour(prefix: str | None) -> datetime | None:
    """``YYYY-MM-DDTHH`` (or with a space, the ``CURRENT_TIMESTAMP`` form) as a UTC hour."""
    if not prefix or len(prefix) != 13:
        return None
    return parse_ts(f"{prefix[:10]}T{prefix[11:13]}:00:00Z")


def heartbeats_per_hour(
    *, db: Connection, session_id: str, now: datetime, hours: int = HOURS
) -> list[int]:
    """The session's heartbeats in each of the last ``hours`` clock hours, the oldest first,
    counted in SQL by the hour written at the head of each timestamp (every form the
    reference writes is UTC): only the rows of that day are read, found by their ids."""
    start = day_start(now, hours)
    first = _first_event_since(db, session_id, start)
    if first is None:
        return [0] * hours
    events = _EVENTS.c
    prefix = func.substr(events.created_at, 1, 13)
    rows = db.execute(
        select(prefix, func.count())
        .where(
            events.session_id == session_id,
            events.id >= first,
            events.event_type == "heartbeat",
        )
        .group_by(prefix)
    ).all()
    found = [0] * hours
    for text_hour, count in rows:
        hour = _clock_hour(text_hour)
        if hour is None:
            continue
        index = int((hour - start) / timedelta(hours=1))
        if index >= 0:
            found[min(index, hours - 1)] += int(count)
    return found


def read_overview(
    *,
    db: Connection,
    now: datetime,
    stale_after: timedelta,
    top: int = TOP_GROUPS,
    budgets: Sequence[Budget] = (),
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
        budgets=budget_states(db, budgets, now),
    )


def fleet_overview(
    *, store: Store, now: datetime, stale_after: timedelta, budgets: Sequence[Budget] = ()
) -> Overview:
    """``read_overview`` in a read transaction of its own: what the console's worker calls."""
    with store.read() as db:
        return read_overview(db=db, now=now, stale_after=stale_after, budgets=budgets)


def session_heartbeats(*, store: Store, session_id: str, now: datetime) -> list[int]:
    """``heartbeats_per_hour`` in a read transaction of its own."""
    with store.read() as db:
        return heartbeats_per_hour(db=db, session_id=session_id, now=now)


def overview_json(overview: Overview) -> dict[str, Any]:
    """The overview as a server sends it (``overview_from`` reads it back)."""
    return {
        "at": format_ts(overview.at),
        "statuses": dict(overview.statuses),
        "attention": [asdict(count) for count in overview.attention],
        "usage": [asdict(bars) for bars in overview.usage.values()],
        "started": list(overview.started),
        "budgets": [state_json(state) for state in overview.budgets],
    }


def overview_from(body: Mapping[str, Any]) -> Overview:
    """An overview a server sent (``overview_json``'s)."""

    def total(value: Mapping[str, Any]) -> UsageTotal:
        return UsageTotal(**value)

    usage: dict[tuple[Grouping, Measure], UsageBars] = {}
    for value in body.get("usage", []):
        bars = UsageBars(
            grouping=value["grouping"], measure=value["measure"],
            leaders=[total(leader) for leader in value["leaders"]],
            rest=None if value.get("rest") is None else total(value["rest"]),
            total=total(value["total"]),
        )  # fmt: skip
        usage[(bars.grouping, bars.measure)] = bars
    at = parse_ts(str(body["at"]))
    if at is None:
        raise ValueError("an overview's time is a UTC time")
    return Overview(
        at=at,
        statuses={str(status): int(count) for status, count in body["statuses"].items()},
        attention=[AttentionCount(**count) for count in body.get("attention", [])],
        usage=usage,
        started=[int(count) for count in body.get("started", [])],
        budgets=[state_from(state) for state in body.get("budgets", [])],
    )
