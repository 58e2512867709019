"""Every key of the console, by where it works."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    (
        "Session list",
        (
            ("enter", "open the selected session's detail (or double-click a row)"),
            ("↑ ↓ pgup pgdn", "move; the scrollbar is your place in the whole list (drag it)"),
            ("home / end", "the first / the last session of the whole list"),
            ("click", "select a row; a click on a header sorts by that column"),
            ("/", "filter by text (id, agent, run, adapter, model, status, workspace)"),
            ("f", "cycle the status filter"),
            ("a", "show or hide ended sessions (stopped, ended, terminated, …)"),
            ("S", "show only stale sessions (active, not seen for too long)"),
            (
                "o / O",
                "sort by the next column (attention, started, seen, status, agent) / flip it",
            ),
            (
                "g",
                "group by workspace, run, agent, then none: a header row leads each group with "
                "its counts by status; sessions in start order within it (O flips; o leaves the "
                "grouping for the next sort)",
            ),
            ("enter on a group", "fold or unfold the group (its header stays, with its counts)"),
            ("space", "mark or unmark the selected session (● in the first column)"),
            ("*", "mark every session matching the filters in force, on screen or not"),
            ("* on a group", "mark every session of that group matching the filters in force"),
            ("u", "clear every mark (the header counts the marked sessions)"),
            (
                "h p s r t",
                "with marks, act on every marked session (footer: Pause ●12): a preview says "
                "how many, which it skips and why; y runs it, the list stays usable. Done ones "
                "are unmarked; skipped and failed ones stay marked",
            ),
            ("escape", "clear and close the text filter; else cancel a bulk run between batches"),
        ),
    ),
    (
        "Session list and detail",
        (
            ("h", "heartbeat as the operator (active sessions)"),
            ("p", "pause (active, not already paused)"),
            ("s", "stop — asks y/n first (active sessions)"),
            ("r", "resume — asks y/n first (paused or stopped sessions)"),
            ("t", "terminate — shows the agent's claims and asks for the impact"),
            ("l", "the session's history, following new events"),
            ("b", "the resume briefing and resume plan"),
        ),
    ),
    (
        "Session detail",
        (
            ("v", "reveal or mask the external session id and resume command"),
            (
                "← → or 1…7",
                "switch tabs: session, logs, tool calls, claims, proposals, metrics, environment",
            ),
            ("tab / shift+tab", "move between the tab bar and the tab's content"),
            ("n", "read the next page of the current tab"),
            ("escape", "back to the list"),
        ),
    ),
    (
        "Session log",
        (
            ("F", "stop or resume following new events"),
            ("escape", "back"),
        ),
    ),
    (
        "Briefing",
        (
            ("c", "copy the briefing (through the terminal's clipboard, OSC 52)"),
            ("w", "write the briefing to a new file and say where"),
            ("v", "reveal or mask the external session id in the resume plan"),
            ("escape", "back"),
        ),
    ),
    (
        "Dialogs",
        (
            ("y / n", "answer a confirmation or a preview (escape also cancels; q does not quit)"),
            ("ctrl+s", "terminate with the impact text you typed (one session or the marked)"),
            ("escape", "cancel the terminate dialog"),
        ),
    ),
    (
        "Everywhere",
        (
            ("ctrl+r", "refresh now (the list also refreshes by itself)"),
            ("ctrl+p", "command palette: actions for the selected session, open a session, theme"),
            ("j", "after a notification of a session needing attention: jump to it"),
            ("?", "this help"),
            ("q", "quit"),
        ),
    ),
)

ABOUT = (
    "Status is shown as words and colour; ⚠ stale marks an active session not seen for longer "
    "than stale_after_seconds. Actions record your operator name; none of them starts or kills "
    "a process. A refused action says why; if the session changed since you looked, nothing is "
    "done and the row is reloaded."
)


def keys_table(rows: tuple[tuple[str, str], ...]) -> Table:
    table = Table(box=None, show_header=False, padding=(0, 2, 0, 0), expand=False)
    table.add_column("key", style="bold", no_wrap=True, min_width=16)
    table.add_column("does")
    for key, does in rows:
        table.add_row(Text(key), Text(does))
    return table


def help_body() -> Group:
    parts: list[Text | Table] = []
    for section, rows in KEYS:
        parts.append(Text(section, style="bold underline"))
        parts.append(keys_table(rows))
        parts.append(Text(""))
    parts.append(Text(ABOUT, style="dim"))
    return Group(*parts)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape", "close", "Back"),
        Binding("question_mark", "close", "Back", show=False),
        Binding("q", "close", "Back", show=False),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(Text("Roundtable console — keys", style="bold"), classes="dialog-title")
            yield Static(help_body(), id="help-body")
            yield Static(Text("escape, ? or q closes this help"), classes="dialog-hint")

    def action_close(self) -> None:
        self.dismiss(None)
