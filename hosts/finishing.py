"""A session's worktree removed by its host (``protocol.FINISH``, ``store.hosts.finishing``):
only a worktree ``roundtable new`` made for it (its metadata names it, it lies where the host
makes worktrees, and git lists it as a worktree of the project), only while its agent does not
run in the host's tmux, and, with anything not committed in it, only when asked to discard it
(else the host says what is not committed, and removes nothing). Its branch is kept: nothing is
pushed, merged or deleted.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from typing import Any

from roundtable_console.hosts import launching
from roundtable_console.hosts.found import Machine
from roundtable_console.hosts.git import run_git
from roundtable_console.hosts.refusals import Failed, Refused
from roundtable_console.store.hosts import protocol
from roundtable_console.store.records import SessionRecord

GIT_SECONDS = 30
MOST_NAMED = 200


def finish(
    machine: Machine, session: SessionRecord, cwd: str, args: Mapping[str, Any]
) -> dict[str, Any]:
    tree = args.get("worktree")
    if not isinstance(tree, Mapping) or not all(
        isinstance(tree.get(key), str) for key in ("path", "project")
    ):
        raise Refused("The session has no worktree roundtable new made: there is none to remove.")
    path, project = os.path.realpath(tree["path"]), os.path.realpath(tree["project"])
    if cwd != path:
        raise Refused("The session's directory is not its worktree.")
    given = [known for known in machine.projects if known.path == project]
    if not given or not machine.worktrees:
        raise Refused(f"The host {machine.facts.name} was not given the project {project}.")
    if not path.startswith(given[0].worktrees(machine.worktrees) + os.sep):
        raise Refused(f"{path} is not where the host makes the worktrees of {project}.")
    listed = run_git(project, "worktree", "list", "--porcelain", seconds=GIT_SECONDS, what=project)
    if f"worktree {path}" not in listed.stdout.splitlines():
        raise Refused(f"{path} is not a worktree of {project}.")
    if _agent_runs(session.id):
        raise Refused(
            f"The session's agent still runs on {machine.facts.name} (tmux session "
            f"{protocol.tmux_session_name(session.id)}): stop it first."
        )
    status = run_git(path, "status", "--porcelain=v1", "-z", "--untracked-files=all",
                     seconds=GIT_SECONDS, what=path)  # fmt: skip
    if status.returncode != 0:
        raise Failed(f"git status failed in {path}.")
    uncommitted = [entry[3:] for entry in status.stdout.split("\x00") if len(entry) > 3]
    branch = run_git(path, "symbolic-ref", "--quiet", "--short", "HEAD", seconds=GIT_SECONDS,
                     what=path).stdout.strip() or None  # fmt: skip
    if uncommitted and args.get("discard") is not True:
        return {"finished": False, "uncommitted": uncommitted[:MOST_NAMED],
                "uncommitted_count": len(uncommitted), "branch": branch}  # fmt: skip
    if args.get("check") is True:
        return {"finished": False, "uncommitted": [], "uncommitted_count": 0, "branch": branch}
    removed = run_git(project, "worktree", "remove", *(["--force"] if uncommitted else []), path,
                      seconds=GIT_SECONDS, what=project)  # fmt: skip
    if removed.returncode != 0:
        said = removed.stderr.strip().splitlines()[-1:] or [str(removed.returncode)]
        raise Failed(f"git worktree remove failed: {said[0][:200]}")
    return {"finished": True, "uncommitted": uncommitted[:MOST_NAMED],
            "uncommitted_count": len(uncommitted), "branch": branch,
            "directory": path, "project": project}  # fmt: skip


def _agent_runs(session_id: str) -> bool:
    tmux = shutil.which("tmux")
    if tmux is None:
        return False
    name = protocol.tmux_session_name(session_id)
    done = subprocess.run(
        [tmux, "-L", launching.TMUX_LABEL, "has-session", "-t", f"={name}"],
        capture_output=True, check=False, stdin=subprocess.DEVNULL, timeout=10,
    )  # fmt: skip
    return done.returncode == 0
