"""One process: start an app headless at 120×40, exit as soon as its first data row is on screen.

`bare` is the floor: a Header, a DataTable of 60 rows and a Footer. `console URL` is the real
console on that store. The parent (bench.py) times the whole process, imports included.
"""

from __future__ import annotations

import asyncio
import sys

from textual.app import App, ComposeResult
from textual.css.query import NoMatches
from textual.pilot import Pilot
from textual.widgets import DataTable, Footer, Header

SIZE = (120, 40)


class BareApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Header()
        yield DataTable(id="table")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("id", "agent", "status")
        table.add_rows((f"sess-{n}", "agent", "active") for n in range(60))
        self.call_after_refresh(self.exit)


def run_console(url: str) -> None:
    from tui.app import build_app
    from tui.config import Settings

    app = build_app(url=url, settings=Settings(), operator="bench", adapters={})

    async def wait_for_rows(pilot: Pilot[None]) -> None:
        while True:
            try:
                if app.screen.query_one("#sessions", DataTable).row_count:
                    break
            except NoMatches:  # the list screen is not mounted yet
                pass
            await asyncio.sleep(0.002)
        await pilot.pause()
        app.exit()

    app.run(headless=True, size=SIZE, auto_pilot=wait_for_rows)


if __name__ == "__main__":
    if sys.argv[1] == "bare":
        BareApp().run(headless=True, size=SIZE)
    else:
        run_console(sys.argv[2])
