"""Benchmarks, printed as ratios against baselines measured in the same run.

This machine is shared and noisy, so absolute times mean little: every figure is a median of
several runs and is compared with a floor measured moments before (raw sqlite3, a bare Python
import). Run `python bench/bench.py` for the full set, `--quick` for a small smoke run (CI).
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from store.clock import format_ts, system_clock  # noqa: E402
from store.database import open_store  # noqa: E402


def median_seconds(action: Callable[[], object], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def run_process(argv: list[str]) -> None:
    subprocess.run(argv, check=True, capture_output=True)


def roundtable_command() -> list[str]:
    script = Path(sys.executable).with_name("roundtable")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tui.cli"]


def seed(url: str, sessions: int) -> None:
    from store import sessions as ops

    store = open_store(url)
    with store.write() as db:
        for number in range(sessions):
            ops.register(
                db=db,
                session_id=f"bench-{number}",
                agent_id=f"agent-{number % 7}",
                run_id="run-1",
                adapter="codex",
                working_directory="/tmp",
            )
    store.dispose()


def bench_cli_startup(url: str, repeats: int) -> list[tuple[str, float, str, float]]:
    python = sys.executable
    floor_sqlalchemy = median_seconds(
        lambda: run_process([python, "-c", "import sqlalchemy"]), repeats
    )
    floor_sqlmodel = median_seconds(lambda: run_process([python, "-c", "import sqlmodel"]), repeats)
    heartbeat = median_seconds(
        lambda: run_process(
            [*roundtable_command(), "sessions", "heartbeat", "--db", url, "--session", "bench-0"]
        ),
        repeats,
    )
    return [
        ("cli heartbeat (process)", heartbeat, "python -c 'import sqlalchemy'", floor_sqlalchemy),
        ("cli heartbeat (process)", heartbeat, "python -c 'import sqlmodel'", floor_sqlmodel),
    ]


def bench_heartbeat_rate(path: Path, beats: int) -> list[tuple[str, float, str, float]]:
    from store import sessions as ops

    url = f"sqlite:///{path}"
    store = open_store(url)

    def ours() -> None:
        for _ in range(beats):
            with store.write() as db:
                ops.heartbeat(db=db, session_id="bench-1", clock=system_clock)

    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("PRAGMA journal_mode = WAL")
    raw.execute("PRAGMA synchronous = NORMAL")

    def floor() -> None:
        for _ in range(beats):
            now = format_ts(system_clock())
            raw.execute("BEGIN IMMEDIATE")
            raw.execute(
                "UPDATE agent_sessions SET last_seen_at = ?, version = version + 1 WHERE id = ?"
                " RETURNING *",
                (now, "bench-1"),
            ).fetchall()
            raw.execute(
                "INSERT INTO agent_session_events (session_id, event_type, payload_json,"
                " created_at) VALUES (?, 'heartbeat', ?, ?)",
                ("bench-1", '{"status":"active"}', now),
            )
            raw.execute("COMMIT")

    ours_time = median_seconds(ours, 3)
    floor_time = median_seconds(floor, 3)
    raw.close()
    store.dispose()
    # Rates: a ratio above 1 means slower; report ours/raw as a time ratio and as a rate ratio.
    return [(f"{beats} heartbeats (store)", ours_time, f"{beats} raw sqlite3", floor_time)]


REFERENCE_DDL = ROOT / "tests" / "reference_ddl.sql"
STATUSES = ("active", "running", "paused", "stopped", "ended", "terminated", "starting")


def build_reference_store(path: Path, sessions: int) -> None:
    """A store as the reference system would leave it: its DDL, its timestamp forms, no
    migrations yet."""
    raw = sqlite3.connect(path)
    raw.executescript(REFERENCE_DDL.read_text())
    forms = (
        "2026-09-{day:02d} {hour:02d}:{minute:02d}:{second:02d}",
        "2026-09-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}Z",
        "2026-09-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}.123456789Z",
    )

    def rows():
        for n in range(sessions):
            moment = {
                "day": 1 + n * 29 // max(sessions, 1),
                "hour": n % 24,
                "minute": n % 60,
                "second": (n // 60) % 60,
            }
            yield (
                f"sess-{n:07d}",
                f"agent-{n % 97}",
                f"run-{n % 1009}",
                "codex",
                "/work",
                STATUSES[n % len(STATUSES)],
                forms[n % 3].format(**moment),
                forms[(n + 1) % 3].format(**moment),
                f"ws-{n % 5}",
            )

    raw.executemany(
        "INSERT INTO agent_sessions (id, agent_id, run_id, adapter, working_directory, status,"
        " started_at, last_seen_at, workspace_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows(),
    )
    raw.commit()
    raw.close()


def bench_first_open(path: Path) -> tuple[float, float]:
    """Seconds for the first open (migrations and indexes) and for a later open."""
    started = time.perf_counter()
    open_store(f"sqlite:///{path}").dispose()
    first = time.perf_counter() - started
    started = time.perf_counter()
    open_store(f"sqlite:///{path}").dispose()
    return first, time.perf_counter() - started


def first_paint_command(*args: str) -> list[str]:
    return [sys.executable, str(ROOT / "bench" / "first_paint.py"), *args]


def bench_first_paint(stores: dict[str, str], repeats: int) -> list[tuple[str, float, str, float]]:
    floor = median_seconds(lambda: run_process(first_paint_command("bare")), repeats)
    rows = []
    for name, url in stores.items():
        ours = median_seconds(
            lambda url=url: run_process(first_paint_command("console", url)), repeats
        )
        rows.append((f"tui first rows ({name})", ours, "bare Textual app, 60 rows", floor))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small stores, few repeats (CI)")
    args = parser.parse_args()
    repeats = 3 if args.quick else 11
    with tempfile.TemporaryDirectory(prefix="rt-bench-") as tmp:
        path = Path(tmp) / "bench.db"
        url = f"sqlite:///{path}"
        seed(url, 20 if args.quick else 1000)
        rows = bench_cli_startup(url, repeats)
        rows += bench_heartbeat_rate(path, 50 if args.quick else 500)
        big_size = 10_000 if args.quick else 1_000_000
        big = Path(tmp) / "reference-big.db"
        started = time.perf_counter()
        build_reference_store(big, big_size)
        print(
            f"built a reference store of {big_size:,} sessions in "
            f"{time.perf_counter() - started:.1f}s",
            file=sys.stderr,
        )
        first_open, later_open = bench_first_open(big)
        print(
            f"first open of that store (migrations, indexes): {first_open:.1f}s; "
            f"a later open: {later_open * 1000:.0f}ms",
            file=sys.stderr,
        )
        rows += bench_first_paint(
            {"20 sessions": url, f"{big_size:,} sessions": f"sqlite:///{big}"}, repeats
        )
    print(f"{'measurement':<28} {'median':>9}   {'baseline':<30} {'median':>9}   ratio")
    for name, value, base_name, base in rows:
        print(
            f"{name:<28} {value * 1000:>7.1f}ms   {base_name:<30} {base * 1000:>7.1f}ms   "
            f"{value / base:5.2f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
