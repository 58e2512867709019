"""The attention order's two keys as SQL text (store.reads.listing.ATTENTION_SEGMENTS), from a
session's status, waiting_since, last_seen_at and started_at, in that order.

Plain text, no SQLAlchemy: ``store.reads.sqlfuncs`` compiles the keys with it, and the console's
quick first read (``store.reads.first_window``) sorts with it before SQLAlchemy is loaded. Migration
0007 indexes the same expressions on SQLite and stores them as generated columns on PostgreSQL; it
keeps its own copy (tests/test_database.py checks they agree).
"""

from __future__ import annotations

from collections.abc import Callable

from roundtable_console.store.reads.listing import (
    FINISHED_STATES,
    FINISHED_TIER,
    HELD_STATES,
    HELD_TIER,
    LIVE_STATES,
    LIVE_TIER,
    UNKNOWN_TIER,
    WAITING_TIER,
)
from roundtable_console.store.rules import ACTIVE_STATES


def _sql_list(values: tuple[str, ...]) -> str:
    return ", ".join(f"'{value}'" for value in values)


ACTIVE_SQL = _sql_list(ACTIVE_STATES)
PG_ATTENTION_COLUMNS = {"attention_tier": "rt_attention_tier", "attention_key": "rt_attention_key"}


def attention_tier_sql(status: str, waiting_since: str) -> str:
    return (
        f"CASE WHEN {waiting_since} IS NOT NULL AND {status} IN ({ACTIVE_SQL}) THEN {WAITING_TIER}"
        f" WHEN {status} IN ({_sql_list(LIVE_STATES)}) THEN {LIVE_TIER}"
        f" WHEN {status} IN ({_sql_list(HELD_STATES)}) THEN {HELD_TIER}"
        f" WHEN {status} IN ({_sql_list(FINISHED_STATES)}) THEN {FINISHED_TIER}"
        f" ELSE {UNKNOWN_TIER} END"
    )


def attention_key_sql(
    stamp: Callable[[str], str],
    lowest: str,
    status: str,
    waiting_since: str,
    last_seen_at: str,
    started_at: str,
) -> str:
    """``stamp``: the database's ``ts_key`` of a column; ``lowest``: below every time."""
    return (
        f"CASE WHEN {waiting_since} IS NOT NULL AND {status} IN ({ACTIVE_SQL})"
        f" THEN COALESCE({stamp(waiting_since)}, {lowest})"
        f" ELSE COALESCE({stamp(last_seen_at)}, {stamp(started_at)}, {lowest}) END"
    )
