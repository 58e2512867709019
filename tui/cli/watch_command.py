"""``roundtable watch``: one line per change of the sessions as it happens (``tui.watch``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from roundtable_console.tui.cli.invocation import Invocation, with_source_invocation
from roundtable_console.tui.cli.options import filter_options

if TYPE_CHECKING:
    from roundtable_console.store.reads.changes import ChangeFilter

WATCH_HELP = """Print one line per change of the sessions, as it happens, until interrupted.

\b
Changes: registered, status (from → to, by whom), waiting_started, waiting_stopped, turn_done
(an agent's turn is done: its last words), stale, ended; heartbeat only with --heartbeats.
--status keeps changes from or to that status.
--json: one object a line, {"at", "session_id", "change", "status", "previous_status",
"actor", "reason"}. Lines are flushed at once, for a pipe into notify-send, a chat hook or a
pager. On PostgreSQL a lost connection is said on stderr and resumed without missing a change.
SIGINT or SIGTERM ends it with exit 0.

Through a server (--server, or ROUNDTABLE_SERVER): its stream of the changes the token may read
(a token bound to workspaces: its first, unless --workspace names another); a dropped link is
said on stderr and followed again from the last change it gave. Exit 1 when the server no
longer takes the token."""


@click.command("watch", help=WATCH_HELP)
@filter_options(besides=("active_only", "stale", "waiting", "text", "host"))
@click.option("--heartbeats", is_flag=True, help="Print heartbeats too.")
@with_source_invocation
def watch_command(
    inv: Invocation,
    statuses: tuple[str, ...],
    agent_id: str | None,
    run_id: str | None,
    workspace_id: str | None,
    heartbeats: bool,
) -> int:
    from roundtable_console.store.reads.changes import ChangeFilter
    from roundtable_console.tui.watch import watch

    if any(not status.strip() for status in statuses):
        raise click.BadParameter("must not be blank.", param_hint="'--status'")
    filters = ChangeFilter(
        statuses=tuple(status.strip() for status in statuses),
        agent_id=agent_id,
        run_id=run_id,
        workspace_id=workspace_id,
        heartbeats=heartbeats,
    )
    if inv.server is not None:
        return _watch_through_server(inv, filters)
    with inv.store() as store:
        return watch(
            store=store,
            filters=filters,
            stale_after_seconds=inv.settings.stale_after_seconds,
            clock=inv.clock,
            as_json=inv.json_mode,
        )


def _watch_through_server(inv: Invocation, filters: ChangeFilter) -> int:
    """The server's stream of the changes the token may read: a workspace's (--workspace, or a
    token bound to workspaces: its first), else every workspace's."""
    from roundtable_console.tui.cli.through_server import token_from
    from roundtable_console.tui.console_link import open_link
    from roundtable_console.tui.watch import watch_through_server

    server = str(inv.server)
    token = token_from(inv.token_variable, f"your token for {server}")
    link = open_link(server, token)  # who the token is: a wrong one is refused here, in words
    link.close()
    return watch_through_server(
        server=link.url, token=token, path=link.changes_of(filters.workspace_id),
        filters=filters, as_json=inv.json_mode,
    )  # fmt: skip
