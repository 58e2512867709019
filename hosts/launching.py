"""A session's agent started on its host (``R``, the web's resume, ``POST …/launch``): in a
tmux session of its own, on the host's own tmux server, in the session's working directory,
continuing the agent's own conversation with the briefing as its prompt.

The host builds the command itself: the agent's own resume (``agents.operations``'s pattern
for the session's adapter, with the agent's own id: a UUID) and the prompt as one argument —
never an argv the server sends. It starts only an agent it found on its PATH, only in a
directory inside a project it was given (by real path: a link leading out is out; a project
bound to a workspace serves that workspace's sessions only), only for a session of its own
host. A second start of a session whose agent still runs is refused by tmux itself (the tmux
session of that name exists).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roundtable_console.agents.operations import ENV_HOST, ENV_SESSION
from roundtable_console.hosts.found import Machine
from roundtable_console.hosts.refusals import Failed, Refused
from roundtable_console.store.hosts import protocol
from roundtable_console.store.hosts.facts import HostFacts
from roundtable_console.store.records import SessionRecord
from roundtable_console.store.resume.adapters import AGENT_RESUME_PATTERNS, PLACEHOLDER
from roundtable_console.store.resume.launch import tmux_refusal
from roundtable_console.store.safety.display import one_line

TMUX_LABEL = protocol.TMUX_LABEL  # the host's own tmux server: the only panes it reads
TMUX_SECONDS = 15
AGENT_OF_ADAPTER = {"claude": "claude-code", "codex": "codex", "gemini": "gemini"}
# The agents' own session ids are UUIDs (Claude Code, Codex, Gemini CLI): a resume never gets
# a word its CLI reads otherwise ("latest", an index, an option).
AGENT_ID = re.compile(r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}", re.IGNORECASE)


def tmux_socket() -> str:
    """Where the host's tmux server listens (as tmux places a ``-L`` socket)."""
    directory = os.environ.get("TMUX_TMPDIR") or "/tmp"
    return os.path.join(directory, f"tmux-{os.getuid()}", TMUX_LABEL)


def checked_directory(machine: Machine, session: SessionRecord) -> str:
    """The session's working directory (real), when it lies inside a project this host was
    given — one bound to the session's workspace, when the project is bound to one."""
    raw = session.working_directory
    where = one_line(raw, 200)
    name = machine.facts.name
    if not os.path.isabs(raw) or "\x00" in raw:
        raise Refused(f"The working directory {where!r} is not an absolute path.")
    real = Path(os.path.realpath(raw))
    workspace = session.effective_workspace_id
    within = machine.served_in(real)
    served = [project for project in within if project.workspace in (None, workspace)]
    if not served:
        bound = bool(within)
        raise Refused(
            f"The working directory {where} is in a project the host {name} serves for another "
            "workspace."
            if bound
            else f"The working directory {where} is not inside a project the host {name} was "
            "given (roundtable host run --project DIR)."
        )
    if not real.is_dir():
        raise Refused(f"The working directory {where} is not a directory on {name}.")
    return str(real)


def command(
    machine: Machine, session: SessionRecord, cwd: str, prompt: str
) -> tuple[list[str], str]:
    """The tmux command that starts the session's agent in ``cwd`` (``checked_directory``'s),
    and the tmux session's name."""
    facts = machine.facts
    agent = AGENT_OF_ADAPTER.get(session.adapter)
    if agent is None:
        raise Refused(f"A host starts Claude Code, Codex and Gemini CLI sessions, not "
                      f"{one_line(session.adapter, 40)!r} ones.")  # fmt: skip
    if agent not in {found.name for found in facts.agents}:
        raise Refused(f"The host {facts.name} has no {agent} (it was not on its PATH at start).")
    words = AGENT_RESUME_PATTERNS[session.adapter].split()
    program = shutil.which(words[0])
    if program is None:
        raise Refused(f"The host {facts.name} no longer finds {words[0]} on its PATH.")
    external = (session.external_session_id or "").strip()
    if not AGENT_ID.fullmatch(external):
        raise Refused("The session has no agent id its agent's resume accepts.")
    if len(prompt.encode()) > protocol.PROMPT_MOST_BYTES:
        raise Refused(f"The briefing is longer than {protocol.PROMPT_MOST_BYTES // 1024} KiB.")
    name = protocol.tmux_session_name(session.id)
    argv = [program, *(word.replace(PLACEHOLDER, external) for word in words[1:]), prompt]
    return tmux_command(facts, name, cwd, session.id, argv), name


def tmux_command(
    facts: HostFacts, name: str, cwd: str, session_id: str, argv: list[str]
) -> list[str]:
    """The tmux command that starts ``argv`` in ``cwd``, in the tmux session ``name`` of the
    host's own tmux server, with the session's id and the host's name in its environment."""
    tmux = shutil.which("tmux")
    if tmux is None:
        raise Refused(f"The host {facts.name} has no tmux to start the agent in.")
    started = [tmux, "-L", TMUX_LABEL, "new-session", "-d", "-P"]
    # tmux expands formats in -c ("#(cmd)" runs cmd): "##" is a "#" to it.
    started += ["-F", "#{pane_id} #{pid} #{socket_path}", "-s", name]
    started += ["-c", cwd.replace("#", "##"), "-x", "200", "-y", "50"]
    started += ["-e", f"{ENV_SESSION}={session_id}", "-e", f"{ENV_HOST}={facts.name}"]
    started += ["--", *argv]
    refusal = tmux_refusal(started)
    if refusal is not None:
        raise Refused(refusal)
    return started


def launch(
    machine: Machine, session: SessionRecord, cwd: str, args: Mapping[str, Any]
) -> dict[str, Any]:
    """Every check (``check``: only them), then the agent started; where it runs."""
    facts = machine.facts
    prompt = args.get("prompt")
    if not isinstance(prompt, str):
        raise Refused("The launch gives the agent's prompt (the briefing) as text.")
    started, name = command(machine, session, cwd, prompt)
    if args.get("check") is True:
        return {"checked": True}
    return run_tmux(facts, started, name)


def run_tmux(facts: HostFacts, started: list[str], name: str) -> dict[str, Any]:
    """``tmux_command``'s command run: where the agent runs (its pane, the tmux server's pid
    and socket, this machine's name)."""
    try:
        done = subprocess.run(
            started, capture_output=True, text=True, timeout=TMUX_SECONDS, check=False,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as error:
        raise Failed(f"tmux could not be run on {facts.name}: {error}") from None
    if done.returncode != 0:
        said = one_line(done.stderr.strip(), 200)
        if "duplicate session" in said:
            raise Refused(
                f"The session's agent already runs on {facts.name} (tmux session {name})."
            )
        raise Failed(f"tmux on {facts.name} refused: {said or done.returncode}")
    pane, pid, path = (done.stdout.strip().split(" ", 2) + ["", ""])[:3]
    return {
        "tmux_pane": pane,
        "tmux_server_pid": pid,
        "tmux_socket": path or tmux_socket(),
        "machine": socket.gethostname(),
    }
