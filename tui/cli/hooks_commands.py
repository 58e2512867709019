"""``roundtable hooks``: the agents' own hooks (``agents/``), installed, removed, shown, and run.

``hooks run`` is taken by ``tui.quick_cli`` before click is loaded (a process per agent event);
the command here is the same, for ``--help`` and for a run through the full command line.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import click

from roundtable_console.tui import output
from roundtable_console.tui.cli.invocation import Invocation, with_invocation
from roundtable_console.tui.cli.through_server import checked_server

AGENTS = ("claude-code", "codex", "gemini")

HOOKS_HELP = """Make Claude Code, Codex and Gemini CLI report their sessions themselves.

`hooks install AGENT` writes the agent's own hook settings (yours, or a project's with
--project) so that each of its events runs `roundtable hooks run AGENT`: its start registers
the session with the agent's own session id (so resume continues that conversation), its work
is heartbeats, a question or permission prompt is waiting with the agent's words, its end ends
it. Other settings and hooks are left as they are; uninstall removes only ours."""


@click.group("hooks", help=HOOKS_HELP)
def hooks_group() -> None:
    pass


def _program() -> str:
    """This ``roundtable``, by its absolute path: an agent runs hooks with its own $PATH."""
    invoked = Path(sys.argv[0])
    if invoked.name.startswith("roundtable") and invoked.exists():
        return str(invoked.absolute())
    found = shutil.which("roundtable")
    return found or f"{sys.executable} -m roundtable_console"


def _store_url(inv: Invocation) -> str:
    from roundtable_console.store.db import drivers

    url = inv.url()
    path = drivers.sqlite_path(url)
    if path is not None and not path.is_absolute():
        return f"sqlite:///{path.absolute()}"
    return url


def _without_password(url: str) -> tuple[str, bool]:
    """``url`` as a settings file may hold it: without its password (the agents' PostgreSQL
    client finds it in ~/.pgpass or $PGPASSWORD), and whether one was taken out."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url, False
    user = parts.username or ""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{user}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc)), True


def _home() -> Path:
    return Path(os.path.expanduser("~"))


def _show_changes(changes: list, *, dry_run: bool, inv: Invocation, verb: str) -> None:
    import difflib

    changed = [change for change in changes if change.changed]
    if inv.json_mode:
        items = [
            {
                "path": str(c.path),
                "changed": c.changed,
                **({"after": c.after} if dry_run and c.changed else {}),
            }
            for c in changes
        ]
        output.emit_json({"dry_run": dry_run, "files": items})
        return
    if not changed:
        click.echo(
            f"Nothing to change: {verb} already, in {', '.join(str(c.path) for c in changes)}."
        )
        return
    for change in changed:
        if dry_run:
            diff = difflib.unified_diff(
                (change.before or "").splitlines(keepends=True),
                (change.after or "").splitlines(keepends=True),
                fromfile=str(change.path),
                tofile=str(change.path),
            )
            click.echo("".join(diff), nl=False)
        else:
            click.echo(f"{verb.capitalize()}: {change.path}")
    if dry_run:
        click.echo("Dry run: nothing was written.")


@hooks_group.command("install", help="Install the hooks of AGENT (claude-code, codex, gemini).")
@click.argument("agent", type=click.Choice(AGENTS))
@click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="In DIR's settings (e.g. DIR/.claude/settings.json), not your own.",
)
@click.option(
    "--agent",
    "agent_id",
    metavar="ID",
    help="The sessions' agent (default: AGENT, or ROUNDTABLE_AGENT in the agent's environment).",
)
@click.option(
    "--run",
    "run_id",
    metavar="ID",
    help="The sessions' run (default: ROUNDTABLE_RUN, else the project directory's name).",
)
@click.option("--workspace", metavar="W", help="The sessions' workspace.")
@click.option("--server", metavar="URL", help="Report to roundtable serve at URL, not the store.")
@click.option(
    "--token-env",
    metavar="VAR",
    help="With --server: the variable holding the agent token (the token itself is never written).",
)
@click.option(
    "--permission-wait",
    type=click.IntRange(0, 3600),
    default=120,
    show_default=True,
    metavar="SECONDS",
    help="How long a permission request waits for a human's allow or deny (roundtable requests, "
    "the console, the web) before the agent asks in its own terminal; 0: shown, not waited for. "
    "The agent's hook timeout is set above it.",
)
@click.option(
    "--reply-wait",
    type=click.IntRange(0, 3600),
    default=0,
    show_default=True,
    metavar="SECONDS",
    help="Claude Code: how long its Stop hook, when a turn is done, listens for a reply "
    "(roundtable reply, the console's m, the web) that the agent then goes on with. The turn "
    "ends only after it: for unattended agents. 0: no listening.",
)
@click.option("--dry-run", is_flag=True, help="Print the change; write nothing.")
@with_invocation
def install_command(
    inv: Invocation,
    agent: str,
    project: Path | None,
    agent_id: str | None,
    run_id: str | None,
    workspace: str | None,
    server: str | None,
    token_env: str | None,
    permission_wait: int,
    reply_wait: int,
    dry_run: bool,
) -> None:
    from roundtable_console.agents import install
    from roundtable_console.agents.registry import spec_of
    from roundtable_console.agents.spool import default_spool_path

    url = _store_url(inv)  # a bad --root or store is said before anything else
    if server and not workspace:
        raise click.UsageError("--server needs --workspace (the server's routes are by workspace).")
    if token_env and not server:
        raise click.UsageError("--token-env goes with --server.")
    if server:
        checked_server(server)
    if not server and not dry_run:  # the store exists, at its current schema, before any hook
        with inv.store():
            pass
    if project is not None and not project.is_dir():
        raise click.BadParameter(f"{project} is not a directory", param_hint="'--project'")
    spec = spec_of(agent)
    if server:
        target = install.Target(
            server=server,
            token_env=token_env,
            agent=agent_id,
            run=run_id,
            workspace=workspace,
            spool=str(default_spool_path()),
            permission_wait=permission_wait,
            reply_wait=reply_wait,
        )
    else:
        written, had_password = _without_password(url)
        if had_password:
            click.echo(
                "The store's password is not written into the agent's settings: give it to "
                "the agents through ~/.pgpass or $PGPASSWORD.",
                err=True,
            )
        target = install.Target(db=written, agent=agent_id, run=run_id, workspace=workspace,
                                spool=str(default_spool_path()),
                                permission_wait=permission_wait,
                                reply_wait=reply_wait)  # fmt: skip
    command = install.hook_command(_program(), spec, target)
    from roundtable_console.agents.settings_files import Waits

    waits = Waits(permission_wait, reply_wait)
    changes = _planned(install, spec, project, command, waits)
    if not dry_run:
        install.apply(changes)
    _show_changes(changes, dry_run=dry_run, inv=inv, verb="installed")


def _planned(  # noqa: ANN201
    install,  # noqa: ANN001
    spec,  # noqa: ANN001
    project: Path | None,
    command: str | None,
    waits=None,  # noqa: ANN001 - agents.settings_files.Waits, imported when used
):
    from roundtable_console.agents.settings_files import NO_WAITS, SettingsError

    try:
        return install.plan(
            spec,
            home=_home(),
            project=project.absolute() if project else None,
            command=command,
            waits=waits or NO_WAITS,
        )
    except SettingsError as error:
        raise click.ClickException(str(error)) from None


@hooks_group.command("uninstall", help="Remove our hooks of AGENT (no other hook is touched).")
@click.argument("agent", type=click.Choice(AGENTS))
@click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="From DIR's settings, not your own.",
)
@click.option("--dry-run", is_flag=True, help="Print the change; write nothing.")
@with_invocation
def uninstall_command(inv: Invocation, agent: str, project: Path | None, dry_run: bool) -> None:
    from roundtable_console.agents import install
    from roundtable_console.agents.registry import spec_of

    inv.url()  # a bad --root is said, as by every command
    changes = _planned(install, spec_of(agent), project, None)
    if not dry_run:
        install.apply(changes)
    _show_changes(changes, dry_run=dry_run, inv=inv, verb="uninstalled")


@hooks_group.command("status", help="Which agents' hooks are installed, where, reporting where.")
@click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Also DIR's settings.",
)
@with_invocation
def status_command(inv: Invocation, project: Path | None) -> None:
    from roundtable_console.agents import install

    inv.url()  # a bad --root is said, as by every command
    found = install.status(_home(), project.absolute() if project else None)
    if inv.json_mode:
        output.emit_json(
            {
                "items": [
                    {
                        "agent": f.agent,
                        "path": str(f.path),
                        "events": list(f.events),
                        "reports_to": f.reports_to,
                        "trusted": f.trusted,
                    }
                    for f in found
                ]
            }
        )
        return
    if not found:
        click.echo("No hooks installed (roundtable hooks install claude-code|codex|gemini).")
        return
    for f in found:
        trust = (
            ""
            if f.trusted is None
            else ("; trusted" if f.trusted else "; NOT trusted by Codex: reinstall")
        )
        click.echo(f"{f.agent:<12} {f.path}  → {f.reports_to}  ({len(f.events)} events{trust})")


@hooks_group.command(
    "run",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    help="Run one hook event (read on stdin) of AGENT: what the installed hooks call. Exits 0 "
    "whatever happens, saying on stderr what went wrong.",
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run_command(args: tuple[str, ...]) -> None:
    from roundtable_console.agents.hook_run import main

    sys.exit(main(list(args)))
