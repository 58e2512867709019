"""The commands on the store as a whole: the ``db`` group (``upgrade``, ``grants``, ``prune``)
and ``demo``, ``import`` and ``export``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import click

from roundtable_console.tui import output
from roundtable_console.tui.cli.invocation import Invocation, with_invocation
from roundtable_console.tui.cli.printing import print_counts, print_progress

if TYPE_CHECKING:
    from roundtable_console.store.writes.retention import PruneReport


@click.command(
    "demo",
    help="Seed the store with demo sessions, agents, tasks and claims (the demo's transcripts "
    "beside a SQLite store, else in the user data directory).",
)
@click.option("--sessions", "count", type=click.IntRange(min=0), metavar="N")
@with_invocation
def demo_command(inv: Invocation, count: int | None) -> None:
    from roundtable_console.store.writes.demo import seed_demo
    from roundtable_console.tui.config import demo_agent_home

    extra = {"sessions": count} if count is not None else {}
    home = demo_agent_home(inv.url())
    with inv.store() as store, store.write() as db:
        counts = seed_demo(db=db, clock=inv.clock, agent_home=home, **extra)
    print_counts(counts, json_mode=inv.json_mode)


@click.group("db", help="The database itself.")
def db_group() -> None:
    pass


@db_group.command("upgrade", help="Bring the schema up to date; says whether anything ran.")
@with_invocation
def upgrade_command(inv: Invocation) -> None:
    from sqlalchemy import exc

    from roundtable_console.store.db.database import (
        create_store_engine,
        describe_url,
        unavailable_message,
    )
    from roundtable_console.store.db.revision import HEAD_REVISION
    from roundtable_console.store.db.schema import ensure_schema
    from roundtable_console.store.errors import DatabaseUnavailable

    url = inv.url()
    engine = create_store_engine(url)
    try:
        ran = ensure_schema(engine, progress=print_progress)
    except exc.DBAPIError as error:
        reason = str(error.orig or error).strip().splitlines()[0]
        raise DatabaseUnavailable(unavailable_message(describe_url(url), reason)) from None
    finally:
        engine.dispose()
    _warn_if_exposed(url)
    where = describe_url(url)
    if inv.json_mode:
        output.emit_json({"upgraded": ran, "revision": HEAD_REVISION, "database": where})
    elif ran:
        click.echo(f"Upgraded {output.cell(where)} to {HEAD_REVISION}.")
    else:
        click.echo(f"{output.cell(where)} is already up to date ({HEAD_REVISION}).")


def _warn_if_exposed(url: str) -> None:
    """A warning on stderr when other users of the machine may read the SQLite store."""
    from roundtable_console.store.db.drivers import sqlite_file
    from roundtable_console.store.db.private_files import exposure

    path = sqlite_file(url)
    said = exposure(path) if path is not None else None
    if said:
        output.echo_text(f"warning: {said}", err=True)


GRANTS_HELP = """Print the GRANT statements that give a PostgreSQL role what it needs, for the
schema's owner to run (psql -f). Least privilege: a viewer reads everything; a writer reads,
and writes sessions, their history, the run events, idempotency keys and the counts the
triggers keep; neither may change the schema (only its owner migrates). --db names the
database the statements grant CONNECT on (default: the store's)."""


@db_group.command("grants", help=GRANTS_HELP)
@click.option("--role", required=True, metavar="NAME", help="The role to grant to.")
@click.option("--viewer", "kind", flag_value="viewer", help="Read-only: opens and reads.")
@click.option("--writer", "kind", flag_value="writer", help="Reads, and acts on sessions.")
@with_invocation
def grants_command(inv: Invocation, role: str, kind: str | None) -> None:
    from roundtable_console.store.db.grants import grant_statements, role_name_problem

    if kind is None:
        raise click.UsageError("Give --viewer or --writer.")
    problem = role_name_problem(role)
    if problem is not None:
        raise click.BadParameter(problem, param_hint="'--role'")
    statements = grant_statements(role=role, kind=kind, database=_database_name(inv))
    if inv.json_mode:
        output.emit_json({"role": role, "kind": kind, "statements": statements})
        return
    for statement in statements:
        click.echo(statement)


def _database_name(inv: Invocation) -> str | None:
    """The PostgreSQL database of the store's URL, when it is one."""
    from sqlalchemy import exc
    from sqlalchemy.engine import make_url

    try:
        url = make_url(inv.url())
    except exc.ArgumentError:  # an unreadable URL names no database
        return None
    return url.database if url.get_backend_name() == "postgresql" else None


PRUNE_HELP = """Remove what grows without end, in short transactions. --heartbeats-older-than:
the agent_session_events rows of type heartbeat older than DURATION (7d, 12h, 30m, 90s, 2w),
but each session's newest; every other row stays. Each transaction is sized to hold SQLite's
write lock about 10 ms, so agents keep beating meanwhile; it says how many rows went and how
much space that frees. --idempotency-keys-older-than: the idempotency keys older than DURATION
(30d, say); keys younger than a day, the longest a client may retry with one, are kept
whatever DURATION says. Give either or both."""


def _duration(text: str | None, flag: str) -> timedelta | None:
    from roundtable_console.store.writes.retention import parse_duration

    if text is None:
        return None
    duration = parse_duration(text)
    if duration is None:
        raise click.BadParameter(
            f"{text!r} is not a duration: give a whole number above 0 and a unit, s, m, "
            "h, d or w (7d is a week), up to ten years.",
            param_hint=f"'{flag}'",
        )
    return duration


@db_group.command("prune", help=PRUNE_HELP)
@click.option(
    "--heartbeats-older-than",
    "older_than",
    metavar="DURATION",
    help="Heartbeat rows older than this go: a whole number and s, m, h, d or w (e.g. 7d).",
)
@click.option(
    "--idempotency-keys-older-than",
    "keys_older_than",
    metavar="DURATION",
    help="Idempotency keys older than this go (e.g. 30d); those younger than a day stay.",
)
@click.option("--dry-run", is_flag=True, help="Count what would go; write nothing.")
@with_invocation
def prune_command(
    inv: Invocation, older_than: str | None, keys_older_than: str | None, dry_run: bool
) -> None:
    from roundtable_console.store.writes.retention import (
        prune_heartbeats,
        prune_idempotency_keys,
    )

    if older_than is None and keys_older_than is None:
        raise click.UsageError(
            "Say what to prune: --heartbeats-older-than DURATION, "
            "--idempotency-keys-older-than DURATION, or both."
        )
    beats_age = _duration(older_than, "--heartbeats-older-than")
    keys_age = _duration(keys_older_than, "--idempotency-keys-older-than")
    report = keys = None
    with inv.store() as store:
        if beats_age is not None:
            report = prune_heartbeats(
                store=store, older_than=beats_age, dry_run=dry_run, clock=inv.clock
            )
        if keys_age is not None:
            keys = prune_idempotency_keys(
                store=store, older_than=keys_age, dry_run=dry_run, clock=inv.clock
            )
    if inv.json_mode:
        body: dict[str, Any] = {"dry_run": dry_run}
        if report is not None and older_than is not None:
            body.update(report.to_json(), older_than=older_than.strip())
        if keys is not None and keys_older_than is not None:
            body["idempotency_keys"] = {**keys.to_json(), "older_than": keys_older_than.strip()}
        output.emit_json(body)
        return
    if report is not None and older_than is not None:
        _print_heartbeats_pruned(report, older_than.strip(), dry_run)
    if keys is not None and keys_older_than is not None:
        verb = "Would remove" if dry_run else "Removed"
        kept = " (keys younger than a day, the longest a client may retry, are kept)"
        click.echo(
            f"{verb} {keys.removed} idempotency {'key' if keys.removed == 1 else 'keys'} "
            f"older than {output.cell(keys_older_than.strip())} (before {keys.cutoff})"
            + (kept if keys.window_kept else "")
            + "."
            + (" Dry run: nothing written." if dry_run else "")
        )


def _print_heartbeats_pruned(report: PruneReport, older_than: str, dry_run: bool) -> None:
    from roundtable_console.store.writes.retention import byte_size

    verb = "Would remove" if dry_run else "Removed"
    longest = report.longest_batch_seconds * 1000
    click.echo(
        f"{verb} {report.removed} heartbeat {'row' if report.removed == 1 else 'rows'} "
        f"older than {output.cell(older_than)} "
        f"(before {report.cutoff}), in {report.batches} "
        f"{'batch' if report.batches == 1 else 'batches'} (longest {longest:.1f} ms); "
        "every other row and each session's newest heartbeat kept."
        + (" Dry run: nothing written." if dry_run else "")
    )
    freed = byte_size(report.row_bytes)
    if report.free_bytes is None:
        click.echo(
            f"About {freed} of row data {'would be' if dry_run else 'is'} freed: new rows reuse "
            "it once (auto)vacuum has run, and VACUUM FULL returns it to the operating system."
        )
    else:
        click.echo(
            f"{freed} of row data {'would be' if dry_run else 'is'} freed. The file has "
            f"{byte_size(report.free_bytes)} in free pages{' now' if dry_run else ''}: new rows "
            "reuse them, and VACUUM returns them to the operating system."
        )


@click.command(
    "import",
    help="Import JSON Lines (FILE, or - for stdin) in one transaction: all or nothing.",
)
@click.argument("source", metavar="FILE|-", type=click.File("rb"))
@with_invocation
def import_command(inv: Invocation, source: Any) -> None:
    from roundtable_console.store.writes.transfer import import_records

    with inv.store() as store, store.write(durable=True) as db:
        counts = import_records(db=db, lines=_utf8_lines(source), clock=inv.clock)
    print_counts(counts, json_mode=inv.json_mode)


def _utf8_lines(source: Any) -> Iterator[str]:
    """The file's lines as text; a line that is not UTF-8 is a bad record, named like any other."""
    from roundtable_console.store.errors import InvalidImport

    for number, raw in enumerate(source, start=1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InvalidImport(
                f"line {number}: not UTF-8 text (byte {error.start + 1} of the line).",
                details={"line": number},
            ) from None


@click.command(
    "export",
    help="Export every record as JSON Lines on stdout. RAW: this is the backup, so secrets are "
    "NOT redacted (every other command redacts); keep the file as safe as the store.",
)
@with_invocation
def export_command(inv: Invocation) -> None:
    from roundtable_console.store.writes.transfer import export_records

    with inv.store() as store, store.read() as db:
        counts = export_records(db=db, write=sys.stdout.write)
    sys.stdout.flush()
    if not inv.json_mode:
        total = sum(counts.values())
        click.echo(f"Exported {total} records.", err=True)
