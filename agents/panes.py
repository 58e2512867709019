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
) -> Page:
    """The session's transcript; else, for a session ``R`` started in tmux (``launch``: the
    newest ``launched`` row's payload), that pane's text; else why neither can be shown."""
    try:
        return read_page(session, before=before, limit=limit)
    except TranscriptUnavailable:
        if not launch or not launch.get("tmux_pane"):
            raise
    return read_pane(launch)


def read_pane(launch: Mapping[str, Any]) -> Page:
    pane = launch.get("tmux_pane")
    socket = launch.get("tmux_socket")
    if not isinstance(pane, str) or not _PANE.fullmatch(pane):
        raise TranscriptUnavailable("The tmux pane this session was started in is not known.")
    tmux = shutil.which("tmux")
    if tmux is None:
        raise TranscriptUnavailable("The session was started in tmux, which is not here.")
    command = [tmux]
    if isinstance(socket, str) and socket.startswith("/"):
        command += ["-S", socket]
    command += ["capture-pane", "-p", "-J", "-t", pane, "-S", f"-{PANE_LINES}"]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            timeout=TMUX_SECONDS,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        raise TranscriptUnavailable("tmux did not answer for the session's pane.") from None
    if done.returncode != 0:
        raise TranscriptUnavailable(
            f"The tmux pane {pane} the session was started in is gone (its window closed)."
        )
    text = done.stdout.decode("utf-8", "replace").rstrip("\n")
    lines: list[str] = []
    for raw in text.split("\n"):
        line = printable(redact_output_text(raw)).rstrip()
        if line or (lines and lines[-1]):  # a screen's empty stretch, as one blank line
            lines.append(line)
    while lines and not lines[-1]:
        lines.pop()
    entries = [Entry("pane", line) for line in lines[-PANE_LINES:]]
    return Page(entries, None, len(text))
