"""The machines that run agents (``H``): each host, online or not, when it was last seen, the
agent CLIs it found, its sessions (active of all) and projects; read again whenever the store
changes. What a host says of itself is shown as text, never as markup."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static

from roundtable_console.screens.banner import StoreBanner
from roundtable_console.screens.context import ConsoleContext
from roundtable_console.screens.failures import Failure, ReportsFailures
from roundtable_console.screens.footer import ConsoleFooter
from roundtable_console.screens.live import StoreChanged
from roundtable_console.screens.text import plain
from roundtable_console.store.errors import DatabaseUnavailable
from roundtable_console.store.hosts.registry import HostRow

COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("name", "Host", 16),
    ("state", "State", 7),
    ("seen", "Last seen (UTC)", 16),
    ("sessions", "Sessions", 10),
    ("agents", "Agents", 28),
)


def read_hosts(ctx: ConsoleContext) -> list[HostRow]:
    """Every host, by name; runs in a thread."""
    from roundtable_console.store.hosts.registry import list_hosts

    if ctx.store is None:
        raise DatabaseUnavailable("The store is still opening; the hosts follow.")
    with ctx.store.read() as db:
        return list_hosts(db, clock=ctx.clock)


def state_of(host: HostRow) -> Text:
    return Text("online", style="bold green") if host.online else Text("offline", style="dim")


@dataclass(frozen=True)
class HostChosen:
    """The list is to show this host's sessions (None: every host's)."""

    name: str | None


class HostsScreen(ReportsFailures, Screen[HostChosen | None]):
    AUTO_FOCUS = "#hosts"
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("enter", "choose", "Its sessions", tooltip="The list shows this host's only"),
        Binding("a", "every_host", "All hosts", tooltip="The list shows every host's"),
        Binding("ctrl+r", "reload", "Refresh", show=False),
    ]

    def __init__(self, ctx: ConsoleContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.reading = False

    def compose(self) -> ComposeResult:
        yield Header()
        title = Text("Hosts", style="bold")
        title.append(" · the machines that run agents (roundtable host run)", style="dim")
        yield Static(title, id="hosts-title")
        yield StoreBanner()
        yield DataTable(id="hosts", cursor_type="row", zebra_stripes=True)
        yield Static(Text("Reading the hosts…"), id="hosts-status", classes="projection-note")
        yield ConsoleFooter()

    def on_mount(self) -> None:
        table: DataTable[Text] = self.query_one("#hosts", DataTable)
        for key, label, width in COLUMNS:
            table.add_column(Text(label), key=key, width=width)
        fixed = sum(width for _key, _label, width in COLUMNS) + 2 * (len(COLUMNS) + 1) + 2
        self.projects_width = max(self.app.size.width - fixed, 20)
        table.add_column(Text("Projects"), key="projects", width=self.projects_width)
        self.read()

    @on(StoreChanged)
    def _store_changed(self) -> None:
        self.read()

    def action_back(self) -> None:
        self.dismiss(None)

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_choose()

    def action_choose(self) -> None:
        table: DataTable[Text] = self.query_one("#hosts", DataTable)
        if table.row_count == 0:
            return
        row_key, _column = table.coordinate_to_cell_key(table.cursor_coordinate)
        if row_key.value is not None:
            self.dismiss(HostChosen(str(row_key.value)))

    def action_every_host(self) -> None:
        self.dismiss(HostChosen(None))

    def action_reload(self) -> None:
        self.read()

    def read(self) -> None:
        if self.reading:
            return
        self.reading = True
        self.run_in_thread(
            partial(read_hosts, self.ctx),
            what="read the hosts",
            group="hosts",
            done=self._hosts_read,
            failed=self._hosts_failed,
        )

    def _hosts_failed(self, failure: Failure) -> None:
        self.reading = False
        self.query_one(StoreBanner).show_failure(failure.text)

    def _hosts_read(self, hosts: list[HostRow]) -> None:
        self.reading = False
        self.query_one(StoreBanner).clear()
        table: DataTable[Text] = self.query_one("#hosts", DataTable)
        table.clear()
        for host in hosts:
            agents = ", ".join(
                f"{agent.name} {agent.version}" if agent.version else agent.name
                for agent in host.facts.agents
            )
            table.add_row(
                plain(host.name, 16),
                state_of(host),
                plain((host.last_seen_at or "").replace("T", " ")[:16], 16),
                plain(f"{host.active} of {host.sessions}", 10),
                plain(agents or "none found", 28),
                plain(", ".join(host.facts.projects), self.projects_width),
                key=host.name,
            )
        online = sum(1 for host in hosts if host.online)
        status = (
            f"{online} of {len(hosts)} online · sessions: active of all that name the host · "
            "enter: the list shows that host's · a: every host's"
            if hosts
            else "No host yet: run roundtable host run on each machine that runs agents "
            "(docs: Agents on several machines)."
        )
        self.query_one("#hosts-status", Static).update(Text(status))
