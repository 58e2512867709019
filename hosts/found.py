"""What a machine offers the console: the agent CLIs on its PATH with their versions, tmux, and
the project directories it was given (each its real path: a link is followed once, here, and
the directory it names is what the host serves)."""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

from roundtable_console.store.hosts.facts import AgentFound, HostFacts

# An agent by the CLI's name for it, and the command that runs it.
AGENT_COMMANDS = {"claude-code": "claude", "codex": "codex", "gemini": "gemini"}
VERSION_SECONDS = 15.0
_VERSION = re.compile(r"\d+(?:\.\d+)+[\w.+-]*")


class ProjectMissing(Exception):
    """A ``--project`` that is not a directory here."""


def projects_of(given: Iterable[str]) -> tuple[str, ...]:
    """The real path of each directory given, in order, once each."""
    found: dict[str, None] = {}
    for raw in given:
        path = Path(raw).expanduser()
        if not path.is_dir():
            raise ProjectMissing(f"{raw!r} is not a directory on this machine.")
        found[str(path.resolve(strict=True))] = None
    return tuple(found)


def version_of(command: list[str]) -> str | None:
    """The version a command prints (its first dotted number), None when it prints none."""
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=VERSION_SECONDS,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    match = _VERSION.search(done.stdout + "\n" + done.stderr)
    return match.group(0)[:64] if match else None


def agents_found() -> tuple[AgentFound, ...]:
    found = []
    for name, command in AGENT_COMMANDS.items():
        path = shutil.which(command)
        if path is not None:
            found.append(AgentFound(name=name, version=version_of([path, "--version"])))
    return tuple(found)


def tmux_found() -> str | None:
    path = shutil.which("tmux")
    if path is None:
        return None
    return version_of([path, "-V"]) or "unknown"


def facts_of(name: str, projects: Iterable[str]) -> HostFacts:
    """Everything the host says of itself as it connects (the agents' versions are asked
    once, at start)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        ours: str | None = version("roundtable-console")
    except PackageNotFoundError:
        ours = None
    found = HostFacts(
        name=name,
        agents=agents_found(),
        tmux=tmux_found(),
        projects=projects_of(projects),
        version=ours,
        platform=f"{platform.system()} {platform.machine()}"[:64],
    )
    return HostFacts.from_json(found.to_json())  # checked here as the server checks it
