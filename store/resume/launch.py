"""Resume and launch (``roundtable resume --exec`` and the console's ``R``): whether a session's
agent can be started here, with which argv, in which working directory, and which program that
is. Decided once, here, for both; every check runs before the lifecycle resume, so a refusal
changes nothing. How the argv is then run (``execvp``, a tmux window, the console suspended) is
the caller's.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from roundtable_console.store import errors
from roundtable_console.store.clock import Clock, system_clock
from roundtable_console.store.safety.display import one_line

if TYPE_CHECKING:
    from roundtable_console.store.db.database import Store
    from roundtable_console.store.db.models import AgentSession
    from roundtable_console.store.resume.adapters import AdapterConfig
    from roundtable_console.store.service import BriefingView
    from roundtable_console.store.writes.lifecycle_outcomes import ActionOutcome

TMUX_WINDOW_NAME = re.compile(r"[^A-Za-z0-9._-]+")
TMUX_NAME_LENGTH = 40
# tmux hands a command to its server in one message of at most 16 KiB (its MAX_IMSGSIZE, less
# a header and the argument count): a longer one is refused with "command too long".
TMUX_COMMAND_BYTES = 16 * 1024 - 64


@dataclass(frozen=True)
class LaunchPlan:
    """What will run once the session is resumed: ``argv`` (the resume plan's, the briefing
    last) in ``cwd``; ``program`` is the executable ``argv[0]`` names there. ``view`` is the
    briefing and session it was made from (the resume is refused if the row changed since)."""

    view: BriefingView
    argv: tuple[str, ...]
    cwd: str
    program: str

    @property
    def session(self) -> AgentSession:
        return self.view.session

    @property
    def environment(self) -> dict[str, str]:
        """What the agent gets besides the caller's environment: the session it resumes, so that
        its hooks (``roundtable hooks run``) report on this session."""
        return launch_environment(self.session.id)


SESSION_VARIABLE = "ROUNDTABLE_SESSION_ID"


def launch_environment(session_id: str) -> dict[str, str]:
    return {SESSION_VARIABLE: session_id}


def shell_line(argv: Sequence[str], session_id: str) -> str:
    """The launch as a line to paste into a shell (the web's resume): its environment, then the
    argv, every word quoted. Empty when there is nothing to run."""
    import shlex

    if not argv:
        return ""
    assignments = [
        f"{name}={shlex.quote(value)}" for name, value in launch_environment(session_id).items()
    ]
    return " ".join([*assignments, shlex.join(argv)])


def _refuse(message: str, reason: str) -> errors.StoreError:
    return errors.NotLaunchable(message, details={"reason": reason})


def find_program(name: str, cwd: str, path: str | None) -> str | None:
    """The executable ``name`` means when run in ``cwd`` with ``path`` as $PATH, as ``execvp``
    and ``subprocess`` (given ``cwd``) find it: a name with a slash is taken relative to ``cwd``;
    a bare name is looked up on $PATH, whose relative entries are relative to ``cwd`` too."""
    if not name:
        return None
    if os.sep in name:
        return shutil.which(os.path.join(cwd, name), path="")
    entries = (path if path is not None else os.defpath).split(os.pathsep)
    searched = os.pathsep.join(os.path.join(cwd, entry or ".") for entry in entries)
    return shutil.which(name, path=searched)


def planned_here(view: BriefingView, adapters: Mapping[str, AdapterConfig] | None) -> BriefingView:
    """``view`` with the plan ``adapters`` make of its session: what runs on this machine is
    made by this machine's configuration, never taken from another's (a server's plan is shown,
    not run: ``roundtable resume --exec`` and ``R`` through a server)."""
    from roundtable_console.store.resume.plan import resume_plan
    from roundtable_console.store.service import BriefingView

    plan = resume_plan(session=view.session, briefing_markdown=view.briefing.markdown,
                       adapters=adapters)  # fmt: skip
    return BriefingView(briefing=view.briefing, plan=plan)


def plan_launch(view: BriefingView, *, path: str | None = None) -> LaunchPlan:
    """The launch of the session ``view`` shows, or why not (``not_launchable``). ``path``: the
    $PATH the agent will get. The session's status is the lifecycle resume's to judge: under a
    key it already resumed the session with, it replays that resume, so a launch that failed
    after its resume can be tried again."""
    session, plan = view.session, view.plan
    name = one_line(session.id, 60)
    if not plan.resumable:
        raise _refuse(
            f"Session {name!r} is not resumable: {plan.reason} Nothing was started.",
            "not_resumable",
        )
    cwd = session.working_directory
    where = one_line(cwd, 200)
    if not os.path.isabs(cwd):
        raise _refuse(
            f"The working directory {where!r} of session {name!r} is not an absolute path, so "
            "it names no one directory here; nothing was started.",
            "working_directory",
        )
    if not os.path.isdir(cwd):
        problem = "is not a directory" if os.path.exists(cwd) else "does not exist"
        raise _refuse(
            f"The working directory {where} of session {name!r} {problem} on this machine; "
            "restore it (or run the agent where it lives). Nothing was started.",
            "working_directory",
        )
    program = find_program(plan.argv[0], cwd, path)
    if program is None:
        raise _refuse(
            f"The program {one_line(plan.argv[0], 80)!r} of adapter "
            f"{one_line(session.adapter, 40)!r} was not found (on PATH, in {where}); install "
            "it or fix the adapter's resume_pattern. Nothing was started.",
            "program_not_found",
        )
    return LaunchPlan(view=view, argv=tuple(plan.argv), cwd=cwd, program=program)


def read_launch(
    *,
    store: Store,
    adapters: Mapping[str, AdapterConfig] | None,
    session_id: str | None = None,
    agent_id: str | None = None,
    clock: Clock = system_clock,
    path: str | None = None,
    here: str | None = None,
) -> LaunchPlan:
    """The briefing of the session (or of the agent's session), and its launch plan. ``here``:
    this machine's name; a session of another machine whose host the store knows is started
    by that host, not here (``not_launchable``, saying so)."""
    from roundtable_console.store.hosts.registry import elsewhere_words, runs_elsewhere
    from roundtable_console.store.service import read_briefing

    view = read_briefing(
        store=store, adapters=adapters, session_id=session_id, agent_id=agent_id, clock=clock
    )
    if here is not None:
        with store.read() as db:
            host = runs_elsewhere(db, view.session, here, clock=clock)
        if host is not None:
            raise _refuse(
                f"{elsewhere_words(view.session.id, host)} Start it there (Start on "
                f"{host.name} on its briefing page, or POST …/launch). Nothing was started.",
                "elsewhere",
            )
    return plan_launch(view, path=path)


class PlannedFrom(Protocol):
    """A launch's plan (here, or by a host): the session row it was read from."""

    @property
    def session(self) -> AgentSession: ...


def resume_for_launch(
    *,
    store: Store,
    launch: PlannedFrom,
    actor: str,
    idempotency_key: str,
    clock: Clock = system_clock,
) -> ActionOutcome:
    """The lifecycle resume, with all its rules, of the session as the plan read it: a row that
    changed since is refused (``session_transition_conflict``), so what runs is what was
    shown. The same key again replays the first resume (a launch that failed can be retried)."""
    from roundtable_console.store.service import perform_action

    return perform_action(
        store=store,
        action="resume",
        session_id=launch.session.id,
        actor=actor,
        idempotency_key=idempotency_key,
        expected_version=launch.session.version,
        clock=clock,
    )


def tmux_window_name(session_id: str) -> str:
    """A tmux window name for the session: letters, digits, ``. _ -`` (no format, no space)."""
    name = TMUX_WINDOW_NAME.sub("-", session_id).strip("-")[:TMUX_NAME_LENGTH]
    return name or "session"


def tmux_command(launch: LaunchPlan, *, tmux: str, path: str | None) -> list[str]:
    """``tmux new-window`` running the argv directly in the session's working directory. tmux
    runs a command given as several arguments without a shell, but a single one through
    ``sh -c``: a resume argv always has two at least (the pattern's program and the briefing).
    The agent gets ``path`` as $PATH, the one its program was found on. tmux prints the new
    window's index and its pane's id."""
    command = [tmux, "new-window", "-P", "-F", "#{window_index} #{pane_id}"]
    # tmux expands formats in -c ("#(cmd)" runs cmd): "##" is a "#" to it.
    command += ["-n", tmux_window_name(launch.session.id), "-c", launch.cwd.replace("#", "##")]
    if path is not None:
        command += ["-e", f"PATH={path}"]
    for name, value in launch.environment.items():
        command += ["-e", f"{name}={value}"]
    argv: Sequence[str] = launch.argv
    if len(argv) < 2:
        raise ValueError("tmux would run a one-word command through sh -c")
    return [*command, "--", *argv]


def tmux_refusal(command: Sequence[str]) -> str | None:
    """Why tmux would refuse ``command`` (``tmux_command``'s), or None: checked before the
    resume, so that a refusal changes nothing."""
    size = sum(len(word.encode("utf-8", "surrogateescape")) + 1 for word in command[1:])
    if size <= TMUX_COMMAND_BYTES:
        return None
    return (
        f"The command is {size} bytes, the briefing included, and tmux takes at most about "
        f"{TMUX_COMMAND_BYTES // 1024} KiB; run `roundtable resume --session S --exec` in a tmux "
        "window yourself instead."
    )


def exec_launch(launch: LaunchPlan) -> None:
    """Become the agent (``execvp``) in the session's working directory, so its exit status is
    the caller's. Returns only by raising ``OSError`` when the program cannot be started."""
    import signal
    import sys

    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    # Python ignores SIGPIPE (and SIGXFSZ) for itself; an ignored signal stays ignored across
    # exec, and the agent should get the defaults, as subprocess gives them.
    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    os.chdir(launch.cwd)
    os.environ.update(launch.environment)
    os.execvp(launch.argv[0], list(launch.argv))
