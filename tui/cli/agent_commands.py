"""What the agents write, as ``sessions`` subcommands: ``register``, ``heartbeat`` (with
several sessions, the operator's heartbeat of each instead, a bulk action) and ``end``.
``register``, ``end`` and one session's heartbeat without --every try
``store.writes.quick_writes`` first (``sqlite3`` or ``psycopg`` alone), and
``store.writes.agent_writes`` on a store the quick path does not take."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import click

from roundtable_console.tui import output
from roundtable_console.tui.agent_output import ROWS, print_session
from roundtable_console.tui.cli.invocation import Invocation, with_invocation
from roundtable_console.tui.cli.lifecycle_commands import bulk_selection, run_bulk_action
from roundtable_console.tui.cli.options import (
    FILTER_NAMES,
    all_matching_option,
    checked_session_id,
    dry_run_option,
    filter_options,
    flags_with_verb,
    operator_option,
    refuse_filters_without_all_matching,
    run_key_option,
    session_option,
    sessions_option,
    was_given,
)
from roundtable_console.tui.cli.printing import BULK_HELP

if TYPE_CHECKING:
    from roundtable_console.store.db.database import Store
    from roundtable_console.store.records import SessionFields


@click.command("register", help="Register a session (an upsert keyed by --id).")
@click.option("--id", "session_id", required=True, metavar="S")
@click.option("--agent", "agent_id", required=True, metavar="A")
@click.option("--run", "run_id", required=True, metavar="R")
@click.option("--adapter", required=True, metavar="NAME")
@click.option("--cwd", "working_directory", required=True, metavar="DIR")
@click.option("--provider", metavar="P")
@click.option("--model", metavar="M")
@click.option("--external-session-id", metavar="E")
@click.option("--resume-command", metavar="C")
@click.option("--mcp-socket", metavar="PATH")
@click.option("--status", metavar="ST", help="Default: active.")
@click.option("--metadata", metavar="JSON", help="A JSON object.")
@click.option("--host", metavar="NAME", help="The machine the session runs on (ours).")
@with_invocation
def register_command(inv: Invocation, **values: Any) -> None:
    """``values``: the options, by the names of ``store.writes.agent_writes.register``'s
    parameters."""
    from roundtable_console.store.writes import quick_writes

    adapters = inv.adapters()
    session = quick_writes.register(inv.url(), adapters=adapters, clock=inv.clock, **values)
    if session is None:  # a store the quick path does not take
        from roundtable_console.store.writes.agent_writes import register

        with inv.store() as store, store.write() as db:
            session = register(db=db, adapters=adapters, clock=inv.clock, **values)
    print_session("register", session, json_mode=inv.json_mode)


HEARTBEAT_HELP = (
    """Record that a session is alive (the agent's heartbeat).

With --session more than once, or --all-matching and filters (--status then selects by
status), it is the operator's heartbeat of each session instead, as the console's h key: from
an active state only, recorded with --operator's name.

"""
    + BULK_HELP
)


@click.command("heartbeat", help=HEARTBEAT_HELP)
@sessions_option
@click.option(
    "--status",
    "statuses",
    multiple=True,
    metavar="ST",
    help="A new status (blank keeps the current one); with --all-matching, only sessions in "
    "this status (repeat).",
)
@click.option("--external-session-id", metavar="E", help="Blank keeps the current one.")
@click.option(
    "--waiting",
    metavar="REASON",
    help="The session waits for a human, for this reason (≤ 500 characters); "
    "the next heartbeat without it ends the wait.",
)
@click.option(
    "--turn-done",
    metavar="WORDS",
    help="The agent's turn is done and it awaits a prompt (its last words, ≤ 500 "
    "characters); the next heartbeat without it ends that.",
)
@click.option(
    "--every",
    metavar="SECONDS",
    type=click.FloatRange(min=0.05, max=86_400),
    help="Keep beating every SECONDS until interrupted (SIGINT or SIGTERM ends it cleanly).",
)
@run_key_option
@operator_option
@all_matching_option
@dry_run_option
@filter_options(besides=("statuses", "waiting"))
@with_invocation
def heartbeat_command(
    inv: Invocation,
    session_ids: tuple[str, ...],
    statuses: tuple[str, ...],
    external_session_id: str | None,
    waiting: str | None,
    turn_done: str | None,
    every: float | None,
    all_matching: bool,
    **options: Any,
) -> int | None:
    if all_matching or len(session_ids) > 1:
        singles = {
            "--every": every,
            "--external-session-id": external_session_id,
            "--waiting": waiting,
            "--turn-done": turn_done,
        }
        return _operator_heartbeats(inv, session_ids, statuses, all_matching, singles, **options)
    _refuse_bulk_only_options(options)
    if not session_ids:
        raise click.UsageError("Give --session S (or several, or --all-matching with filters).")
    if len(statuses) > 1:
        raise click.UsageError(
            "One session's heartbeat takes one --status (more select sessions, with "
            "--all-matching)."
        )
    status = statuses[0] if statuses else None
    session_id = checked_session_id(session_ids[0])
    _agent_heartbeat(inv, session_id, status, external_session_id, waiting, turn_done, every)
    return None


def _operator_heartbeats(
    inv: Invocation,
    session_ids: tuple[str, ...],
    statuses: tuple[str, ...],
    all_matching: bool,
    singles: Mapping[str, Any],
    *,
    dry_run: bool,
    **options: Any,
) -> int:
    """The operator's heartbeat of several sessions (``singles``: the options of one
    session's own heartbeat, refused here)."""
    given = [flag for flag, value in singles.items() if value is not None]
    if given:
        raise click.UsageError(
            f"{flags_with_verb(given, 'applies', 'apply')} to one session's own heartbeat, not "
            "to the operator's heartbeat of several."
        )
    if statuses and not all_matching:
        raise click.UsageError(
            "--status sets one session's new status; to select sessions by status, use "
            "--all-matching --status ST."
        )
    filters = {name: options.pop(name, None) for name in FILTER_NAMES}
    # Here --status selects by status (with --all-matching), and --waiting is one session's
    # own reason to wait, not the list's filter.
    filters.update(statuses=statuses, waiting=False)
    target = bulk_selection(inv, session_ids, all_matching, dry_run, filters)
    assert target is not None  # several sessions, or a selection
    return run_bulk_action(inv, "heartbeat", *target, dry_run=dry_run, **options)


def _refuse_bulk_only_options(options: Mapping[str, Any]) -> None:
    """One session's own heartbeat takes neither a selection nor the operator's options."""
    refuse_filters_without_all_matching(options)
    operator_only = [
        flag
        for name, flag in (
            ("dry_run", "--dry-run"),
            ("idempotency_key", "--idempotency-key"),
            ("operator", "--operator"),
        )
        if was_given(options.get(name))
    ]
    if operator_only:
        raise click.UsageError(
            f"{flags_with_verb(operator_only, 'applies', 'apply')} to the operator's heartbeat of "
            "several sessions (--session more than once, or --all-matching)."
        )


def _agent_heartbeat(
    inv: Invocation,
    session_id: str,
    status: str | None,
    external_session_id: str | None,
    waiting: str | None,
    turn_done: str | None,
    every: float | None,
) -> None:
    table = None if inv.json_mode else output.Table(ROWS["heartbeat"][0])

    def show(session: SessionFields) -> None:
        if table is None:
            output.emit_json(session.to_json())
        else:
            table.write([ROWS["heartbeat"][1](session)])

    values = {
        "session_id": session_id,
        "status": status,
        "external_session_id": external_session_id,
        "waiting": waiting,
        "turn_done": turn_done,
    }
    if every is None:
        from roundtable_console.store.writes import quick_writes

        quick = quick_writes.heartbeat(inv.url(), clock=inv.clock, **values)
        if quick is not None:
            show(quick)
            return
    from roundtable_console.store.writes.agent_writes import heartbeat

    def beat(store: Store) -> None:
        with store.write() as db:
            session = heartbeat(db=db, clock=inv.clock, **values)
        show(session)

    with inv.store() as store:
        if every is None:
            beat(store)
            return
        _beat_until_stopped(store, beat, every)


def _beat_until_stopped(store: Store, beat: Callable[[Store], None], every: float) -> None:
    """One process, one connection pool, many beats: agents pay start-up once. A database that
    is briefly unavailable is reported and retried at the next beat; any other refusal ends it."""
    import signal
    import threading

    from roundtable_console.store.errors import DatabaseUnavailable

    stopping = threading.Event()
    previous = {
        sig: signal.signal(sig, lambda _sig, _frame: stopping.set())
        for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        while not stopping.is_set():
            try:
                beat(store)
            except DatabaseUnavailable as error:
                output.echo_text(f"warning: {error.message} (retrying)", err=True)
            stopping.wait(every)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@click.command("end", help="Record that a session ended.")
@session_option
@click.option("--status", metavar="ST", help="Final status (default: ended).")
@with_invocation
def end_command(inv: Invocation, session_id: str, status: str | None) -> None:
    from roundtable_console.store.writes import quick_writes

    session_id = checked_session_id(session_id)
    session = quick_writes.end(inv.url(), session_id=session_id, status=status, clock=inv.clock)
    if session is None:  # a store the quick path does not take
        from roundtable_console.store.writes.agent_writes import end

        with inv.store() as store, store.write() as db:
            session = end(db=db, session_id=session_id, status=status, clock=inv.clock)
    print_session("end", session, json_mode=inv.json_mode)
