"""The session's Transcript tab: what the agent is doing, from its own transcript's end
(``agents.transcripts``), following it as it grows; ``n`` reads older entries. A session of
another machine whose host is online is read through that host, by way of the store and the
server (or host) holding it. Every entry is literal text (redacted and printable where it was
read, and again as a host's page is taken in): nothing in it is markup."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from roundtable_console.agents.panes import read_activity
from roundtable_console.agents.transcripts import CONSOLE_PAGE, Entry, Page, TranscriptUnavailable
from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import StoreError
from roundtable_console.store.hosts import calls, protocol
from roundtable_console.store.reads.launches import last_launch
from roundtable_console.store.records import SessionFields
from roundtable_console.store.safety.display import one_line, printable

LABELS = {
    "prompt": ("you   › ", "bold cyan"),
    "agent": ("agent › ", "bold green"),
    "tool": ("tool  › ", "bold yellow"),
    "result": ("      ⤷ ", "dim"),
    "note": ("      · ", "dim italic"),
    "pane": ("", ""),
}


HOST_SECONDS = 10.0  # a page asked of a host through the store comes within this, or is said


def read_transcript(store: Store, session: SessionFields, before: int | None) -> Page | str:
    """A page of the transcript, else the pane the agent was started in (in a worker: it reads
    a file, the store, or tmux), or why there is neither."""
    from roundtable_console.agents.operations import machine_name
    from roundtable_console.store.hosts.registry import elsewhere_words, runs_elsewhere

    with store.read() as db:
        launch = last_launch(db, session.id)
        host = runs_elsewhere(db, session, machine_name())
    if host is not None:  # on another machine: never what a file here says
        if host.online:
            return _through_host(store, session, launch, host.name, before)
        return elsewhere_words(session.id, host)
    try:
        return read_activity(session, launch, before=before, limit=CONSOLE_PAGE)
    except TranscriptUnavailable as unavailable:
        return str(unavailable)


def _through_host(
    store: Store, session: SessionFields, launch: Any, host: str, before: int | None
) -> Page | str:
    """The page asked of the session's host through the store: the server (or, on PostgreSQL,
    the host itself) that holds it answers (``store.hosts.calls``)."""
    args = protocol.activity_args(session, launch, before=before, limit=CONSOLE_PAGE)
    try:
        answer = calls.ask_and_wait(store, host, protocol.ACTIVITY, args, seconds=HOST_SECONDS)
    except StoreError as error:  # a read-only console, a viewer's database role: it cannot ask
        return (
            f"The session runs on {printable(host)}: its transcript is read through its host, "
            f"by a call this console could not write ({one_line(error.message, 200)})."
        )
    try:
        body = protocol.outcome_of(host, answer)
    except (protocol.HostRefused, protocol.HostUnreachable) as why:
        return str(why)
    try:
        return Page.from_json(body)
    except ValueError:
        return f"The host {printable(host)} answered with something that is not a page."


def entries_text(entries: list[Entry]) -> Text:
    text = Text()
    for index, entry in enumerate(entries):
        label, style = LABELS.get(entry.kind, LABELS["note"])
        if index:
            text.append("\n")
        text.append(label, style=style)
        body = Text(entry.text.replace("\n", "\n        "))
        if entry.kind == "result":
            body.stylize("dim")
        text.append_text(body)
    return text


class TranscriptPane(VerticalScroll):
    """The entries read so far (the newest page, and older ones ``n`` added) and a note."""

    DEFAULT_CSS = """
    TranscriptPane > #transcript-note { color: $text-muted; }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id)
        self.older: list[Entry] = []  # read with n, before the newest page
        self.newest: list[Entry] = []
        self.before: int | None = None  # where the oldest shown page began
        self.paged_back = False

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static("", id="transcript-entries")
        yield Static("", id="transcript-note")

    def show(self, result: Page | str, *, older: bool) -> None:
        note = self.query_one("#transcript-note", Static)
        if isinstance(result, str):
            self.older, self.newest, self.before = [], [], None
            self.query_one("#transcript-entries", Static).update("")
            note.update(Text(result))
            return
        at_end = self.scroll_y >= self.max_scroll_y
        if older:
            self.older = result.entries + self.older
            self.paged_back = True
        else:
            self.newest = result.entries
        if older or not self.paged_back:
            self.before = result.before
        entries = self.older + self.newest
        self.query_one("#transcript-entries", Static).update(entries_text(entries))
        from_pane = bool(entries) and entries[0].kind == "pane"
        words = Text(
            "The tmux pane the agent was started in, its last lines"
            if from_pane
            else f"{len(entries)} entries from the agent's transcript, newest last"
        )
        if self.before is not None:
            words.append(" · n reads older entries", style="bold")
        if not entries:
            words = Text("The transcript holds no conversation yet.")
        note.update(words)
        if at_end and not older:
            self.call_after_refresh(self.scroll_end, animate=False)
