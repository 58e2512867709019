"""A new session on a host (``N``, issue 43 point 1): the host (among those online), a project
from those it was given, an agent from those it found, optionally a worktree of its own with a
branch (suggested from the prompt when left empty) and a base, the first prompt, how much the
agent asks, its model. ``ctrl+s`` (or Enter in a text field) starts it in a thread
(``store.hosts.new_work``, through the store or the server); a refusal is said in the dialog,
which stays open. Closes with where the session started."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Checkbox, Input, Label, Select, Static

from roundtable_console.screens.context import ConsoleContext
from roundtable_console.screens.failures import Failure, ReportsFailures
from roundtable_console.store.hosts.new_work import ASK_MODES, DEFAULT_ASK, new_work_of
from roundtable_console.store.hosts.registry import HostRow
from roundtable_console.store.safety.display import one_line

ASK_WORDS = {
    "always": "ALWAYS: before anything past reading",
    "edits": "EDITS: edits go ahead, commands ask",
    "agent": "AGENT: the agent decides alone",
}


def started_words(started: dict[str, Any]) -> str:
    where = one_line(str(started["directory"]), 80)
    branch = f" on branch {one_line(str(started['branch']), 60)}" if started.get("branch") else ""
    return (
        f"Started session {one_line(str(started['session_id']), 40)} on "
        f"{one_line(str(started['host']), 40)} in {where}{branch}: {started['attach']}"
    )


class NewSessionDialog(ReportsFailures, ModalScreen[dict[str, Any] | None]):
    AWAITS_ANSWER = True
    BINDINGS = [
        Binding("escape", "cancel", "Start nothing"),
        Binding("ctrl+s", "start", "Start"),
    ]

    def __init__(self, *, ctx: ConsoleContext, hosts: list[HostRow], host: str | None) -> None:
        super().__init__(classes="dialog-screen")
        self.ctx = ctx
        self.hosts = {row.name: row for row in hosts if row.online}
        self.first = host if host in self.hosts else next(iter(self.hosts), None)
        self.busy = False

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="new-session-dialog"):
            yield Static(Text("A new session"), classes="dialog-title")
            if not self.hosts:
                yield Static(Text("No host is online: run roundtable host run on a machine "
                                  "that runs agents."), classes="dialog-body")  # fmt: skip
                yield Static(Text("escape close"), classes="dialog-hint")
                return
            hosts = [(Text(name), name) for name in self.hosts]
            yield Label("Host")
            yield Select(hosts, value=self.first, allow_blank=False, id="new-host")
            yield Label("Project")
            yield Select([], id="new-project", prompt="A project the host was given")
            yield Label("Agent")
            yield Select([], id="new-agent", prompt="An agent the host found")
            yield Checkbox("In a worktree of its own", value=True, id="new-worktree")
            yield Input(placeholder="Branch (suggested from the prompt)", id="new-branch")
            yield Input(placeholder="Base (the project's HEAD)", id="new-base")
            yield Input(placeholder="The first prompt", id="new-prompt")
            yield Label("How much the agent asks")
            asks = [(Text(ASK_WORDS[mode]), mode) for mode in ASK_MODES]
            yield Select(asks, value=DEFAULT_ASK, allow_blank=False, id="new-ask")
            yield Input(placeholder="Model (the agent's default)", id="new-model")
            yield Static("", id="dialog-error", classes="dialog-error")
            yield Static(Text("ctrl+s start · escape start nothing"), classes="dialog-hint")

    def on_mount(self) -> None:
        for field in self.query(Input):
            field.cursor_blink = self.ctx.cursor_blink
        if self.hosts:
            self._host_options(self.first)
            self.query_one("#new-prompt", Input).focus()

    @on(Select.Changed, "#new-host")
    def _host_changed(self, event: Select.Changed) -> None:
        self._host_options(event.value if isinstance(event.value, str) else None)

    def _host_options(self, name: str | None) -> None:
        host = self.hosts.get(name or "")
        projects = list(host.facts.projects) if host else []
        agents = [agent.name for agent in host.facts.agents] if host else []
        project, agent = (
            self.query_one("#new-project", Select),
            self.query_one("#new-agent", Select),
        )
        project.set_options([(Text(path), path) for path in projects])
        agent.set_options([(Text(name), name) for name in agents])
        if projects:
            project.value = projects[0]
        if agents:
            agent.value = agents[0]

    @on(Checkbox.Changed, "#new-worktree")
    def _worktree_changed(self, event: Checkbox.Changed) -> None:
        for field in ("#new-branch", "#new-base"):
            self.query_one(field, Input).disabled = not event.value

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.action_start()

    def values(self) -> dict[str, Any]:
        def chosen(selector: str) -> Any:
            value = self.query_one(selector, Select).value
            return value if isinstance(value, str) else None

        worktree = self.query_one("#new-worktree", Checkbox).value
        text = {name: self.query_one(f"#new-{name}", Input).value.strip()
                for name in ("branch", "base", "prompt", "model")}  # fmt: skip
        return {
            "host": chosen("#new-host"), "project": chosen("#new-project"),
            "agent": chosen("#new-agent"), "ask": chosen("#new-ask"), "worktree": worktree,
            "branch": text["branch"] if worktree else None,
            "base": text["base"] if worktree else None,
            "prompt": text["prompt"], "model": text["model"] or None,
        }  # fmt: skip

    def action_start(self) -> None:
        if self.busy or not self.hosts:
            return
        values = self.values()
        self.busy = True
        self.query_one("#dialog-error", Static).update(Text("Starting…", style="italic"))
        self.run_in_thread(
            lambda: self.ctx.source.start_new(new_work_of(values)),
            what=f"start a session on {one_line(str(values['host']), 40)}",
            group="new-session",
            done=self.dismiss,
            failed=self.refused,
        )

    def refused(self, failure: Failure) -> None:
        self.busy = False
        self.query_one("#dialog-error", Static).update(Text(failure.text))

    def action_cancel(self) -> None:
        if not self.busy:
            self.dismiss(None)


def open_new_session(screen: Any, ctx: ConsoleContext, host: str | None = None) -> None:
    """``N``: the hosts read (in a thread), then the dialog; what it started, said."""

    def opened(hosts: list[HostRow]) -> None:
        dialog = NewSessionDialog(ctx=ctx, hosts=hosts, host=host)
        screen.app.push_screen(dialog, told)

    def told(started: dict[str, Any] | None) -> None:
        if started is not None:
            screen.notify(started_words(started), markup=False, timeout=15)

    screen.run_in_thread(
        ctx.source.list_hosts, what="read the hosts", group="new-session-hosts", done=opened
    )
