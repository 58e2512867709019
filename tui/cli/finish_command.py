"""``roundtable finish SESSION``: done with a session on purpose — its worktree removed by its
host, its branch kept, the session ended (``store.hosts.finishing``). Nothing is pushed, merged
or deleted: it prints the commands that would merge or push, for you to run."""

from __future__ import annotations

import sys

import click

from roundtable_console.tui import output
from roundtable_console.tui.cli.invocation import Invocation, with_source_invocation
from roundtable_console.tui.cli.options import operator_option
from roundtable_console.tui.cli.printing import OUTPUT_HELP

FINISH_HELP = """Finish SESSION, started by roundtable new in a worktree: its host removes the
worktree, keeps the branch, and the session ends. Its agent must not run (sessions stop-agent).
With anything not committed in the worktree, it says what and, on a terminal, asks whether to
discard it; --discard does without asking. Never pushes, merges or deletes a branch: it prints
the commands that would merge or push. --json: {"session_id", "host", "removed", "branch",
"project", "discarded", "commands"}."""


@click.command("finish", help=FINISH_HELP + "\n\n" + OUTPUT_HELP)
@click.argument("session_id", metavar="SESSION")
@click.option("--discard", is_flag=True, help="Remove the worktree with what is not committed.")
@operator_option
@with_source_invocation
def finish_command(inv: Invocation, session_id: str, discard: bool, operator: str | None) -> None:
    from roundtable_console.store.errors import WorktreeNotClean

    with inv.source(operator) as source:
        try:
            done = source.finish(session_id, discard)
        except WorktreeNotClean as unclean:
            asking = sys.stdin.isatty() and not inv.json_mode
            if not asking:
                raise
            output.echo_text(unclean.message, err=True)
            if not click.confirm("Discard what is not committed, and remove the worktree?",
                                 default=False, err=True):  # fmt: skip
                raise
            done = source.finish(session_id, True)
    if inv.json_mode:
        output.emit_json(done)
        return
    output.echo_text(f"Finished session {done['session_id']}: removed {done['removed']}.")
    if done["branch"]:
        output.echo_text(f"The branch {done['branch']} is kept. To merge it, or push it:")
        for command in done["commands"]:
            output.echo_text(f"  {command}")
