"""``roundtable new``: a new session started on a host, in a project it was given, optionally in a
git worktree of its own, with an agent it found and a first prompt (``store.hosts.new_work``).
Through a server with an operator's token, or on the store, whose server (or, on PostgreSQL, the
host itself) passes it on."""

from __future__ import annotations

import click

from roundtable_console.tui import output
from roundtable_console.tui.cli.invocation import Invocation, with_source_invocation
from roundtable_console.tui.cli.options import operator_option
from roundtable_console.tui.cli.printing import OUTPUT_HELP

NEW_HELP = """Start a new session on a host (roundtable host run): its agent in tmux there, in the
project's directory, or with --worktree in a git worktree of its own on a new branch (suggested
from the prompt), its hooks reporting from its first event. --ask sets how much the agent asks
a human: ALWAYS (before anything past reading), EDITS (edits go ahead; commands ask: the
default), AGENT (the agent decides alone; nothing reaches the console). Prints the session's id
and the command that shows its agent on the host. --json: {"session_id", "host", "directory",
"branch", "base", "tmux_session", "attach"}."""


@click.command("new", help=NEW_HELP + "\n\n" + OUTPUT_HELP)
@click.option("--host", required=True, metavar="HOST", help="The host to start it on.")
@click.option(
    "--project",
    required=True,
    metavar="DIR",
    help="A project the host was given: its directory there, or its name.",
)
@click.option(
    "--agent",
    required=True,
    type=click.Choice(["claude-code", "codex", "gemini"]),
    help="The agent to start.",
)
@click.option("--worktree", is_flag=True, help="In a git worktree of its own, on a new branch.")
@click.option("--branch", metavar="NAME", help="With --worktree: the new branch's name.")
@click.option("--base", metavar="REF", help="With --worktree: what it starts from (HEAD).")
@click.option("--prompt", metavar="TEXT", default="", help="The agent's first prompt.")
@click.option("--model", metavar="M", help="The agent's model.")
@click.option(
    "--ask",
    type=click.Choice(["ALWAYS", "EDITS", "AGENT"], case_sensitive=False),
    default="EDITS",
    show_default=True,
    help="How much the agent asks a human.",
)
@click.option("--workspace", metavar="W", help="The workspace the session belongs to.")
@operator_option
@with_source_invocation
def new_command(
    inv: Invocation,
    host: str,
    project: str,
    agent: str,
    worktree: bool,
    branch: str | None,
    base: str | None,
    prompt: str,
    model: str | None,
    ask: str,
    workspace: str | None,
    operator: str | None,
) -> None:
    from roundtable_console.store.hosts.new_work import new_work_of

    work = new_work_of({
        "host": host, "project": project, "agent": agent, "worktree": worktree,
        "branch": branch, "base": base, "prompt": prompt, "model": model, "ask": ask.lower(),
        "workspace_id": workspace,
    })  # fmt: skip
    with inv.source(operator) as source:
        started = source.start_new(work)
    if inv.json_mode:
        output.emit_json(started)
        return
    where = started["directory"]
    if started.get("branch"):
        where += f" (branch {started['branch']})"
    output.echo_text(f"Started session {started['session_id']} on {started['host']} in {where}.")
    output.echo_text(f"On {started['host']}: {started['attach']}")
