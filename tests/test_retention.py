"""``roundtable db prune --heartbeats-older-than``: old heartbeat rows go, a short transaction at
a time (and ``--idempotency-keys-older-than``: old idempotency keys go, those a client may still
retry stay); every other row and each session's newest heartbeat stay; agents beating meanwhile are
never refused. On SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from roundtable_console.store.clock import format_ts
from roundtable_console.store.db.database import Store
from roundtable_console.store.service import perform_action
from roundtable_console.store.writes import agent_writes
from roundtable_console.store.writes.retention import (
    RETRY_WINDOW,
    byte_size,
    parse_duration,
    prune_heartbeats,
    prune_idempotency_keys,
)
from roundtable_console.tui.cli import cli
from roundtable_console.tui.cli.invocation import CliState
from tests.conftest import FakeClock

NOW = datetime(2026, 9, 17, 17, 0, tzinfo=UTC)
PROJECT = Path(__file__).resolve().parents[1]


def _history(store: Store) -> list[tuple[Any, ...]]:
    with store.read() as db:
        rows = db.execute(
            text(
                "SELECT id, session_id, event_type, created_at FROM agent_session_events"
                " ORDER BY id"
            )
        ).all()
    return [tuple(row) for row in rows]


def _insert_history(store: Store, rows: list[tuple[str, str, str]]) -> None:
    """(session id, event type, created_at) rows appended in this order."""
    with store.write() as db:
        db.execute(
            text(
                "INSERT INTO agent_session_events (session_id, event_type, payload_json,"
                " created_at) VALUES (:session_id, :event_type, '{}', :created_at)"
            ),
            [{"session_id": s, "event_type": e, "created_at": c} for s, e, c in rows],
        )


def _days_ago(days: float) -> str:
    return format_ts(NOW - timedelta(days=days))


def _register(store: Store, session_id: str, clock: FakeClock) -> None:
    with store.write() as db:
        agent_writes.register(
            db=db, session_id=session_id, agent_id="a", run_id="r", adapter="codex",
            working_directory="/w", clock=clock,
        )  # fmt: skip


def test_old_heartbeats_go_but_each_sessions_newest_and_every_other_row_stay(
    store: Store,
) -> None:
    clock = FakeClock(NOW - timedelta(days=30))
    for session_id in ("s1", "s2", "s3"):
        _register(store, session_id, clock)
    _insert_history(
        store,
        [
            ("s1", "heartbeat", _days_ago(20)),
            ("s1", "heartbeat", "2026-08-01 10:00:00"),  # CURRENT_TIMESTAMP text, old
            ("s1", "paused", _days_ago(19)),
            ("s1", "heartbeat", _days_ago(10)),
            ("s1", "heartbeat", _days_ago(1)),  # recent: stays
            ("s2", "heartbeat", _days_ago(20)),
            ("s2", "heartbeat", _days_ago(9)),  # s2's newest, though old: stays
            ("s2", "ended", _days_ago(8)),
            ("s3", "heartbeat", "yesterday"),  # unreadable: never older than anything
            ("s3", "heartbeat", _days_ago(12)),  # s3's newest heartbeat: stays
            ("gone", "heartbeat", _days_ago(40)),  # a session no longer in the table
            ("gone", "heartbeat", _days_ago(39)),
        ],
    )
    before = _history(store)
    dry = prune_heartbeats(
        store=store, older_than=timedelta(days=7), dry_run=True, clock=lambda: NOW
    )
    assert _history(store) == before  # nothing written
    report = prune_heartbeats(store=store, older_than=timedelta(days=7), clock=lambda: NOW)
    assert report.removed == dry.removed == 5
    assert report.row_bytes == dry.row_bytes > 0
    assert report.cutoff == _days_ago(7)
    after = _history(store)
    gone = [(row[1], row[3]) for row in before if row not in after]
    assert gone == [
        ("s1", _days_ago(20)),
        ("s1", "2026-08-01 10:00:00"),
        ("s1", _days_ago(10)),
        ("s2", _days_ago(20)),
        ("gone", _days_ago(40)),
    ]
    kinds = {(row[1], row[2]) for row in after}
    assert ("s1", "paused") in kinds and ("s2", "ended") in kinds
    assert [row[1] for row in after if row[2] == "registered"] == ["s1", "s2", "s3"]
    assert ("s3", "heartbeat", "yesterday") in {(r[1], r[2], r[3]) for r in after}
    assert ("s2", "heartbeat", _days_ago(9)) in {(r[1], r[2], r[3]) for r in after}
    # Nothing more to do: a second run removes nothing.
    again = prune_heartbeats(store=store, older_than=timedelta(days=7), clock=lambda: NOW)
    assert again.removed == 0


def test_a_long_history_goes_in_many_short_batches(store: Store) -> None:
    clock = FakeClock(NOW - timedelta(days=30))
    for session_id in ("s1", "s2"):
        _register(store, session_id, clock)
    rows = [(f"s{1 + n % 2}", "heartbeat", _days_ago(20 - n / 1000)) for n in range(6000)]
    rows += [("s1", "paused", _days_ago(19)), ("s1", "heartbeat", _days_ago(1))]
    _insert_history(store, rows)
    heard: list[int] = []
    report = prune_heartbeats(
        store=store,
        older_than=timedelta(days=7),
        clock=lambda: NOW,
        first_batch_ids=100,
        on_batch=heard.append,
    )
    assert report.removed == sum(heard) == 6000 - 1  # s2's newest stays, and s1's recent one
    assert report.batches == len(heard) > 1
    # Short batches are counted, not timed here (a loaded machine makes any bound flaky):
    # bench/bench.py measures the batches' length.
    assert report.longest_batch_seconds > 0
    left = [(row[1], row[2]) for row in _history(store)]
    assert left.count(("s2", "heartbeat")) == 1 and left.count(("s1", "heartbeat")) == 1
    assert ("s1", "paused") in left and left.count(("s1", "registered")) == 1


def test_a_store_with_no_history_prunes_nothing(store: Store) -> None:
    report = prune_heartbeats(store=store, older_than=timedelta(days=7), clock=lambda: NOW)
    assert (report.removed, report.batches, report.row_bytes) == (0, 0, 0)
    if store.dialect == "sqlite":
        assert report.free_bytes is not None and report.free_bytes >= 0
    else:
        assert report.free_bytes is None


@pytest.mark.parametrize(
    ("given", "seconds"),
    [
        ("7d", 7 * 86400),
        ("12h", 43200),
        ("30m", 1800),
        ("90s", 90),
        ("2w", 1209600),
        (" 1D ", 86400),
    ],
)
def test_durations_read(given: str, seconds: int) -> None:
    assert parse_duration(given) == timedelta(seconds=seconds)


@pytest.mark.parametrize("given", ["", "7", "d", "0d", "-1d", "1.5d", "7days", "٣d", "99999w"])
def test_durations_refused(given: str) -> None:
    assert parse_duration(given) is None


def test_sizes_read_as_a_person_reads_them() -> None:
    assert [byte_size(n) for n in (0, 999, 1500, 2_500_000, 7_000_000_000)] == [
        "0 B", "999 B", "1.5 kB", "2.5 MB", "7.0 GB",
    ]  # fmt: skip


def _cli(url: str, *args: str) -> Any:
    result = CliRunner().invoke(
        cli, ["db", "prune", *args, "--db", url], obj=CliState(clock=lambda: NOW)
    )
    assert "Traceback" not in result.output
    return result


def test_the_command_says_what_it_removed_and_what_it_frees(store: Store) -> None:
    url = store.engine.url.render_as_string(hide_password=False)
    clock = FakeClock(NOW - timedelta(days=30))
    _register(store, "s1", clock)
    _insert_history(store, [("s1", "heartbeat", _days_ago(d)) for d in (20, 15, 10, 1)])
    dry = _cli(url, "--heartbeats-older-than", "7d", "--dry-run", "--json")
    assert dry.exit_code == 0, dry.stderr
    body = json.loads(dry.stdout)
    assert (body["removed"], body["dry_run"], body["older_than"]) == (3, True, "7d")
    assert body["cutoff"] == _days_ago(7) and body["row_bytes"] > 0
    text_run = _cli(url, "--heartbeats-older-than", "7d")
    assert text_run.exit_code == 0, text_run.stderr
    lines = text_run.stdout.splitlines()
    assert lines[0].startswith(f"Removed 3 heartbeat rows older than 7d (before {_days_ago(7)})")
    assert "each session's newest heartbeat kept" in lines[0]
    if store.dialect == "sqlite":
        assert "in free pages" in lines[1] and "VACUUM" in lines[1]
    else:
        assert "VACUUM FULL" in lines[1]
    again = json.loads(_cli(url, "--heartbeats-older-than", "7d", "--json").stdout)
    assert again["removed"] == 0 and again["dry_run"] is False
    _register(store, "s2", clock)
    _insert_history(store, [("s2", "heartbeat", _days_ago(d)) for d in (20, 9)])
    one = _cli(url, "--heartbeats-older-than", "7d", "--dry-run")
    assert one.stdout.startswith("Would remove 1 heartbeat row older than 7d"), one.stdout


@pytest.mark.parametrize("bad", ["seven days", "0d", "7"])
def test_a_duration_that_is_not_one_is_bad_usage(bad: str, sqlite_store: Store) -> None:
    url = str(sqlite_store.engine.url)
    result = _cli(url, "--heartbeats-older-than", bad, "--json")
    assert result.exit_code == 2
    error = json.loads(result.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "usage_error" and "s, m, h, d or w" in error["message"]
    missing = _cli(url)
    assert missing.exit_code == 2 and "--heartbeats-older-than" in missing.stderr


# ------------------------------------------------------------------ idempotency keys (point 6)


def _keys(store: Store, ages_in_days: list[float]) -> None:
    with store.write() as db:
        db.execute(
            text(
                "INSERT INTO idempotency_keys (key, action, session_id, outcome, created_at)"
                " VALUES (:key, 'pause', 's1', '{}', :created_at)"
            ),
            [{"key": f"k{n}", "created_at": _days_ago(age)} for n, age in enumerate(ages_in_days)],
        )


def _key_ids(store: Store) -> list[str]:
    with store.read() as db:
        return sorted(
            str(k) for k in db.execute(text("SELECT key FROM idempotency_keys")).scalars()
        )


def test_old_idempotency_keys_go_a_batch_at_a_time_and_young_ones_stay(store: Store) -> None:
    _keys(store, [40, 35, 31, 29, 2, 0.5])
    dry = prune_idempotency_keys(
        store=store, older_than=timedelta(days=30), dry_run=True, clock=lambda: NOW
    )
    assert (dry.removed, dry.dry_run, dry.batches) == (3, True, 0)
    assert len(_key_ids(store)) == 6  # nothing written
    report = prune_idempotency_keys(
        store=store, older_than=timedelta(days=30), clock=lambda: NOW, batch=2
    )
    assert (report.removed, report.batches, report.cutoff) == (3, 2, _days_ago(30))
    assert not report.window_kept
    assert _key_ids(store) == ["k3", "k4", "k5"]


def test_keys_younger_than_a_client_may_retry_are_kept_whatever_the_age_asked(
    store: Store,
) -> None:
    _keys(store, [3, 1.5, 0.9, 0.01])
    report = prune_idempotency_keys(store=store, older_than=timedelta(hours=1), clock=lambda: NOW)
    assert report.window_kept and report.cutoff == format_ts(NOW - RETRY_WINDOW)
    assert report.removed == 2
    assert _key_ids(store) == ["k2", "k3"]


def test_a_retry_within_the_window_still_replays_after_a_prune(store: Store) -> None:
    """What the keys are kept for: the same key again returns the first outcome."""
    clock = FakeClock(NOW - timedelta(hours=2))
    _register(store, "s1", clock)
    first = perform_action(
        store=store, action="pause", session_id="s1", actor="olivia", idempotency_key="k-pause",
        clock=clock,
    )  # fmt: skip
    prune_idempotency_keys(store=store, older_than=timedelta(minutes=1), clock=lambda: NOW)
    again = perform_action(
        store=store, action="pause", session_id="s1", actor="olivia", idempotency_key="k-pause",
        clock=clock,
    )  # fmt: skip
    assert again.replayed and again.session.status == first.session.status == "paused"


def test_the_command_prunes_keys_heartbeats_or_both_and_says_so(store: Store) -> None:
    url = store.engine.url.render_as_string(hide_password=False)
    clock = FakeClock(NOW - timedelta(days=30))
    _register(store, "s1", clock)
    _insert_history(store, [("s1", "heartbeat", _days_ago(d)) for d in (20, 15, 1)])
    _keys(store, [40, 31, 0.5])
    dry = _cli(url, "--idempotency-keys-older-than", "30d", "--dry-run", "--json")
    assert dry.exit_code == 0, dry.stderr
    body = json.loads(dry.stdout)
    assert body["dry_run"] is True and "removed" not in body  # no heartbeats asked for
    assert body["idempotency_keys"]["removed"] == 2
    assert body["idempotency_keys"]["older_than"] == "30d"
    both = _cli(url, "--heartbeats-older-than", "7d", "--idempotency-keys-older-than", "30d")
    assert both.exit_code == 0, both.stderr
    lines = both.stdout.splitlines()
    assert lines[0].startswith("Removed 2 heartbeat rows older than 7d")
    assert lines[-1] == f"Removed 2 idempotency keys older than 30d (before {_days_ago(30)})."
    short = _cli(url, "--idempotency-keys-older-than", "1h")
    assert "keys younger than a day, the longest a client may retry, are kept" in short.stdout
    assert _key_ids(store) == ["k2"]
    neither = _cli(url, "--json")
    assert neither.exit_code == 2
    assert (
        "--idempotency-keys-older-than"
        in json.loads(neither.stderr.splitlines()[-1])["error"]["message"]
    )


# ------------------------------------------------------------------ prune while agents beat

BEATER = """
import json, sys
from roundtable_console.tui.quick_cli import run
url, session, beats, report = sys.argv[1:5]
codes = []
for _ in range(int(beats)):
    code = run(["sessions", "heartbeat", "--session", session, "--db", url, "--json"])
    if code is None:  # the quick path did not take it: the full CLI, in process
        from roundtable_console.tui.cli import cli
        code = cli.main(["sessions", "heartbeat", "--session", session, "--db", url, "--json"],
                        standalone_mode=False)
    codes.append(code)
open(report, "w").write(json.dumps(codes))
"""


def test_a_prune_while_eight_processes_heartbeat_refuses_no_beat_and_keeps_the_rest(
    store: Store, tmp_path: Path
) -> None:
    url = store.engine.url.render_as_string(hide_password=False)
    clock = FakeClock(NOW - timedelta(days=30))
    agents = [f"s{n}" for n in range(8)]
    for session_id in agents:
        _register(store, session_id, clock)
    old = [(agents[n % 8], "heartbeat", _days_ago(20 - n / 10_000)) for n in range(20_000)]
    old += [(agent, "paused", _days_ago(19)) for agent in agents]
    _insert_history(store, old)
    kept_kinds = sorted((r[1], r[2]) for r in _history(store) if r[2] != "heartbeat")
    beats = 15
    env = {key: value for key, value in os.environ.items() if key != "ROUNDTABLE_DB"}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"))
    beaters = [
        subprocess.Popen(
            [sys.executable, "-c", BEATER, url, agent, str(beats), str(tmp_path / f"{agent}.json")],
            cwd=PROJECT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for agent in agents
    ]
    reports = []
    # Prune (with the real clock: the beats are recent) until every beater is done.
    while any(beater.poll() is None for beater in beaters) or not reports:
        reports.append(prune_heartbeats(store=store, older_than=timedelta(days=7)))
    for beater in beaters:
        _out, err = beater.communicate(timeout=120)
        assert beater.returncode == 0, err[-2000:]
    for agent in agents:
        codes = json.loads((tmp_path / f"{agent}.json").read_text())
        assert codes == [0] * beats, (agent, codes)  # no beat refused
    assert sum(report.removed for report in reports) == 20_000
    longest = max(report.longest_batch_seconds for report in reports)
    print(f"longest batch while 8 processes beat ({store.dialect}): {longest * 1000:.1f} ms")
    if store.dialect == "sqlite":
        # A batch is sized to hold the write lock about 10 ms (under 100 ms on a quiet machine:
        # test_a_long_history_goes_in_many_short_batches). Here eight interpreters starting on
        # two shared cores stretch its wall time, and still never near a beat's 5 s busy wait.
        assert longest < 1.0
    after = _history(store)
    assert sorted((r[1], r[2]) for r in after if r[2] != "heartbeat") == kept_kinds
    beats_left = [r for r in after if r[2] == "heartbeat"]
    assert len(beats_left) == 8 * beats  # every new beat, none of the old
    assert all(r[3] > _days_ago(1) for r in beats_left)
