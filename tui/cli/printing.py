"""How the commands answer, where more than one command answers alike: the output and exit
codes every command's help states, pages followed or cut at a cursor, the counts of a write,
one lifecycle action's outcome and a bulk run's line per session and totals."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import click

from roundtable_console.tui import output

if TYPE_CHECKING:
    from roundtable_console.store.reads.paging import Page
    from roundtable_console.store.writes.bulk import BulkItem, Tally
    from roundtable_console.store.writes.lifecycle_outcomes import ActionOutcome

OUTPUT_HELP = """\b
Output: on a terminal, aligned columns under a header; in a pipe, one tab-separated line per
row and no header (control characters are shown as escapes, never sent raw). --json prints
JSON instead. Errors go to stderr, the last line being "error: …" (or, with --json,
{"error": {"code", "message"}}). Exit codes: 0 done, 1 refused, 2 bad usage or bad input."""

EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

BULK_HELP = """\b
Several sessions: --session more than once, or --all-matching with the list's filters. Each
session is done, skipped (the action does not apply to its status) or failed, on one line;
then "n done, n skipped, n failed". --json: {"items": [{"session_id", "outcome", "code",
"message"}], "done", "skipped", "failed"} (and "dry_run": true). Exit 1 if any failed."""

BULK_COLUMNS = ("session", "outcome", "code", "message")


def print_progress(message: str) -> None:
    """What the store says while it brings its schema up to date: on stderr."""
    output.echo_text(message, err=True)


def pages_to_print(
    fetch: Callable[[int | None, str | None], Page[Any]],
    *,
    json_mode: bool,
    limit: int | None,
    cursor: str | None,
    what: str,
) -> Iterator[Page[Any]]:
    """The pages to print. Human output without --limit follows every cursor, one page in
    memory at a time; --json and --limit give one page and its cursor."""
    from roundtable_console.store.validation import MAX_LIMIT

    follow = not json_mode and limit is None
    while True:
        page = fetch(MAX_LIMIT if follow else limit, cursor)
        yield page
        if not page.next_cursor:
            return
        if not follow:
            if not json_mode:
                click.echo(f"More {what}: --cursor {page.next_cursor}", err=True)
            return
        cursor = page.next_cursor


def print_counts(counts: Mapping[str, Any], *, json_mode: bool) -> None:
    """How many records of each kind a write made."""
    if json_mode:
        output.emit_json(dict(counts))
    else:
        output.write_record(list(counts.items()))


def bulk_row(item: BulkItem) -> tuple[str, str, str | None, str]:
    return (item.session_id, item.outcome, item.code, item.message)


def print_bulk(
    table: output.Table | None,
    tally: Tally,
    body: dict[str, Any],
    *,
    note: str,
    written: bool = False,
) -> None:
    """A bulk report: JSON (no ``table``), or a line per session (unless ``written`` as they
    came) and the totals."""
    if table is None:
        output.emit_json(body)
        return
    if not written:
        table.write(map(bulk_row, tally.items))
    table.finish("No sessions.")
    click.echo(
        f"{tally.done} done, {tally.skipped} skipped, {tally.failed} failed ({output.cell(note)})."
    )


def print_outcome(outcome: ActionOutcome) -> None:
    """One session's lifecycle action, as text."""
    session = outcome.session
    lines = [
        f"{outcome.action}: session {output.cell(session.id)} is now "
        f"{output.cell(session.status)} (version {session.version})."
    ]
    if outcome.claims:
        lines.append(f"Active claims of agent {output.cell(session.agent_id)}:")
        lines.extend(_claim_line(claim) for claim in outcome.claims)
    lines.extend(output.cell(note) for note in outcome.notes)
    if outcome.replayed:
        lines.append("(replayed: already applied with this key)")
    click.echo("\n".join(lines))


def _claim_line(claim: Mapping[str, Any]) -> str:
    expired = ", expired" if claim.get("expired") else ""
    return (
        f"  - {output.cell(claim.get('resource_id'))} (task {output.cell(claim.get('task_id'))}, "
        f"{output.cell(claim.get('claim_type'))}, expires "
        f"{output.cell(claim.get('expires_at'))}{expired})"
    )
