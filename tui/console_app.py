"""The Textual app (``RoundtableApp``): the running console. It opens the store away from the
event loop (seeding the demo, once, into an empty one), watches it for changes, tells the
operator of news from elsewhere (a notification, with the bell or a desktop notification as
configured, and ``j`` to jump to the session it named), opens each session's views, and keeps the
garbage collector out of the way of keys. ``tui.app`` builds it (``build_app``) and runs it.

Start-up time is a feature: this module and everything it imports at the top never load
SQLAlchemy, SQLModel or Alembic (tests/test_first_paint.py checks it); the store is opened, imports
included, in the background.
"""

from __future__ import annotations

import gc
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events, work
from textual.app import App
from textual.binding import Binding
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen

from roundtable_console import assets
from roundtable_console.screens.commands import SessionCommands
from roundtable_console.screens.context import INPUT_HOLD_SECONDS, ConsoleContext
from roundtable_console.screens.failures import Failure, report_failure
from roundtable_console.screens.list.screen import SessionListScreen
from roundtable_console.screens.live import StoreChanged
from roundtable_console.screens.session.actions import SessionActionScreen
from roundtable_console.store.clock import format_ts
from roundtable_console.store.errors import StoreError
from roundtable_console.store.safety.display import one_line, printable
from roundtable_console.tui.budget_news import LOOK_SECONDS, BudgetLooks, notice_words
from roundtable_console.tui.change_watch import ChangeWatcher
from roundtable_console.tui.heap import QuietCollector
from roundtable_console.tui.notices import desktop_sequence, notice_for, write_to_terminal
from roundtable_console.tui.store_opening import seed_demo_if_empty, store_exposure

if TYPE_CHECKING:
    from roundtable_console.screens.fleet.hosts import HostChosen
    from roundtable_console.store.budgets.standing import Crossing
    from roundtable_console.store.db.database import Store
    from roundtable_console.store.reads.changes import Change
    from roundtable_console.tui.console_link import ServerLink
    from roundtable_console.tui.server_watch import ServerWatcher

ASSETS = Path(assets.__file__).parent
STORE_RETRY_SECONDS = 5.0
NOTIFICATIONS_KEPT = 100
# What the header says first while the live link to the server is down.
LINK_DOWN = "link down · "
# How long a notification of sessions needing attention stays, and how long after it ``j``
# still jumps to the session it named.
ATTENTION_NOTICE_SECONDS = 10.0
# However fast the store changes, the console reads it at most once in this long: a fleet's
# heartbeats (hundreds a second) cost two or three reads a second, and a change still shows
# within half a second (while the operator's keys go on, the list holds it: SessionListScreen).
CHANGE_GAP_SECONDS = 0.4
JUMP_SECONDS = 60.0
# After a notification of news, more news waits at least this long and is told as one.
NOTICE_GAP_SECONDS = 2.0
# How long a thread holds the GIL while another waits for it (Python's default is 5 ms). A key
# press costs the UI thread a few milliseconds; while the change watcher reads the store's
# changes, or a worker turns rows into records, it would wait up to 5 ms at each hand-over
# (under a fleet's heartbeats: a key's frame in 11 ms instead of 5). The console asks for 1 ms
# once its first rows are read from the store: start-up, threads working side by side, is
# faster with Python's default.
GIL_SWITCH_SECONDS = 0.001
# How often the app looks whether a full garbage collection is due (tui.heap).
COLLECTION_CHECK_SECONDS = 2.0


class RoundtableApp(App[int]):
    TITLE = "Roundtable console"
    CSS_PATH = [ASSETS / "app.tcss", ASSETS / "dialogs.tcss"]
    COMMANDS = App.COMMANDS | {SessionCommands}
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("A", "audit", "Audit", show=False),
        Binding("P", "requests", "Requests", show=False, tooltip="Pending permission requests"),
        Binding("H", "hosts", "Hosts", show=False, tooltip="The machines that run agents"),
        Binding("j", "jump", "Jump", tooltip="Open the session the last notification named"),
    ]

    class StoreReady(Message):
        def __init__(
            self, store: Store, seeded: int, problem: str | None = None, exposed: str | None = None
        ) -> None:
            super().__init__()
            self.store = store
            self.seeded = seeded
            self.problem = problem
            # A sentence when other users of the machine may read the store's files.
            self.exposed = exposed

    class SessionsChanged(Message):
        """What the change feed read after a change of the store (tui.change_watch)."""

        def __init__(self, changes: list[Change]) -> None:
            super().__init__()
            self.changes = changes

    class StoreFailed(Message):
        def __init__(self, failure: Failure) -> None:
            super().__init__()
            self.failure = failure

    def __init__(
        self,
        *,
        ctx: ConsoleContext,
        url: str,
        demo: bool,
        theme_name: str | None = None,
        store: Store | None = None,
        notify_mode: str = "off",
        link: ServerLink | None = None,
    ) -> None:
        super().__init__()
        self.ctx = ctx
        # Through roundtable serve (tui --server): no store here; its stream of changes.
        self.link = link
        self.server_watcher: ServerWatcher | None = None
        # config ``notify``: off, bell or desktop, added to a notification of news elsewhere.
        self.notify_mode = notify_mode
        # Where a desktop notification's escape sequence goes (tests catch it).
        self.terminal_writer: Callable[[str], None] = write_to_terminal
        # The session the last notification named, and until when ``j`` jumps to it.
        self.jump_to: str | None = None
        self.jump_until = 0.0
        # News held while a notification is fresh, told together when it has had its time.
        self.held_changes: list[Change] = []
        self.quiet_until = 0.0
        self.flush_pending = False
        self.url = url
        # Screens see the store (ctx.store) only once it is ready, demo seeded included.
        self.opened_store = store
        # With a quick first read, the store is opened once its rows are on screen.
        self.staged = ctx.first_read is not None and store is None
        self.demo = demo
        self.theme_name = theme_name
        self.list_screen = SessionListScreen(ctx)
        self.change_watcher: ChangeWatcher | None = None
        self.collector = QuietCollector(time.monotonic())
        # Set by `roundtable tui` (run_console), which owns the process: the garbage collector's
        # schedule is the console's (tui.heap). Tests share their process, so theirs is not.
        self.manages_heap = False
        self.heap_frozen = False
        # What the console told the operator lately (title, message), oldest first.
        self.notified: deque[tuple[str, str]] = deque(maxlen=NOTIFICATIONS_KEPT)
        # The last unexpected failure to open the store, said once however often it recurs.
        self.open_failure: str | None = None
        # The budgets' crossings told so far (tui.budget_news), once the source is ready.
        self.budget_looks: BudgetLooks | None = None

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
        self.notified.append((printable(title), message))
        super().notify(
            message, title=printable(title), severity=severity, timeout=timeout, markup=markup
        )

    def on_mount(self) -> None:
        where = f"{printable(self.ctx.operator)} @ {printable(self.ctx.description)}"
        if self.ctx.read_only:
            where = f"read-only · {where}"
        self.sub_title = f"demo · {where}" if self.demo else where
        if self.theme_name:
            if self.theme_name in self.available_themes:
                self.theme = self.theme_name
            else:
                self.notify(f"Unknown theme {self.theme_name!r}; using the default.", markup=False)
        self.push_screen(self.list_screen)
        if self.link is None and not self.staged:
            self.prepare_store()
        if self.manages_heap:
            self.set_interval(COLLECTION_CHECK_SECONDS, self.collect_if_quiet)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.InputEvent):
            self.ctx.last_input = time.monotonic()
            self.collector.note_input(self.ctx.last_input)
        await super().on_event(event)

    def collect_if_quiet(self) -> bool:
        return self.collector.tick(time.monotonic())

    def on_session_list_screen_loaded(self, _message: SessionListScreen.Loaded) -> None:
        if self.link is not None and self.server_watcher is None and self.ctx.source.ready:
            # Once the first rows are painted: its connection does not delay them, and its
            # first event reads again whatever changed in between.
            self.follow_server(self.link)
        if self.manages_heap and not self.heap_frozen:
            # The first read from the store has imported the rest of the database layer and
            # filled its statement caches: long-lived, frozen once painted, so that a full
            # collection does not walk them all again and again.
            self.heap_frozen = True
            self.call_after_refresh(gc.freeze)
            # From here on the console waits for keys: latency, not start-up's throughput.
            sys.setswitchinterval(GIL_SWITCH_SECONDS)

    def on_session_list_screen_first_rows_shown(
        self, _message: SessionListScreen.FirstRowsShown
    ) -> None:
        if self.link is not None:
            if not self.ctx.source.ready:  # the first rows came from the child: connect now
                threading.Thread(target=self.connect_link, name="connect", daemon=True).start()
            return
        if self.staged and self.ctx.store is None:
            # A daemon thread, not a worker: Textual's thread workers run on the event loop's
            # executor, which is joined when the app exits, so quitting at once would wait for
            # SQLAlchemy's import to finish.
            threading.Thread(target=self.open_and_seed, name="open-store", daemon=True).start()

    class LinkReady(Message):
        """The HTTP client to the server is made: the list reads through it from now on."""

    def connect_link(self) -> None:
        """Make the client (its import) away from the event loop. Runs in a thread."""
        assert self.link is not None
        self.link.calls.connect()
        import roundtable_console.tui.server_watch  # noqa: F401 - its import, here too

        self._deliver(self.LinkReady())

    def on_roundtable_app_link_ready(self, _message: LinkReady) -> None:
        self.list_screen.store_opened()

    @work(thread=True, exclusive=True, group="store-open", exit_on_error=False)
    def prepare_store(self) -> None:
        """Open the store away from the event loop."""
        self.open_and_seed()

    def open_and_seed(self) -> None:
        """Open the store (migrations may run) and seed the demo; the outcome is posted as a
        message. Runs in a thread."""
        from roundtable_console.store.db.database import open_store

        try:
            store = self.opened_store or open_store(self.url, read_only=self.ctx.read_only)
        except Exception as error:  # noqa: BLE001 - a StoreError or not, it is said in words
            what = f"open the store {one_line(self.ctx.description, 100)}"
            self._deliver(self.StoreFailed(Failure(what, error)))
            return
        self.opened_store = store  # closed on unmount, should the app close before it is ready
        seeded, problem = 0, None
        if self.demo and not self.ctx.read_only:
            try:
                seeded = seed_demo_if_empty(store, self.ctx.clock, self.url)
            except StoreError as error:
                problem = f"{error.message} [{error.code}]"
            except Exception as error:  # noqa: BLE001 - demo data is optional; the console opens
                problem = f"{type(error).__name__}: {error}"
        if not self._deliver(self.StoreReady(store, seeded, problem, store_exposure(self.url))):
            store.dispose()

    def _deliver(self, message: Message) -> bool:
        """Post from a thread; False when the app has closed meanwhile (nobody is waiting)."""
        try:
            return self.post_message(message)
        except RuntimeError:  # the event loop closed while the store was opening
            return False

    def look_at_budgets_from_now(self) -> None:
        """Budget news from now on: on a store with budgets configured, or through a server."""
        if self.budget_looks is None and (self.link is not None or self.ctx.budgets):
            self.budget_looks = BudgetLooks(format_ts(self.ctx.now()))
            self.set_interval(LOOK_SECONDS, self.look_at_budgets)

    @work(thread=True, group="budgets", exit_on_error=False)
    def look_at_budgets(self) -> None:
        if self.budget_looks is not None and self.ctx.source.ready:
            tell = partial(self.call_from_thread, self.tell_budgets)
            self.budget_looks.look(self.ctx.source, tell)

    def tell_budgets(self, crossings: list[Crossing]) -> None:
        for crossing in crossings:
            title, message, reached = notice_words(crossing)
            self.notify(message, title=title, severity="error" if reached else "warning",
                        timeout=ATTENTION_NOTICE_SECONDS, markup=False)  # fmt: skip
            if self.notify_mode == "bell":
                self.bell()
            elif self.notify_mode == "desktop":
                self.terminal_writer(desktop_sequence(title, message))

    def on_roundtable_app_store_ready(self, message: StoreReady) -> None:
        self.ctx.store = self.opened_store = message.store
        self.open_failure = None
        self.look_at_budgets_from_now()
        if message.seeded:
            self.notify(f"Seeded the demo store with {message.seeded} sessions.", markup=False)
        if message.problem:
            self.notify(
                f"The demo data could not be written: {message.problem}",
                severity="error",
                markup=False,
            )
        if message.exposed:
            self.notify(message.exposed, severity="warning", timeout=20, markup=False)
        self.list_screen.store_opened()
        if self.change_watcher is None:
            from roundtable_console.store.reads.changes import ChangeFeed

            feed = ChangeFeed(
                stale_after_seconds=self.ctx.stale_after_seconds, clock=self.ctx.clock
            )
            self.change_watcher = ChangeWatcher(
                message.store,
                lambda: self._deliver(StoreChanged()),
                feed=feed,
                on_changes=lambda changes: self._deliver(self.SessionsChanged(changes)),
                gap=CHANGE_GAP_SECONDS,
                input_wait=self.ctx.input_wait,
                hold=INPUT_HOLD_SECONDS,
            )
            self.change_watcher.start()

    class LinkSaid(Message):
        """The live link to the server dropped, came back, or ended (in words)."""

        def __init__(self, words: str) -> None:
            super().__init__()
            self.words = words

    def follow_server(self, link: ServerLink) -> None:
        """The server's changes, followed as the store's are: each wakes the screen on show,
        what changed is news."""
        from roundtable_console.tui.server_watch import ServerWatcher

        self.server_watcher = ServerWatcher(
            link.url, link.token, lambda: self._deliver(StoreChanged()),
            on_changes=lambda changes: self._deliver(self.SessionsChanged(changes)),
            on_link=lambda words: self._deliver(self.LinkSaid(words)),
            gap=CHANGE_GAP_SECONDS, path=link.changes_path,
        )  # fmt: skip
        self.server_watcher.start()
        self.look_at_budgets_from_now()

    def on_roundtable_app_link_said(self, message: LinkSaid) -> None:
        back = message.words.endswith("is back.")
        where = self.sub_title.removeprefix(LINK_DOWN)
        self.sub_title = where if back else LINK_DOWN + where
        self.notify(message.words, title="Live link", severity="information" if back
                    else "warning", markup=False)  # fmt: skip

    def on_roundtable_app_sessions_changed(self, message: SessionsChanged) -> None:
        """News from elsewhere: one notification for everything one read found, naming the
        session ``j`` jumps to. The operator's own actions are not news. Within
        ``NOTICE_GAP_SECONDS`` of a notification, news is held and then told in one summary:
        a stream of changes makes a notification every few seconds, not a flood."""
        if not self.screen_stack:  # the console is closing: news no longer has a screen
            return
        if time.monotonic() < self.quiet_until:
            self.held_changes.extend(message.changes)
            if not self.flush_pending:
                self.flush_pending = True
                self.set_timer(self.quiet_until - time.monotonic(), self.tell_held)
            return
        self.tell(message.changes)

    def tell_held(self) -> None:
        held, self.held_changes, self.flush_pending = self.held_changes, [], False
        self.tell(held)

    def tell(self, changes: list[Change]) -> None:
        notice = notice_for(changes, self.ctx.operator)
        if notice is None or not self.screen_stack:
            return
        now = time.monotonic()
        self.quiet_until = now + NOTICE_GAP_SECONDS
        self.jump_to, self.jump_until = notice.session_id, now + JUMP_SECONDS
        self.notify(
            notice.message,
            title=notice.title,
            severity="warning",
            timeout=ATTENTION_NOTICE_SECONDS,
            markup=False,
        )
        self.refresh_bindings()
        self.set_timer(JUMP_SECONDS, self.refresh_bindings)
        if self.notify_mode == "bell":
            self.bell()
        elif self.notify_mode == "desktop":
            self.terminal_writer(desktop_sequence(notice.title, notice.message))

    def action_jump(self) -> None:
        """Back to the list, the cursor on the session last notified (when the list holds it),
        and that session's detail opened."""
        target = self.jump_to
        if target is None:
            return
        while len(self.screen_stack) > 1 and self.screen is not self.list_screen:
            self.pop_screen()
        self.list_screen.show_session(target)
        self.open_view("detail", target)

    def on_store_changed(self, _message: StoreChanged) -> None:
        """A change anywhere in the store: the screen on show reads again now."""
        if self.screen_stack:  # none while the console closes
            self.screen.post_message(StoreChanged())

    def on_roundtable_app_store_failed(self, message: StoreFailed) -> None:
        failure = message.failure
        self.list_screen.show_failure(failure)
        if failure.unexpected and failure.text != self.open_failure:
            self.open_failure = failure.text
            report_failure(self, failure)
        self.list_screen.store_failed()
        self.set_timer(STORE_RETRY_SECONDS, self.prepare_store)

    def on_session_action_screen_open_view(self, message: SessionActionScreen.OpenView) -> None:
        self.open_view(message.view, message.session_id)

    def open_view(self, view: str, session_id: str) -> None:
        """A session's detail, log or briefing screen, imported when first shown."""
        from roundtable_console.screens.session.briefing import BriefingScreen
        from roundtable_console.screens.session.detail import SessionDetailScreen
        from roundtable_console.screens.session.log import SessionLogScreen

        views = {"detail": SessionDetailScreen, "log": SessionLogScreen, "briefing": BriefingScreen}
        self.push_screen(views[view](self.ctx, session_id))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # A dialog waits for its own answer: q must not end the console under it (in the
        # terminate dialog q is text being typed).
        if action in ("quit", "jump") and getattr(self.screen, "AWAITS_ANSWER", False):
            return False
        if action == "audit":
            from roundtable_console.screens.fleet.audit import AuditScreen

            return not isinstance(self.screen, AuditScreen | ModalScreen)
        if action in ("requests", "hosts"):
            return not isinstance(self.screen, ModalScreen)
        if action == "jump":
            return self.jump_to is not None and time.monotonic() < self.jump_until
        return True

    def action_help(self) -> None:
        from roundtable_console.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(read_only=self.ctx.read_only))

    def action_audit(self) -> None:
        """The operators' actions across all sessions (A), read in its own worker."""
        from roundtable_console.screens.fleet.audit import AuditScreen

        if not isinstance(self.screen, AuditScreen):
            self.push_screen(AuditScreen(self.ctx))

    def action_requests(self) -> None:
        """Every pending permission request across the fleet (P)."""
        from roundtable_console.screens.fleet.requests import RequestsScreen

        if not isinstance(self.screen, RequestsScreen):
            self.push_screen(RequestsScreen(self.ctx))

    def action_hosts(self) -> None:
        """The machines that run agents (H)."""
        from roundtable_console.screens.fleet.hosts import HostsScreen

        if not isinstance(self.screen, HostsScreen):
            self.push_screen(HostsScreen(self.ctx), self._host_chosen)

    def _host_chosen(self, chosen: HostChosen | None) -> None:
        """The list shows the chosen host's sessions, or every host's."""
        if chosen is None:
            return
        state = self.list_screen.state
        self.list_screen.filters.change(replace(state, host=chosen.name))
        while len(self.screen_stack) > 1 and self.screen is not self.list_screen:
            self.pop_screen()

    def on_unmount(self) -> None:
        if self.change_watcher is not None:
            self.change_watcher.stop()
        if self.server_watcher is not None:
            self.server_watcher.stop()
        store = self.ctx.store or self.opened_store
        if store is not None:
            store.dispose()
