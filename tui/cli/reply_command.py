"""``roundtable reply``: a human's reply to an agent that waits for a prompt or asks a question
(``agents.replying``): carried by its hook when one listens, else typed into the tmux pane the
session was started in. Without a message, what can carry one (or why nothing can)."""

from __future__ import annotations

import click

from roundtable_console.tui import output
from roundtable_console.tui.cli.invocation import Invocation, with_source_invocation
from roundtable_console.tui.cli.options import operator_option

REPLY_HELP = """Reply to session ID's agent with MESSAGE: it goes on with it. Carried by the agent's
own hook when one listens (Claude Code's Stop hook, installed with --reply-wait), else typed
into the tmux pane the session was started in (roundtable tui's R), as literal keys. Without
MESSAGE: which of the two can carry a reply now, or why neither can (exit 1).

Through a server (--server, or ROUNDTABLE_SERVER): the reply goes as the token's person, and a
pane is typed into by the host of the session's machine."""


@click.command("reply", help=REPLY_HELP)
@click.argument("session_id", metavar="ID")
@click.argument("message", required=False)
@operator_option
@with_source_invocation
def reply_command(
    inv: Invocation, session_id: str, message: str | None, operator: str | None
) -> None:
    from roundtable_console.store.errors import NoReplyPath, ReadOnly

    inv.operator_through_server(operator, "replied")
    if message is None:
        with inv.replies(operator) as replies:
            route = replies.route_to(session_id)
        if route.via is None:
            raise NoReplyPath(route.words)
        if inv.json_mode:
            output.emit_json({"session_id": session_id, **route.to_json()})
        else:
            output.echo_text(f"A reply to {session_id} goes {route.words}.")
        return
    if inv.read_only and inv.server is None:
        raise ReadOnly(
            "roundtable is read-only here, and a reply writes the session's history: nothing "
            "was sent. Run it without read-only to reply."
        )
    with inv.replies(operator) as replies:
        sent = replies.send_to(session_id, message)
    if inv.json_mode:
        output.emit_json(sent.to_json())
        return
    how = "through its hook" if sent.via == "hook" else "typed into its tmux pane"
    hidden = " Parts that looked like secrets were hidden." if sent.hidden else ""
    output.echo_text(f"Replied to {sent.session_id} {how}, as {sent.replied_by}.{hidden}")
