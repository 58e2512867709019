"""Benchmarks, printed as ratios against baselines measured in the same run (issue 4).

This machine is shared and noisy, so absolute times mean little: every figure is a median of
several runs, and each is measured in turns with its floor (raw sqlite3, a bare Python import, a
bare Textual app), so a burst of load from elsewhere falls on both. Run `python bench/bench.py`
for the full set (a 1,000,000-session reference store), `--quick` for a small smoke run (CI).
`--big N` changes the size of the reference store; `--pg` adds the PostgreSQL figures (the
suite's throwaway cluster, so it needs initdb and pg_ctl).
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# The repository, not this script's directory, first on the path: here ``bench`` is the package
# of the bench's scripts, not bench.py (as in load.py).
sys.path[0] = str(ROOT)

# What each module measures: figures (the Figure, timers, the table), stores (the stores the
# figures are taken on, the first open), hot_path (the agent's writes: CLI start-up, writes as
# processes, prune, heartbeat rate), history_import, bulk_actions, list_reads (pages, places,
# groups, counts; the CLI's list), console (the TUI's figures), overview, audit_trail. This file
# parses the options and runs the sections they ask for.
from bench.audit_trail import (  # noqa: E402
    AUDIT_HISTORY_PER_SESSION,
    bench_audit,
    build_audit_postgres,
    build_audit_sqlite,
)
from bench.bulk_actions import bench_bulk  # noqa: E402
from bench.console import TUI_GROUPING, TuiRuns, bench_change_latency, bench_tui  # noqa: E402
from bench.console_server import bench_console_through_server  # noqa: E402
from bench.figures import Figure, compiled_env, print_table  # noqa: E402
from bench.history_import import bench_import, postgres_target, sqlite_target  # noqa: E402
from bench.hot_path import (  # noqa: E402
    bench_cli_startup,
    bench_heartbeat_rate,
    bench_hooks,
    bench_hotpath,
    bench_hotpath_postgres,
    bench_prune,
    capture_heartbeat,
    heartbeat_figure,
    raw_heartbeat_postgres,
)
from bench.list_reads import bench_cli_list, bench_grouped_reads, bench_reads  # noqa: E402
from bench.overview import bench_overview  # noqa: E402
from bench.stores import (  # noqa: E402
    bench_first_open,
    build_postgres_store,
    build_reference_store,
    seed,
)
from bench.transcript_tail import bench_transcript_tail, bench_usage_reads  # noqa: E402
from roundtable_console.store.db.database import open_store  # noqa: E402

# ------------------------------------------------------------------------------- PostgreSQL


def bench_postgres(
    directory: Path,
    beats: int,
    rounds: int,
    import_rows: int,
    big_sessions: int,
    tui: TuiRuns | None = None,
    bulk_sessions: int = 10_000,
    groups: bool = True,
    ungrouped: bool = True,
) -> list[Figure]:
    """The heartbeat and the import on PostgreSQL, against psycopg doing the same work; a bulk
    pause of ``bulk_sessions``; reads, counts and the change signal on a store of
    ``big_sessions``; with ``tui``, the console's figures on it against a store of 10 sessions.
    ``groups`` / ``ungrouped``: the grouped list's figures, the others."""
    import psycopg

    from tests.pg_server import PostgresServer

    server = PostgresServer()
    server.start()
    figures: list[Figure] = []
    try:
        url = server.url()
        if ungrouped:
            seed(url, 2)
            store = open_store(url)
            raw = psycopg.connect(url.replace("postgresql+psycopg", "postgresql"), autocommit=True)
            beat = raw_heartbeat_postgres(raw, *capture_heartbeat(store, "bench-1"))
            name, floor = "heartbeat rate (PostgreSQL)", "raw psycopg, same statements"
            figures.append(heartbeat_figure(store, beat, beats, rounds, name, floor))
            raw.close()
            store.dispose()
            # One target: its databases are numbered, so a second would reuse the first's names.
            target = postgres_target(server)
            figures += bench_import(directory, import_rows, 3, target)
            figures += bench_bulk(target.new_url, " (PostgreSQL)", bulk_sessions, 3)
        big = build_postgres_store(server, big_sessions)
        label = f"{big_sessions:,} PostgreSQL"
        if ungrouped:
            figures += bench_reads(big, label, rounds)
            figures += bench_change_latency(big, label, 5)
        small = ("10 PostgreSQL", build_postgres_store(server, 10, "rt_bench_small"))
        if tui is not None and ungrouped:
            figures += bench_tui(small, (label, big), tui)
        if groups:
            figures += bench_grouped_reads(big, label, rounds)
            if tui is not None:
                figures += bench_tui(small, (label, big), tui, TUI_GROUPING)
    finally:
        server.stop()
    return figures


# ------------------------------------------------------------- issue 11 point 5: the audit trail


def run_audit_section(directory: Path, sessions: int, repeats: int, pg: bool) -> list[Figure]:
    """``--audit``: the audit trail's figures alone, on SQLite and with ``pg`` PostgreSQL."""
    label = f"{sessions:,}/{sessions * AUDIT_HISTORY_PER_SESSION:,}"
    path = directory / "audit.db"
    started = time.perf_counter()
    first_open = build_audit_sqlite(path, sessions)
    print(f"built the SQLite audit store in {time.perf_counter() - started:.1f}s", file=sys.stderr)
    raw = sqlite3.connect(path)
    figures = [Figure(f"audit, first open, all migrations ({label})", first_open)]
    figures += bench_audit(
        f"sqlite:///{path}",
        f"{label} SQLite",
        sessions,
        repeats,
        lambda sql, values: raw.execute(sql, values).fetchall(),
    )
    raw.close()
    if pg:
        import psycopg

        from tests.pg_server import PostgresServer

        server = PostgresServer()
        server.start()
        try:
            started = time.perf_counter()
            url = build_audit_postgres(server, sessions)
            built = time.perf_counter() - started
            print(f"built the PostgreSQL audit store in {built:.1f}s", file=sys.stderr)
            conn = psycopg.connect(url.replace("postgresql+psycopg", "postgresql"), autocommit=True)

            def pg_floor(sql: str, values: tuple[Any, ...]) -> Any:
                return conn.execute(sql.replace("?", "%s"), values).fetchall()

            figures += bench_audit(url, f"{label} PostgreSQL", sessions, repeats, pg_floor)
            conn.close()
        finally:
            server.stop()
    return figures


# ------------------------------------------------ issue 10 point 4: the fleet at a glance


def overview_only(directory: Path, big_size: int, repeats: int, pg: bool) -> list[Figure]:
    """``--only-overview``: the stores it needs (every session with usage) and its figures."""
    figures: list[Figure] = []
    if pg:
        from tests.pg_server import PostgresServer

        server = PostgresServer()
        server.start()
        try:
            url = build_postgres_store(server, big_size, "rt_bench_usage", usage=True)
            figures += bench_overview(url, f"{big_size:,} PostgreSQL", repeats)
        finally:
            server.stop()
    big = directory / "reference-usage.db"
    build_reference_store(big, big_size, usage=True)
    figures += bench_first_open(big, big_size)
    figures += bench_overview(f"sqlite:///{big}", f"{big_size:,} ref.", repeats)
    return figures


# ------------------------------------------------------------------------------- the options


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small stores, few repeats (CI)")
    parser.add_argument("--big", type=int, help="sessions in the reference store")
    parser.add_argument("--pg", action="store_true", help="add the PostgreSQL figures")
    parser.add_argument("--skip-tui", action="store_true", help="leave out the TUI figures")
    parser.add_argument("--skip-cli", action="store_true", help="leave out the CLI start-up")
    parser.add_argument(
        "--skip-writes", action="store_true", help="leave out the heartbeat rate and the import"
    )
    parser.add_argument(
        "--skip-groups", action="store_true", help="leave out the grouped list's figures"
    )
    parser.add_argument(
        "--only-groups",
        action="store_true",
        help="only the grouped list's figures (and the stores they need)",
    )
    parser.add_argument(
        "--only-overview",
        action="store_true",
        help="only the fleet overview's figures (and the stores they need, with usage)",
    )
    parser.add_argument(
        "--skip-first-paint",
        action="store_true",
        help="leave out the TUI first-rows times (memory and key presses stay)",
    )
    parser.add_argument(
        "--audit",
        action="store_true",
        help="only the audit trail's figures (issue 11): --big sessions, 5 history rows each "
        "(labels: sessions/history rows)",
    )
    parser.add_argument(
        "--only-hotpath",
        action="store_true",
        help="only the agent's writes as processes (register, heartbeat, end; --pg adds them "
        "on PostgreSQL)",
    )
    args = parser.parse_args()
    quick = args.quick
    repeats = 5 if quick else 11
    if args.only_hotpath:
        with tempfile.TemporaryDirectory(prefix="rt-bench-") as tmp:
            directory = Path(tmp)
            url = f"sqlite:///{directory / 'hot.db'}"
            seed(url, 1)
            figures = bench_hotpath(url, "process, SQLite", "sqlite3", 2 * repeats + 1, directory)
            figures += bench_hooks(url, 2 * repeats + 1, directory)
            prune_rows = 20_000 if quick else 200_000
            figures += bench_prune(url, "SQLite", prune_rows)
            if args.pg:
                figures += bench_hotpath_postgres(directory, 2 * repeats + 1, prune_rows)
        print_table(figures)
        return 0
    big_size = args.big or (10_000 if quick else 1_000_000)
    if args.audit:
        with tempfile.TemporaryDirectory(prefix="rt-bench-audit-") as tmp:
            print_table(run_audit_section(Path(tmp), big_size, repeats, args.pg))
        return 0
    bulk_size = 1000 if quick else 10_000
    if args.only_overview:
        with tempfile.TemporaryDirectory(prefix="rt-bench-") as tmp:
            print_table(overview_only(Path(tmp), big_size, repeats, args.pg))
        return 0
    with tempfile.TemporaryDirectory(prefix="rt-bench-") as tmp:
        directory = Path(tmp)
        path = directory / "bench.db"
        url = f"sqlite:///{path}"
        seed(url, 20 if quick else 1000)
        tiny = f"sqlite:///{directory / 'ten.db'}"
        seed(tiny, 10)
        ungrouped, groups = not args.only_groups, not args.skip_groups
        skip_cli = args.skip_cli or not ungrouped
        figures = [] if skip_cli else bench_cli_startup(url, 2 * repeats + 1, directory)
        if not args.skip_writes and ungrouped:
            figures += bench_heartbeat_rate(path, beats=100 if quick else 500, rounds=repeats)
            figures += bench_import(directory, 10_000 if quick else 100_000, 3 if quick else 5)
            figures += bench_bulk(sqlite_target(directory).new_url, "", bulk_size, 3)
            figures += bench_transcript_tail(directory, 4 * repeats + 1, 20 if quick else 200)
            figures += bench_usage_reads(directory, 4 * repeats + 1, 20 if quick else 200)
        tui = TuiRuns(
            *((10, 2) if quick else (30, 12)),
            paint_repeats=None if args.skip_first_paint else 3 if quick else repeats,
            memory_repeats=3 if quick else 5,
            env=compiled_env(directory / "pycache"),
        )
        if args.pg:
            figures += bench_postgres(
                directory,
                beats=100 if quick else 500,
                rounds=repeats,
                import_rows=10_000 if quick else 100_000,
                big_sessions=big_size,
                tui=None if args.skip_tui else tui,
                bulk_sessions=bulk_size,
                groups=groups,
                ungrouped=ungrouped,
            )
        big = directory / "reference-big.db"
        started = time.perf_counter()
        build_reference_store(big, big_size)
        print(
            f"built a reference store of {big_size:,} sessions in "
            f"{time.perf_counter() - started:.1f}s; opening it the first time:",
            file=sys.stderr,
        )
        figures += bench_first_open(big, big_size)
        big_store = (f"{big_size:,} sessions", f"sqlite:///{big}")
        label = f"{big_size:,} ref."
        if ungrouped:
            figures += bench_reads(big_store[1], label, repeats)
            if not skip_cli:
                figures += bench_cli_list(big_store, ("10 sessions", tiny), repeats)
        if not args.skip_tui and ungrouped:
            figures += bench_tui(("10 sessions", tiny), big_store, tui)
            figures += bench_change_latency(big_store[1], label, 5)
            figures += bench_console_through_server(
                big_store, tui.paint_repeats or repeats, tui.downs, tui.pagedowns, tui.env
            )
        if groups:
            figures += bench_grouped_reads(big_store[1], label, repeats)
            if not args.skip_tui:
                figures += bench_tui(("10 sessions", tiny), big_store, tui, TUI_GROUPING)
    print_table(figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
