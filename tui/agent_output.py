"""What the agent's commands (register, heartbeat, end) print of the session they wrote: its
JSON, or one row of text. ``tui.cli`` and the quick path (``tui.quick_cli``) both print here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from roundtable_console.tui import output

# The headers and cells of each agent command's one row of text.
ROWS: dict[str, tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]]]] = {
    "register": (
        ("id", "status", "agent", "run", "adapter"),
        lambda s: (s.id, s.status, s.agent_id, s.run_id, s.adapter),
    ),
    "heartbeat": (("id", "status", "last seen"), lambda s: (s.id, s.status, s.last_seen_at)),
    "end": (("id", "status", "ended"), lambda s: (s.id, s.status, s.ended_at)),
}


def print_session(name: str, session: Any, *, json_mode: bool) -> None:
    """What an agent command prints of the session it wrote: its JSON, or one row of text."""
    if json_mode:
        output.emit_json(session.to_json())
        return
    headers, cells = ROWS[name]
    output.Table(headers).write([cells(session)])
