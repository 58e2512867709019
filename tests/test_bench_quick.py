"""The benchmark's floors do the same work as what they are compared with, its table judges
ratios the right way round, and the fast write path it measures keeps the store's guarantees.
(CI runs ``bench/bench.py --quick`` itself; these are the checks that run does not make: that a
figure means what it says.)"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy import Connection, func, insert, select, text

from bench import bulk_actions, console, figures, first_paint, history_import, hot_path, stores
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.models import AgentSession, AgentSessionEvent
from roundtable_console.store.errors import DatabaseUnavailable
from roundtable_console.store.reads import keyset
from roundtable_console.store.writes import agent_writes
from roundtable_console.store.writes.transfer import import_records

SESSIONS = AgentSession.__table__  # type: ignore[attr-defined]
EVENTS = AgentSessionEvent.__table__  # type: ignore[attr-defined]


def test_time_ratios_must_stay_under_and_rate_ratios_over_their_limit() -> None:
    slow = figures.Figure("x", value=0.3, base_name="floor", base=0.1, limit=2.5)
    assert slow.ratio == pytest.approx(3.0) and slow.verdict() == "MISS"
    assert figures.Figure("x", 0.2, "floor", 0.1, 2.5).verdict() == "ok"
    rate = figures.Figure("x", value=0.4, base_name="floor", base=0.1, limit=0.35, rate=True)
    assert rate.ratio == pytest.approx(0.25) and rate.verdict() == "MISS"
    assert figures.Figure("x", 0.2, "floor", 0.1, 0.35, rate=True).verdict() == "ok"
    assert figures.Figure("open", value=61.0, limit=60).verdict() == "MISS"
    assert figures.Figure("open", value=59.0, limit=60).verdict() == "ok"
    assert figures.Figure("later", value=0.01).verdict() == ""


def test_the_table_prints_each_ratio_with_its_target(capsys: pytest.CaptureFixture[str]) -> None:
    figures.print_table(
        [
            figures.Figure(
                "heartbeat rate (store)", 0.0002, "raw sqlite3", 0.0001, 0.35, rate=True
            ),
            figures.Figure("import", 0.9, "executemany", 0.3, 2.5),
            figures.Figure("first open", 5.0, limit=60),
        ]
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[0] == "measurement"
    assert "0.50x" in lines[1] and "rate >=0.35x" in lines[1] and lines[1].endswith("ok")
    assert "3.00x" in lines[2] and "<=2.5x" in lines[2] and lines[2].endswith("MISS")
    assert "<60s" in lines[3] and lines[3].endswith("ok")


def _register(store: Store) -> None:
    with store.write() as db:
        agent_writes.register(
            db=db,
            session_id="bench-1",
            agent_id="a",
            run_id="r",
            adapter="codex",
            working_directory="/w",
        )


def _state(store: Store) -> tuple[Any, ...]:
    with store.read() as db:
        row = db.execute(select(SESSIONS.c.version, SESSIONS.c.last_seen_at)).one()
        history = db.execute(
            select(EVENTS.c.event_type, EVENTS.c.payload_json).order_by(EVENTS.c.id)
        ).all()
    return row.version, row.last_seen_at, [tuple(event) for event in history]


def test_the_heartbeat_floor_replays_exactly_what_a_heartbeat_sends(store: Store) -> None:
    _register(store)
    statements, stamp = hot_path.capture_heartbeat(store, "bench-1")
    sent = [captured.statement.split()[0].upper() for captured in statements]
    # SQLite's BEGIN IMMEDIATE is sent by the store; psycopg begins by itself.
    expected = ["BEGIN", "UPDATE", "INSERT"] if store.dialect == "sqlite" else ["UPDATE", "INSERT"]
    assert sent == expected
    version, seen, history = _state(store)
    assert (version, seen) == (1, stamp)
    assert [event for event, _ in history] == ["registered", "heartbeat"]

    url = store.engine.url
    if store.dialect == "sqlite":
        raw: Any = stores.raw_connection(Path(str(url.database)))
        beat = hot_path.raw_heartbeat_sqlite(raw, statements, stamp)
    else:
        conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
        raw = psycopg.connect(conninfo, autocommit=True)
        beat = hot_path.raw_heartbeat_postgres(raw, statements, stamp)
    try:
        beat()
    finally:
        raw.close()
    version, seen, history = _state(store)
    assert version == 2 and seen > stamp  # the row moved on, with the floor's own time
    assert [event for event, _ in history] == ["registered", "heartbeat", "heartbeat"]
    assert history[2][1] == history[1][1]  # the same payload (the status did not change)


def test_the_import_floor_gets_the_rows_the_export_holds(store: Store, tmp_path: Path) -> None:
    export = tmp_path / "history.jsonl"
    rows = history_import.write_history_export(export, 30)
    with store.write() as db, export.open(encoding="utf-8") as lines:
        assert import_records(db=db, lines=lines)["session_event"] == 30
    with store.read() as db:
        # The reference's columns (ours, actor and db_user, are not the export's to fill).
        reference = [column for column in EVENTS.c if column.name not in ("actor", "db_user")]
        stored = db.execute(select(*reference).order_by(EVENTS.c.id)).all()
        assert db.execute(select(func.count()).select_from(SESSIONS)).scalar() == 0
    assert [tuple(row) for row in stored] == rows


def test_the_reference_store_has_the_reference_schema_and_no_migrations(tmp_path: Path) -> None:
    path = tmp_path / "reference.db"
    stores.build_reference_store(path, 50)
    raw = sqlite3.connect(path)
    try:
        tables = {name for (name,) in raw.execute("SELECT name FROM sqlite_master")}
        count = raw.execute("SELECT count(*) FROM agent_sessions").fetchone()[0]
    finally:
        raw.close()
    assert "alembic_version" not in tables and "idempotency_keys" not in tables
    assert count == 50


# ------------------------------------------- what the heartbeat figure measures keeps its promises


def _failure(store: Store, write: Callable[[Connection], object]) -> type[BaseException]:
    with pytest.raises(Exception) as raised, store.write() as db:
        write(db)
    return raised.type


def test_a_failing_fast_write_fails_as_sqlalchemy_would_and_writes_nothing(store: Store) -> None:
    """Heartbeats skip Connection.execute; a DBAPI error still surfaces as what the store gives
    for the same error through SQLAlchemy, and the transaction still rolls back as a whole."""
    _register(store)
    with store.write() as db:
        db.execute(text("ALTER TABLE agent_session_events RENAME TO moved_events"))
    row = {"session_id": "x", "event_type": "y", "payload_json": "{}", "created_at": "z"}
    through_sqlalchemy = _failure(store, lambda db: db.execute(insert(EVENTS), row))
    fast = _failure(store, lambda db: agent_writes.heartbeat(db=db, session_id="bench-1"))
    assert fast is through_sqlalchemy
    if store.dialect == "sqlite":
        assert fast is DatabaseUnavailable  # the sentence a person can act on
    with store.read() as db:
        assert db.execute(select(SESSIONS.c.version)).scalar() == 0  # the UPDATE rolled back
        assert db.execute(text("SELECT count(*) FROM moved_events")).scalar() == 1


def test_a_fast_write_outside_a_transaction_autobegins_like_any_other(store: Store) -> None:
    _register(store)
    with store.engine.connect() as conn:
        session = agent_writes.heartbeat(db=conn, session_id="bench-1", status="running")
        assert conn.in_transaction()
        conn.rollback()
    assert session.status == "running" and session.version == 1
    version, _, history = _state(store)
    assert version == 0 and [event for event, _ in history] == ["registered"]


# ------------------------------------------------------------- memory and key-press figures


def test_the_rss_parser_reads_vm_rss_in_kib_and_nothing_else() -> None:
    status = "Name:\tpython\nVmPeak:\t  999999 kB\nVmRSS:\t   74352 kB\nRssAnon:\t 5 kB\n"
    assert first_paint.parse_vm_rss(status) == 74352
    assert first_paint.parse_vm_rss("VmHWM:\t 10 kB\nRssFile:\t 3 kB\n") is None
    assert first_paint.parse_vm_rss("VmRSS:\t 12 MB\n") is None  # not in the unit we report
    assert 10_000 < first_paint.rss_kib() < 10_000_000  # this very process, in KiB


def test_a_memory_difference_is_judged_on_the_difference_not_the_ratio(
    capsys: pytest.CaptureFixture[str],
) -> None:
    over = figures.Figure("rss big", 100.0, "rss small", 70.0, 25, unit="MiB", delta=True)
    under = figures.Figure("rss big", 90.0, "rss small", 70.0, 25, unit="MiB", delta=True)
    assert over.verdict() == "MISS" and under.verdict() == "ok"
    figures.print_table([over, under])
    lines = capsys.readouterr().out.splitlines()
    assert "100.0MiB" in lines[1] and "+30.0MiB" in lines[1] and "+<=25MiB" in lines[1]
    assert lines[1].endswith("MISS") and lines[2].endswith("ok") and "ms" not in lines[1]


def test_key_figures_bound_the_p90_last_frame_against_the_bare_apps() -> None:
    def timings(scale: float) -> console.Timings:
        parts = {"first_frame_ms": [5.0, 1.0, 3.0], "frame_ms": [60.0, 20.0, 40.0]}
        parts["settled_ms"] = [90.0, 80.0, 85.0]
        return {
            key: {part: [value * scale for value in values] for part, values in parts.items()}
            for key in (*console.KEYS, *console.JUMP_KEYS)
        }

    figures = console.key_figures("big", timings(1.0), timings(2.0))
    assert [figure.name for figure in figures[:4]] == [
        "down -> 1st frame (big)",
        "down -> last frame (big)",
        "down -> settled (big)",
        "down -> last frame p90 (big)",
    ]
    last_frame = figures[1]
    assert last_frame.value == pytest.approx(0.040) and last_frame.ratio == pytest.approx(0.5)
    # Medians are shown, not judged; the p90 (nearest rank of three: the slowest) is.
    assert [figure.verdict() for figure in figures] == ["", "", "", "ok"] * len(console.KEYS) + [
        "ok",
        "ok",
    ]
    assert "down-scrolls -> last frame p90 (big)" in [figure.name for figure in figures]
    tail = figures[3]
    assert tail.value == pytest.approx(0.060) and tail.ratio == pytest.approx(0.5)
    assert tail.target() == "<=1.5x"
    slow = console.key_figures("big", timings(1.6), timings(1.0))
    assert slow[3].verdict() == "MISS"  # 1.6 times the bare app's p90
    close = console.key_figures("big", timings(1.5), timings(1.0))
    assert close[3].verdict() == "ok"
    # End and Home jump: judged as the thumb's jumps, their slowest frame under 100 ms.
    end, home = figures[-2:]
    assert end.name == "end -> last frame, max (big)" and end.value == pytest.approx(0.060)
    assert end.target() == "<0.1s" and home.name.startswith("home -> last frame, max")
    assert console.key_figures("big", timings(2.0), timings(1.0))[-1].verdict() == "MISS"
    # A key never pressed (a quick run's few downs never scroll the view) is left out.
    within = {key: parts for key, parts in timings(1.0).items() if key != "down-scrolls"}
    names = [figure.name for figure in console.key_figures("small", within, timings(1.0))]
    assert "down -> last frame p90 (small)" in names
    assert not [name for name in names if name.startswith("down-scrolls")]


def test_the_key_sequence_presses_downs_then_pagedowns_then_pageups_then_the_ends() -> None:
    ends = ["end", "home"] * first_paint.ENDS
    # The downs asked for, then as many again as take the cursor past the view's last row.
    downs = ["down"] * (2 + first_paint.SCROLLING_DOWNS)
    assert first_paint.key_sequence(2, 1) == [*downs, "pagedown", "pageup", *ends]
    downs = ["down"] * first_paint.SCROLLING_DOWNS
    assert first_paint.key_sequence(0, 0) == [*downs, *ends]
    assert 30 + first_paint.SCROLLING_DOWNS > 36  # the bare app's view at 120x40, the larger


async def test_a_down_that_moves_the_view_is_timed_apart_from_one_within_it() -> None:
    app = first_paint.BareApp(exit_when_painted=False, rows=100)
    async with app.run_test(size=first_paint.SIZE) as pilot:
        await pilot.pause()
        table = app.query_one(first_paint.DataTable)
        timings = await first_paint.press_timings(pilot, ["down"] * 45)
        moved = table.scroll_offset.y
    # Each down past the view's last row moved the view one row; the others moved the cursor.
    assert 5 <= moved < 45
    assert len(timings[first_paint.SCROLLING]["frame_ms"]) == moved
    assert first_paint.SCROLLING == console.SCROLLING_DOWN  # the name the figures look it up by
    assert len(timings["down"]["frame_ms"]) == 45 - moved


def test_the_load_bench_judges_every_down_together_and_each_kind_apart() -> None:
    from bench import load

    def presses(*times: float) -> dict[str, list[float]]:
        return {"result_frame_ms": list(times), "frame_ms": [time + 1 for time in times]}

    timings = {"down": presses(*[4.0] * 9), "down-scrolls": presses(12.0, 14.0), "pageup": {}}
    p90 = load.key_p90_of(timings)
    # Eleven downs: the p90 (nearest rank, the tenth) is a scrolling one.
    assert p90[load.ALL_DOWNS, "result_frame_ms"] == (pytest.approx(0.012), 11)
    assert p90["down", "result_frame_ms"] == (pytest.approx(0.004), 9)
    assert p90["down-scrolls", "frame_ms"] == (pytest.approx(0.015), 2)
    assert ("pageup", "result_frame_ms") not in p90 and ("pagedown", "frame_ms") not in p90


def test_the_group_option_is_taken_out_of_the_arguments() -> None:
    assert first_paint.grouping(["--group=agent", "keys", "console", "u"]) == (
        "agent",
        ["keys", "console", "u"],
    )
    assert first_paint.grouping(["console", "u"]) == (None, ["console", "u"])
    assert console.group_flag("run") == ["--group=run"] and console.group_flag(None) == []


# --------------------------------------------------------------------- the bulk pause figure


def _bulk_state(store: Store) -> tuple[Any, ...]:
    with store.read() as db:
        statuses = db.execute(select(SESSIONS.c.id, SESSIONS.c.status, SESSIONS.c.version)).all()
        events = db.execute(
            select(EVENTS.c.session_id, EVENTS.c.event_type).order_by(EVENTS.c.id)
        ).all()
        keys = db.execute(text("SELECT action, session_id FROM idempotency_keys")).all()
        counts = keyset.count_by_status(db=db)
    return (
        sorted(map(tuple, statuses)),
        [tuple(e) for e in events],
        sorted(map(tuple, keys)),
        counts,
    )


def test_the_bulk_floor_does_the_work_the_bulk_pause_does(store: Store, empty_store: Store) -> None:
    """The floor of the bulk pause figure (one perform_action a session) leaves the same rows,
    history, keys and counts as the bulk run it is compared with."""
    for target, pause in (
        (store, bulk_actions.bulk_pause),
        (empty_store, bulk_actions.floor_pause),
    ):
        bulk_actions.fill_sessions(target.engine.url.render_as_string(hide_password=False), 30)
        pause(target, 30, "run-1")
    state = _bulk_state(store)
    assert state == _bulk_state(empty_store)
    assert {status for _, status, _ in state[0]} == {"paused"} and len(state[0]) == 30
    assert len(state[2]) == 30 and state[3] == {"paused": 30}


def test_the_bulk_figure_is_bounded_by_the_issues_ten_seconds_for_ten_thousand(
    tmp_path: Path,
) -> None:
    (figure,) = bulk_actions.bench_bulk(history_import.sqlite_target(tmp_path).new_url, "", 40, 1)
    assert figure.name == "bulk pause of 40 sessions"
    assert figure.limit == pytest.approx(0.04) and figure.absolute
    assert figure.base is not None and figure.value > 0


def test_the_load_generator_counts_each_beat_once_in_the_history(tmp_path: Path) -> None:
    from bench import load

    url = f"sqlite:///{tmp_path / 'load.db'}"
    figures = load.measure(url, load.Engine("SQLite", 3, 4.0, 1.5), console=False)
    by_name = {figure.name.split(" (")[0]: figure for figure in figures}
    lost = by_name["beats lost: |history rows - acknowledged|"]
    assert lost.value == 0 and lost.verdict() == "ok"
    assert by_name["beats refused"].value == 0
    # 3 agents, 4 beats a second for 1.5 s: 6 beats each, every one of them in the history.
    assert load.heartbeat_rows(url) == 18
    assert by_name["beat latency p99"].value > 0


async def test_a_key_press_result_frame_is_the_frame_that_shows_the_cursor_moved() -> None:
    app = first_paint.BareApp(exit_when_painted=False, rows=100)
    async with app.run_test(size=first_paint.SIZE) as pilot:
        await pilot.pause()
        timings = await first_paint.press_timings(pilot, ["down", "down", "up"])
        assert app.query_one(first_paint.DataTable).cursor_row == 1
    for key in ("down", "up"):
        pairs = zip(timings[key]["result_frame_ms"], timings[key]["frame_ms"], strict=True)
        assert all(0 < result <= last for result, last in pairs)


def test_the_web_bench_gives_the_browsers_half_the_cores_and_the_server_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from bench import web

    monkeypatch.setattr(web.os, "sched_getaffinity", lambda _pid: {0, 1, 2, 3})
    assert web.split_cores() == ({2, 3}, {0, 1})
    monkeypatch.setattr(web.os, "sched_getaffinity", lambda _pid: {0, 1})
    assert web.split_cores() == ({1}, {0})
    monkeypatch.setattr(web.os, "sched_getaffinity", lambda _pid: {5})
    assert web.split_cores() == ({5}, {5})  # one core: both share it


def test_the_web_bench_reads_a_process_cpu_time_from_proc() -> None:
    import os
    import time

    from bench import web

    began = web.cpu_seconds(os.getpid())
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:
        pass
    assert 0.2 <= web.cpu_seconds(os.getpid()) - began <= 5.0


def test_the_paced_agents_beat_at_their_pace_and_a_refused_beat_is_counted(
    tmp_path: Path,
) -> None:
    from bench import paced, serve
    from tests.serve_support import serving

    url = f"sqlite:///{tmp_path / 'beats.db'}"
    store = serve.fleet(url, tmp_path / "fleet.txt")
    pairs = paced.read_pairs(tmp_path / "fleet.txt")[:3] + [("not-a-token", "beat-003")]
    try:
        before = serve.beat_rows(store)
        with serving(url, tmp_path / "home") as served:
            latencies, statuses = paced.paced_latencies(served.url, pairs, 1.2)
        written = serve.beat_rows(store) - before
    finally:
        store.dispose()
    # Each agent beats every 0.5 s (100 agents, 200 beats a second): at 0, 0.5 and 1.0 s.
    assert statuses == {200: 9, 401: 3} and len(latencies) == 12
    assert written == 9 and all(0 < latency < 5 for latency in latencies)


async def test_a_paced_agent_opens_a_closed_connection_again_and_counts_each_answer() -> None:
    """A server that closes an idle keep-alive connection never saw the beat sent on it: it
    goes again on a new one. An answer that says "Connection: close" is counted, and the next
    beat opens a new connection."""
    import asyncio

    from bench import paced

    connections: list[int] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(len(connections))
        await reader.readuntil(b"\r\n\r\n")
        closing = len(connections) == 2
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
            + (b"Connection: close\r\n" if closing else b"")
            + b"\r\n{}"
        )
        await writer.drain()
        writer.close()  # idle from here: closed before the next beat comes

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    agent = paced.Agent(f"http://127.0.0.1:{port}", "token", "beat-000")
    try:
        first = await agent.beat()
        await asyncio.sleep(0.1)  # the server has closed it meanwhile
        second = await agent.beat()  # sent on the closed one, then again on a new one
        third = await agent.beat()  # the second answer said close: a new one
    finally:
        agent.close()
        server.close()
    assert (first, second, third) == (200, 200, 200)
    assert len(connections) == 3


def test_the_usage_bench_reads_its_transcripts_to_their_end_and_adds_each_answer(
    tmp_path: Path,
) -> None:
    """``bench.transcript_tail.bench_usage_reads`` catches both transcripts up before it times
    (a transcript with no usage line once made it wait forever), then each answer is told."""
    from bench.transcript_tail import bench_usage_reads

    [figure] = bench_usage_reads(tmp_path, 3, 1)
    assert figure.value > 0 and figure.base > 0 and figure.limit == 1.5
    assert "1 MB" in figure.name
