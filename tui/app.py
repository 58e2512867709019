"""The Textual app: one factory (``build_app``) used by ``roundtable tui`` and by the tests."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.message import Message
from textual.notifications import SeverityLevel

import assets
from screens.commands import SessionCommands
from screens.confirm_dialog import ConfirmActionDialog
from screens.context import ConsoleContext
from screens.help_screen import HelpScreen
from screens.live import StoreChanged
from screens.session_list import SessionListScreen
from screens.terminate_dialog import TerminateDialog
from store.adapters import AdapterConfig
from store.clock import Clock, system_clock
from store.database import Store, describe_url, open_store
from store.display import printable
from store.errors import StoreError
from tui.change_watch import ChangeWatcher
from tui.config import Settings

ASSETS = Path(assets.__file__).parent
STORE_RETRY_SECONDS = 5.0
# With --demo, adapters the user has not configured resume like this, so the demo's briefing
# screen shows a real resume plan. Never written to the user's configuration.
DEMO_ADAPTERS: dict[str, AdapterConfig] = {
    "codex": AdapterConfig(
        name="codex", command="codex", resume_pattern="codex resume {{external_session_id}}"
    ),
    "claude": AdapterConfig(
        name="claude", command="claude", resume_pattern="claude --resume {{external_session_id}}"
    ),
}


class RoundtableApp(App[int]):
    TITLE = "Roundtable console"
    CSS_PATH = [ASSETS / "app.tcss", ASSETS / "dialogs.tcss"]
    COMMANDS = App.COMMANDS | {SessionCommands}
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help"),
    ]

    class StoreReady(Message):
        def __init__(self, store: Store, seeded: int, problem: str | None = None) -> None:
            super().__init__()
            self.store = store
            self.seeded = seeded
            self.problem = problem

    class StoreFailed(Message):
        def __init__(self, error: StoreError) -> None:
            super().__init__()
            self.error = error

    def __init__(
        self,
        *,
        ctx: ConsoleContext,
        url: str,
        demo: bool,
        theme_name: str | None = None,
        store: Store | None = None,
    ) -> None:
        super().__init__()
        self.ctx = ctx
        self.url = url
        # Screens see the store (ctx.store) only once it is ready, demo seeded included.
        self.opened_store = store
        self.demo = demo
        self.theme_name = theme_name
        self.list_screen = SessionListScreen(ctx)
        self.change_watcher: ChangeWatcher | None = None

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every notification passes here (screens' and widgets' too). The console's own are
        plain text and may carry store data: their control characters are made visible whoever
        built them. Textual's own (markup=True) are left as they are."""
        if not markup:
            message = printable(message, keep_newlines=True)
        super().notify(
            message, title=printable(title), severity=severity, timeout=timeout, markup=markup
        )

    def on_mount(self) -> None:
        where = f"{printable(self.ctx.operator)} @ {printable(self.ctx.description)}"
        self.sub_title = f"demo · {where}" if self.demo else where
        if self.theme_name:
            if self.theme_name in self.available_themes:
                self.theme = self.theme_name
            else:
                self.notify(f"Unknown theme {self.theme_name!r}; using the default.", markup=False)
        self.push_screen(self.list_screen)
        self.prepare_store()

    @work(thread=True, exclusive=True, group="store-open", exit_on_error=False)
    def prepare_store(self) -> None:
        """Open the store (migrations may run) and seed the demo, away from the event loop."""
        try:
            store = self.opened_store or open_store(self.url)
        except StoreError as error:
            self.post_message(self.StoreFailed(error))
            return
        seeded, problem = 0, None
        if self.demo:
            try:
                seeded = seed_demo_if_empty(store, self.ctx.clock)
            except StoreError as error:
                problem = f"{error.message} [{error.code}]"
            except Exception as error:  # noqa: BLE001 - demo data is optional; the console opens
                problem = f"{type(error).__name__}: {error}"
        self.post_message(self.StoreReady(store, seeded, problem))

    def on_roundtable_app_store_ready(self, message: StoreReady) -> None:
        self.ctx.store = self.opened_store = message.store
        if message.seeded:
            self.notify(f"Seeded the demo store with {message.seeded} sessions.", markup=False)
        if message.problem:
            self.notify(
                f"The demo data could not be written: {message.problem}",
                severity="error",
                markup=False,
            )
        self.list_screen.reload()
        if self.change_watcher is None:
            self.change_watcher = ChangeWatcher(
                message.store, lambda: self.post_message(StoreChanged())
            )
            self.change_watcher.start()

    def on_store_changed(self, _message: StoreChanged) -> None:
        """A change anywhere in the store: the screen on show reads again now."""
        if self.screen_stack:  # none while the console closes
            self.screen.post_message(StoreChanged())

    def on_roundtable_app_store_failed(self, message: StoreFailed) -> None:
        self.list_screen.show_error(message.error)
        self.set_timer(STORE_RETRY_SECONDS, self.prepare_store)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # A dialog waits for its own answer: q must not end the console under it (in the
        # terminate dialog q is text being typed).
        if action == "quit" and isinstance(self.screen, ConfirmActionDialog | TerminateDialog):
            return False
        return True

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def on_unmount(self) -> None:
        if self.change_watcher is not None:
            self.change_watcher.stop()
        store = self.ctx.store or self.opened_store
        if store is not None:
            store.dispose()


def seed_demo_if_empty(store: Store, clock: Clock) -> int:
    """Seed the demo data once: a store that already has sessions is left as it is."""
    from store import demo

    with store.read() as db:
        if demo.has_sessions(db=db):
            return 0
    with store.write() as db:
        written = demo.seed_demo(db=db, clock=clock)
    return int(written.get("session", 0))


def with_demo_adapters(adapters: Mapping[str, AdapterConfig]) -> dict[str, AdapterConfig]:
    """The user's adapters, plus the demo's for the names the user has not configured."""
    return {**DEMO_ADAPTERS, **adapters}


def build_app(
    *,
    url: str,
    settings: Settings,
    operator: str,
    adapters: Mapping[str, AdapterConfig],
    clock: Clock = system_clock,
    demo: bool = False,
    store: Store | None = None,
) -> RoundtableApp:
    """The console as users run it. ``store`` may be opened already (``run_console`` does, to
    report a bad database before the screen is taken over); otherwise the app opens it."""
    ctx = ConsoleContext(
        description=store.description if store is not None else describe_url(url),
        operator=operator,
        clock=clock,
        refresh_seconds=settings.refresh_seconds,
        stale_after_seconds=settings.stale_after_seconds,
        adapters=with_demo_adapters(adapters) if demo else dict(adapters),
    )
    return RoundtableApp(ctx=ctx, url=url, demo=demo, theme_name=settings.theme, store=store)


def run_console(
    *,
    url: str,
    settings: Settings,
    operator: str,
    adapters: Mapping[str, AdapterConfig],
    demo: bool,
) -> int:
    """Open the store, then run the console until the operator quits. A store that cannot be
    opened is reported in one sentence (exit 1), never as a traceback."""
    try:
        # Before the screen is taken over, so a first open's migration progress is readable.
        store = open_store(url, progress=lambda message: print(message, file=sys.stderr))
    except StoreError as error:
        print(f"roundtable tui: {printable(error.message)} [{error.code}]", file=sys.stderr)
        return 1
    app = build_app(
        url=url, settings=settings, operator=operator, adapters=adapters, demo=demo, store=store
    )
    app.run()
    return app.return_code or 0
