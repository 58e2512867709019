"""What the console tells its operator about changes made elsewhere, and in what words.

Pure: from the changes ``store.reads.changes`` read (``tui.change_watch``'s thread) to one notice. A
session that starts waiting, goes stale, takes a status outside the vocabulary (``failed`` …) or
is stopped or terminated by someone else is worth telling; the operator's own actions never are.
Many changes at once make one summary, not a flood.
"""

from __future__ import annotations

import os
import sys
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from roundtable_console.store.safety.display import one_line

if TYPE_CHECKING:
    from roundtable_console.store.reads.changes import Change

# Sessions named in a summary before "and N more".
NAMED_IN_SUMMARY = 3
# What a desktop notification may carry at most (terminals cut long ones anyway).
DESKTOP_TEXT_LIMIT = 200
# Statuses a session keeps within the vocabulary (store.reads.listing's tiers, but for ``unknown``).
_KNOWN_STATUSES = frozenset(
    ("starting", "active", "running", "paused", "resuming", "stopped")
    + ("ended", "terminated", "completed", "done")
)


@dataclass(frozen=True)
class Notice:
    """One notification: its title and message (plain text, never markup), and the session
    the jump key goes to."""

    title: str
    message: str
    session_id: str
    count: int


def why(change: Change, operator: str) -> str | None:
    """Why the operator should hear of this change, in a few words; None: they need not."""
    if change.actor is not None and change.actor == operator:
        return None
    if change.change == "waiting_started":
        return f"waits for a human: {one_line(change.reason, 80)}" if change.reason else "waits"
    if change.change == "stale":
        return f"went stale ({one_line(change.reason)})" if change.reason else "went stale"
    if change.change in ("status", "ended", "registered") and change.status is not None:
        if change.status not in _KNOWN_STATUSES:
            return f"is {one_line(change.status, 40)}"
        if change.change == "status" and change.status in ("stopped", "terminated"):
            by = f" by {one_line(change.actor, 40)}" if change.actor else ""
            return f"was {change.status}{by}"
    return None


def notice_for(changes: Sequence[Change], operator: str) -> Notice | None:
    """One notice for what one read found: one session's news, or a summary of several (the
    newest reason of each session). None when nothing is worth telling."""
    reasons: dict[str, str] = {}
    for change in changes:
        reason = why(change, operator)
        if reason is not None:
            reasons.pop(change.session_id, None)  # keep the sessions in the order of their news
            reasons[change.session_id] = reason
    if not reasons:
        return None
    first = next(iter(reasons))
    if len(reasons) == 1:
        return Notice(
            title="A session needs attention",
            message=f"{one_line(first, 60)} {reasons[first]}. Press j to jump to it.",
            session_id=first,
            count=1,
        )
    named = [f"{one_line(sid, 40)} {reason}" for sid, reason in reasons.items()]
    shown = named[:NAMED_IN_SUMMARY]
    more = len(named) - len(shown)
    tail = f"; and {more} more" if more else ""
    return Notice(
        title=f"{len(reasons)} sessions need attention",
        message="; ".join(shown) + f"{tail}. Press j to jump to {one_line(first, 40)}.",
        session_id=first,
        count=len(reasons),
    )


def _osc_text(text: str, *, separators: str = "") -> str:
    """Text safe inside an OSC string: no control or format character (ESC or BEL would end it
    early and let store text drive the terminal), none of ``separators``; cut to a limit."""
    cleaned = "".join(
        " "
        if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp") or char in separators
        else char
        for char in text
    )
    return " ".join(cleaned.split())[:DESKTOP_TEXT_LIMIT]


def desktop_sequence(title: str, message: str, environ: Mapping[str, str] | None = None) -> str:
    """The terminal's desktop notification: OSC 777 (``notify;title;body``) where the terminal
    speaks it (VTE terminals, urxvt, foot), else OSC 9 (iTerm2, WezTerm, kitty, Ghostty,
    Windows Terminal). Only one, so no terminal shows it twice."""
    env = os.environ if environ is None else environ
    term = env.get("TERM", "")
    if env.get("VTE_VERSION") or term.startswith(("rxvt", "foot")):
        return f"\x1b]777;notify;{_osc_text(title, separators=';')};{_osc_text(message)}\x07"
    return f"\x1b]9;{_osc_text(f'{title}: {message}')}\x07"


def write_to_terminal(sequence: str) -> None:
    """Write an escape sequence to the terminal the console draws on. Textual's driver writes
    its frames, whole, to ``sys.__stderr__`` through one file object: writing through the same
    object puts the sequence between two of its writes, never inside one. Nothing is written
    when that is not a terminal."""
    stream = sys.__stderr__
    if stream is None or not stream.isatty():
        return
    stream.write(sequence)
    stream.flush()
