"""Store values as terminal text: always ``rich.text.Text`` from printable strings, never markup."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

from rich.text import Text

from roundtable_console.store.clock import parse_ts
from roundtable_console.store.records import SessionFields
from roundtable_console.store.safety.display import (
    NONE_SHOWN,
    exact,
    one_line,
    printable,
    relative,
)

MASK = "•••••• (v to reveal)"

STATUS_STYLES: dict[str, str] = {
    "active": "bold green",
    "running": "bold green",
    "starting": "cyan",
    "resuming": "cyan",
    "paused": "yellow",
    "stopped": "dim",
    "ended": "dim",
    "terminated": "red",
}
WAITING_STYLE = "bold yellow"
STALE_STYLE = "bold dark_orange"
# CommonMark lets a backslash escape any ASCII punctuation character, and only those.
_MARKDOWN_PUNCTUATION = re.compile(r"[!-/:-@\[-`{-~]")


def plain(value: object, width: int | None = None) -> Text:
    """One line of store data, control characters made visible, cut to ``width``."""
    if value is None or value == "":
        return Text(NONE_SHOWN, style="dim")
    return Text(one_line(str(value), width))


def heading(
    before: str, session_id: str, after: str = "", *, note: str = "", width: int = 80
) -> Text:
    """A screen's or dialog's title naming a session: the id in bold (cut to ``width``) between
    ``before`` and ``after``, then a dimmed ``note``."""
    text = Text(before)
    text.append(one_line(session_id, width), style="bold")
    text.append(after)
    if note:
        text.append(note, style="dim")
    return text


def block(value: str | None) -> Text:
    """Multi-line store data (metadata, payloads): newlines kept, everything else visible."""
    return Text(printable(value, keep_newlines=True))


def pretty_json(raw: str) -> Text:
    """JSON text indented for reading (text that is not JSON is shown as it is)."""
    try:
        shown = json.dumps(json.loads(raw), indent=2, sort_keys=True, ensure_ascii=False)
    except (json.JSONDecodeError, TypeError, ValueError, RecursionError):
        shown = raw
    return block(shown)


def markdown_literal(value: str) -> str:
    """Store text for a Markdown source that renders exactly as written: every punctuation
    character escaped, so no emphasis, code, link, image, HTML, entity or heading can form from
    it; control characters made visible first."""
    return _MARKDOWN_PUNCTUATION.sub(lambda match: "\\" + match.group(), printable(value))


def masked(value: str | None, *, revealed: bool) -> Text:
    if not value:
        return Text(NONE_SHOWN, style="dim")
    if not revealed:
        return Text(MASK, style="dim italic")
    return Text(printable(value))


def status_text(session: SessionFields, now: datetime, stale_after: timedelta) -> Text:
    """Status as words and colour; a session waiting for a human is marked so, an active one
    not seen for too long is marked stale."""
    style = STATUS_STYLES.get(session.status, "magenta")
    text = Text()
    text.append(one_line(session.status, 20), style=style)
    if session.waiting is not None:
        text.append(" ⚑ waiting", style=WAITING_STYLE)
    elif session.is_stale(now, stale_after):
        text.append(" ⚠ stale", style=STALE_STYLE)
    return text


def relative_ts(text: str | None, now: datetime) -> Text:
    moment = parse_ts(text)
    if moment is None:
        return plain(text)
    return Text(relative(moment, now))


def exact_and_relative(text: str | None, now: datetime) -> Text:
    if not text:
        return Text(NONE_SHOWN, style="dim")
    moment = parse_ts(text)
    shown = Text(exact(text))
    if moment is not None:
        shown.append(f"  ({relative(moment, now)})", style="dim")
    return shown


def short_time(text: str | None) -> Text:
    """A compact start time for the list: ``09-17 17:26``."""
    moment = parse_ts(text)
    if moment is None:
        return plain(text, 16)
    return Text(moment.astimezone(UTC).strftime("%m-%d %H:%M"))
