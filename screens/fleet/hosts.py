"""The machines that run agents (``H``): each host, online or not, when it was last seen, the
agent CLIs it found, its sessions (active of all) and projects; read again whenever the store
changes, and every few seconds. ``enter`` shows the list that host's sessions only, ``a`` every
host's again. What a host says of itself is shown as text, never as markup."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.binding import Binding
from textual.widgets import DataTable

from roundtable_console.screens.fleet.table import FleetTable
from roundtable_console.screens.text import plain
from roundtable_console.store.hosts.registry import HostRow


@dataclass(frozen=True)
class HostChosen:
    """The list is to show this host's sessions (None: every host's)."""

    name: str | None


def state_of(host: HostRow) -> Text:
    return Text("online", style="bold green") if host.online else Text("offline", style="dim")


class HostsScreen(FleetTable[HostChosen | None]):
    NAME = "hosts"
    TITLE_TEXT = "Hosts"
    SUBTITLE = "the machines that run agents (roundtable host run)"
    COLUMNS = (
        ("name", "Host", 16),
        ("state", "State", 7),
        ("seen", "Last seen (UTC)", 16),
        ("sessions", "Sessions", 10),
        ("agents", "Agents", 28),
    )
    REST = ("projects", "Projects")
    # A host goes offline by the clock alone (not seen for ONLINE_SECONDS), and a host's own
    # word is not a session's change, which alone wakes a console through a server or on
    # PostgreSQL: read again every few seconds while shown.
    READ_EVERY = 5.0
    AUTO_FOCUS = "#hosts"
    BINDINGS = [
        Binding("enter", "choose", "Its sessions", tooltip="The list shows this host's only"),
        Binding("a", "every_host", "All hosts", tooltip="The list shows every host's"),
        Binding("N", "new_session", "New session", tooltip="Start a session on this host"),
    ]

    def fetch(self) -> list[HostRow]:
        return self.ctx.source.list_hosts()

    def show(self, rows: list[HostRow]) -> Text:
        table = self.table
        table.clear()
        for host in rows:
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
                plain(", ".join(host.facts.projects), self.rest_width),
                key=host.name,
            )
        online = sum(1 for host in rows if host.online)
        return Text(
            f"{online} of {len(rows)} online · sessions: active of all that name the host · "
            "enter: the list shows that host's · a: every host's"
            if rows
            else "No host yet: run roundtable host run on each machine that runs agents "
            "(docs: Agents on several machines)."
        )

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_choose()

    def action_choose(self) -> None:
        name = self.highlighted_key()
        if name is not None:
            self.dismiss(HostChosen(name))

    def action_every_host(self) -> None:
        self.dismiss(HostChosen(None))

    def action_new_session(self) -> None:
        from roundtable_console.screens.dialogs.new_session import open_new_session

        open_new_session(self, self.ctx, self.highlighted_key())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "new_session":
            return not self.ctx.read_only
        return super().check_action(action, parameters)
