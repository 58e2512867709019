"""``roundtable host run`` and ``host service`` (this machine as a host of the console), and
``roundtable hosts`` (every host the store knows). ``docs/how-to/several-machines.md``."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from roundtable_console.tui import output
from roundtable_console.tui.cli.invocation import Invocation, with_invocation
from roundtable_console.tui.cli.through_server import checked_server, token_from


@click.group("host", help="This machine as a host: its agents reached from every surface.")
def host_group() -> None:
    pass


def _host_options(func: Any) -> Any:
    for option in reversed(
        (
            click.option(
                "--name",
                metavar="NAME",
                help="The host's name: its token's name, and the host its sessions record "
                "(default: ROUNDTABLE_HOST, else this machine's name).",
            ),
            click.option("--server", metavar="URL", help="Connect to roundtable serve at URL."),
            click.option(
                "--token-env",
                metavar="VAR",
                help="With --server: the variable holding the host's token (--role host).",
            ),
            click.option(
                "--project",
                "projects",
                multiple=True,
                metavar="DIR",
                help="A project directory the host serves (repeat); DIR=WORKSPACE serves "
                "only that workspace's sessions in it.",
            ),
            click.option(
                "--worktrees",
                metavar="DIR",
                help="Where the host makes new sessions' git worktrees, a folder per project "
                "(default: roundtable's data directory, worktrees/).",
            ),
        )
    ):
        func = option(func)
    return func


def _name_of(name: str | None) -> str:
    from roundtable_console.agents.operations import machine_name
    from roundtable_console.store.hosts.facts import host_name

    return host_name(name if name is not None else machine_name())


def _token(server: str | None, token_env: str | None) -> str | None:
    if token_env and not server:
        raise click.UsageError("--token-env goes with --server.")
    if server:
        checked_server(server)
    if not token_env:
        return None
    token = token_from(token_env, "the host's token")
    # Read once: not in the environment the host's tmux server, and every agent it starts,
    # inherit.
    os.environ.pop(token_env, None)
    return token


@host_group.command(
    "run",
    help="Run this machine's host: connect out to the server (or the store) and stay, so the "
    "console reaches the agents here. Stops on Ctrl-C or SIGTERM.",
)
@_host_options
@with_invocation
def run_command(
    inv: Invocation,
    name: str | None,
    server: str | None,
    token_env: str | None,
    projects: tuple[str, ...],
    worktrees: str | None,
) -> None:
    from roundtable_console.agents.operations import machine_name
    from roundtable_console.hosts.found import ProjectMissing, machine_of

    host = _name_of(name)
    token = _token(server, token_env)
    url = None if server else inv.url()  # a bad --root or store is said before anything else
    try:
        machine = machine_of(host, projects, worktrees)
    except ProjectMissing as missing:
        raise click.BadParameter(str(missing), param_hint="'--project'") from None
    facts = machine.facts
    if host != machine_name():
        output.echo_text(
            f"Agents started by hand here record the host {machine_name()!r}: set "
            f"ROUNDTABLE_HOST={host} in their environment to have them under {host!r}.",
            err=True,
        )
    found = ", ".join(f"{a.name} {a.version or '(no version)'}" for a in facts.agents)
    output.echo_text(f"Host {host!r}: {found or 'no agent CLI on PATH'}.", err=True)
    if server:
        from roundtable_console.hosts import link

        raise SystemExit(
            _until_stopped(
                lambda say, stop: link.run(link.Target(server, token), machine, say=say, stop=stop)
            )
        )
    from roundtable_console.hosts import on_store

    with inv.store(url=url) as store:
        raise SystemExit(
            _until_stopped(lambda say, stop: on_store.run(store, machine, say=say, stop=stop))
        )


def _until_stopped(holding: Any) -> int:
    """Run ``holding(say, stop)`` until SIGINT or SIGTERM (exit 0) or it ends (exit 1)."""
    import asyncio
    import signal

    from roundtable_console.hosts.link import LinkEnded

    def say(message: str) -> None:
        output.echo_text(message, err=True)

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(number, stop.set)
        try:
            await holding(say, stop)
        except LinkEnded as ended:
            say(str(ended))
            return 1
        say("Host stopped.")
        return 0

    return asyncio.run(main())


@host_group.command(
    "service",
    help="Print the service that keeps this host running: a systemd user unit, or on macOS a "
    "launchd agent (--launchd). The token is never written into it.",
)
@_host_options
@click.option("--launchd", is_flag=True, help="A launchd agent (macOS), not a systemd unit.")
@with_invocation
def service_command(
    inv: Invocation,
    name: str | None,
    server: str | None,
    token_env: str | None,
    projects: tuple[str, ...],
    worktrees: str | None,
    launchd: bool,
) -> None:
    from roundtable_console.hosts.found import ProjectMissing, projects_of
    from roundtable_console.hosts.service import launchd_plist, systemd_unit

    host = _name_of(name)
    if token_env and not server:
        raise click.UsageError("--token-env goes with --server.")
    if server:
        checked_server(server)
    inv.url()  # a bad --root or configuration is said, as by every command
    try:
        real = projects_of(projects)
    except ProjectMissing as missing:
        raise click.BadParameter(str(missing), param_hint="'--project'") from None
    argv = [*_program(), "host", "run", "--name", host]
    if server:
        argv += ["--server", server] + (["--token-env", token_env] if token_env else [])
    elif inv.db:
        argv += ["--db", inv.db]
    for project in real:
        argv += ["--project", project]
    if worktrees:
        argv += ["--worktrees", str(Path(worktrees).expanduser().resolve())]
    made = launchd_plist if launchd else systemd_unit
    text = made(argv, token_env=token_env)
    if inv.json_mode:
        output.emit_json({"kind": "launchd" if launchd else "systemd", "argv": argv, "text": text})
        return
    click.echo(text, nl=False)


def _program() -> list[str]:
    import shutil

    found = shutil.which("roundtable")
    if found:
        return [str(Path(found).resolve())]
    return [sys.executable, "-m", "roundtable_console"]


@click.command("hosts", help="Every host: online or not, last seen, its agents and sessions.")
@with_invocation
def hosts_command(inv: Invocation) -> None:
    from roundtable_console.store.hosts.registry import list_hosts

    with inv.store() as store, store.read() as db:
        hosts = list_hosts(db, clock=inv.clock)
    if inv.json_mode:
        output.emit_json({"items": [host.to_json() for host in hosts]})
        return
    table = output.Table(("name", "state", "last seen", "agents", "sessions", "projects"))
    table.write(
        (
            host.name,
            "online" if host.online else "offline",
            host.last_seen_at,
            ", ".join(
                f"{agent.name} {agent.version}" if agent.version else agent.name
                for agent in host.facts.agents
            ),
            f"{host.active} active / {host.sessions}",
            ", ".join(host.facts.projects),
        )
        for host in hosts
    )
    table.finish("No host yet: roundtable host run on each machine that runs agents.")
