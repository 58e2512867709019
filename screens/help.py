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
            ("/", "filter by text (id, agent, host, run, adapter, model, status, workspace)"),
            ("f", "cycle the status filter"),
            ("a", "show or hide ended sessions (stopped, ended, terminated, …)"),
            ("S", "show only stale sessions (active, not seen for too long)"),
            (
                "o / d",
                "sort by the next column (attention, started, seen, status, agent) / flip its "
                "direction",
            ),
            (
                "g",
                "group by workspace, run, agent, then none: a header row leads each group with "
                "its counts by status; sessions in start order within it (d flips; o leaves the "
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
            (
                "O",
                "the fleet at a glance: sessions by status, who needs a human and why, tokens "
                "and cost by agent and run, sessions started per hour (escape goes back)",
            ),
        ),
    ),
    (
        "Session list and detail",
        (
            ("h", "heartbeat as the operator (active sessions)"),
            ("p", "pause (active, not already paused)"),
            ("s", "stop — asks y/n first (active sessions)"),
            ("r", "resume — asks y/n first (paused, stopped or ended sessions)"),
            ("t", "terminate — shows the agent's claims and asks for the impact"),
            (
                "y / n",
                "the session's pending permission request: shown in full, then y allows and n "
                "denies (with a message for the agent); in the detail, y shows it (n: next page)",
            ),
            (
                "m",
                "reply to an agent that waits for a prompt: through its hook when one listens "
                "(Claude Code's Stop hook, hooks install --reply-wait), else typed into the tmux "
                "pane it was started in; says why when neither can carry it",
            ),
            ("l", "the session's history, following new events"),
            ("b", "the resume briefing and resume plan"),
            (
                "R",
                "resume and launch: shows the agent's argv, directory and where it runs; y "
                "resumes the session, then starts the agent (a new tmux window inside tmux, "
                "else here, the console suspended until it exits); a session of another "
                "machine is started there by its host",
            ),
            (
                "X",
                "stop the agent's process (asks first): SIGINT, then SIGTERM, where R or its "
                "host started it",
            ),
            (
                "F",
                "finish a session N started in a worktree (asks first): its host removes the "
                "worktree, keeps the branch; what is not committed is named before it is lost",
            ),
        ),
    ),
    (
        "Session detail",
        (
            ("v", "reveal or mask the external session id and resume command"),
            (
                "← → or 1…9",
                "switch tabs: session, logs, tool calls, claims, proposals, metrics, environment, "
                "transcript (what the agent is doing, from its own transcript), changes (what it "
                "changed, read by its host)",
            ),
            ("tab / shift+tab", "move between the tab bar and the tab's content"),
            (
                "n",
                "read the next page of the current tab (older entries of the transcript, "
                "the patch's next page)",
            ),
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
            ("R", "resume and launch the session's agent (asks first)"),
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
            (
                "A",
                "the audit trail: every operator's actions on any session, newest first "
                "(n reads more, escape goes back)",
            ),
            (
                "P",
                "pending permission requests across the fleet, the longest-waiting first (y "
                "allow, n deny, 1…9 with an allow: the agent's own suggestion, not asked again)",
            ),
            (
                "H",
                "the hosts: each machine that runs agents, online or not, its agents, sessions "
                "and projects (enter: the list shows that host's sessions; a: every host's; N: a "
                "new session on it)",
            ),
            (
                "N",
                "a new session on a host: a project it was given, an agent it found, a worktree "
                "and branch of its own, the first prompt, how much the agent asks",
            ),
            ("ctrl+p", "command palette: actions for the selected session, open a session, theme"),
            ("j", "after a notification of a session needing attention: jump to it"),
            ("?", "this help"),
            ("q", "quit"),
        ),
    ),
)

ABOUT = (
    "Status is shown as words and colour; ⚠ stale marks an active session not seen for longer "
    "than stale_after_seconds. Actions record your operator name; only R starts a process (the "
    "agent, never through a shell), and none kills one. A refused action says why; if the "
    "session changed since you looked, nothing is done and the row is reloaded."
)


# What a read-only console does not offer: the lifecycle keys, marks, bulk runs and dialogs.
READ_ONLY_LEFT_OUT = frozenset(
    {
        "space",
        "*",
        "* on a group",
        "u",
        "h p s r t",
        "h",
        "p",
        "s",
        "r",
        "t",
        "R",
        "X",
        "F",
        "N",
        "y / n",
        "ctrl+s",
    }
)
# Rows whose words speak of what a read-only console does not do.
READ_ONLY_WORDS = {("Session list", "escape"): ("escape", "clear and close the text filter")}
READ_ONLY_NOTE = (
    "Read-only: this console reads the store and changes nothing. It offers no heartbeat, "
    "pause, stop, resume or terminate, and no marks; open it without --read-only to act."
)


def shown_keys(*, read_only: bool) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    """The sections and their keys, without what a read-only console does not offer."""
    if not read_only:
        return KEYS
    sections = []
    for section, rows in KEYS:
        kept = tuple(
            READ_ONLY_WORDS.get((section, key), (key, does))
            for key, does in rows
            if key not in READ_ONLY_LEFT_OUT
        )
        kept = tuple(row for row in kept if not (section == "Dialogs" and row[0] == "escape"))
        if kept:
            sections.append((section, kept))
    return tuple(sections)


def keys_table(rows: tuple[tuple[str, str], ...]) -> Table:
    table = Table(box=None, show_header=False, padding=(0, 2, 0, 0), expand=False)
    table.add_column("key", style="bold", no_wrap=True, min_width=16)
    table.add_column("does")
    for key, does in rows:
        table.add_row(Text(key), Text(does))
    return table


def help_body(*, read_only: bool = False) -> Group:
    parts: list[Text | Table] = []
    if read_only:
        parts += [Text(READ_ONLY_NOTE, style="bold"), Text("")]
    for section, rows in shown_keys(read_only=read_only):
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

    def __init__(self, *, read_only: bool = False) -> None:
        super().__init__()
        self.read_only = read_only

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(Text("Roundtable console — keys", style="bold"), classes="dialog-title")
            yield Static(help_body(read_only=self.read_only), id="help-body")
            yield Static(Text("escape, ? or q closes this help"), classes="dialog-hint")

    def action_close(self) -> None:
        self.dismiss(None)
