"""A new session started by its host (``protocol.START``, ``store.hosts.new_work``): in a
project the host was given, optionally in a git worktree of its own, with the agent the host
found on its PATH, in tmux on the host's own tmux server, with ``ROUNDTABLE_SESSION_ID`` and
the first prompt.

Every argument is untrusted (a stolen operator token asks what it likes), so the host builds
everything itself: the project is one it was given (by its real path or its name), the worktree
lies under the host's worktrees directory (``host run --worktrees``) in that project's folder,
reached by no link; the branch and base are checked by our rules and then by git's own; the
agent's command is the host's (``AGENT_COMMANDS``) with its permission mode from
``ASK_WORDS``, and the prompt always an operand, never an option (``store.hosts.new_work``
refuses a prompt an agent would read as its own command: ``/…``, ``!…``, or one lowercase word,
which Claude Code's parser takes for a subcommand even after ``--``). A start that fails after the
worktree was made removes it and its branch (both made a moment ago, holding nothing).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roundtable_console.hosts.found import AGENT_COMMANDS, Machine, Project
from roundtable_console.hosts.git import mark_worktree, run_git
from roundtable_console.hosts.launching import run_tmux, tmux_command
from roundtable_console.hosts.refusals import Failed, Refused
from roundtable_console.store.hosts import new_work, protocol
from roundtable_console.store.safety.display import one_line

GIT_SECONDS = 20
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,199}")
# How much each agent asks a human, by ``--ask``: its own permission mode (docs/operators-guide).
ASK_WORDS = {
    "claude-code": {
        "always": ["--permission-mode", "manual"],
        "edits": ["--permission-mode", "acceptEdits"],
        "agent": ["--permission-mode", "auto"],
    },
    "codex": {
        "always": ["--ask-for-approval", "on-request", "--sandbox", "read-only"],
        "edits": ["--ask-for-approval", "on-request", "--sandbox", "workspace-write"],
        "agent": ["--ask-for-approval", "never", "--sandbox", "workspace-write"],
    },
    "gemini": {
        "always": ["--approval-mode", "default"],
        "edits": ["--approval-mode", "auto_edit"],
        "agent": ["--approval-mode", "yolo"],
    },
}


def start(machine: Machine, args: Mapping[str, Any]) -> dict[str, Any]:
    """Every check (``check``: only them, and where it would start), then the worktree made and
    the agent started; where it runs."""
    facts = machine.facts
    session_id = args.get("session_id")
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
        raise Refused("The call names no session.")
    if args.get("host") != facts.name:
        raise Refused(f"The new session is not for the host {facts.name}.")
    tree = args.get("worktree")
    if tree is not None and not isinstance(tree, Mapping):
        raise Refused("The worktree is an object (its branch and base), or null.")
    asked = {name: args.get(name) for name in ("project", "agent", "prompt", "model", "ask")}
    asked.update(host=facts.name, workspace_id=args.get("workspace_id"), worktree=tree is not None)
    if tree is not None:
        asked.update(branch=tree.get("branch"), base=tree.get("base"))
        if not isinstance(tree.get("branch"), str):
            raise Refused("A worktree names its branch.")
    try:
        work = new_work.new_work_of(asked)
    except Exception as bad:  # noqa: BLE001 - its words, as a refusal
        raise Refused(getattr(bad, "message", "The new session is malformed.")) from None
    begun = time.monotonic()
    within = args.get("within_seconds")
    within = float(within) if type(within) in (int, float) and within > 0 else GIT_SECONDS
    project = project_of(machine, work.project, work.workspace_id, bound=args.get("bound") is True)
    if work.agent not in {found.name for found in facts.agents}:
        raise Refused(
            f"The host {facts.name} has no {work.agent} (it was not on its PATH at start)."
        )
    program = shutil.which(AGENT_COMMANDS[work.agent])
    if program is None:
        raise Refused(
            f"The host {facts.name} no longer finds {AGENT_COMMANDS[work.agent]} on its PATH."
        )
    place: dict[str, Any] = {"project": project.path, "branch": None, "base": None}
    if work.worktree:
        branch, base = work.branch or "", work.base or "HEAD"
        place.update(branch=branch, base=_commit(project, base, facts.name))
        _new_branch(project, branch)
        place["directory"] = _worktree_path(machine, project, branch)
    else:
        place["directory"] = project.path
    name = protocol.tmux_session_name(session_id)
    argv = [program, *agent_words(work.agent, work.ask, work.model, work.prompt)]
    tmux_command(facts, name, project.path, session_id, argv)  # its refusals, before anything
    if args.get("check") is True:
        return place
    if work.worktree:
        _add_worktree(machine, project, place["branch"], place["directory"], place["base"])
    try:
        if time.monotonic() - begun > within:
            raise Failed(f"Making the worktree took longer than {within:.0f} s: nothing started.")
        if work.worktree:
            mark_worktree(place["directory"], session_id)
        tmux = tmux_command(facts, name, place["directory"], session_id, argv)
        if work.worktree and work.agent == "claude-code" and place["base"] == _head(project):
            carry_claude_trust(project.path, place["directory"])
        return {**place, **run_tmux(facts, tmux, name)}
    except (Refused, Failed):
        if work.worktree:
            _remove_worktree(project, place["branch"], place["directory"])
        raise


def agent_words(agent: str, ask: str, model: str | None, prompt: str) -> list[str]:
    """The agent's arguments: its permission mode, its model, and the prompt as an operand
    (after ``--``, or as the value of Gemini's ``--prompt-interactive=``: never an option)."""
    words = list(ASK_WORDS[agent][ask])
    if model:
        words += ["--model", model]
    if prompt:
        words += [f"--prompt-interactive={prompt}"] if agent == "gemini" else ["--", prompt]
    return words


def project_of(
    machine: Machine, asked: str, workspace: str | None, *, bound: bool = False
) -> Project:
    """The project ``asked`` names (its real path, or its name when one project has it), among
    those serving ``workspace`` (``bound``: bound to it; a caller reaching some workspaces only
    starts nothing in a project every workspace shares). Others are not named in a refusal."""
    name = machine.facts.name
    shown = one_line(asked, 80)
    serving = [
        project for project in machine.projects
        if project.workspace == workspace or (project.workspace is None and not bound)
    ]  # fmt: skip
    if asked.startswith("/"):
        real = os.path.realpath(asked)
        found = [project for project in serving if project.path == real]
    else:
        found = [project for project in serving if project.name == asked]
    if len(found) > 1:
        raise Refused(
            f"The host {name} has {len(found)} projects named {shown}: give its directory."
        )
    if not found:
        given = ", ".join(project.name for project in serving) or "none"
        raise Refused(
            f"The host {name} was not given the project {shown} for this workspace (it serves "
            f"it: {given})."
        )
    project = found[0]
    if not Path(project.path).is_dir():
        raise Refused(f"The project {project.name} is no longer a directory on {name}.")
    return project


def _git(project: Project, *words: str) -> subprocess.CompletedProcess[str]:
    return run_git(project.path, *words, seconds=GIT_SECONDS, what=project.name)


def _commit(project: Project, base: str, host: str) -> str:
    if not _git(project, "rev-parse", "--is-inside-work-tree").stdout.strip() == "true":
        raise Refused(f"The project {project.name} on {host} is not a git repository.")
    found = _git(project, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}")
    if found.returncode != 0 or not found.stdout.strip():
        raise Refused(f"The base {one_line(base, 60)!r} does not exist in {project.name}.")
    return found.stdout.strip()


def _head(project: Project) -> str | None:
    found = _git(project, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    return found.stdout.strip() if found.returncode == 0 else None


def _new_branch(project: Project, branch: str) -> None:
    if _git(project, "check-ref-format", "--branch", branch).returncode != 0:
        raise Refused(f"The branch {one_line(branch, 60)!r} is not a name git takes for a branch.")
    if _git(project, "show-ref", "--verify", "--quiet", f"refs/heads/{branch}").returncode == 0:
        raise Refused(f"The branch {branch} exists already in {project.name}: choose another name.")
    if _git(project, "rev-parse", "--verify", "--quiet", branch).returncode == 0:
        raise Refused(
            f"The name {branch} already names something in {project.name} (a tag, a remote's "
            "branch, a commit): choose another name."
        )


def _worktree_path(machine: Machine, project: Project, branch: str) -> str:
    if not machine.worktrees:
        raise Refused(f"The host {machine.facts.name} was given no worktrees directory.")
    folder = project.worktrees(machine.worktrees)
    path = os.path.join(folder, branch.replace("/", "-"))
    if os.path.lexists(path):
        raise Refused(f"The worktree {path} exists already on {machine.facts.name}.")
    if os.path.lexists(folder) and os.path.realpath(folder) != folder:
        raise Refused(f"The worktrees folder {folder} is a link: the host does not follow it.")
    for kept in (machine.worktrees, folder):
        _own_folder(kept, machine.facts.name)
    return path


def _own_folder(folder: str, host: str) -> None:
    """A folder the worktrees go in is this user's, and no one else's to write (another user
    could swap a worktree for their own before the agent starts in it)."""
    try:
        found = os.lstat(folder)
    except FileNotFoundError:
        return  # made by the host, its own
    if found.st_uid != os.geteuid() or found.st_mode & 0o022:
        raise Refused(
            f"The worktrees folder {folder} on {host} is another user's, or others can write "
            "in it: the host makes worktrees only in a folder of its own."
        )


def _add_worktree(machine: Machine, project: Project, branch: str, path: str, base: str) -> None:
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    if os.path.realpath(folder) != folder:  # made a link between the check and now
        raise Refused(f"The worktrees folder {folder} is a link: the host does not follow it.")
    done = _git(project, "worktree", "add", "-b", branch, path, base)
    if done.returncode != 0:
        said = one_line(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "", 200)
        raise Failed(f"git worktree add failed in {project.name}: {said or done.returncode}")


def _remove_worktree(project: Project, branch: str, path: str) -> None:
    _git(project, "worktree", "remove", "--force", path)
    _git(project, "branch", "-D", branch)


def carry_claude_trust(project: str, worktree: str) -> bool:
    """Claude Code asks, in its own terminal, whether to trust each new folder, and waits there
    (nothing reaches the console): a worktree of a project its user trusts already is trusted
    as the project is (``projects.<path>.hasTrustDialogAccepted`` in its ``.claude.json``), and
    of one it does not, it asks. The file is rewritten whole, in one rename; whether it was."""
    import json
    import tempfile

    folder = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.expanduser("~")
    path = os.path.realpath(os.path.join(folder, ".claude.json"))  # a linked file, kept linked
    folder = os.path.dirname(path)
    try:
        with open(path, encoding="utf-8") as kept:
            profile = json.load(kept)
        projects = profile.get("projects")
        if not isinstance(projects, dict) or not isinstance(projects.get(project), dict):
            return False
        if projects[project].get("hasTrustDialogAccepted") is not True:
            return False
        kept = projects.get(worktree)
        projects[worktree] = {**(kept if isinstance(kept, dict) else {}),
                              "hasTrustDialogAccepted": True}  # fmt: skip
        mode = os.stat(path).st_mode & 0o777
        made, temporary = tempfile.mkstemp(dir=folder, prefix=".claude.json.")
        with os.fdopen(made, "w", encoding="utf-8") as written:
            json.dump(profile, written, indent=2)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
        return True
    except Exception:  # noqa: BLE001 - it asks in its terminal, as it would have
        return False
