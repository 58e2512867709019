"""Where and how the console starts a resumed session's agent (``R``): inside tmux in a new
window named after the session, else in this terminal with the console suspended until the
agent exits. What runs, where and whether it can is ``store.resume.launch``'s to decide; this module
only runs it, never through a shell.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from textual.app import App, SuspendNotSupported

from roundtable_console.store import errors
from roundtable_console.store.resume.launch import LaunchPlan, tmux_command, tmux_window_name
from roundtable_console.store.safety.display import one_line

TMUX_TIMEOUT_SECONDS = 15


@dataclass(frozen=True)
class Place:
    """Where the agent will run: ``tmux`` (a new window; ``tmux`` is the program) or
    ``terminal`` (this one, the console suspended). ``problem``: why it cannot run there."""

    kind: Literal["tmux", "terminal"]
    tmux: str | None = None
    problem: str | None = None

    def describe(self, session_id: str) -> str:
        if self.kind == "tmux":
            return f"a new tmux window named {tmux_window_name(session_id)!r}"
        return "this terminal: the console is suspended until the agent exits"


def can_hand_over(app: App[Any]) -> bool:
    """Whether the console has a terminal to lend the agent (not headless, not on the web)."""
    return not (app.is_headless or app.is_web)


def place_for(app: App[Any], environ: Mapping[str, str] | None = None) -> Place:
    """Inside tmux (``$TMUX`` set): a new tmux window; otherwise this terminal."""
    environ = os.environ if environ is None else environ
    if environ.get("TMUX"):
        tmux = shutil.which("tmux", path=environ.get("PATH"))
        if tmux is None:
            return Place("tmux", problem="$TMUX is set, but the tmux program is not on PATH.")
        return Place("tmux", tmux=tmux)
    if not can_hand_over(app):
        return Place(
            "terminal",
            problem="This console has no terminal to lend the agent (it runs headless or on "
            "the web); run `roundtable resume --session S --exec` from a shell instead.",
        )
    return Place("terminal")


def _not_started(launch: LaunchPlan, why: str) -> errors.StoreError:
    return errors.NotLaunchable(
        f"Session {one_line(launch.session.id, 60)!r} is resuming, but its agent could not be "
        f"started: {one_line(why, 300).rstrip('.')}.",
        details={"reason": "start_failed"},
    )


def start_in_tmux(launch: LaunchPlan, tmux: str, path: str | None) -> tuple[str, str | None]:
    """In a thread: a new tmux window running the agent; what to tell the operator, and the
    new pane's id (``%N``). A refusal by tmux is a ``not_launchable`` error in tmux's words."""
    command = tmux_command(launch, tmux=tmux, path=path)
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=TMUX_TIMEOUT_SECONDS, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise _not_started(launch, f"tmux could not be run: {error}") from None
    if done.returncode != 0:
        said = done.stderr.strip() or f"tmux exited with status {done.returncode}"
        raise _not_started(launch, f"tmux: {said}")
    window, _, pane = done.stdout.strip().partition(" ")
    report = (
        f"{one_line(launch.argv[0], 60)} started in tmux window {one_line(window, 10)} "
        f"({tmux_window_name(launch.session.id)}), in {one_line(launch.cwd, 120)}."
    )
    return report, pane.strip() or None


def tmux_server() -> tuple[str | None, str | None]:
    """The socket and process id of the tmux server the console runs in (``$TMUX``:
    socket,pid,session)."""
    parts = os.environ.get("TMUX", "").split(",")
    socket = parts[0] if parts and parts[0].startswith("/") else None
    pid = parts[1] if len(parts) > 1 and parts[1].isdigit() else None
    return socket, pid


@contextmanager
def _interrupts_reach_the_agent_only() -> Iterator[None]:
    """While the agent has the terminal, ctrl+c is the agent's: the console (same process
    group) ignores it. A handler, not SIG_IGN, which the agent would inherit."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda _signal, _frame: None)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def run_in_terminal(app: App[Any], launch: LaunchPlan) -> tuple[int, str]:
    """On the event loop: the console suspended, the agent in the foreground of this terminal
    until it exits; its exit status and what to tell the operator once the console is back."""
    try:
        with app.suspend(), _interrupts_reach_the_agent_only():
            returncode = subprocess.run(
                list(launch.argv),
                cwd=launch.cwd,
                env={**os.environ, **launch.environment},
                check=False,
            ).returncode
    except OSError as error:
        raise _not_started(launch, error.strerror or str(error)) from None
    except SuspendNotSupported:
        raise _not_started(launch, "this console cannot lend its terminal") from None
    program = one_line(launch.argv[0], 60)
    if returncode < 0:
        try:
            ended = f"was ended by {signal.Signals(-returncode).name}"
        except ValueError:
            ended = f"was ended by signal {-returncode}"
    else:
        ended = f"exited with status {returncode}"
    return returncode, f"{program} {ended} (in {one_line(launch.cwd, 120)}); the console is back."
