"""What a machine offers the console: the agent CLIs on its PATH with their versions, tmux, and
the project directories it was given (each its real path: a link is followed once, here, and
the directory it names is what the host serves), each bound to a workspace or not
(``--project DIR=WORKSPACE``: only that workspace's sessions are served in it)."""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from roundtable_console.store.hosts.facts import AgentFound, HostFacts

# An agent by the CLI's name for it, and the command that runs it.
AGENT_COMMANDS = {"claude-code": "claude", "codex": "codex", "gemini": "gemini"}
VERSION_SECONDS = 15.0
_VERSION = re.compile(r"\d+(?:\.\d+)+[\w.+-]*")
_WORKSPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}")


class ProjectMissing(Exception):
    """A ``--project`` that is not a directory here."""


class Project(NamedTuple):
    path: str  # real
    workspace: str | None  # only this workspace's sessions, when bound

    @property
    def name(self) -> str:
        """How a new session names it (the directory's last part)."""
        return os.path.basename(self.path) or "root"

    def worktrees(self, root: str) -> str:
        """Where the host makes this project's worktrees: under ``root``, one folder per
        project (its name and a digest of its path: two projects of one name never share)."""
        digest = hashlib.sha256(self.path.encode()).hexdigest()[:8]
        return os.path.join(root, f"{self.name}-{digest}")


def default_worktrees() -> str:
    """Where a host makes worktrees unless told (``host run --worktrees DIR``)."""
    from platformdirs import user_data_dir

    return os.path.join(user_data_dir("roundtable"), "worktrees")


class Machine(NamedTuple):
    """What the host says of itself (``facts``), and what it keeps to itself: which workspace
    each project serves, and where it makes worktrees (``worktrees``: a real path, made when
    first needed)."""

    facts: HostFacts
    projects: tuple[Project, ...]
    worktrees: str = ""

    def served_in(self, real: Path) -> list[Project]:
        """The projects ``real`` (a real path) lies in: the project itself, or one of its
        worktrees."""
        return [
            project for project in self.projects
            if real.is_relative_to(project.path)
            or (self.worktrees and real.is_relative_to(project.worktrees(self.worktrees)))
        ]  # fmt: skip


def bound_projects(given: Iterable[str]) -> tuple[Project, ...]:
    """Each ``DIR`` or ``DIR=WORKSPACE`` given: its real path, in order, once each."""
    found: dict[str, str | None] = {}
    for raw in given:
        where, workspace = raw, None
        if not Path(raw).expanduser().is_dir() and "=" in raw:
            where, _, workspace = raw.rpartition("=")
            if not _WORKSPACE.fullmatch(workspace):
                raise ProjectMissing(f"{workspace!r} in {raw!r} is not a workspace's id.")
        path = Path(where).expanduser()
        if not path.is_dir():
            raise ProjectMissing(f"{where!r} is not a directory on this machine.")
        found[str(path.resolve(strict=True))] = workspace
    return tuple(Project(path, workspace) for path, workspace in found.items())


def projects_of(given: Iterable[str]) -> tuple[str, ...]:
    """The real path of each directory given, in order, once each."""
    return tuple(project.path for project in bound_projects(given))


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


def machine_of(name: str, projects: Iterable[str], worktrees: str | None = None) -> Machine:
    """The host: what it says as it connects, its projects' workspaces, where it makes
    worktrees (its real path, when it exists already)."""
    bound = bound_projects(projects)
    root = os.path.realpath(os.path.expanduser(worktrees or default_worktrees()))
    return Machine(facts_of(name, [project.path for project in bound]), bound, root)


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
