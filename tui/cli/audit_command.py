"""``roundtable audit``: the operators' actions across all sessions, newest first
(``store.reads.audit``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from roundtable_console.tui import output
from roundtable_console.tui.cli.invocation import Invocation, with_source_invocation
from roundtable_console.tui.cli.options import checked_session_id, page_options
from roundtable_console.tui.cli.printing import OUTPUT_HELP, pages_to_print

if TYPE_CHECKING:
    from roundtable_console.store.reads.paging import Page

AUDIT_COLUMNS = ("at", "actor", "db role", "action", "session", "from → to", "impact")
AUDIT_HELP = """The operators' actions across all sessions, newest first: pause, stop, resume,
terminate, the operator's heartbeat (an agent's own heartbeat is not one), and reveal (a masked
field read in the web console). Each with its time, the operator's name, the database role that
made it (PostgreSQL), the session, the status it went from and to, and the impact text given
(redacted) or the field revealed. --json: {"items": [{"at", "actor", "db_user", "action",
"session_id", "previous_status", "status", "impact_details", "field"}], "next_cursor"}."""


@click.command("audit", help=AUDIT_HELP + "\n\n" + OUTPUT_HELP)
@click.option("--actor", metavar="NAME", help="Only this operator's actions.")
@click.option(
    "--action",
    metavar="A",
    help="Only this action: heartbeat, pause, stop, resume, terminate, reveal.",
)
@click.option("--session", "session_id", metavar="S", help="Only actions on this session.")
@click.option(
    "--since", metavar="WHEN", help="From this time (2026-09-17T10:00:00Z) or this long ago (2h)."
)
@page_options
@with_source_invocation
def audit_command(
    inv: Invocation,
    actor: str | None,
    action: str | None,
    session_id: str | None,
    since: str | None,
    limit: int | None,
    cursor: str | None,
) -> None:
    from roundtable_console.store.reads.audit import (
        AuditFilter,
        action_event,
        note_of,
        since_time,
    )

    if action is not None:
        action_event(action)  # refused before the store is opened
    filters = AuditFilter(
        actor=actor,
        action=action,
        session_id=None if session_id is None else checked_session_id(session_id),
        since=None if since is None else since_time(since, inv.clock()),
    )
    with inv.source() as source:

        def fetch(size: int | None, after: str | None) -> Page[Mapping[str, Any]]:
            return source.audit(filters, size, after)

        pages = pages_to_print(
            fetch, json_mode=inv.json_mode, limit=limit, cursor=cursor, what="actions"
        )
        if inv.json_mode:
            page = next(pages)
            output.emit_json({"items": page.items, "next_cursor": page.next_cursor})
            return
        table = output.Table(AUDIT_COLUMNS)
        for page in pages:
            table.write(
                (
                    e["at"],
                    e["actor"],
                    e["db_user"] or "",
                    e["action"],
                    e["session_id"],
                    f"{e['previous_status'] or '?'} → {e['status'] or '?'}",
                    note_of(e) or "",
                )
                for e in page.items
            )
        table.finish("No operator actions.")
