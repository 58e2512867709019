"""``roundtable tui``: the operator console. Textual is imported here alone, once a child process
reads the first rows meanwhile on PostgreSQL (``prefetch_first_rows``) or through a server
(``prefetch_through_server``)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import click

from roundtable_console.tui.cli.invocation import Invocation, with_source_invocation
from roundtable_console.tui.cli.options import operator_option

if TYPE_CHECKING:
    from roundtable_console.client.first_window import ServerPrefetch
    from roundtable_console.store.reads.first_window import Prefetch
    from roundtable_console.store.reads.listing import SessionOrder
    from roundtable_console.tui.config import Settings


def first_order(settings: Settings) -> tuple[datetime, SessionOrder]:
    """Now, and the console's first order (a grouped list is read in its grouping's)."""
    from roundtable_console.store.clock import system_clock
    from roundtable_console.store.reads.listing import SessionOrder

    now = system_clock()
    column = settings.group or settings.sort
    return now, SessionOrder(column).at(now - timedelta(seconds=settings.stale_after_seconds))


def prefetch_first_rows(url: str, settings: Settings) -> Prefetch | None:
    """On PostgreSQL, a child process that reads the console's first rows in its first order
    (``store.reads.first_window.prefetch``); None for any other store."""
    from roundtable_console.screens.context import DEFAULT_PAGE_SIZE
    from roundtable_console.store.reads.first_window import prefetch

    now, order = first_order(settings)
    return prefetch(url, limit=DEFAULT_PAGE_SIZE, now=now, order=order)


@click.command("tui", help="Open the operator console.")
@click.option(
    "--demo",
    is_flag=True,
    help="Open the demo: its own store, demo.db beside the default store in the user data "
    "directory (or the --db URL given), seeded with demo sessions when empty. Never the store "
    "you work in ($ROUNDTABLE_DB, --root, the config's database, the default store).",
)
@operator_option
@with_source_invocation
def tui_command(inv: Invocation, demo: bool, operator: str | None) -> int:
    from roundtable_console.tui.config import resolve_demo_url

    server = None if demo else inv.server
    if server is not None:
        return _through_server(inv, server, operator)

    settings = inv.settings
    url = resolve_demo_url(db=inv.db) if demo else inv.url()
    adapters = inv.adapters()
    actor = inv.operator(operator)
    # Before Textual is imported: on PostgreSQL a child process reads the first rows meanwhile.
    early = prefetch_first_rows(url, settings)
    from roundtable_console.tui.app import run_console

    return int(
        run_console(
            url=url,
            settings=settings,
            operator=actor,
            adapters=adapters,
            demo=demo,
            prefetched=early,
            read_only=inv.read_only,
        )
        or 0
    )


def _through_server(inv: Invocation, server: str, operator: str | None) -> int:
    """The console through roundtable serve, as the token's own name and role."""
    from roundtable_console.tui.cli.through_server import token_from

    if operator is not None:
        raise click.UsageError(
            "Through a server, the token's own name is recorded as who acted: --operator "
            "applies to a store (--db)."
        )
    token = token_from(inv.token_variable, f"your token for {server}")
    settings = inv.settings
    # Before Textual is imported: a child process asks the server who the token is and for the
    # first rows meanwhile.
    early = prefetch_through_server(server, token, settings)
    from roundtable_console.tui.app import run_console_through_server

    return run_console_through_server(
        server=server, token=token, settings=settings, adapters=inv.adapters(),
        prefetched=early, read_only=inv.read_only,
    )  # fmt: skip


def prefetch_through_server(server: str, token: str, settings: Settings) -> ServerPrefetch:
    """A child process that asks ``server`` who ``token`` is and for the console's first rows in
    its first order (``client.first_window``)."""
    from roundtable_console.client.first_window import prefetch
    from roundtable_console.screens.context import DEFAULT_PAGE_SIZE

    now, order = first_order(settings)
    return prefetch(server, token, limit=DEFAULT_PAGE_SIZE, now=now, order=order)
