"""Stopping a session's agent in its pane (``agents.panes.stop_agent``): the signal goes to the
pane's process group, so an agent under a launcher of its own stops too; a pane process that
leads no group of its own gets it alone; and a pane that names no believable process (0, 1, a
digit of another script) is refused before anything is signalled. The pane is a stand-in:
what tmux would say of it (its process, whether it is dead) is said by the test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from roundtable_console.agents import panes
from roundtable_console.agents.transcripts import TranscriptUnavailable

# An agent as a terminal runs it: SIGINT ends it (a test worker may run with SIGINT ignored,
# which a child would inherit).
AGENT = (
    "import signal, time\n"
    "signal.signal(signal.SIGINT, signal.SIG_DFL)\n"
    "print('ready', flush=True)\n"
    "time.sleep(100)\n"
)
# Waits for its agent whatever SIGINT it gets (its handler does nothing), as a launcher does.
LAUNCHER = (
    "import signal, subprocess\n"
    "signal.signal(signal.SIGINT, lambda *_: None)\n"
    f"agent = subprocess.Popen([{sys.executable!r}, '-c', {AGENT!r}], stdout=subprocess.PIPE)\n"
    "agent.stdout.readline()\n"
    "print(agent.pid, flush=True)\n"
    "agent.wait()\n"
)
LAUNCH = {"tmux_pane": "%1", "tmux_socket": "/tmp/none", "tmux_server_pid": "1", "host": "here"}


def pane_running(monkeypatch: pytest.MonkeyPatch, process: subprocess.Popen[bytes] | str) -> None:
    """The verified pane runs ``process`` (or says ``process`` as its pid), until it exits."""
    monkeypatch.setattr(panes, "verified_pane", lambda launch, **_: (["tmux"], "%1"))

    def said(command: list[str]) -> str:
        if command[-1] == "#{pane_pid}":
            return process if isinstance(process, str) else str(process.pid)
        assert command[-1] == "#{pane_dead}"
        return "1" if isinstance(process, str) or process.poll() is not None else "0"

    monkeypatch.setattr(panes, "_tmux", said)


def dead(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_the_whole_group_of_the_pane_is_signalled(monkeypatch: pytest.MonkeyPatch) -> None:
    """A launcher that waits for its agent (as Gemini CLI's does): both stop on SIGINT."""
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER], stdout=subprocess.PIPE, start_new_session=True
    )
    assert launcher.stdout is not None
    agent = int(launcher.stdout.readline())
    pane_running(monkeypatch, launcher)
    try:
        assert panes.stop_agent(LAUNCH, grace=5) == ("SIGINT", True)
        launcher.wait(timeout=5)
        deadline = time.monotonic() + 5
        while not dead(agent):
            assert time.monotonic() < deadline, "the agent under the launcher still runs"
            time.sleep(0.05)
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)


def test_a_process_that_leads_no_group_is_signalled_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not a group leader (here: in this test's own group): never its group, which is ours."""
    # SIGINT as a terminal's program has it (a test worker may run with it ignored, which a
    # child would inherit).
    alone = subprocess.Popen([sys.executable, "-c", AGENT], stdout=subprocess.PIPE)
    assert alone.stdout is not None and alone.stdout.readline() == b"ready\n"
    assert os.getpgid(alone.pid) == os.getpgrp()
    pane_running(monkeypatch, alone)
    try:
        assert panes.stop_agent(LAUNCH, grace=5) == ("SIGINT", True)
        assert alone.wait(timeout=5) == -signal.SIGINT
    finally:
        if alone.poll() is None:
            alone.kill()


@pytest.mark.parametrize("pid", ["0", "1", "\u0660", "-5", "12a", ""])
def test_a_pane_that_names_no_believable_process_is_refused(
    monkeypatch: pytest.MonkeyPatch, pid: str
) -> None:
    signalled: list[Any] = []
    monkeypatch.setattr(os, "killpg", lambda *args: signalled.append(args))
    monkeypatch.setattr(os, "kill", lambda *args: signalled.append(args))
    pane_running(monkeypatch, pid)
    with pytest.raises(TranscriptUnavailable, match="does not say which process"):
        panes.stop_agent(LAUNCH, grace=1)
    assert signalled == []
