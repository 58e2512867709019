"""The console's one factory (``build_app``), used by ``roundtable tui`` (``run_console``, which
runs it) and by the tests, so tests build exactly what users run; the app itself is
``tui.console_app.RoundtableApp``.

Start-up time is a feature: this module and everything it imports at the top never load SQLAlchemy,
SQLModel or Alembic (tests/test_first_paint.py checks it). On a current SQLite store the console
paints its first rows from ``store.reads.first_window`` (``sqlite3`` alone), and only then opens the
store, imports included, in the background.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Mapping
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING

from textual.app import AutopilotCallbackType

from roundtable_console.screens.context import ConsoleContext
from roundtable_console.screens.data import StoreConsole
from roundtable_console.store.clock import Clock, system_clock
from roundtable_console.store.errors import StoreError
from roundtable_console.store.reads import first_window
from roundtable_console.store.reads.listing import SessionOrder
from roundtable_console.store.resume.adapters import AdapterConfig
from roundtable_console.store.safety.display import printable
from roundtable_console.tui.console_app import RoundtableApp
from roundtable_console.tui.heap import hold_full_collections

if TYPE_CHECKING:
    from roundtable_console.client.first_window import ServerPrefetch
    from roundtable_console.store.db.database import Store
    from roundtable_console.tui.config import Settings
    from roundtable_console.tui.console_link import ServerLink

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
    staged: bool = False,
    first: first_window.FirstWindow | None = None,
    read_only: bool = False,
    link: ServerLink | None = None,
) -> RoundtableApp:
    """The console as users run it. ``store`` may be opened already (``run_console`` does, to
    report a bad database before the screen is taken over); otherwise the app opens it. With
    ``staged`` (a current SQLite store), the list's first rows are read with ``sqlite3`` alone
    and the store is opened once they are on screen."""
    ctx = ConsoleContext(
        description=link.url if link is not None else describe(url, store),
        operator=link.name if link is not None else operator,
        clock=clock,
        refresh_seconds=settings.refresh_seconds,
        stale_after_seconds=settings.stale_after_seconds,
        sort=settings.sort,
        group=settings.group,
        adapters=with_demo_adapters(adapters) if demo else dict(adapters),
        read_only=read_only,
        budgets=settings.budgets,
    )
    if link is not None:  # the server reads for the console
        from roundtable_console.client.console_source import ServerConsole

        ctx.source = ServerConsole(link.calls, ctx.page_size, ctx.adapters)
        ctx.read_only = read_only or link.viewer
    else:
        ctx.source = StoreConsole(ctx)
        if first is not None and store is None:
            ctx.first_read = lambda _limit, _now, _order: first  # read by run_console's child
        elif staged and store is None:
            ctx.first_read = partial(read_first_rows, url)
    return RoundtableApp(
        ctx=ctx,
        url=url,
        demo=demo,
        theme_name=settings.theme,
        store=store,
        notify_mode=settings.notify,
        link=link,
    )


def describe(url: str, store: Store | None) -> str:
    """The store's URL for the header, password hidden."""
    if store is not None:
        return store.description
    quick = first_window.describe(url)
    if quick is not None:
        return quick
    from roundtable_console.store.db.database import describe_url

    return describe_url(url)


def read_first_rows(
    url: str, limit: int, now: datetime, order: SessionOrder
) -> first_window.FirstWindow | None:
    return first_window.read_first_window(url, limit=limit, now=now, order=order)


def run_console(
    *,
    url: str,
    settings: Settings,
    operator: str,
    adapters: Mapping[str, AdapterConfig],
    demo: bool,
    headless: bool = False,
    size: tuple[int, int] | None = None,
    auto_pilot: AutopilotCallbackType | None = None,
    prefetched: first_window.Prefetch | None = None,
    read_only: bool = False,
) -> int:
    """Run the console until the operator quits. ``headless``, ``size`` and ``auto_pilot`` go
    to ``App.run`` (the benchmark runs the console through here, headless).

    On a SQLite store whose schema is current, the console starts at once and opens the store
    after its first rows are on screen. Otherwise the store is opened first, so a first open's
    migration progress is readable before the screen is taken over, and a store that cannot be
    opened is reported in one sentence (exit 1), never as a traceback. On PostgreSQL the first
    rows come from ``prefetched`` (``store.reads.first_window.prefetch``, started by ``roundtable
    tui`` before Textual was imported) when it read them; a store it could not read (not current,
    not reachable) takes the normal path."""
    store = None
    first = prefetched.result() if prefetched is not None else None
    # A store the child could not read (not current, not there) is not asked again.
    staged = first is not None or (prefetched is None and first_window.is_current(url))
    if not staged:
        from roundtable_console.store.db.database import open_store

        try:
            store = open_store(
                url,
                progress=lambda message: print(message, file=sys.stderr),
                read_only=read_only,
            )
        except StoreError as error:
            print(f"roundtable tui: {printable(error.message)} [{error.code}]", file=sys.stderr)
            return 1
    app = build_app(
        url=url,
        settings=settings,
        operator=operator,
        adapters=adapters,
        demo=demo,
        store=store,
        staged=staged,
        first=first,
        read_only=read_only,
    )
    return run_app(app, headless=headless, size=size, auto_pilot=auto_pilot)


def run_app(
    app: RoundtableApp,
    *,
    headless: bool,
    size: tuple[int, int] | None,
    auto_pilot: AutopilotCallbackType | None,
) -> int:
    """Run the console as the process's own, until the operator quits."""
    # What start-up has made so far (modules, classes, the app) lives as long as the process: a
    # full garbage collection walking it all costs tens of milliseconds and tends to fall on the
    # first paint. Frozen, the collector walks only what is made from here on.
    gc.freeze()
    hold_full_collections()
    app.manages_heap = True
    app.run(headless=headless, size=size, auto_pilot=auto_pilot)
    return app.return_code or 0


def run_console_through_server(
    *,
    server: str,
    token: str,
    settings: Settings,
    adapters: Mapping[str, AdapterConfig] | None = None,
    prefetched: ServerPrefetch | None = None,
    read_only: bool = False,
    headless: bool = False,
    size: tuple[int, int] | None = None,
    auto_pilot: AutopilotCallbackType | None = None,
) -> int:
    """The console reading and acting through ``roundtable serve`` at ``server``, as the
    token's own name, with what its role may do. ``headless``, ``size`` and ``auto_pilot``: as
    ``run_console``'s; ``adapters``: this machine's, which plan what ``R`` starts here.

    Who the token is and the list's first rows come from ``prefetched`` (``client.first_window``,
    started by ``roundtable tui`` before Textual was imported), else are asked here; a token the
    server refuses, or a server not reached, is one sentence (exit 1) before the screen is taken
    over. With the first rows read by the child, the HTTP client is made once they are shown."""
    from roundtable_console.client.calls import ServerCalls
    from roundtable_console.tui.console_link import link_of, open_link

    try:
        me = prefetched.identity() if prefetched is not None else None
        if me is None:
            link = open_link(server, token)
        else:
            link = link_of(ServerCalls(server, token), token, me)
    except StoreError as error:
        print(f"roundtable tui: {printable(error.message)} [{error.code}]", file=sys.stderr)
        return 1
    app = build_app(
        url=link.url, settings=settings, operator=link.name, adapters=adapters or {},
        demo=False, read_only=read_only, link=link,
    )  # fmt: skip
    if me is not None and prefetched is not None:  # the list's first read waits for its rows
        app.ctx.first_read = lambda _limit, _now, _order: prefetched.window()
    try:
        return run_app(app, headless=headless, size=size, auto_pilot=auto_pilot)
    finally:
        link.close()
