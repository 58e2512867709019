"""Reading a workspace's current git branch for the resume branch check."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class BranchReading:
    """``repository`` False: nothing to check. ``branch`` None with ``problem``: a repository
    that could not be inspected, which is reported rather than ignored (ours)."""

    repository: bool
    branch: str | None = None
    problem: str | None = None


def read_branch(root: str | Path) -> BranchReading:
    path = Path(root)
    if not path.is_dir():
        return BranchReading(repository=False, problem=f"{path} is not a directory on this machine")
    if not (path / ".git").exists():
        return BranchReading(repository=False)
    try:
        result = subprocess.run(
            ["git", "-C", str(path), "symbolic-ref", "--quiet", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return BranchReading(repository=True, problem=f"git could not be run: {error}")
    if result.returncode != 0:
        reason = result.stderr.strip() or "HEAD is detached or unreadable"
        return BranchReading(repository=True, problem=reason)
    return BranchReading(repository=True, branch=result.stdout.strip())
