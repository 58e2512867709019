"""``roundtable changes SESSION``: what a session changed, read by its host — the commits on its
branch since its base, the files changed, and the patch a page at a time (``--offset``).
Through a server, or on the store, whose server (or, on PostgreSQL, the host itself) asks."""

from __future__ import annotations

import sys

import click

from roundtable_console.tui import output
from roundtable_console.tui.cli.invocation import Invocation, with_source_invocation
from roundtable_console.tui.cli.printing import EXIT_REFUSED, OUTPUT_HELP

CHANGES_HELP = """What SESSION changed, read by its host: its branch and base, the commits on the
branch since the base, the files changed (committed, not committed, not yet added; a binary
file is named, not shown), then the patch, a page at a time: the last line says the --offset of
the next page. --files: no patch. --json: {"available", "reason", "directory", "branch", "base",
"commits": [{"sha", "subject"}], "files": [{"path", "status", "added", "deleted", "binary"}],
"patch", "offset", "next_offset"}. A session no host can be asked for: exit 1, and why."""
_COLOURS = (("+++", None), ("---", None), ("+", "green"), ("-", "red"), ("@@", "cyan"))


@click.command("changes", help=CHANGES_HELP + "\n\n" + OUTPUT_HELP)
@click.argument("session_id", metavar="SESSION")
@click.option("--offset", type=click.IntRange(min=0), default=0, show_default=True,
              help="The patch from this byte (a page's next offset).")  # fmt: skip
@click.option("--files", "files_only", is_flag=True, help="The files only, not the patch.")
@with_source_invocation
def changes_command(inv: Invocation, session_id: str, offset: int, files_only: bool) -> None:
    with inv.source() as source:
        page = source.changes(session_id, offset)
    if inv.json_mode:
        output.emit_json(page)
        if not page["available"]:
            sys.exit(EXIT_REFUSED)
        return
    if not page["available"]:
        output.echo_text(f"error: {page['reason']}", err=True)
        sys.exit(EXIT_REFUSED)
    branch = f"branch {page['branch']}" if page["branch"] else "no branch"
    output.echo_text(f"{page['directory']}: {branch}, against {page['base'][:12]}")
    for commit in page["commits"]:
        output.echo_text(f"  {commit['sha'][:12]} {commit['subject']}")
    for item in page["files"]:
        counts = "binary" if item["binary"] else f"+{item['added']} -{item['deleted']}"
        output.echo_text(f"  {item['status']:<9} {counts:>13}  {item['path']}")
    if not page["files"]:
        output.echo_text("  nothing changed")
    if files_only:
        return
    colour = sys.stdout.isatty()
    for line in page["patch"].splitlines():
        shade = next((hue for start, hue in _COLOURS if line.startswith(start)), None)
        click.echo(click.style(line, fg=shade) if colour and shade else line)
    if page["next_offset"] is not None:
        output.echo_text(f"… more: roundtable changes {session_id} --offset {page['next_offset']}")
