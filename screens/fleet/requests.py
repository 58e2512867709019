"""Every pending permission request across the fleet (``P``), oldest first: the longest-waiting
agent at the top. ``y`` allows and ``n`` denies the highlighted one after showing it in full
(``screens.dialogs.request``); read again whenever the store changes. Store text shown as text."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding

from roundtable_console.screens.dialogs.request import RequestDialog, said
from roundtable_console.screens.fleet.table import FleetTable
from roundtable_console.screens.text import plain
from roundtable_console.store.requests.records import PermissionRequestRecord


class RequestsScreen(FleetTable[None]):
    NAME = "requests"
    TITLE_TEXT = "Permission requests"
    SUBTITLE = "pending across the fleet, the longest-waiting first"
    COLUMNS = (
        ("asked", "Asked (UTC)", 19),
        ("session", "Session", 24),
        ("agent", "Agent", 11),
        ("answers", "Answer here", 11),
    )
    REST = ("asks", "Asks")
    AUTO_FOCUS = "#requests"
    BINDINGS = [
        Binding("y", "answer(False)", "Allow…"),
        Binding("n", "answer(True)", "Deny…"),
        Binding("enter", "answer(False)", "Show", show=False),
    ]

    records: dict[str, PermissionRequestRecord]
    loaded = False

    def fetch(self) -> list[PermissionRequestRecord]:
        return self.ctx.source.pending_requests(None)

    def show(self, rows: list[PermissionRequestRecord]) -> Text:
        self.loaded = True
        table = self.table
        highlighted = self.highlighted_key()
        table.clear()
        self.records = {record.id: record for record in rows}
        for record in rows:
            table.add_row(
                plain(record.asked_at.replace("T", " ")[:19], 19),
                plain(record.session_id, 24),
                plain(record.agent, 11),
                plain("/".join(record.answers) or "terminal", 11),
                plain(record.reason, self.rest_width),
                key=record.id,
            )
        if highlighted in self.records:
            table.move_cursor(row=table.get_row_index(highlighted))
        return Text(
            f"{len(rows)} pending · y allow · n deny · enter show in full"
            if rows
            else "No pending permission request: every agent that asks shows here."
        )

    def action_answer(self, deny_first: bool) -> None:
        record = getattr(self, "records", {}).get(self.highlighted_key() or "")
        if record is None:
            return
        dialog = RequestDialog(ctx=self.ctx, record=record, deny_first=deny_first)
        self.app.push_screen(dialog, self._request_answered)

    def _request_answered(self, record: PermissionRequestRecord | None) -> None:
        if record is not None:
            self.notify(said(record), title="Permission request", markup=False)
        self.read()
