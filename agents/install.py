"""``roundtable hooks install|uninstall|status``: which files, what goes in them, what is there.

The hook's command names everything the hook process needs (the agent, the store's URL or the
server and the variable holding its token, the agent, run and workspace options), so it runs the
same whatever the agent's environment and working directory.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import NamedTuple

from roundtable_console.agents import codex_trust, settings_files
from roundtable_console.agents.registry import AGENT_NAMES, spec_of
from roundtable_console.agents.settings_files import Change, SettingsError
from roundtable_console.agents.spec import AgentSpec


class Target(NamedTuple):
    """Where the hooks go: ``--db URL``, or ``--server URL`` with ``--token-env VAR``."""

    db: str | None = None
    server: str | None = None
    token_env: str | None = None
    agent: str | None = None
    run: str | None = None
    workspace: str | None = None
    spool: str | None = None
    permission_wait: int | None = None  # seconds a permission request waits for a human
    reply_wait: int | None = None  # seconds a finished turn's hook listens for a reply


def hook_command(program: str, spec: AgentSpec, target: Target) -> str:
    """The shell line each event runs (the agents run hook commands through a shell)."""
    words = [program, "hooks", "run", spec.name]
    for flag, value in (
        ("--db", target.db),
        ("--server", target.server),
        ("--token-env", target.token_env),
        ("--agent", target.agent),
        ("--run", target.run),
        ("--workspace", target.workspace),
    ):
        if value:
            words += [flag, value]
    if target.permission_wait:
        words += ["--permission-wait", str(target.permission_wait)]
    if target.reply_wait and spec.continue_turn is not None:
        words += ["--reply-wait", str(target.reply_wait)]
    return shlex.join(words)


def settings_file(spec: AgentSpec, home: Path, project: Path | None) -> Path:
    return spec.project_file(project) if project is not None else spec.user_file(home)


def plan(
    spec: AgentSpec,
    *,
    home: Path,
    project: Path | None,
    command: str | None,
    waits: settings_files.Waits = settings_files.NO_WAITS,
) -> list[Change]:
    """The changes installing (``command``) or uninstalling (None) makes, nothing written yet."""
    path = settings_file(spec, home, project).absolute()
    _, before = settings_files.read_settings(path)
    change = settings_files.plan_change(path, spec, command, waits)
    changes = [change]
    if spec.needs_trust:
        from roundtable_console.agents.codex import codex_home

        config = codex_home(home) / "config.toml"
        if project is None and command is not None and codex_trust.hooks_in_config(config):
            raise SettingsError(
                f"{config} declares hooks itself, and Codex reads hooks from one place per "
                f"layer: move them to {path} (same shape) or install with --project. "
                "Nothing was changed."
            )
        after = settings_files.merged(before, spec, command, waits)
        old = codex_trust.our_trust(path, before)
        new = codex_trust.our_trust(path, after, command) if command is not None else {}
        changes.append(codex_trust.plan_trust(config, old, new))
    return changes


def apply(changes: list[Change]) -> None:
    for change in changes:
        if change.changed and change.after is not None:
            settings_files.write_atomic(change.path, change.after)


class Installed(NamedTuple):
    agent: str
    path: Path
    events: tuple[str, ...]
    reports_to: str
    trusted: bool | None  # Codex only: whether its config.toml trusts every one of them


def status(home: Path, project: Path | None) -> list[Installed]:
    found: list[Installed] = []
    for name in AGENT_NAMES:
        spec = spec_of(name)
        places = [spec.user_file(home)] + ([spec.project_file(project)] if project else [])
        for path in places:
            path = path.absolute()
            ours = [
                (event, command)
                for agent, event, command in settings_files.installed(path)
                if agent == name
            ]
            if not ours:
                continue
            trusted = None
            if spec.needs_trust:
                from roundtable_console.agents.codex import codex_home

                _, settings = settings_files.read_settings(path)
                needed = codex_trust.our_trust(path, settings)
                trusted = codex_trust.trusted(codex_home(home) / "config.toml", needed)
            events = tuple(event for event, _ in ours)
            found.append(Installed(name, path, events, _reports_to(ours[0][1]), trusted))
    return found


def _reports_to(command: str) -> str:
    try:
        words = shlex.split(command)
    except ValueError:
        return "?"
    for flag in ("--server", "--db"):
        if flag in words[:-1]:
            value = words[words.index(flag) + 1]
            if flag == "--db":
                from roundtable_console.store.db import drivers

                return drivers.describe(value) or value
            return value
    return "?"
