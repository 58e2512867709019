"""Retention: old heartbeat history and old idempotency keys removed, a short transaction at a
time.

Every heartbeat appends a ``heartbeat`` row to ``agent_session_events``; a fleet beating all day
adds millions a day. ``prune_heartbeats`` deletes those older than a cutoff, keeping every other
kind of row and each session's newest heartbeat (the latest sign of life stays in its log). It
walks the table by id range, each range in a write transaction of its own, and sizes the ranges
so that none holds SQLite's write lock for more than a fraction of ``max_lock_seconds``: agents
beating meanwhile wait at most that long, far under their busy timeout.

A row is deleted only while a newer heartbeat of its session exists, checked in the same
statement; rows are only ever appended, so a concurrent writer can never leave a session without
its newest heartbeat.

Every idempotency key an action was given stays in ``idempotency_keys`` so that a retry returns
the first outcome. ``prune_idempotency_keys`` deletes those older than a cutoff, the oldest first
along their age index (migration 0011), a batch a transaction; a key younger than the longest a
client may retry (``RETRY_WINDOW``) is kept whatever the cutoff.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, delete, exists, func, literal, literal_column, select

from roundtable_console.store.clock import Clock, format_ts, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.models import AgentSessionEvent, IdempotencyKey
from roundtable_console.store.reads.sqlfuncs import ts_key

_EVENTS = AgentSessionEvent.__table__  # type: ignore[attr-defined]
_KEYS = IdempotencyKey.__table__  # type: ignore[attr-defined]
_NEWER = _EVENTS.alias("newer")
HEARTBEAT = "heartbeat"

# The longest a batch may hold the write lock, and the share of it a batch aims at (a batch
# costs about what its range holds, so the next range is sized from the last one's time). The
# margin is for a busy machine: a batch preempted by other processes holds the lock longer.
MAX_LOCK_SECONDS = 0.1
_TARGET_SHARE = 0.1
FIRST_BATCH_IDS = 500
MIN_BATCH_IDS = 50
MAX_BATCH_IDS = 200_000


@dataclass(frozen=True)
class PruneReport:
    """What a prune removed (or, with ``dry_run``, would remove) and what it frees."""

    removed: int
    dry_run: bool
    cutoff: str
    batches: int
    # The longest any one batch's transaction took (on SQLite: held the write lock).
    longest_batch_seconds: float
    # The removed rows' size: their text on SQLite, pg_column_size on PostgreSQL.
    row_bytes: int
    # SQLite: the file's free pages (freelist × page size) after the run; None on PostgreSQL.
    free_bytes: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "removed": self.removed,
            "dry_run": self.dry_run,
            "cutoff": self.cutoff,
            "batches": self.batches,
            "longest_batch_ms": round(self.longest_batch_seconds * 1000, 1),
            "row_bytes": self.row_bytes,
            "free_bytes": self.free_bytes,
        }


def _prunable(cutoff: str, low: int, high: int) -> ColumnElement[bool]:
    """Heartbeat rows with ``low <= id < high``, older than ``cutoff``, that a newer heartbeat
    of their session follows (found along the (session_id, id) index). Unreadable timestamps
    are never older than anything: such rows stay."""
    newer = exists().where(
        _NEWER.c.session_id == _EVENTS.c.session_id,
        _NEWER.c.id > _EVENTS.c.id,
        _NEWER.c.event_type == HEARTBEAT,
    )
    return and_(
        _EVENTS.c.id >= low,
        _EVENTS.c.id < high,
        _EVENTS.c.event_type == HEARTBEAT,
        ts_key(_EVENTS.c.created_at) < ts_key(literal(cutoff)),
        newer,
    )


def _row_size(dialect: str) -> ColumnElement[Any]:
    if dialect == "postgresql":
        return literal_column("pg_column_size(agent_session_events.*)")
    columns = (_EVENTS.c.session_id, _EVENTS.c.event_type, _EVENTS.c.payload_json)
    return sum((func.length(column) for column in columns), func.length(_EVENTS.c.created_at))


def prune_heartbeats(
    *,
    store: Store,
    older_than: timedelta,
    dry_run: bool = False,
    clock: Clock = system_clock,
    max_lock_seconds: float = MAX_LOCK_SECONDS,
    first_batch_ids: int = FIRST_BATCH_IDS,
    on_batch: Callable[[int], None] | None = None,
) -> PruneReport:
    """Delete (or, with ``dry_run``, count) the heartbeat rows older than ``older_than`` but
    each session's newest, a range of ids at a time; ``on_batch`` hears each batch's count."""
    cutoff = format_ts(clock() - older_than)
    with store.read() as db:
        low, high = db.execute(select(func.min(_EVENTS.c.id), func.max(_EVENTS.c.id))).one()
    removed = row_bytes = batches = 0
    longest = 0.0
    size = _row_size(store.dialect)
    width = first_batch_ids
    start = int(low) if low is not None else 0
    end = int(high) + 1 if high is not None else 0  # rows appended later are not old
    while start < end:
        stop = min(start + width, end)
        condition = _prunable(cutoff, start, stop)
        if dry_run:
            began = time.perf_counter()
            with store.read() as db:
                sizes = db.execute(select(size).where(condition)).scalars().all()
            elapsed = time.perf_counter() - began
        else:
            with store.write(durable=True) as db:
                began = time.perf_counter()
                sizes = db.execute(delete(_EVENTS).where(condition).returning(size)).scalars().all()
            elapsed = time.perf_counter() - began  # BEGIN IMMEDIATE … COMMIT: the lock held
            _checkpoint(store)
        batches += 1
        longest = max(longest, elapsed)
        removed += len(sizes)
        row_bytes += sum(int(value or 0) for value in sizes)
        if on_batch is not None:
            on_batch(len(sizes))
        start = stop
        width = _next_width(width, elapsed, max_lock_seconds * _TARGET_SHARE)
    return PruneReport(
        removed=removed,
        dry_run=dry_run,
        cutoff=cutoff,
        batches=batches,
        longest_batch_seconds=longest,
        row_bytes=row_bytes,
        free_bytes=_free_bytes(store),
    )


# The longest a client may retry a request with the same idempotency key (a day: a lost answer
# is retried within minutes, a client that was down comes back within hours). Younger keys stay.
RETRY_WINDOW = timedelta(days=1)
KEY_BATCH = 1000


@dataclass(frozen=True)
class KeysPruneReport:
    """What a prune of idempotency keys removed (or would remove)."""

    removed: int
    dry_run: bool
    cutoff: str
    batches: int
    # The age asked for was below the retry window, which was used instead.
    window_kept: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "removed": self.removed,
            "dry_run": self.dry_run,
            "cutoff": self.cutoff,
            "batches": self.batches,
            "kept_younger_than_seconds": int(RETRY_WINDOW.total_seconds()),
        }


def prune_idempotency_keys(
    *,
    store: Store,
    older_than: timedelta,
    dry_run: bool = False,
    clock: Clock = system_clock,
    batch: int = KEY_BATCH,
) -> KeysPruneReport:
    """Delete (or, with ``dry_run``, count) the idempotency keys created before ``older_than``
    ago, or before ``RETRY_WINDOW`` ago when that is earlier, ``batch`` keys a transaction."""
    age = max(older_than, RETRY_WINDOW)
    cutoff = format_ts(clock() - age)
    old = _KEYS.c.created_at < cutoff
    if dry_run:
        with store.read() as db:
            count = db.execute(select(func.count()).select_from(_KEYS).where(old)).scalar_one()
        return KeysPruneReport(int(count), True, cutoff, 0, age != older_than)
    removed = batches = 0
    while True:
        oldest = select(_KEYS.c.key).where(old).order_by(_KEYS.c.created_at).limit(batch)
        with store.write(durable=True) as db:
            gone = db.execute(delete(_KEYS).where(_KEYS.c.key.in_(oldest.scalar_subquery())))
        batches += 1
        removed += int(gone.rowcount or 0)
        if (gone.rowcount or 0) < batch:
            break
    return KeysPruneReport(removed, False, cutoff, batches, age != older_than)


def _next_width(width: int, elapsed: float, target: float) -> int:
    """The next range's width: as many ids as the last range's pace fits in ``target``."""
    if elapsed <= 0:
        return min(width * 2, MAX_BATCH_IDS)
    scaled = int(width * min(max(target / elapsed, 0.25), 2.0))
    return max(MIN_BATCH_IDS, min(scaled, MAX_BATCH_IDS))


def _checkpoint(store: Store) -> None:
    """SQLite: the batch's pages copied from the write-ahead log into the file now, between two
    batches, with no write lock held. Otherwise the log grows until a commit crosses SQLite's
    checkpoint threshold and copies it all inside that commit, a batch's or an agent's."""
    if store.dialect != "sqlite":
        return
    raw = store.engine.raw_connection()
    try:
        raw.driver_connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()  # type: ignore[union-attr]
    finally:
        raw.close()


def _free_bytes(store: Store) -> int | None:
    """SQLite: the bytes in the file's free pages, which new rows reuse and VACUUM returns."""
    if store.dialect != "sqlite":
        return None
    with store.read() as db:
        pages = db.exec_driver_sql("PRAGMA freelist_count").scalar_one()
        page_size = db.exec_driver_sql("PRAGMA page_size").scalar_one()
    return int(pages) * int(page_size)


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
# Ten years: a cutoff further back would leave nothing to prune, and still fit a datetime.
MAX_DURATION_SECONDS = 10 * 365 * 86_400


def parse_duration(text: str) -> timedelta | None:
    """``7d``, ``12h``, ``30m``, ``90s``, ``2w`` (a whole number > 0 and a unit) as a
    timedelta; None for anything else."""
    cleaned = text.strip().lower()
    number, unit = cleaned[:-1], cleaned[-1:]
    if unit not in _UNITS or not number.isascii() or not number.isdigit():
        return None
    seconds = int(number) * _UNITS[unit]
    if not 0 < seconds <= MAX_DURATION_SECONDS:
        return None
    return timedelta(seconds=seconds)


def byte_size(count: int) -> str:
    """Bytes as a person reads them: ``512 B``, ``3.4 kB``, ``1.2 MB``."""
    value = float(count)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{count} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")
