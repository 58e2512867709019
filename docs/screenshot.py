"""Regenerate the README's screenshot, ``docs/console.svg``: the demo console at 120x40, as the
app itself exports it (``App.export_screenshot``).

    python docs/screenshot.py [--output docs/console.svg]

The demo store is seeded in a temporary directory with a fixed clock, and the console runs on the
same clock, so the picture changes only when the console does.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from roundtable_console.store.clock import fixed_clock
from roundtable_console.store.db.database import open_store
from roundtable_console.store.writes.demo import seed_demo
from roundtable_console.tui.app import build_app
from roundtable_console.tui.config import Settings, sqlite_url

SIZE = (120, 40)
MOMENT = datetime(2026, 9, 17, 17, 26, 35, tzinfo=UTC)
OUTPUT = Path(__file__).with_name("console.svg")


async def screenshot(directory: Path) -> str:
    url = sqlite_url(directory / "demo.db")
    clock = fixed_clock(MOMENT)
    store = open_store(url)
    with store.write() as db:
        seed_demo(db=db, clock=clock, agent_home=directory / "demo-agents")
    app = build_app(
        url=url, settings=Settings(), operator="olivia", adapters={}, clock=clock, demo=True,
        store=store,
    )  # fmt: skip
    app.ctx.cursor_blink = False
    app.ctx.description = "demo.db"
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(6):  # the store opens, the list reads, the counts follow
            await pilot.pause()
            await app.workers.wait_for_complete()
        app.clear_notifications()
        await pilot.pause()
        return app.export_screenshot(title="roundtable tui --demo")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=OUTPUT)
    output = parser.parse_args().output
    with tempfile.TemporaryDirectory() as directory:
        svg = asyncio.run(screenshot(Path(directory)))
    output.write_text(svg, encoding="utf-8")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
