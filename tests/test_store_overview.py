"""The fleet's aggregates in the store (issue 10 point 4): the usage totals the triggers of
migration 0009 keep, the reasons sessions need a human, the starts and heartbeats per hour.
Every test runs on SQLite and on PostgreSQL."""

from __future__ import annotations

import importlib
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import delete, event, insert, select, text, update

from roundtable_console.store.clock import fixed_clock, format_ts
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.models import AgentSessionEvent, SessionUsageTotal
from roundtable_console.store.db.session_rows import SESSIONS
from roundtable_console.store.reads.overview import (
    attention_counts,
    heartbeats_per_hour,
    read_overview,
    started_per_hour,
    usage_amounts,
    usage_bars,
)
from roundtable_console.store.validation import decode_metadata
from roundtable_console.store.writes import agent_writes, lifecycle
from roundtable_console.store.writes.agent_writes import RECOUNT_USAGE
from roundtable_console.store.writes.demo import seed_demo
from roundtable_console.store.writes.transfer import export_records, import_records
from tests.helpers import register_session

NOW = datetime(2026, 9, 17, 12, 0, tzinfo=UTC)
TOTALS = SessionUsageTotal.__table__  # type: ignore[attr-defined]
EVENTS = AgentSessionEvent.__table__  # type: ignore[attr-defined]
MIGRATION = importlib.import_module(
    "roundtable_console.store.db.migrations.versions.0010_usage_totals"
)

# id, agent, run, usage: total_tokens wins over input + output; cost_usd over cost; strings,
# booleans and a usage that is not an object count nothing.
USAGE_ROWS: list[tuple[str, str, str, Any]] = [
    ("u1", "ada", "run-a", {"input_tokens": 1000, "output_tokens": 200, "cost_usd": 0.5}),
    ("u2", "ada", "run-b", {"total_tokens": 5000, "input_tokens": 1, "cost": 2.25}),
    ("u3", "grace", "run-a", {"input_tokens": 300, "output_tokens": "many", "cost_usd": 1.0}),
    ("u4", "grace", "run-a", {"output_tokens": 70, "cost_usd": True}),
    ("u5", "linus", "run-c", "not an object"),
    ("u6", "linus", "run-c", None),
    ("u7", "knuth", "run-b", {"input_tokens": 2.5, "cost_usd": 0.25, "cost": 9}),
]


def seed_usage(store: Store) -> None:
    with store.write() as db:
        for session_id, agent, run, usage in USAGE_ROWS:
            metadata = None if usage is None else {"usage": usage, "branch": "main"}
            register_session(db, session_id, agent_id=agent, run_id=run, metadata=metadata)


def expected_totals(store: Store) -> dict[tuple[str, str], tuple[int, float, float]]:
    """Each agent's and run's usage, summed in Python from every session's metadata."""
    found: dict[tuple[str, str], tuple[int, float, float]] = {}
    with store.read() as db:
        rows = db.execute(select(SESSIONS.c.agent_id, SESSIONS.c.run_id, SESSIONS.c.metadata_json))
        for agent, run, metadata in rows:
            try:
                decoded = decode_metadata(metadata) or {}
            except ValueError:
                continue
            amounts = usage_amounts(decoded.get("usage") if isinstance(decoded, dict) else None)
            if amounts is None:
                continue
            for key in (("agent", agent), ("run", run)):
                n, tokens, cost = found.get(key, (0, 0.0, 0.0))
                found[key] = (n + 1, tokens + amounts[0], cost + amounts[1])
    return found


def kept_totals(store: Store) -> dict[tuple[str, str], tuple[int, float, float]]:
    with store.read() as db:
        rows = db.execute(select(TOTALS).where(TOTALS.c.sessions != 0)).all()
    return {
        (row.grouping, row.group_key): (int(row.sessions), float(row.tokens), float(row.cost))
        for row in rows
    }


def assert_same(
    kept: dict[tuple[str, str], tuple[int, float, float]],
    want: dict[tuple[str, str], tuple[int, float, float]],
) -> None:
    assert kept.keys() == want.keys()
    for key, (n, tokens, cost) in want.items():
        assert kept[key][0] == n, key
        assert kept[key][1] == pytest.approx(tokens), key
        assert kept[key][2] == pytest.approx(cost), key


def test_usage_amounts_follow_the_rule() -> None:
    assert usage_amounts({"input_tokens": 10, "output_tokens": 5, "cost_usd": 0.1}) == (15, 0.1)
    assert usage_amounts({"total_tokens": 7, "input_tokens": 99, "cost": 3}) == (7, 3)
    assert usage_amounts({"input_tokens": True, "cost_usd": "1"}) == (0, 0)
    assert usage_amounts({"input_tokens": float("inf")}) == (0, 0)
    assert usage_amounts({}) == (0, 0)
    assert usage_amounts("12") is None
    assert usage_amounts(None) is None


def test_usage_totals_are_what_the_sessions_say(store: Store) -> None:
    seed_usage(store)
    kept = kept_totals(store)
    assert kept[("agent", "ada")] == (2, 6200.0, 2.75)
    assert kept[("agent", "grace")] == (2, 370.0, 1.0)
    assert kept[("agent", "knuth")] == (1, 2.5, 0.25)
    assert kept[("run", "run-a")] == (3, 1570.0, 1.5)
    assert ("agent", "linus") not in kept  # no usage object
    assert_same(kept, expected_totals(store))


def test_usage_totals_follow_every_writer(store: Store) -> None:
    seed_usage(store)
    with store.write() as db:
        # Heartbeats and lifecycle actions leave the metadata alone.
        agent_writes.heartbeat(db=db, session_id="u1")
        lifecycle.pause(db=db, session_id="u2", actor="op")
        # Registered again: another agent and run, and new usage.
        register_session(
            db, "u1", agent_id="turing", run_id="run-z", metadata={"usage": {"total_tokens": 9}}
        )
        # Registered again without metadata: its usage leaves the totals.
        register_session(db, "u3", agent_id="grace", run_id="run-a")
        # Writers that know nothing of the table: raw SQL.
        db.execute(
            text(
                'UPDATE agent_sessions SET metadata_json = \'{"usage": {"cost_usd": 4}}\''
                " WHERE id = 'u6'"
            )
        )
        db.execute(text("UPDATE agent_sessions SET metadata_json = 'not json' WHERE id = 'u7'"))
        db.execute(update(SESSIONS).where(SESSIONS.c.id == "u2").values(run_id="run-q"))
        db.execute(delete(SESSIONS).where(SESSIONS.c.id == "u4"))
        db.execute(
            insert(SESSIONS).values(
                id="u8",
                agent_id="ada",
                run_id="run-b",
                adapter="codex",
                working_directory="/w",
                status="active",
                started_at="2026-09-17 11:30:00",
                metadata_json=json.dumps({"usage": {"input_tokens": 40, "cost": 0.5}}),
            )
        )
    kept = kept_totals(store)
    assert kept[("agent", "turing")] == (1, 9.0, 0.0)
    assert kept[("agent", "ada")] == (2, 5040.0, 2.75)  # u2 and u8; u1 went to turing
    assert kept[("run", "run-q")] == (1, 5000.0, 2.25)
    assert kept[("agent", "linus")] == (1, 0.0, 4.0)
    assert ("agent", "grace") not in kept and ("agent", "knuth") not in kept
    assert_same(kept, expected_totals(store))


def test_the_migration_and_a_bulk_write_count_as_the_triggers_do(store: Store) -> None:
    seed_usage(store)
    with store.write() as db:
        seed_demo(db=db, sessions=60, clock=fixed_clock(NOW))
    want = expected_totals(store)
    assert_same(kept_totals(store), want)  # the demo is a bulk write on PostgreSQL
    postgres = store.engine.dialect.name == "postgresql"
    for recount in (MIGRATION.PG_SEED if postgres else MIGRATION.sqlite_seed(), RECOUNT_USAGE):
        if recount is RECOUNT_USAGE and not postgres:
            continue  # SQLite's bulk writes count as they go
        with store.write() as db:
            db.execute(text("DELETE FROM session_usage_totals"))
            db.execute(text(recount))
        assert_same(kept_totals(store), want)


def test_an_import_brings_its_usage_totals(store: Store, empty_store: Store) -> None:
    seed_usage(store)
    lines: list[str] = []
    with store.read() as db:
        export_records(db=db, write=lines.append)
    with empty_store.write() as db:
        import_records(db=db, lines=lines)
    assert_same(kept_totals(empty_store), kept_totals(store))


def test_usage_bars_rank_the_leaders_and_sum_the_rest(store: Store) -> None:
    seed_usage(store)
    with store.read() as db:
        tokens = usage_bars(db=db, grouping="agent", measure="tokens", top=1)
        cost = usage_bars(db=db, grouping="agent", measure="cost", top=1)
        runs = usage_bars(db=db, grouping="run", measure="tokens", top=5)
    assert [(item.name, item.tokens) for item in tokens.leaders] == [("ada", 6200.0)]
    assert tokens.rest is not None
    assert (tokens.rest.groups, tokens.rest.sessions, tokens.rest.tokens) == (2, 3, 372.5)
    assert (tokens.total.groups, tokens.total.sessions, tokens.total.tokens) == (3, 5, 6572.5)
    assert tokens.total.cost == pytest.approx(4.0)
    assert [(item.name, item.cost) for item in cost.leaders] == [("ada", 2.75)]
    assert cost.rest is not None and cost.rest.cost == pytest.approx(1.25)
    assert [item.name for item in runs.leaders] == ["run-b", "run-a"]
    assert runs.rest is None


def test_a_rest_of_one_is_shown_by_its_name(store: Store) -> None:
    seed_usage(store)
    with store.read() as db:
        tokens = usage_bars(db=db, grouping="agent", measure="tokens", top=2)
    # Three agents have usage (linus has none): the third is named, not "1 other".
    assert [item.name for item in tokens.leaders] == ["ada", "grace", "knuth"]
    assert tokens.rest is None


def test_usage_bars_of_an_empty_store(store: Store) -> None:
    with store.read() as db:
        bars = usage_bars(db=db, grouping="run", measure="cost")
    assert bars.leaders == [] and bars.rest is None
    assert (bars.total.groups, bars.total.sessions, bars.total.tokens) == (0, 0, 0.0)


def test_starts_per_hour_read_every_timestamp_form(store: Store) -> None:
    with store.write() as db:
        for minutes, session_id in ((10, "h0"), (30, "h1"), (90, "h2"), (60 * 25, "old")):
            register_session(db, session_id, clock=fixed_clock(NOW - timedelta(minutes=minutes)))
        # The reference's forms: CURRENT_TIMESTAMP text, RFC 3339, with nanoseconds.
        forms = {
            "r1": "2026-09-17 11:05:00",
            "r2": "2026-09-17T09:59:59Z",
            "r3": "2026-09-16T12:00:01.123456789Z",
            "r4": "2026-09-16T11:59:59Z",  # 24 h and a second ago: not in the day
            "future": "2026-09-17T12:00:30Z",  # a clock ahead of ours: the last hour
        }
        for session_id, started in forms.items():
            register_session(db, session_id)
            db.execute(
                update(SESSIONS).where(SESSIONS.c.id == session_id).values(started_at=started)
            )
    with store.read() as db:
        hours = started_per_hour(db=db, now=NOW)
    # The last 24 clock hours: 13:00 yesterday … 12:00 today.
    assert len(hours) == 24 and sum(hours) == 6
    assert hours[23] == 1  # future, by a clock ahead of ours
    assert hours[22] == 3  # h0 (11:50), h1 (11:30), r1 (11:05)
    assert hours[21] == 1  # h2 (10:30)
    assert hours[20] == 1  # r2 (09:59:59)
    assert hours[0] == 0  # r3 (12:00:01 yesterday) is before 13:00
    with store.read() as db:  # a few seconds earlier the day starts at 12:00 yesterday
        earlier = started_per_hour(db=db, now=NOW - timedelta(seconds=2))
    assert earlier[0] == 1 and sum(earlier) == 7  # r3; r4 (11:59:59) is still out


def test_heartbeats_per_hour_count_the_days_history_in_clock_hours(store: Store) -> None:
    with store.write() as db:
        register_session(db, "beat", clock=fixed_clock(NOW - timedelta(hours=30)))
        register_session(db, "other", clock=fixed_clock(NOW - timedelta(hours=1)))
        for minutes in (60 * 26, 60 * 3 + 5, 60 * 3 + 1, 45, 1):
            at = NOW - timedelta(minutes=minutes)
            agent_writes.heartbeat(db=db, session_id="beat", clock=fixed_clock(at))
            agent_writes.heartbeat(db=db, session_id="other", clock=fixed_clock(at))
        lifecycle.pause(db=db, session_id="beat", actor="op", clock=fixed_clock(NOW))
        # A heartbeat written in the reference's CURRENT_TIMESTAMP form.
        db.execute(
            insert(EVENTS).values(
                session_id="beat",
                event_type="heartbeat",
                payload_json="{}",
                created_at="2026-09-17 10:15:00",
            )
        )
    with store.read() as db:
        hours = heartbeats_per_hour(db=db, session_id="beat", now=NOW)
        later = heartbeats_per_hour(db=db, session_id="beat", now=NOW + timedelta(hours=3))
        nothing = heartbeats_per_hour(db=db, session_id="missing", now=NOW)
        long_ago = heartbeats_per_hour(db=db, session_id="beat", now=NOW + timedelta(days=3))
    # 13:00 yesterday … 12:00 today: the beat 26 h ago is before; the registration and the pause
    # are not beats.
    assert len(hours) == 24 and sum(hours) == 5
    assert hours[19] == 2  # 08:55, 08:59
    assert hours[21] == 1  # 10:15, the CURRENT_TIMESTAMP form
    assert hours[22] == 2  # 11:15, 11:59
    assert later[16:20] == [2, 0, 1, 2] and sum(later) == 5
    assert nothing == [0] * 24
    assert long_ago == [0] * 24


def test_heartbeats_per_hour_read_only_the_days_rows(store: Store) -> None:
    """A long history: the rows before the day are never read (the statements that read rows
    by a range of ids start at the day's first)."""
    with store.write() as db:
        register_session(db, "long", clock=fixed_clock(NOW - timedelta(days=10)))
        rows = [
            {
                "session_id": "long",
                "event_type": "heartbeat",
                "payload_json": "{}",
                "created_at": format_ts(NOW - timedelta(minutes=10 * step)),
            }
            for step in range(6 * 24 * 10, 0, -1)
        ]
        db.execute(insert(EVENTS), rows)
        first_today = db.execute(
            select(EVENTS.c.id)
            .where(
                EVENTS.c.session_id == "long",
                EVENTS.c.created_at >= format_ts(NOW - timedelta(hours=23)),
            )
            .order_by(EVENTS.c.id)
            .limit(1)
        ).scalar_one()
    statements: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        statements.append((statement, parameters))

    event.listen(store.engine, "before_cursor_execute", record)
    try:
        with store.read() as db:
            hours = heartbeats_per_hour(db=db, session_id="long", now=NOW)
    finally:
        event.remove(store.engine, "before_cursor_execute", record)
    # 13:00 yesterday … 11:00 today: six beats an hour; the last beat is at 11:50.
    assert hours == [6] * 23 + [0]
    grouped = [parameters for statement, parameters in statements if "GROUP BY" in statement]
    assert len(grouped) == 1
    assert first_today in (grouped[0].values() if isinstance(grouped[0], dict) else grouped[0])
    assert len(statements) < 40  # a binary search over 1,440 ids: a dozen probes


def test_attention_counts_by_reason(store: Store) -> None:
    seen = {"fresh": 1, "stale1": 20, "stale2": 60, "waits": 2, "paused-waits": 2, "held": 90}
    with store.write() as db:
        for session_id, minutes in seen.items():
            register_session(db, session_id, clock=fixed_clock(NOW - timedelta(minutes=minutes)))
        register_session(db, "failed", status="failed")
        register_session(db, "odd", status="blocked")
        register_session(db, "done", status="ended")
        lifecycle.pause(db=db, session_id="held", actor="op", clock=fixed_clock(NOW))
        lifecycle.stop(db=db, session_id="stale2", actor="op", clock=fixed_clock(NOW))
        lifecycle.pause(db=db, session_id="paused-waits", actor="op", clock=fixed_clock(NOW))
        for session_id in ("waits", "paused-waits"):
            agent_writes.heartbeat(
                db=db, session_id=session_id, waiting="approve", clock=fixed_clock(NOW)
            )
    with store.read() as db:
        counts = attention_counts(db=db, stale_before=NOW - timedelta(minutes=5))
        capped = attention_counts(db=db, stale_before=NOW - timedelta(minutes=5), cap=1)
    assert [(c.reason, c.sessions, c.capped) for c in counts] == [
        ("waiting for a human", 2, False),
        ("unknown status", 2, False),
        ("stale (not seen)", 1, False),  # stale1; stale2 is stopped
        ("paused or stopped", 2, False),  # held, stale2; paused-waits waits
    ]
    assert [(c.sessions, c.capped) for c in capped] == [(1, True), (2, False), (1, True), (2, True)]
    # The list header's "need attention" counts every reason but paused or stopped.
    assert [c.needs_human for c in counts] == [True, True, True, False]


def test_read_overview_gathers_it_all(store: Store) -> None:
    seed_usage(store)
    with store.read() as db:
        overview = read_overview(db=db, now=NOW, stale_after=timedelta(minutes=5))
    assert overview.statuses == {"active": 7}
    assert overview.usage["agent", "tokens"].total.tokens == 6572.5
    assert overview.usage["run", "cost"].leaders[0].name == "run-b"
    assert len(overview.started) == 24
    assert [c.reason for c in overview.attention][0] == "waiting for a human"
