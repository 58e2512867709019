"""What the agent is doing, when its transcript is not known: the tmux pane ``R`` started it in
(``store.service.record_launch``), read with ``tmux capture-pane`` — its last lines, redacted and
printable, never a whole scrollback — and ``read_activity``, the one read the console, the web
console and the API make of either."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Mapping
from typing import Any

from roundtable_console.agents.transcripts import (
    PANE,
    Entry,
    Page,
    TranscriptUnavailable,
    read_page,
)
from roundtable_console.store.records import SessionFields
from roundtable_console.store.safety.credentials import redact_output_text
from roundtable_console.store.safety.display import printable

PANE_LINES = 200
TMUX_SECONDS = 3
_PANE = re.compile(r"^%[0-9]{1,9}$")


def read_activity(
    session: SessionFields,
    launch: Mapping[str, Any] | None,
    *,
    before: int | None = None,
    limit: int = 50,
    host: str | None = None,
) -> Page:
    """The session's transcript; else, for a session ``R`` started in tmux (``launch``: the
    newest ``launched`` row's payload), that pane's text; else why neither can be shown.
    ``host``: the host reading (``verified_pane``)."""
    try:
        return read_page(session, before=before, limit=limit)
    except TranscriptUnavailable:
        if not launch or not launch.get("tmux_pane"):
            raise
    return read_pane(launch, host=host)


def verified_pane(
    launch: Mapping[str, Any], *, running: bool = False, host: str | None = None
) -> tuple[list[str], str]:
    """The tmux command and pane id of the very pane ``R`` started the session in, on this
    machine, in the very tmux server (pane ids start again at %0 with a new one), and with
    ``running`` its program still running (a pane kept after it exited takes no keys); else
    ``TranscriptUnavailable`` saying why not. A pane a host started (``via_host``) is that
    host's to reach (``host``: the host asking), never a reader's here: what it said of its
    pane is not taken for this machine's."""
    import socket as sockets

    pane = launch.get("tmux_pane")
    socket = launch.get("tmux_socket")
    if launch.get("via_host") != host:
        raise TranscriptUnavailable(
            "The agent runs in a tmux pane its machine's host started: it is reached through "
            "that host."
        )
    if not isinstance(pane, str) or not _PANE.fullmatch(pane):
        raise TranscriptUnavailable("The tmux pane this session was started in is not known.")
    tmux = shutil.which("tmux")
    if tmux is None:
        raise TranscriptUnavailable("The session was started in tmux, which is not here.")
    gone = TranscriptUnavailable(
        f"The tmux pane {pane} the session was started in is gone (its window or its tmux "
        "server closed), or it is on another machine."
    )
    if launch.get("host") != sockets.gethostname():
        raise gone
    base = [tmux]
    if isinstance(socket, str) and socket.startswith("/"):
        base += ["-S", socket]
    server = _tmux([*base, "display-message", "-p", "-t", pane, "#{pid} #{pane_dead}"])
    if server is None or server.split()[:1] != [str(launch.get("tmux_server_pid") or "")]:
        raise gone
    if running and server.split()[1:] != ["0"]:
        raise TranscriptUnavailable(f"The agent in tmux pane {pane} has exited.")
    return base, pane


def read_pane(launch: Mapping[str, Any], *, host: str | None = None) -> Page:
    base, pane = verified_pane(launch, host=host)
    text = _tmux([*base, "capture-pane", "-p", "-J", "-t", pane, "-S", f"-{PANE_LINES}"])
    if text is None:
        raise TranscriptUnavailable(f"The tmux pane {pane} the session was started in is gone.")
    text = text.rstrip("\n")
    lines: list[str] = []
    for raw in text.split("\n"):
        line = printable(redact_output_text(raw)).rstrip()
        if line or (lines and lines[-1]):  # a screen's empty stretch, as one blank line
            lines.append(line)
    while lines and not lines[-1]:
        lines.pop()
    entries = [Entry(PANE, line) for line in lines[-PANE_LINES:]]
    return Page(entries, None, len(text))


def type_into_pane(launch: Mapping[str, Any], line: str, *, host: str | None = None) -> bool:
    """``line`` typed into the session's pane as literal keys (``send-keys -l``: no key names,
    no shell), then Enter; False when the pane is gone or tmux refused."""
    try:
        base, pane = verified_pane(launch, running=True, host=host)
    except TranscriptUnavailable:
        return False
    if _tmux([*base, "send-keys", "-t", pane, "-l", "--", line]) is None:
        return False
    return _tmux([*base, "send-keys", "-t", pane, "Enter"]) is not None


GRACE_SECONDS = 10.0  # after SIGINT, before SIGTERM
GRACE_MOST = 60.0


def stop_agent(
    launch: Mapping[str, Any], *, grace: float = GRACE_SECONDS, host: str | None = None
) -> tuple[str, bool]:
    """The agent running in the session's pane asked to stop: SIGINT, then SIGTERM if it has
    not exited within ``grace`` seconds. Which signal it took last, and whether it exited;
    ``TranscriptUnavailable`` when the pane is gone or its agent has exited already."""
    import os
    import signal
    import time

    base, pane = verified_pane(launch, running=True, host=host)
    said = (_tmux([*base, "display-message", "-p", "-t", pane, "#{pane_pid}"]) or "").strip()
    # ASCII digits only (str.isdigit takes other scripts' digits, which int() reads as 0), and
    # never 0 or 1: killpg(0) is the caller's own group.
    if not said.isascii() or not said.isdigit() or int(said) <= 1:
        raise TranscriptUnavailable(f"The tmux pane {pane} does not say which process runs in it.")
    pid = int(said)

    def exited(within: float) -> bool:
        deadline = time.monotonic() + within
        while True:
            state = _tmux([*base, "display-message", "-p", "-t", pane, "#{pane_dead}"])
            if state is None or state.strip() == "1":
                return True  # the pane closed with its program, or shows it dead
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)

    for number, within in ((signal.SIGINT, grace), (signal.SIGTERM, 5.0)):
        try:
            # To the pane's process group (tmux makes its first process lead one): an agent
            # that runs as a child of its own launcher (Gemini CLI relaunches itself in one)
            # is reached as well. A process that leads no group of its own gets it alone.
            if os.getpgid(pid) == pid and pid != os.getpgrp():
                os.killpg(pid, number)
            else:
                os.kill(pid, number)
        except ProcessLookupError:
            return number.name, True
        except PermissionError:
            why = f"The agent in tmux pane {pane} is another user's."
            raise TranscriptUnavailable(why) from None
        if exited(within):
            return number.name, True
    return "SIGTERM", False


def _tmux(command: list[str]) -> str | None:
    """tmux's answer, or None when it refused or did not answer in time."""
    try:
        done = subprocess.run(
            command, capture_output=True, timeout=TMUX_SECONDS, check=False,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, ValueError, subprocess.TimeoutExpired):  # ValueError: a NUL in an argument
        return None
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else None
