"""The ``sessions`` group and its reads: the list (the group's default), one session's fields
(``show``) and its projections (logs, metrics, …). The agents' writes (``agent_commands``) and
the lifecycle actions (``lifecycle_commands``) join the group in the package's ``__init__``."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

import click

from roundtable_console.store.rules import PAGED_PROJECTIONS, UNPAGED_PROJECTIONS
from roundtable_console.tui import output
from roundtable_console.tui.cli.invocation import (
    GROUP_OPTIONS,
    CliState,
    Invocation,
    common_options,
    resolve_invocation,
    with_source_invocation,
)
from roundtable_console.tui.cli.options import (
    checked_session_id,
    list_options,
    page_options,
    session_filter,
    session_option,
    stale_cutoff_for,
    was_given,
)
from roundtable_console.tui.cli.printing import OUTPUT_HELP, pages_to_print
from roundtable_console.tui.cli.through_server import server_options

if TYPE_CHECKING:
    from roundtable_console.store.reads.paging import Page
    from roundtable_console.store.records import SessionFields

# Where the group keeps its filters for `sessions list` (ctx.meta).
_GROUP_FILTERS = "roundtable.group_filters"
SESSION_COLUMNS = ("id", "agent", "status", "adapter", "resume command")
# The subcommands a person may run through roundtable serve (--server).
THROUGH_SERVER = ("list", "show", "pause", "stop", "resume", "terminate",
                  *PAGED_PROJECTIONS, *UNPAGED_PROJECTIONS)  # fmt: skip


@click.group(
    "sessions",
    invoke_without_command=True,
    help="List sessions (the default), or register, heartbeat, end, inspect and act on one.\n\n"
    + OUTPUT_HELP,
)
@list_options
@server_options
@common_options
@click.pass_context
def sessions_group(
    ctx: click.Context,
    db: str | None,
    root: str | None,
    as_json: bool,
    read_only: bool,
    server: str | None,
    token_env: str | None,
    **filters: Any,
) -> None:
    ctx.meta[GROUP_OPTIONS] = {"db": db, "root": root, "as_json": as_json, "read_only": read_only,
                               "server": server, "token_env": token_env}  # fmt: skip
    if as_json:
        ctx.ensure_object(CliState).json_mode = True
    if ctx.invoked_subcommand is None:
        inv = resolve_invocation(ctx, db=db, root=root, as_json=as_json, read_only=read_only)
        inv.server_flag, inv.token_env_flag = server, token_env
        _list_sessions(inv, **filters)
    elif (server or token_env) and ctx.invoked_subcommand not in THROUGH_SERVER:
        raise click.UsageError(
            f"--server and --token-env apply to {', '.join(THROUGH_SERVER)}; "
            f"sessions {ctx.invoked_subcommand} reads or writes a store.",
            ctx=ctx,
        )
    elif ctx.invoked_subcommand == "list":
        ctx.meta[_GROUP_FILTERS] = filters
    elif any(was_given(value) for value in filters.values()):
        raise click.UsageError(
            "List filters (--status, --agent, --limit, …) apply only to listing sessions.", ctx=ctx
        )


@sessions_group.command("list", help="List sessions: ID, agent, status, adapter, resume command.")
@list_options
@with_source_invocation
def list_command(inv: Invocation, **filters: Any) -> None:
    group_filters = click.get_current_context().meta.get(_GROUP_FILTERS, {})
    for name, value in group_filters.items():
        if was_given(value) and not was_given(filters[name]):
            filters[name] = value
    _list_sessions(inv, **filters)


def _list_sessions(
    inv: Invocation,
    *,
    sort: str | None,
    descending: bool,
    limit: int | None,
    cursor: str | None,
    **filter_options: Any,
) -> None:
    from roundtable_console.store.reads.listing import SessionOrder

    stale_cutoff = stale_cutoff_for(inv)
    filters = session_filter(stale_cutoff, **filter_options)
    order = SessionOrder(sort or "started", descending).at(stale_cutoff)
    with inv.source() as source:

        def fetch(size: int | None, after: str | None) -> Page[SessionFields]:
            return source.list_sessions(filters, order, size, after)

        pages = pages_to_print(
            fetch, json_mode=inv.json_mode, limit=limit, cursor=cursor, what="sessions"
        )
        if inv.json_mode:
            page = next(pages)
            output.emit_json(
                {"items": [s.to_json() for s in page.items], "next_cursor": page.next_cursor}
            )
            return
        table = output.Table(SESSION_COLUMNS)
        for page in pages:
            table.write(
                (s.id, s.agent_id, s.status, s.adapter, s.external_resume_command)
                for s in page.items
            )
        table.finish("No sessions.")


@sessions_group.command("show", help="Every field of one session.")
@session_option
@with_source_invocation
def show_command(inv: Invocation, session_id: str) -> None:
    with inv.source() as source:
        session = source.read_session(checked_session_id(session_id))
    record = session.to_json()
    if inv.json_mode:
        output.emit_json(record)  # redacted like every output: `export` alone is raw
        return
    waiting = session.waiting
    record["waiting"] = None if waiting is None else f"{waiting.reason} (since {waiting.since})"
    done = session.turn_done
    record["turn_done"] = None if done is None else f"{done} (at {session.last_seen_at})"
    pairs = list(record.items())
    stale_after = timedelta(seconds=inv.settings.stale_after_seconds)
    position = next(i for i, (name, _) in enumerate(pairs) if name == "status") + 1
    pairs.insert(position, ("stale", session.is_stale(inv.clock(), stale_after)))
    output.write_record(pairs)


def _projection_command(name: str, *, paged: bool) -> None:
    def command(inv: Invocation, session_id: str, **page: Any) -> None:
        if paged:
            _show_projection_pages(inv, name, checked_session_id(session_id), **page)
        else:
            _show_projection_record(inv, name, checked_session_id(session_id))

    decorated = with_source_invocation(command)
    if paged:
        decorated = page_options(decorated)
    decorated = session_option(decorated)
    sessions_group.command(name, help=f"The session's {name} (a projection of the store).")(
        decorated
    )


def _show_projection_record(inv: Invocation, name: str, session_id: str) -> None:
    with inv.source() as source:
        result = source.projection(name, session_id)
    if inv.json_mode:
        output.emit_json(result)
    else:
        output.write_record(output.flatten(result))


def _show_projection_pages(
    inv: Invocation, name: str, session_id: str, *, limit: int | None, cursor: str | None
) -> None:
    with inv.source() as source:

        def fetch(size: int | None, after: str | None) -> Page[dict[str, Any]]:
            return source.projection_page(name, session_id, size, after)

        pages = pages_to_print(
            fetch, json_mode=inv.json_mode, limit=limit, cursor=cursor, what=name
        )
        if inv.json_mode:
            page = next(pages)
            output.emit_json({"items": page.items, "next_cursor": page.next_cursor})
            return
        table: output.Table | None = None
        for page in pages:
            if page.items and table is None:
                table = output.Table([key.replace("_", " ") for key in page.items[0]])
            if table is not None:
                table.write(list(item.values()) for item in page.items)
        if table is None and output.stdout_is_tty():
            click.echo(f"No {name}.")


for _name in (*PAGED_PROJECTIONS, *UNPAGED_PROJECTIONS):
    _projection_command(_name, paged=_name in PAGED_PROJECTIONS)
