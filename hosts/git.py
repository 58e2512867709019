"""git as a host runs it, in a repository an agent works in (so whose config the agent may have
written): nothing the repository names is run. Its fsmonitor hook, external diff, pager, hooks,
signature program and every filter it defines (``filter.NAME.clean``/``smudge``/``process``,
found by reading the config, which runs nothing) are set to nothing on each command line; no
transport may be used (a partial clone's lazy fetch would run ``core.sshCommand`` or an
``uploadpack``); the system's and the user's config are not read; git never asks for a
password."""

from __future__ import annotations

import os
import subprocess

from roundtable_console.hosts.refusals import Failed, Refused

SAFE = ["-c", "core.fsmonitor=false", "-c", "diff.external=", "-c", "core.pager=cat",
        "-c", "color.ui=false", "-c", "core.hooksPath=/dev/null", "-c", "protocol.allow=never",
        "-c", "log.showSignature=false", "-c", "gpg.program=false"]  # fmt: skip
CONFIG_SECONDS = 10


def git_env() -> dict[str, str]:
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0",
            "GIT_EXTERNAL_DIFF": "", "GIT_PAGER": "cat", "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull, "GIT_NO_LAZY_FETCH": "1"}  # fmt: skip


def _filters(directory: str) -> list[str]:
    """Every filter the repository's config defines, each undone (``-c filter.N.clean=`` …)."""
    try:
        found = subprocess.run(
            ["git", *SAFE, "-C", directory, "config", "-z", "--get-regexp", r"^filter\."],
            capture_output=True, text=True, errors="replace", timeout=CONFIG_SECONDS,
            check=False, stdin=subprocess.DEVNULL, env=git_env(),
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        raise Failed(f"git could not read the config of {directory}.") from None
    names = {
        entry.split("\n", 1)[0].split(".", 1)[1].rsplit(".", 1)[0]
        for entry in found.stdout.split("\x00")
        if entry.startswith("filter.") and entry.count(".") >= 2
    }
    undone: list[str] = []
    for name in sorted(names):
        for key, value in (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")):
            undone += ["-c", f"filter.{name}.{key}={value}"]
    return undone


def git_argv(directory: str, *words: str) -> list[str]:
    return ["git", *SAFE, *_filters(directory), "-C", directory, *words]


def run_git(
    directory: str, *words: str, seconds: float, what: str
) -> subprocess.CompletedProcess[str]:
    """``git -C directory words`` run safely, within ``seconds`` (``what``: where, in words)."""
    try:
        return subprocess.run(
            git_argv(directory, *words), capture_output=True, text=True, errors="replace",
            timeout=seconds, check=False, stdin=subprocess.DEVNULL, env=git_env(),
        )  # fmt: skip
    except FileNotFoundError:
        raise Refused("The host has no git.") from None
    except subprocess.TimeoutExpired:
        raise Failed(f"git took longer than {seconds:.0f} s in {what}.") from None


MARKER = "roundtable-session"  # in a worktree's own git directory: whose session made it


def worktree_marker(path: str) -> str | None:
    """The session that made the worktree at ``path`` (``mark_worktree``), else None."""
    found = run_git(path, "rev-parse", "--absolute-git-dir", seconds=CONFIG_SECONDS, what=path)
    if found.returncode != 0:
        return None
    try:
        with open(os.path.join(found.stdout.strip(), MARKER), encoding="utf-8") as marked:
            return marked.read(300).strip() or None
    except OSError:
        return None


def mark_worktree(path: str, session_id: str) -> None:
    """The session that made the worktree, kept in its own git directory (not in its files):
    a host reads and removes a worktree only for the session that made it."""
    found = run_git(path, "rev-parse", "--absolute-git-dir", seconds=CONFIG_SECONDS, what=path)
    if found.returncode != 0:
        raise Failed(f"The worktree {path} has no git directory of its own.")
    with open(os.path.join(found.stdout.strip(), MARKER), "w", encoding="utf-8") as marked:
        marked.write(session_id + "\n")
