"""The agent's writes, the hot path: the CLI's start-up (a heartbeat as a whole process),
register, heartbeat and end as processes against the bare imports they need, on SQLite and on
PostgreSQL; ``db prune``'s longest batch (the longest the agents' writes wait for it); and the
heartbeat rate through the store against the raw driver sending the very statements it sends."""

from __future__ import annotations

import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import event

from bench.figures import (
    Figure,
    compiled_env,
    median_seconds,
    paired_medians,
    roundtable_command,
    run_process,
)
from bench.stores import raw_connection
from roundtable_console.store.clock import format_ts, system_clock
from roundtable_console.store.db.database import Store, open_store

# ------------------------------------------------------------------------ point 6: CLI start-up


def bench_cli_startup(url: str, repeats: int, directory: Path) -> list[Figure]:
    python = sys.executable
    env = compiled_env(directory / "pycache")
    heartbeat = [*roundtable_command(), "sessions", "heartbeat", "--db", url]
    heartbeat += ["--session", "bench-0"]
    commands = {
        "heartbeat": heartbeat,
        "sqlmodel": [python, "-c", "import sqlmodel"],
        "sqlalchemy": [python, "-c", "import sqlalchemy"],
    }
    for argv in commands.values():
        run_process(argv, env)  # writes the bytecode the measured runs read
    ours, floor_sqlmodel = paired_medians(
        lambda: run_process(commands["heartbeat"], env),
        lambda: run_process(commands["sqlmodel"], env),
        repeats,
    )
    floor_sqlalchemy = median_seconds(lambda: run_process(commands["sqlalchemy"], env), repeats)
    name = "cli heartbeat (process)"
    return [
        Figure(name, ours, "python -c 'import sqlalchemy'", floor_sqlalchemy),
        Figure(name, ours, "python -c 'import sqlmodel'", floor_sqlmodel, limit=1.25),
    ]


# ------------------------------------------------------------------------ issue 12: the hot path


def hotpath_commands(url: str) -> dict[str, list[str]]:
    """The agent's three writes, text and --json, as whole processes of the console script."""
    command = roundtable_command()
    register = [*command, "sessions", "register", "--id", "hot-1", "--agent", "a", "--run", "r"]
    register += ["--adapter", "codex", "--cwd", "/w", "--db", url]
    heartbeat = [*command, "sessions", "heartbeat", "--session", "hot-1", "--db", url]
    end = [*command, "sessions", "end", "--session", "hot-1", "--db", url]
    forms = {"register": register, "heartbeat": heartbeat, "end": end}
    return {
        f"{name}{suffix}": [*argv, *extra]
        for name, argv in forms.items()
        for suffix, extra in (("", []), (" --json", ["--json"]))
    }


def bench_hotpath(url: str, label: str, driver: str, repeats: int, directory: Path) -> list[Figure]:
    """Each agent write as a whole process against ``python -c "import click, DRIVER"``, the
    same run's floor, paired: on SQLite register within 2x and heartbeat and end within 1.5x;
    on PostgreSQL each within 1.3x."""
    env = compiled_env(directory / "pycache")
    floor = [sys.executable, "-c", f"import click, {driver}"]
    run_process(floor, env)
    figures = []
    for name, argv in hotpath_commands(url).items():
        run_process(argv, env)  # the bytecode, and the session, for the measured runs
        ours, base = paired_medians(
            lambda argv=argv: run_process(argv, env), lambda: run_process(floor, env), repeats
        )
        limit = 1.3 if driver == "psycopg" else 2.0 if name.startswith("register") else 1.5
        figures.append(
            Figure(f"{name} ({label})", ours, f"python -c 'import click, {driver}'", base, limit)
        )
    return figures


def bench_hooks(url: str, repeats: int, directory: Path) -> list[Figure]:
    """An agent's hook event (``roundtable hooks run``, a process per event, payload on stdin)
    against ``python -c "import json, sqlite3"``, paired, within 1.5x (issue 29): a session's
    start, a tool event (a quiet beat: nothing written within 5 s of the last), a tool call's
    end (its tool call written, the beat quiet), a permission prompt (a wait, written), a turn
    done and the end. Before each, an answer is appended to the agent's transcript: every hook
    reads it and writes the session's usage (issue 46)."""
    import json
    import subprocess

    env = compiled_env(directory / "pycache")
    env["ROUNDTABLE_HOOK_SPOOL"] = str(directory / "hook-spool.jsonl")
    floor = [sys.executable, "-c", "import json, sqlite3"]
    hook = [*roundtable_command(), "hooks", "run", "claude-code", "--db", url]
    base = {
        "session_id": "9d3c1a52-7c1e-4b8e-9a57-2f1d7c0e9b11",
        "cwd": str(directory),
        "transcript_path": str(directory / "t.jsonl"),
    }
    events = {
        "SessionStart": {"source": "startup"},
        "PreToolUse": {"tool_name": "Bash", "tool_input": {"command": "ls"}},
        # A tool call written (issue 46), with the beat it comes in kept quiet.
        "PostToolUse": {"tool_name": "Bash", "tool_input": {"command": "ls"}, "duration_ms": 4},
        "PermissionRequest": {"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}},
        # A turn done, the usage of the answer appended since the last hook read and written.
        "Stop": {"last_assistant_message": "done"},
        "SessionEnd": {"reason": "other"},
    }

    # The transcript in the agent's own home, as the hooks read it (agents.usage).
    env["HOME"] = str(directory)
    transcript = directory / ".claude" / "projects" / "-w" / f"{base['session_id']}.jsonl"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    base["transcript_path"] = str(transcript)
    answers = iter(range(10**9))

    def run(payload: bytes) -> None:
        usage = {"input_tokens": 10, "output_tokens": next(answers) + 1}
        with transcript.open("a") as handle:
            handle.write(json.dumps({"type": "assistant", "message": {"usage": usage}}) + "\n")
        subprocess.run(hook, input=payload, check=True, capture_output=True, env=env)

    run_process(floor, env)
    figures = []
    for name, fields in events.items():
        payload = json.dumps({**base, "hook_event_name": name, **fields}).encode()
        run(payload)  # the bytecode, and the session, for the measured runs
        ours, floor_seconds = paired_medians(
            lambda payload=payload: run(payload), lambda: run_process(floor, env), repeats
        )
        figures.append(
            Figure(
                f"hook {name} (process, SQLite)",
                ours,
                "python -c 'import json, sqlite3'",
                floor_seconds,
                limit=1.5,
            )
        )
    return figures


def bench_prune(url: str, label: str, rows: int) -> list[Figure]:
    """``db prune`` of ``rows`` old heartbeat rows of 100 sessions: the longest batch (on SQLite
    the longest hold of the write lock, at most 100 ms) and the whole run."""
    from datetime import timedelta

    from sqlalchemy import text

    from roundtable_console.store.writes.retention import prune_heartbeats

    store = open_store(url)
    old = format_ts(system_clock() - timedelta(days=30))
    with store.write() as db:
        db.execute(
            text(
                "INSERT INTO agent_session_events (session_id, event_type, payload_json,"
                " created_at) VALUES (:session, 'heartbeat', :payload, :at)"
            ),
            [
                {"session": f"s{n % 100}", "payload": f'{{"last_seen_at":"{old}"}}', "at": old}
                for n in range(rows)
            ],
        )
    started = time.perf_counter()
    report = prune_heartbeats(store=store, older_than=timedelta(days=7))
    whole = time.perf_counter() - started
    store.dispose()
    name = f"prune {rows:,} heartbeat rows ({label})"
    return [
        # PostgreSQL locks only the rows deleted: agents' inserts never wait for a batch.
        Figure(
            f"{name}: longest batch",
            report.longest_batch_seconds,
            limit=0.1 if store.dialect == "sqlite" else None,
            absolute=True,
        ),
        Figure(f"{name}: {report.batches} batches", whole),
    ]


def bench_hotpath_postgres(directory: Path, repeats: int, prune_rows: int) -> list[Figure]:
    from tests.pg_server import PostgresServer

    server = PostgresServer()
    server.start()
    try:
        figures = bench_hotpath(server.url(), "process, PostgreSQL", "psycopg", repeats, directory)
        return figures + bench_prune(server.url(), "PostgreSQL", prune_rows)
    finally:
        server.stop()


# ------------------------------------------------------------------------ point 7a: a heartbeat


@dataclass(frozen=True)
class Captured:
    statement: str
    parameters: Any


def capture_heartbeat(store: Store, session_id: str) -> tuple[list[Captured], str]:
    """The statements one heartbeat sends, in order (BEGIN included, COMMIT not), and the
    timestamp it bound: what goes through SQLAlchemy, and what the prepared statements of the
    write path send to the DBAPI cursor directly."""
    from roundtable_console.store.db import database
    from roundtable_console.store.writes import agent_writes
    from roundtable_console.store.writes.history import Prepared

    captured: list[Captured] = []
    # Only this thread's: the spies below are the process's, and another thread (a store's
    # change watch, say) may send its own statements meanwhile.
    ours = threading.get_ident()

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_rest: Any) -> None:
        if threading.get_ident() == ours:
            captured.append(Captured(statement, parameters))

    send = Prepared.execute

    def spy(prepared: Prepared, db: Any, values: Any) -> Any:
        form = prepared.form_for(db.dialect)
        if form is not None and threading.get_ident() == ours:
            captured.append(Captured(form.sql, form.parameters(values)))
        return send(prepared, db, values)

    # SQLite's BEGIN and pragmas go to the sqlite3 connection directly, past SQLAlchemy's events.
    send_driver_sql = database._driver_sql

    def spy_driver_sql(connection: Any, sql: str) -> None:
        if not sql.startswith("PRAGMA") and threading.get_ident() == ours:
            captured.append(Captured(sql, ()))
        send_driver_sql(connection, sql)

    event.listen(store.engine, "before_cursor_execute", record)
    Prepared.execute = spy  # type: ignore[method-assign]
    database._driver_sql = spy_driver_sql
    try:
        with store.write() as db:
            session = agent_writes.heartbeat(db=db, session_id=session_id, clock=system_clock)
    finally:
        database._driver_sql = send_driver_sql
        Prepared.execute = send  # type: ignore[method-assign]
        event.remove(store.engine, "before_cursor_execute", record)
    assert session.last_seen_at is not None
    return captured, session.last_seen_at


def raw_heartbeat_sqlite(
    raw: sqlite3.Connection, statements: list[Captured], stamp: str
) -> Callable[[], None]:
    """One heartbeat's statements through sqlite3, with a fresh timestamp, then COMMIT."""

    def beat() -> None:
        now = format_ts(system_clock())
        for sent in statements:
            parameters = tuple(now if value == stamp else value for value in sent.parameters)
            raw.execute(sent.statement, parameters).fetchall()
        raw.execute("COMMIT")

    return beat


def raw_heartbeat_postgres(raw: Any, statements: list[Captured], stamp: str) -> Callable[[], None]:
    """The same through psycopg (which begins the transaction itself)."""
    sent_statements = [sent for sent in statements if not sent.statement.startswith("BEGIN")]

    def beat() -> None:
        now = format_ts(system_clock())
        with raw.transaction(), raw.cursor() as cursor:
            for sent in sent_statements:
                parameters = {
                    key: now if value == stamp else value for key, value in sent.parameters.items()
                }
                cursor.execute(sent.statement, parameters)
                if cursor.description:
                    cursor.fetchall()

    return beat


def heartbeat_figure(
    store: Store, raw_beat: Callable[[], None], beats: int, rounds: int, name: str, floor: str
) -> Figure:
    from roundtable_console.store.writes import agent_writes

    def ours() -> None:
        for _ in range(beats):
            with store.write() as db:
                agent_writes.heartbeat(db=db, session_id="bench-1", clock=system_clock)

    def raw() -> None:
        for _ in range(beats):
            raw_beat()

    ours_time, floor_time = paired_medians(ours, raw, rounds)
    return Figure(name, ours_time / beats, floor, floor_time / beats, 0.35, rate=True)


def bench_heartbeat_rate(path: Path, beats: int, rounds: int) -> list[Figure]:
    """Our heartbeat (Store.write() + sessions.heartbeat) against raw sqlite3 sending the very
    statements it sends, captured from it, with a fresh timestamp per beat."""
    store = open_store(f"sqlite:///{path}")
    raw = raw_connection(path)
    try:
        beat = raw_heartbeat_sqlite(raw, *capture_heartbeat(store, "bench-1"))
        name, floor = "heartbeat rate (store)", "raw sqlite3, same statements"
        return [heartbeat_figure(store, beat, beats, rounds, name, floor)]
    finally:
        raw.close()
        store.dispose()
