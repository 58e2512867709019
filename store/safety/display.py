"""Making store text safe to show: credentials hidden (``store.safety.credentials``), control
characters made visible so they never reach a terminal. Every CLI line and every screen shows
store text through ``printable`` / ``one_line`` / ``markdown_line``."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime

from roundtable_console.store.clock import parse_ts
from roundtable_console.store.safety.credentials import redact_output_text

# What a missing value shows as.
NONE_SHOWN = "—"

_SPECIAL = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1b": "\\e"}


def _visible(char: str) -> str:
    if char in _SPECIAL:
        return _SPECIAL[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str | None, *, keep_newlines: bool = False) -> str:
    """``text`` redacted for output, with every control or format character (ESC, BEL, CSI,
    bidi overrides, …) shown as an escape sequence. Newlines are kept only when asked
    (multi-line views)."""
    if not text:
        return ""
    text = redact_output_text(text)
    if text.isprintable() and (keep_newlines or "\n" not in text):
        return text
    out = []
    for char in text:
        if keep_newlines and char == "\n":
            out.append(char)
        elif unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp"):
            out.append(_visible(char))
        else:
            out.append(char)
    return "".join(out)


def one_line(text: str | None, width: int | None = None) -> str:
    """Printable, on one line, cut to ``width`` characters with an ellipsis."""
    shown = printable(text)
    if width is not None and len(shown) > width:
        return shown[: max(width - 1, 0)] + "…"
    return shown


def markdown_line(value: object) -> str:
    """Data made safe for a single Markdown line: redacted for output; line breaks and control
    or format characters (which could forge layout lines or reorder the text) become spaces."""
    text = redact_output_text(str(value))
    cleaned = "".join(
        " " if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp") else char for char in text
    )
    return cleaned.strip()


def short_duration(seconds: float) -> str:
    """``12s``, ``5m``, ``3h``, ``2d``: a length of time to the largest whole unit."""
    whole = int(abs(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m"
    if whole < 86400:
        return f"{whole // 3600}h"
    return f"{whole // 86400}d"


def relative(moment: datetime | None, now: datetime) -> str:
    """``12s ago``, ``5m ago``, ``3h ago``, ``2d ago`` (or ``in 5s`` for a clock ahead of ours)."""
    if moment is None:
        return NONE_SHOWN
    seconds = int((now - moment).total_seconds())
    amount = short_duration(seconds)
    return f"in {amount}" if seconds < 0 else f"{amount} ago"


def exact(text: str | None) -> str:
    """The stored time in UTC to the second; unreadable text is shown as it is stored."""
    moment = parse_ts(text)
    if moment is None:
        return one_line(text) if text else NONE_SHOWN
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
