"""Server-sent events read from a stream's text: the server's stream of changes
(``tui.server_watch``), and a run on many sessions with its progress (``client.console_source``)."""

from __future__ import annotations

from collections.abc import Iterator

# The longest line of the stream taken (a change is well under a kilobyte).
MAX_LINE = 256 * 1024


def capped_lines(chunks: Iterator[str]) -> Iterator[str]:
    """The stream's lines; a line longer than ``MAX_LINE`` is not the server's (ValueError)."""
    pending = ""
    for chunk in chunks:
        pending += chunk
        *lines, pending = pending.split("\n")
        yield from (line.removesuffix("\r") for line in lines)
        if len(pending) > MAX_LINE:
            raise ValueError("a line of the stream is too long")


def events_of(lines: Iterator[str]) -> Iterator[tuple[str, str, str | None]]:
    """Server-sent events as (event, data, id) from a stream's lines."""
    event, data, ident = "message", [], None
    for line in lines:
        if not line:
            if data or event != "message":
                yield event, "\n".join(data), ident
            event, data, ident = "message", [], None
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
        elif name == "id":
            ident = value
