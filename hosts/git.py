"""git as a host runs it, in a repository an agent works in (so whose config the agent may have
written): nothing the repository names is run — no fsmonitor hook, no external diff, no pager —
and git never asks for a password."""

from __future__ import annotations

import os
import subprocess

from roundtable_console.hosts.refusals import Failed, Refused

SAFE = ["-c", "core.fsmonitor=false", "-c", "diff.external=", "-c", "core.pager=cat",
        "-c", "color.ui=false", "-c", "core.hooksPath=/dev/null"]  # fmt: skip


def git_env() -> dict[str, str]:
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0",
            "GIT_EXTERNAL_DIFF": "", "GIT_PAGER": "cat"}  # fmt: skip


def git_argv(directory: str, *words: str) -> list[str]:
    return ["git", *SAFE, "-C", directory, *words]


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
