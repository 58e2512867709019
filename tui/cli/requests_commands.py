"""``roundtable requests``: the permission requests agents ask (``store.requests``), and a human's
allow or deny."""

from __future__ import annotations

import click

from roundtable_console.tui import output
from roundtable_console.tui.cli.invocation import (
    GROUP_OPTIONS,
    CliState,
    Invocation,
    common_options,
    resolve_invocation,
    with_source_invocation,
)
from roundtable_console.tui.cli.options import operator_option
from roundtable_console.tui.cli.through_server import server_options

REQUESTS_HELP = """Permission requests: an agent whose hooks are installed (roundtable hooks
install) asks before it runs a tool, and waits for a human's answer up to its --permission-wait.
Lists the pending ones (the default), oldest first; allow or deny one by its id."""


@click.group("requests", invoke_without_command=True, help=REQUESTS_HELP)
@click.option("--session", "session_id", metavar="ID", help="Only this session's requests.")
@click.option("--all", "everything", is_flag=True, help="Every state, newest first.")
@server_options
@common_options
@click.pass_context
def requests_group(
    ctx: click.Context,
    db: str | None,
    root: str | None,
    as_json: bool,
    read_only: bool,
    server: str | None,
    token_env: str | None,
    session_id: str | None,
    everything: bool,
) -> None:
    ctx.meta[GROUP_OPTIONS] = {"db": db, "root": root, "as_json": as_json, "read_only": read_only,
                               "server": server, "token_env": token_env}  # fmt: skip
    if as_json:
        ctx.ensure_object(CliState).json_mode = True
    if ctx.invoked_subcommand is not None:
        if session_id is not None or everything:
            raise click.UsageError("--session and --all apply only to listing requests.", ctx=ctx)
        return
    inv = resolve_invocation(ctx, db=db, root=root, as_json=as_json, read_only=read_only)
    inv.server_flag, inv.token_env_flag = server, token_env
    _list(inv, session_id, everything)


def _list(inv: Invocation, session_id: str | None, everything: bool) -> None:
    from roundtable_console.store.clock import format_ts

    with inv.source() as source:
        records = source.requests(session_id, everything)
    now = format_ts(inv.clock())
    if inv.json_mode:
        output.emit_json({"items": [record.to_json(now) for record in records]})
        return
    table = output.Table(("id", "session", "state", "asked", "answers", "asks"))
    table.write(
        (
            record.id,
            record.session_id,
            record.state_at(now),
            record.asked_at,
            "/".join(record.answers) or "in its terminal",
            record.reason,
        )
        for record in records
    )
    table.finish("No permission request." if everything else "No pending permission request.")


def _decide(
    inv: Invocation,
    request_id: str,
    decision: str,
    message: str | None,
    suggestion: int | None,
    operator: str | None,
    *,
    hidden_seen: bool = False,
) -> None:
    from roundtable_console.store.clock import format_ts

    inv.operator_through_server(operator, "decided")
    with inv.source(operator) as source:
        record = source.decide(request_id, decision, message, suggestion, hidden_seen)
    if inv.json_mode:
        output.emit_json(record.to_json(format_ts(inv.clock())))
        return
    said = f" with the message {record.message!r}" if record.message else ""
    rule = " and its suggestion taken" if record.accepted_suggestion is not None else ""
    output.echo_text(
        f"{record.state.capitalize()}{rule}{said}: {record.reason} "
        f"({record.session_id}, by {record.decided_by}). {record.who_hears}"
    )


@requests_group.command("allow", help="Allow request ID: the agent runs the tool.")
@click.argument("request_id", metavar="ID")
@click.option(
    "--suggestion",
    type=click.IntRange(0, None),
    metavar="N",
    help="Also take the agent's own suggestion number N (roundtable requests --json lists "
    "them): it does not ask again for the same.",
)
@click.option(
    "--despite-hidden",
    is_flag=True,
    help="Allow even though parts of the input are hidden as secrets (what is shown is not "
    "all the agent would run).",
)
@operator_option
@with_source_invocation
def allow_command(
    inv: Invocation,
    request_id: str,
    suggestion: int | None,
    despite_hidden: bool,
    operator: str | None,
) -> None:
    _decide(inv, request_id, "allow", None, suggestion, operator, hidden_seen=despite_hidden)


@requests_group.command("deny", help="Deny request ID: the tool does not run.")
@click.argument("request_id", metavar="ID")
@click.option("--message", metavar="TEXT", help="Why, for the agent's model to read.")
@operator_option
@with_source_invocation
def deny_command(
    inv: Invocation, request_id: str, message: str | None, operator: str | None
) -> None:
    _decide(inv, request_id, "deny", message, None, operator)
