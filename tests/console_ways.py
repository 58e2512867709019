"""The console's two ways in (issue 42): on the store itself, and through a real ``roundtable
serve`` with a person's token. ``ConsoleWay.console`` builds the app either way from the same
arguments, so a test of the console runs unchanged through both (the ``way`` fixture,
``tests/conftest.py``): what it asserts on the screen and in the store holds on each.

Through the server, the server's clock judges staleness, ages and expiries, and its configuration
holds the adapters (the resume plans are the server's). A test makes its records at
``way.moment`` (the frozen time on the store, now through a server), so that each console's
clock judges them alike; a test that needs the clock moved stays on the store."""

from __future__ import annotations

import json
import tomllib
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from roundtable_console.store.access.tokens import create_token
from roundtable_console.store.budgets.limits import configured_budgets
from roundtable_console.store.db.database import Store, open_store
from roundtable_console.store.resume.adapters import AdapterConfig
from roundtable_console.tui.app import build_app
from roundtable_console.tui.config import Settings
from roundtable_console.tui.console_app import RoundtableApp
from roundtable_console.tui.console_link import open_link
from tests.serve_support import Served, serving
from tests.test_tui_support import FROZEN, OPERATOR, console

WAYS = ("store", "server")


@dataclass
class ConsoleWay:
    name: str
    url: str
    home: Path
    stack: ExitStack = field(default_factory=ExitStack)
    served: Served | None = None
    opened: Store | None = None

    @property
    def store(self) -> Store:
        """The store the console reads (opened once, closed with the way)."""
        if self.opened is None:
            self.opened = open_store(self.url)
            self.stack.callback(self.opened.dispose)
        return self.opened

    @property
    def moment(self) -> datetime:
        """What time the console's clock reads: the frozen time (``console``'s FakeClock), or
        the server's, now."""
        return datetime.now(UTC) if self.through_server else FROZEN

    @property
    def through_server(self) -> bool:
        return self.name == "server"

    def console(
        self,
        *,
        adapters: dict[str, AdapterConfig] | None = None,
        role: str = "operator",
        config: str = "",
        **options: Any,
    ) -> RoundtableApp:
        """The console on the store (as ``OPERATOR``), or through a server started for it with
        ``adapters`` in its configuration as in the console's, by a token of ``role`` named
        ``OPERATOR``. ``config``: more of the configuration (its budgets), the console's or the
        server's."""
        if not self.through_server:
            app = console(self.url, adapters=adapters, **options)
            app.ctx.budgets = configured_budgets(tomllib.loads(config))
            return app
        if self.served is not None:
            raise AssertionError("one console a test through the server")
        token = create_token(store=self.store, name=OPERATOR, role=role).token
        config_text = config
        config = self.home / "config" / "roundtable" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(adapters_toml(adapters or {}) + config_text)
        self.served = self.stack.enter_context(serving(self.url, self.home))
        link = open_link(self.served.url, token)
        self.stack.callback(link.close)
        app = build_app(
            url=self.served.url,
            settings=Settings(refresh_seconds=options.get("refresh_seconds", 3600),
                              sort=options.get("sort", "started"), group=options.get("group")),
            operator="unused", adapters=adapters or {}, demo=False, link=link,
        )  # fmt: skip
        app.ctx.cursor_blink = False
        return app

    def close(self) -> None:
        self.stack.close()


def adapters_toml(adapters: dict[str, AdapterConfig]) -> str:
    lines = []
    for name, adapter in adapters.items():
        lines += [f"[adapters.{name}]", f"resume_pattern = {json.dumps(adapter.resume_pattern)}"]
    return "\n".join(lines) + "\n"
