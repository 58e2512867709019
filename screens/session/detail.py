"""One session: every field (sensitive ones masked), its metadata, and the six projections."""

from __future__ import annotations

from datetime import datetime
from functools import partial
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Header, Sparkline, Static, TabbedContent, TabPane

from roundtable_console.screens.banner import StoreBanner
from roundtable_console.screens.context import ConsoleContext
from roundtable_console.screens.failures import Failure
from roundtable_console.screens.footer import ConsoleFooter
from roundtable_console.screens.live import StoreChanged
from roundtable_console.screens.session.actions import SessionActionScreen
from roundtable_console.screens.session.changes import ChangesPane
from roundtable_console.screens.session.tabs import SPECS, TIME_KEYS
from roundtable_console.screens.session.transcript import TranscriptPane
from roundtable_console.screens.text import (
    NONE_SHOWN,
    exact,
    exact_and_relative,
    heading,
    masked,
    plain,
    pretty_json,
    status_text,
)
from roundtable_console.store.db.models import AgentSession
from roundtable_console.store.reads.overview import HOURS
from roundtable_console.store.reads.projections import PAGED, PROJECTIONS
from roundtable_console.store.resume.plan import resume_blocker
from roundtable_console.store.safety.credentials import redact_output_json_text
from roundtable_console.store.safety.display import one_line, printable

PROJECTION_PAGE = 50


def tab_id(name: str) -> str:
    return "tab-" + name


def pretty_metadata(raw: str | None) -> Text:
    """Metadata pretty-printed, secrets redacted; text that is not JSON is redacted as text."""
    if not raw:
        return Text("(no metadata)", style="dim")
    return pretty_json(redact_output_json_text(raw) or "")


def resumable(ctx: ConsoleContext, session: AgentSession) -> Text:
    """Whether a resume plan can be built; the reasons never quote the external id."""
    blocker = resume_blocker(session=session, adapters=ctx.adapters)
    if blocker is None:
        return Text("yes — the briefing (b) shows the command", style="green")
    return Text("no — " + one_line(blocker, 200))


def fields_table(ctx: ConsoleContext, session: AgentSession, *, revealed: bool) -> Table:
    now = ctx.now()
    table = Table(box=None, show_header=False, padding=(0, 2, 0, 0), expand=True)
    table.add_column("field", style="bold", no_wrap=True, width=20)
    table.add_column("value", overflow="fold", ratio=1)
    workspace = plain(session.effective_workspace_id)
    if session.effective_workspace_id and not session.workspace_id:
        workspace.append("  (from metadata)", style="dim")
    rows: list[tuple[str, Text]] = [
        ("Session id", plain(session.id)),
        ("Agent", plain(session.agent_id)),
        ("Host", plain(session.host)),
        ("Run", plain(session.run_id)),
        ("Workspace", workspace),
        ("Adapter", plain(session.adapter)),
        ("Provider", plain(session.provider)),
        ("Model", plain(session.model)),
        ("Status", status_text(session, now, ctx.stale_after)),
        ("Waiting for a human", waiting_text(session, now)),
        ("External session id", masked(session.external_session_id, revealed=revealed)),
        ("Resume command", masked(session.external_resume_command, revealed=revealed)),
        ("Resumable", resumable(ctx, session)),
        ("Working directory", plain(session.working_directory)),
        ("MCP socket", plain(session.mcp_socket)),
        ("Started", exact_and_relative(session.started_at, now)),
        ("Last seen", exact_and_relative(session.last_seen_at, now)),
        ("Ended", exact_and_relative(session.ended_at, now)),
        ("Version", Text(str(session.version))),
    ]
    for name, value in rows:
        table.add_row(Text(name), value)
    return table


def waiting_text(session: AgentSession, now: datetime) -> Text:
    """The reason an agent gave for waiting, and since when (its heartbeat's ``--waiting``);
    else the words its turn ended with (``--turn-done``)."""
    waiting = session.waiting
    if waiting is None:
        done = session.turn_done
        if done is None:
            return Text(NONE_SHOWN, style="dim")
        # Nobody is waited on, but the agent awaits a prompt: its turn's last words.
        text = Text("no — its turn is done, it awaits a prompt: ", style="green")
        text.append(printable(done))
        text.append("\n")
        text.append_text(exact_and_relative(session.last_seen_at, now))
        return text
    text = Text(printable(waiting.reason), style="bold yellow")
    text.append("\n")
    text.append_text(exact_and_relative(waiting.since, now))
    return text


def heartbeats_caption(beats: list[int] | None) -> Text:
    text = Text("Heartbeats per hour, last 24 h", style="bold underline")
    if beats is None:
        text.append(" · reading…", style="dim")
    elif not any(beats):
        text.append(" · none in the last 24 h", style="dim")
    else:
        total = sum(beats)
        text.append(
            f" · {total:,} beat{'s' if total != 1 else ''} · busiest hour {max(beats):,}",
            style="dim",
        )
    return text


def key_values(values: dict[str, Any]) -> Table:
    table = Table(box=None, show_header=False, padding=(0, 2, 0, 0))
    table.add_column("key", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    for key, value in values.items():
        table.add_row(plain(key), plain(value if not isinstance(value, float) else f"{value:g}"))
    return table


TAB_KEYS: tuple[tuple[str, str], ...] = tuple(
    zip(
        "123456789",
        ("session", *(spec.name for spec in SPECS), "transcript", "changes"),
        strict=True,
    )  # fmt: skip
)


class SessionDetailScreen(SessionActionScreen):
    # Tabs focused: left/right switch tabs at once; tab moves into the tab's content.
    AUTO_FOCUS = "#detail-tabs Tabs"
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("v", "reveal", "Reveal"),
        Binding("n", "next_page", "More"),
        *(Binding(key, f"show_tab('{name}')", show=False) for key, name in TAB_KEYS),
    ]

    def __init__(self, ctx: ConsoleContext, session_id: str) -> None:
        super().__init__(ctx)
        self.session_id = session_id
        self.session: AgentSession | None = None
        self.revealed = False
        self.next_cursors: dict[str, str | None] = {}
        self.loaded_tabs: set[str] = set()
        # One read of the session at a time, so each one's answer (or failure) is shown; a
        # request while one is out reads once more after it.
        self.reading = False
        self.read_again = False
        # The session's heartbeats per hour over the last day, once read.
        self.heartbeats: list[int] | None = None
        self.counting_beats = False
        self.count_beats_again = False
        # The session's last-seen time and the clock's hour the beats were last counted at.
        self.beats_read_at: tuple[str | None, datetime] | None = None
        # The row as the transcript of a session of another machine was last read at.
        self.transcript_read_at: tuple[int, str | None] | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(heading("Session ", self.session_id, note=" · loading…"), id="detail-summary")
        yield StoreBanner()
        with TabbedContent(id="detail-tabs", initial=tab_id("session")):
            with TabPane("Session", id=tab_id("session")), VerticalScroll():
                yield Static("", id="fields", classes="fields")
                yield Static(heartbeats_caption(None), id="heartbeats-caption", classes="fields")
                yield Sparkline([0] * HOURS, id="heartbeats", summary_function=max)
                yield Static(Text("Metadata", style="bold underline"), classes="fields")
                yield Static("", id="metadata", classes="metadata")
            for spec in SPECS:
                with TabPane(spec.title, id=tab_id(spec.name)):
                    if spec.columns:
                        table: DataTable[Text] = DataTable(
                            id=f"table-{spec.name}", cursor_type="row", classes="projection-table"
                        )
                        yield table
                        yield Static("", id=f"note-{spec.name}", classes="projection-note")
                    else:
                        with VerticalScroll():
                            yield Static("", id=f"note-{spec.name}", classes="projection-note")
            with TabPane("Transcript", id=tab_id("transcript")):
                yield TranscriptPane(id="transcript")
            with TabPane("Changes", id=tab_id("changes")):
                yield ChangesPane(id="changes")
        yield ConsoleFooter()

    def on_mount(self) -> None:
        for spec in SPECS:
            if spec.columns:
                table = self.query_one(f"#table-{spec.name}", DataTable)
                for key, label, width in spec.columns:
                    table.add_column(Text(label), key=key, width=width)
        self.refresh_timer = self.set_interval(self.ctx.refresh_seconds, self._load_session)
        self._load_session()

    @on(StoreChanged)
    def _store_changed(self) -> None:
        self._load_session()

    # -- the session ---------------------------------------------------------------------

    def selected_session(self) -> AgentSession | None:
        return self.session

    def known_sessions(self) -> list[AgentSession]:
        return []  # this session is already open

    def reload(self) -> None:
        self.beats_read_at = None
        self.transcript_read_at = None
        self._load_session()
        if self._changes_active():
            self.query_one(ChangesPane).load(self, 0)
        for name in list(self.loaded_tabs):
            self._load_projection(name, None, append=False)

    def _load_session(self) -> None:
        if self.reading:
            self.read_again = True
            return
        self.reading, self.read_again = True, False
        self.run_in_thread(
            partial(self.ctx.source.load_session, self.session_id),
            what=f"read session {one_line(self.session_id, 40)}",
            group="detail-session",
            done=self._session_loaded,
            failed=self._session_failed,
        )

    def _session_loaded(self, session: AgentSession) -> None:
        self.query_one(StoreBanner).clear()
        self.session_updated(session)
        self._session_read()
        # Counted again only when a beat or the hour may have moved them.
        moment = (session.last_seen_at, self.ctx.now().replace(minute=0, second=0, microsecond=0))
        if moment != self.beats_read_at:
            self.beats_read_at = moment
            self._load_heartbeats()
        if self._transcript_active() and self._transcript_moved(session):
            self._load_transcript(older=False)  # follows the transcript as it grows

    def _load_heartbeats(self) -> None:
        # One read at a time (a session beating every second has 86,400 beats a day to count);
        # a change meanwhile reads once more after it.
        if self.counting_beats:
            self.count_beats_again = True
            return
        self.counting_beats, self.count_beats_again = True, False
        self.run_in_thread(
            partial(self.ctx.source.session_heartbeats, self.session_id),
            what=f"read the heartbeats of {one_line(self.session_id, 40)}",
            group="detail-heartbeats",
            done=self._show_heartbeats,
            failed=self._heartbeats_failed,
        )

    def _heartbeats_counted(self) -> None:
        self.counting_beats = False
        if self.count_beats_again:
            self._load_heartbeats()

    def _heartbeats_failed(self, failure: Failure) -> None:
        caption = heartbeats_caption(self.heartbeats)
        caption.append(f" · {failure.sentence}", style="red")
        self.beats_read_at = None  # the next read of the session tries again
        self.query_one("#heartbeats-caption", Static).update(caption)
        self._heartbeats_counted()

    def _show_heartbeats(self, beats: list[int]) -> None:
        self.heartbeats = beats
        self.query_one("#heartbeats-caption", Static).update(heartbeats_caption(beats))
        self.query_one("#heartbeats", Sparkline).data = beats
        self._heartbeats_counted()

    def _session_failed(self, failure: Failure) -> None:
        retrying = failure.unexpected or failure.code == "database_unavailable"
        hint = f"Retrying every {self.ctx.refresh_seconds:g}s." if retrying else ""
        self.query_one(StoreBanner).show_failure(failure.text, hint=hint)
        self._session_read()

    def _session_read(self) -> None:
        self.reading = False
        if self.read_again:
            self._load_session()

    def session_updated(self, session: AgentSession) -> None:
        self.session = session
        self._render_session()
        self.refresh_bindings()

    def _render_session(self) -> None:
        session = self.session
        if session is None:
            return
        summary = Text("Session ")
        summary.append(one_line(session.id, 60), style="bold")
        summary.append(f" · agent {one_line(session.agent_id, 30)} · ")
        summary.append_text(status_text(session, self.ctx.now(), self.ctx.stale_after))
        summary.append(f" · version {session.version}", style="dim")
        self.query_one("#detail-summary", Static).update(summary)
        self.query_one("#fields", Static).update(
            fields_table(self.ctx, session, revealed=self.revealed)
        )
        self.query_one("#metadata", Static).update(pretty_metadata(session.metadata_json))

    def action_reveal(self) -> None:
        self.revealed = not self.revealed
        self._render_session()
        self.notify(
            "Sensitive fields revealed (v masks them again)."
            if self.revealed
            else "Sensitive fields masked.",
            markup=False,
        )

    def action_show_tab(self, name: str) -> None:
        self.query_one("#detail-tabs", TabbedContent).active = tab_id(name)

    def action_back(self) -> None:
        self.dismiss(None)

    # -- projections ---------------------------------------------------------------------

    @on(TabbedContent.TabActivated, "#detail-tabs")
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        name = (event.pane.id or "").removeprefix("tab-")
        if name in PROJECTIONS and name not in self.loaded_tabs:
            self.loaded_tabs.add(name)
            self._load_projection(name, None, append=False)
        if name == "transcript":
            self._load_transcript(older=False)
        if name == "changes":
            self.query_one(ChangesPane).load(self, 0)
        self.refresh_bindings()

    def _changes_active(self) -> bool:
        return self.query_one("#detail-tabs", TabbedContent).active == tab_id("changes")

    # -- the transcript ------------------------------------------------------------------

    def _transcript_active(self) -> bool:
        return self.query_one("#detail-tabs", TabbedContent).active == tab_id("transcript")

    def _transcript_moved(self, session: AgentSession) -> bool:
        """Whether to read the transcript again: a file here, at every look (it is cheap); one
        of another machine, asked of its host through the store (which is a change, and would
        make the next look), only when the session's row moved since the last read."""
        from roundtable_console.agents.operations import machine_name

        if not session.host or session.host == machine_name():
            return True
        moved = (session.version, session.last_seen_at)
        if moved == self.transcript_read_at:
            return False
        self.transcript_read_at = moved
        return True

    def _load_transcript(self, *, older: bool) -> None:
        session = self.session
        if session is None:
            return
        pane = self.query_one(TranscriptPane)
        if older and pane.before is None:
            return
        self.run_in_thread(
            partial(self.ctx.source.read_transcript, session, pane.before if older else None),
            what=f"read the transcript of {one_line(self.session_id, 40)}",
            group="transcript-older" if older else "transcript",
            done=lambda result: (pane.show(result, older=older), self.refresh_bindings()),
        )

    def active_projection(self) -> str | None:
        active = self.query_one("#detail-tabs", TabbedContent).active.removeprefix("tab-")
        return active if active in PROJECTIONS else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "reveal":
            session = self.session
            return session is not None and bool(
                session.external_session_id or session.external_resume_command
            )
        if action == "next_page":
            if self._changes_active():
                return self.query_one(ChangesPane).next_offset is not None
            if self._transcript_active():
                return self.query_one(TranscriptPane).before is not None
            name = self.active_projection()
            return name in PAGED and bool(self.next_cursors.get(name))
        return super().check_action(action, parameters)

    def action_next_page(self) -> None:
        following = self.query_one(ChangesPane).next_offset
        if self._changes_active() and following is not None:
            self.query_one(ChangesPane).load(self, following)
            return
        if self._transcript_active():
            self._load_transcript(older=True)
            return
        name = self.active_projection()
        if name is not None and self.next_cursors.get(name):
            self._load_projection(name, self.next_cursors[name], append=True)

    def _load_projection(self, name: str, cursor: str | None, *, append: bool) -> None:
        self.run_in_thread(
            partial(self._read_projection, name, cursor),
            what=f"read the {name} of {one_line(self.session_id, 40)}",
            group=f"projection-{name}",
            done=partial(self._projection_loaded, name, append),
            failed=partial(self._projection_failed, name),
        )

    def _read_projection(self, name: str, cursor: str | None) -> Any:
        return self.ctx.source.read_projection(name, self.session_id, PROJECTION_PAGE, cursor)

    def _projection_failed(self, name: str, failure: Failure) -> None:
        note = Text(failure.sentence)
        note.append(" — ctrl+r retries", style="dim")
        self.query_one(f"#note-{name}", Static).update(note)

    def _projection_loaded(self, name: str, append: bool, body: Any) -> None:
        if name in PAGED:
            self._show_page(name, body.items, body.next_cursor, append=append)
        elif name == "metrics":
            self._show_metrics(body)
        else:
            self._show_environment(body)
        self.refresh_bindings()

    def _show_page(
        self, name: str, items: list[dict[str, Any]], next_cursor: str | None, *, append: bool
    ) -> None:
        spec = next(s for s in SPECS if s.name == name)
        table = self.query_one(f"#table-{name}", DataTable)
        if not append:
            table.clear()
        for item in items:
            table.add_row(*(self._cell(item, key, width) for key, _label, width in spec.columns))
        self.next_cursors[name] = next_cursor
        count = table.row_count
        note = Text(f"{count} row{'s' if count != 1 else ''}")
        if not count:
            note = Text(f"No {spec.title.lower()} for this session.")
        if next_cursor:
            note.append(" · n reads the next page", style="bold")
        self.query_one(f"#note-{name}", Static).update(note)

    @staticmethod
    def _cell(item: dict[str, Any], key: str, width: int | None) -> Text:
        value = item.get(key)
        if key in TIME_KEYS and value:
            return Text(exact(str(value)))
        return plain(value, width or 200)

    def _show_metrics(self, body: dict[str, Any]) -> None:
        usage = body.get("usage") or {}
        note = self.query_one("#note-metrics", Static)
        if not usage:
            note.update(Text("No usage metrics in this session's metadata (metadata.usage)."))
            return
        source = Text(f"source: {one_line(str(body.get('source', '')), 60)}", style="dim")
        cost = body.get("cost")  # what cost_usd is: the agent's, an estimate, or unknown
        said = [Text(f"cost: {one_line(str(cost), 300)}", style="dim")] if cost else []
        note.update(Group(key_values(usage), *said, Text(""), source))

    def _show_environment(self, body: dict[str, Any]) -> None:
        fingerprint = dict(body.get("fingerprint") or {})
        note = Text(one_line(str(body.get("note", "")), 400), style="dim")
        self.query_one("#note-environment", Static).update(
            Group(key_values(fingerprint), Text(""), note)
        )
