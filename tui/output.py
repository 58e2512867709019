"""How the CLI writes: aligned tables for a terminal, tab-separated lines for a pipe, JSON.

Standard library only (plus the tiny ``store.safety.display`` and ``store.safety.credentials``): the
agent-facing commands import this on every heartbeat. Every store value goes through ``cell`` /
``printable`` before it is written, so credentials are hidden and control characters are shown as
escapes, never reaching the terminal raw; JSON goes through ``redact_output_value``. Only
``roundtable export`` (the backup) writes the store raw, and not through here.
"""

from __future__ import annotations

import json
import sys
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import click

from roundtable_console.store.safety.credentials import REDACTED, hides_value, redact_output_value
from roundtable_console.store.safety.display import one_line, printable

COLUMN_GAP = "  "


def stdout_is_tty() -> bool:
    """Whether human output goes to a terminal (aligned, with a header) or a pipe (TSV)."""
    stream = sys.stdout
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def cell(value: Any) -> str:
    """One store value as one printable line: None is empty, objects are compact JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(redact_output_value(value), sort_keys=True, separators=(",", ":"))
    return one_line(str(value))


def display_width(text: str) -> int:
    """Terminal columns ``text`` takes: wide East Asian characters count twice."""
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(char) in ("W", "F") else 1 for char in text)


def _pad(text: str, width: int) -> str:
    return text + " " * max(width - display_width(text), 0)


def emit_json(value: Any, *, err: bool = False) -> None:
    """``value`` redacted for output, as one line of JSON."""
    # ensure_ascii keeps every control and format character escaped, on any terminal.
    click.echo(json.dumps(redact_output_value(value)), err=err)


def echo_text(text: str, *, err: bool = False) -> None:
    """Free text from the store (a briefing, a message): newlines kept, controls made visible."""
    click.echo(printable(text, keep_newlines=True), err=err)


class Table:
    """Rows written page by page, never collected.

    On a terminal: a header, and columns aligned to the widest value seen so far (a later page
    may widen a column). In a pipe: no header, one tab-separated line per row.
    """

    def __init__(self, headers: Sequence[str], *, tty: bool | None = None) -> None:
        self.headers = [header.upper() for header in headers]
        self.tty = stdout_is_tty() if tty is None else tty
        self.widths = [display_width(header) for header in self.headers]
        self.rows_written = 0

    def write(self, rows: Iterable[Sequence[Any]]) -> None:
        cells = [[cell(value) for value in row] for row in rows]
        if not cells:
            return
        if not self.tty:
            click.echo("".join("\t".join(row) + "\n" for row in cells), nl=False)
            self.rows_written += len(cells)
            return
        for row in cells:
            for index, text in enumerate(row):
                self.widths[index] = max(self.widths[index], display_width(text))
        lines = [self._line(self.headers)] if self.rows_written == 0 else []
        lines.extend(self._line(row) for row in cells)
        click.echo("\n".join(lines))
        self.rows_written += len(cells)

    def _line(self, row: Sequence[str]) -> str:
        last = len(row) - 1
        parts = [text if i == last else _pad(text, self.widths[i]) for i, text in enumerate(row)]
        return COLUMN_GAP.join(parts).rstrip()

    def finish(self, empty_message: str) -> None:
        """On a terminal, say so when nothing was listed; a pipe just gets no lines."""
        if self.rows_written == 0 and self.tty:
            click.echo(empty_message)


def flatten(record: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Nested objects as dotted keys (``usage.input_tokens``), in the record's order."""
    pairs: list[tuple[str, Any]] = []
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            pairs.extend(flatten(value, f"{name}."))
        else:
            pairs.append((name, value))
    return pairs


def write_record(pairs: Sequence[tuple[str, Any]], *, tty: bool | None = None) -> None:
    """One object as ``field  value`` lines (aligned on a terminal, tab-separated in a pipe); a
    value under a sensitive field name (``usage.api_key``) is hidden whole."""
    terminal = stdout_is_tty() if tty is None else tty
    shown = [
        (one_line(name), REDACTED if hides_value(name.rsplit(".", 1)[-1], value) else cell(value))
        for name, value in pairs
    ]
    if terminal:
        width = max((display_width(name) for name, _ in shown), default=0) + 1
        lines = [f"{_pad(name + ':', width)} {value}".rstrip() for name, value in shown]
    else:
        lines = [f"{name}\t{value}" for name, value in shown]
    if lines:
        click.echo("\n".join(lines))


def write_error(
    *, code: str, message: str, json_mode: bool, details: Mapping[str, Any] | None = None
) -> None:
    """The error as the last line of stderr: JSON in ``--json`` mode, ``error: …`` otherwise."""
    if json_mode:
        body: dict[str, Any] = {"code": code, "message": message}
        if details:
            body["details"] = dict(details)
        emit_json({"error": body}, err=True)
    else:
        click.echo(f"error: {one_line(message)}", err=True)
