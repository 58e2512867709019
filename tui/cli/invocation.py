"""One command's run: the options every command takes (``--db``, ``--root``, ``--json``,
``--read-only``), resolved into an ``Invocation`` (where the data lives, how to answer, what
time it is), and read-only mode's refusal of the commands that write."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import click

from roundtable_console.tui.cli.printing import print_progress

if TYPE_CHECKING:
    from roundtable_console.client.server_source import ServerSource
    from roundtable_console.store.db.database import Store
    from roundtable_console.store.replies.sending import Replies
    from roundtable_console.store.resume.adapters import AdapterConfig
    from roundtable_console.store.source import SessionSource
    from roundtable_console.tui.config import Settings

# Where the `sessions` group keeps the options given to it, for its subcommand (ctx.meta).
GROUP_OPTIONS = "roundtable.group_options"


@dataclass
class CliState:
    """What one run shares between its parts. Tests pass their own clock."""

    clock: Callable[[], datetime] | None = None
    json_mode: bool | None = None


@dataclass
class Invocation:
    """One command's resolved options: where the data lives, how to answer, what time it is."""

    db: str | None
    root: str | None
    json_mode: bool
    state: CliState
    read_only_flag: bool = False
    _settings: Settings | None = None
    # The command's --server and --token-env (those of the commands a person may run through
    # roundtable serve: tui.cli.through_server).
    server_flag: str | None = None
    token_env_flag: str | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            from roundtable_console.tui.config import load_settings

            self._settings = load_settings()
        return self._settings

    def clock(self) -> datetime:
        if self.state.clock is not None:
            return self.state.clock()
        from roundtable_console.store.clock import system_clock

        return system_clock()

    def url(self) -> str:
        from roundtable_console.tui.config import resolve_database_url

        return resolve_database_url(db=self.db, root=self.root, settings=self.settings)

    def adapters(self) -> dict[str, AdapterConfig]:
        from roundtable_console.tui.config import resolve_adapters

        return resolve_adapters(self.settings, self.root)

    def operator(self, flag: str | None) -> str:
        from roundtable_console.tui.config import resolve_operator

        return resolve_operator(flag=flag, settings=self.settings)

    @property
    def read_only(self) -> bool:
        from roundtable_console.tui.config import resolve_read_only

        return resolve_read_only(flag=self.read_only_flag, settings=self.settings)

    @contextmanager
    def store(self, *, pool_size: int | None = None, url: str | None = None) -> Iterator[Store]:
        """The store ``url`` names (the command's own, by default), open until the block ends."""
        from roundtable_console.store.db.database import open_store

        opened = open_store(
            url or self.url(),
            progress=print_progress,
            read_only=self.read_only,
            pool_size=pool_size,
        )
        try:
            yield opened
        finally:
            opened.dispose()

    @property
    def server(self) -> str | None:
        """The server the command goes through (None: a store)."""
        import os

        from roundtable_console.tui.cli.through_server import chosen_server

        store_named = bool(self.db or self.root or os.environ.get("ROUNDTABLE_DB", "").strip())
        return chosen_server(
            server=self.server_flag, store_named=store_named, configured=self.settings.server
        )

    @property
    def token_variable(self) -> str:
        """The variable that holds the person's token for the server."""
        from roundtable_console.tui.cli.through_server import DEFAULT_TOKEN_ENV

        return self.token_env_flag or self.settings.token_env or DEFAULT_TOKEN_ENV

    def operator_through_server(self, operator: str | None, done: str = "acted") -> None:
        """Through a server, who acts is the token's: --operator is refused there."""
        if operator is not None and self.server is not None:
            raise click.UsageError(
                f"Through a server, the token's own name is recorded as who {done}: --operator "
                "applies to a store (--db)."
            )

    @contextmanager
    def source(self, operator: str | None = None) -> Iterator[SessionSource]:
        """What the command reads and acts through: the server it names (who acts: the token's
        name), else its store (who acts: ``operator``, the command's --operator, resolved)."""
        if self.server is None:
            from roundtable_console.store.source import StoreSource

            with self._store_only() as store:
                yield StoreSource(
                    store, self.clock, actor=self.operator(operator), budgets=self.settings.budgets
                )
            return
        with self.server_source() as source:
            yield source

    @contextmanager
    def replies(self, operator: str | None = None) -> Iterator[Replies]:
        """A reply's route and its sending, through the server or on the store (as
        ``operator``; a tmux pane of this machine typed into from here)."""
        if self.server is None:
            from roundtable_console.agents.replying import StoreReplies

            with self._store_only() as store:
                yield StoreReplies(store, self.operator(operator), self.clock)
            return
        with self.server_source() as source:
            yield source

    @contextmanager
    def _store_only(self) -> Iterator[Store]:
        if self.token_env_flag is not None:
            raise click.UsageError("--token-env goes with a server (--server).")
        with self.store() as store:
            yield store

    @contextmanager
    def server_source(self) -> Iterator[ServerSource]:
        """The server the command names, with the person's token from its variable."""
        from roundtable_console.client.calls import ServerCalls
        from roundtable_console.client.server_source import ServerSource
        from roundtable_console.tui.cli.through_server import token_from

        server = self.server
        assert server is not None
        calls = ServerCalls(server, token_from(self.token_variable, f"your token for {server}"))
        try:
            yield ServerSource(calls)
        finally:
            calls.close()


def common_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--db``, ``--root``, ``--json`` and ``--read-only``, as parameters of ``func``."""
    options = (
        click.option("--db", "db", metavar="URL", help="SQLAlchemy database URL (wins over all)."),
        click.option(
            "--root",
            "root",
            metavar="DIR",
            help="Roundtable workspace: DIR/.roundtable/roundtable.db and its config.yaml.",
        ),
        click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text."),
        click.option(
            "--read-only",
            "read_only",
            is_flag=True,
            help="Open the store read-only: writing commands are refused (also config "
            "read_only = true, or ROUNDTABLE_READ_ONLY=1).",
        ),
    )
    for option in reversed(options):
        func = option(func)
    return func


# The commands that write (``roundtable`` left out of their path): refused, before the store is
# opened, when read-only. A bulk action's --dry-run writes nothing and is let through.
WRITING_COMMANDS = frozenset(
    {
        "sessions register",
        "sessions heartbeat",
        "sessions end",
        "sessions pause",
        "sessions stop",
        "sessions resume",
        "sessions terminate",
        "sessions stop-agent",
        "demo",
        "db upgrade",
        "db prune",
        "import",
        "tokens create",
        "tokens revoke",
        "requests allow",
        "requests deny",
        "host run",
        "new",
        "finish",
    }
)


def with_invocation(func: Callable[..., Any]) -> Callable[..., Any]:
    """Give a command ``--db``, ``--root``, ``--json`` and ``--read-only``, resolved into an
    ``Invocation``; a writing command is refused at once when read-only."""

    @functools.wraps(func)
    def wrapper(
        *args: Any,
        db: str | None,
        root: str | None,
        as_json: bool,
        read_only: bool,
        **kwargs: Any,
    ) -> Any:
        ctx = click.get_current_context()
        invocation = resolve_invocation(ctx, db=db, root=root, as_json=as_json, read_only=read_only)
        if not kwargs.get("dry_run"):
            _refuse_writing_when_read_only(ctx, invocation)
        return func(invocation, *args, **kwargs)

    return common_options(wrapper)


def with_source_invocation(func: Callable[..., Any]) -> Callable[..., Any]:
    """``with_invocation``, and ``--server`` and ``--token-env``: a command a person may run
    through roundtable serve (``Invocation.source``)."""
    from roundtable_console.tui.cli.through_server import server_options

    @functools.wraps(func)
    def wrapper(inv: Invocation, *args: Any, server: str | None, token_env: str | None,
                **kwargs: Any) -> Any:  # fmt: skip
        group = click.get_current_context().meta.get(GROUP_OPTIONS, {})
        inv.server_flag = server if server is not None else group.get("server")
        inv.token_env_flag = token_env if token_env is not None else group.get("token_env")
        return func(inv, *args, **kwargs)

    return with_invocation(server_options(wrapper))


def _refuse_writing_when_read_only(ctx: click.Context, inv: Invocation) -> None:
    command = " ".join(ctx.command_path.split()[1:])
    if command not in WRITING_COMMANDS or not inv.read_only:
        return
    from roundtable_console.store.errors import ReadOnly

    raise ReadOnly(
        f"roundtable is read-only here ({_read_only_source(inv)}), and {command} writes: nothing "
        "was done. Run it without read-only to change the store."
    )


def _read_only_source(inv: Invocation) -> str:
    if inv.read_only_flag:
        return "--read-only"
    if inv.settings.read_only:
        return f"read_only = true in {inv.settings.source}"
    return "$ROUNDTABLE_READ_ONLY"


def resolve_invocation(
    ctx: click.Context, *, db: str | None, root: str | None, as_json: bool, read_only: bool = False
) -> Invocation:
    """The command's common options, those given to the `sessions` group before it as their
    defaults."""
    group = ctx.meta.get(GROUP_OPTIONS, {})
    db = db if db is not None else group.get("db")
    root = root if root is not None else group.get("root")
    json_mode = bool(as_json or group.get("as_json"))
    read_only = bool(read_only or group.get("read_only"))
    state = ctx.find_object(CliState) or CliState()
    state.json_mode = json_mode
    for name, value in (("--db", db), ("--root", root)):
        if value is not None and not value.strip():
            raise click.BadParameter("must not be blank.", ctx=ctx, param_hint=f"'{name}'")
    return Invocation(db=db, root=root, json_mode=json_mode, state=state, read_only_flag=read_only)
