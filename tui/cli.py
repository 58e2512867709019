"""The ``roundtable`` command line (DESIGN.md §7).

Start-up time is a feature: agents run ``roundtable sessions heartbeat`` all day. So this module
imports only click, the standard library, ``tui.output`` and the plain data of ``store.rules`` at
the top; other store modules are imported inside the commands that need them, and Textual only by
``roundtable tui``. What a command does to the store is one ``store`` function (for what the
console does too, ``store.service``); this module parses, resolves and prints.
"""

from __future__ import annotations

import functools
import gc
import shlex
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import click

from roundtable_console.store.rules import PAGED_PROJECTIONS, SORT_COLUMNS, UNPAGED_PROJECTIONS
from roundtable_console.tui import output
from roundtable_console.tui.agent_output import ROWS, print_session

if TYPE_CHECKING:
    from roundtable_console.store.db.database import Store
    from roundtable_console.store.db.models import AgentSession
    from roundtable_console.store.reads.first_window import Prefetch
    from roundtable_console.store.reads.listing import Selection, SessionFilter
    from roundtable_console.store.reads.paging import Page
    from roundtable_console.store.records import SessionFields
    from roundtable_console.store.resume.adapters import AdapterConfig
    from roundtable_console.store.writes.bulk import BulkItem, Tally
    from roundtable_console.store.writes.lifecycle import ActionOutcome
    from roundtable_console.tui.config import Settings

OUTPUT_HELP = """\b
Output: on a terminal, aligned columns under a header; in a pipe, one tab-separated line per
row and no header (control characters are shown as escapes, never sent raw). --json prints
JSON instead. Errors go to stderr, the last line being "error: …" (or, with --json,
{"error": {"code", "message"}}). Exit codes: 0 done, 1 refused, 2 bad usage or bad input."""

_GROUP_OPTIONS = "roundtable.group_options"
_GROUP_FILTERS = "roundtable.group_filters"
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

SESSION_COLUMNS = ("id", "agent", "status", "adapter", "resume command")


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
    def store(self) -> Iterator[Store]:
        from roundtable_console.store.db.database import open_store

        opened = open_store(self.url(), progress=_progress, read_only=self.read_only)
        try:
            yield opened
        finally:
            opened.dispose()


def _progress(message: str) -> None:
    output.echo_text(message, err=True)


# ------------------------------------------------------------------------------------ options


def _common_options(func: Callable[..., Any]) -> Callable[..., Any]:
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
        "demo",
        "db upgrade",
        "db prune",
        "import",
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
        invocation = _invocation(ctx, db=db, root=root, as_json=as_json, read_only=read_only)
        if not kwargs.get("dry_run"):
            _refuse_writing_when_read_only(ctx, invocation)
        return func(invocation, *args, **kwargs)

    return _common_options(wrapper)


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


def _invocation(
    ctx: click.Context, *, db: str | None, root: str | None, as_json: bool, read_only: bool = False
) -> Invocation:
    # Options given to the `sessions` group before the subcommand act as defaults.
    group = ctx.meta.get(_GROUP_OPTIONS, {})
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


# The list's filters: (parameter name, flag, option). The parameter names are those of
# store.reads.listing.SessionFilter, but for ``statuses`` and ``stale``, which ``_session_filter``
# turns into theirs. `sessions list` and every bulk action (--all-matching) take these: a
# filter added here, with its field in SessionFilter, works in both.
_FILTERS: tuple[tuple[str, str, Callable[[Callable[..., Any]], Callable[..., Any]]], ...] = (
    (
        "statuses",
        "--status",
        click.option(
            "--status", "statuses", multiple=True, metavar="ST", help="Only this status (repeat)."
        ),
    ),
    (
        "agent_id",
        "--agent",
        click.option("--agent", "agent_id", metavar="A", help="Only sessions of this agent."),
    ),
    (
        "run_id",
        "--run",
        click.option("--run", "run_id", metavar="R", help="Only sessions of this run."),
    ),
    (
        "workspace_id",
        "--workspace",
        click.option(
            "--workspace", "workspace_id", metavar="W", help="Only sessions of this workspace."
        ),
    ),
    (
        "active_only",
        "--active",
        click.option(
            "--active", "active_only", is_flag=True, help="Only sessions in an active state."
        ),
    ),
    (
        "stale",
        "--stale",
        click.option(
            "--stale",
            is_flag=True,
            help="Only active sessions not seen for stale_after_seconds (config; 300 s).",
        ),
    ),
    (
        "waiting",
        "--waiting",
        click.option(
            "--waiting",
            is_flag=True,
            help="Only sessions waiting for a human (heartbeat --waiting).",
        ),
    ),
    (
        "text",
        "--text",
        click.option("--text", metavar="TEXT", help="Only sessions whose fields contain TEXT."),
    ),
)
_FILTER_NAMES: tuple[str, ...] = tuple(name for name, _flag, _option in _FILTERS)


def _filter_options(
    *, besides: tuple[str, ...] = ()
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The list's filters as options, but those named in ``besides`` (a command's own option of
    the same flag takes their place)."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        for name, _flag, option in reversed(_FILTERS):
            if name not in besides:
                func = option(func)
        return func

    return decorate


def _order_options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = click.option("--descending", is_flag=True, help="Sort the other way round.")(func)
    return click.option(
        "--sort",
        type=click.Choice(SORT_COLUMNS),
        help="The order: attention (what needs a human first), started (the default), "
        "last_seen, status or agent.",
    )(func)


def _page_options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = click.option("--cursor", metavar="C", help="Continue after the page that gave C.")(func)
    return click.option("--limit", type=int, metavar="N", help="One page of N (1…200).")(func)


def _list_options(func: Callable[..., Any]) -> Callable[..., Any]:
    return _filter_options()(_order_options(_page_options(func)))


_session_option = click.option("--session", "session_id", required=True, metavar="S")
_sessions_option = click.option(
    "--session", "session_ids", multiple=True, metavar="S", help="The session (repeat for several)."
)
_all_matching_option = click.option(
    "--all-matching",
    is_flag=True,
    help="Act on every session the filters select (filters are refused without it).",
)
_dry_run_option = click.option(
    "--dry-run",
    is_flag=True,
    help="Say what would happen to each session; write nothing (exit 1 if any would fail).",
)
_run_key_option = click.option(
    "--idempotency-key",
    metavar="K",
    help="The same key never applies twice; with several sessions, each one's key is derived "
    "from K, so running the same command again with K replays instead of applying.",
)

BULK_HELP = """
Several sessions: --session more than once, or --all-matching with the list's filters. Each
session is done, skipped (the action does not apply to its status) or failed, on one line;
then "n done, n skipped, n failed". --json: {"items": [{"session_id", "outcome", "code",
"message"}], "done", "skipped", "failed"} (and "dry_run": true). Exit 1 if any failed."""
_operator_option = click.option(
    "--operator", metavar="NAME", help="Who acts (default: config, $ROUNDTABLE_OPERATOR, login)."
)


def _session_id(value: str) -> str:
    from roundtable_console.store.validation import required

    return required("--session", value)


# ------------------------------------------------------------------------------------ the group


class RoundtableGroup(click.Group):
    """The root group. Its ``main`` turns every failure into a message and an exit code, so
    both the console script and ``CliRunner`` behave the same and no traceback reaches a user."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> int:
        argv = list(sys.argv[1:] if args is None else args)
        state = extra.setdefault("obj", CliState())
        undecodable = _undecodable_argument(argv)
        if undecodable is not None:
            output.write_error(
                code="usage_error",
                message=f"Argument {undecodable} is not valid UTF-8 text; nothing was done.",
                json_mode=_json_requested(state, argv),
            )
            if standalone_mode:
                sys.exit(EXIT_USAGE)
            return EXIT_USAGE

        def invoke() -> Any:
            return super(RoundtableGroup, self).main(
                argv, prog_name or "roundtable", complete_var, standalone_mode=False, **extra
            )

        code = run_guarded(invoke, state=state, argv=argv)
        if standalone_mode:
            sys.exit(code)
        return code


def _undecodable_argument(argv: Sequence[str]) -> int | None:
    """The 1-based position of an argument holding bytes that were not UTF-8 (Python keeps them
    as lone surrogates, which no database can store), if any."""
    for position, argument in enumerate(argv, start=1):
        if any("\ud800" <= char <= "\udfff" for char in argument):
            return position
    return None


def _json_requested(state: Any, argv: Sequence[str]) -> bool:
    if isinstance(state, CliState) and state.json_mode is not None:
        return state.json_mode
    options = argv[: argv.index("--")] if "--" in argv else argv
    return "--json" in options


def run_guarded(invoke: Callable[[], Any], *, state: Any, argv: Sequence[str]) -> int:
    try:
        result = invoke()
        return result if isinstance(result, int) and not isinstance(result, bool) else 0
    except click.exceptions.NoArgsIsHelpError as error:
        error.show()
        return EXIT_USAGE
    except click.UsageError as error:
        _show_usage(error)
        output.write_error(
            code="usage_error",
            message=error.format_message(),
            json_mode=_json_requested(state, argv),
        )
        return EXIT_USAGE
    except click.ClickException as error:
        output.write_error(
            code="usage_error" if error.exit_code == EXIT_USAGE else "error",
            message=error.format_message(),
            json_mode=_json_requested(state, argv),
        )
        return error.exit_code
    except (click.Abort, KeyboardInterrupt):
        output.write_error(
            code="interrupted", message="Interrupted.", json_mode=_json_requested(state, argv)
        )
        return EXIT_INTERRUPTED
    except Exception as error:
        code, name, message, details = _classify(error)
        output.write_error(
            code=name, message=message, details=details, json_mode=_json_requested(state, argv)
        )
        return code


def _show_usage(error: click.UsageError) -> None:
    ctx = error.ctx
    if ctx is None:
        return
    click.echo(ctx.get_usage(), err=True)
    if ctx.command.get_help_option(ctx) is not None:
        click.echo(f"Try '{ctx.command_path} --help' for help.", err=True)


def _classify(error: Exception) -> tuple[int, str, str, Mapping[str, Any] | None]:
    from roundtable_console.store.errors import StoreError
    from roundtable_console.tui.config import ConfigError

    if isinstance(error, StoreError):
        code = EXIT_USAGE if error.is_bad_input else EXIT_REFUSED
        return code, error.code, error.message, error.details or None
    if isinstance(error, ConfigError):
        return EXIT_USAGE, error.code, error.message, None
    text = str(error).strip().splitlines()
    reason = f": {text[0]}" if text else ""
    return (
        EXIT_REFUSED,
        "internal_error",
        f"Unexpected {type(error).__name__}{reason}. "
        "This is a bug in roundtable; please report it.",
        None,
    )


@click.group(
    "roundtable",
    cls=RoundtableGroup,
    help="Roundtable agent sessions: the store, the CLI agents use, and the operator console.\n\n"
    + OUTPUT_HELP,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(package_name="roundtable-console", prog_name="roundtable")
def cli() -> None:
    pass


# ------------------------------------------------------------------------------------ sessions


@cli.group(
    "sessions",
    invoke_without_command=True,
    help="List sessions (the default), or register, heartbeat, end, inspect and act on one.\n\n"
    + OUTPUT_HELP,
)
@_list_options
@_common_options
@click.pass_context
def sessions_group(
    ctx: click.Context,
    db: str | None,
    root: str | None,
    as_json: bool,
    read_only: bool,
    **filters: Any,
) -> None:
    ctx.meta[_GROUP_OPTIONS] = {"db": db, "root": root, "as_json": as_json, "read_only": read_only}
    if as_json:
        ctx.ensure_object(CliState).json_mode = True
    if ctx.invoked_subcommand is None:
        inv = _invocation(ctx, db=db, root=root, as_json=as_json, read_only=read_only)
        _list_sessions(inv, **filters)
    elif ctx.invoked_subcommand == "list":
        ctx.meta[_GROUP_FILTERS] = filters
    elif any(_given(value) for value in filters.values()):
        raise click.UsageError(
            "List filters (--status, --agent, --limit, …) apply only to listing sessions.", ctx=ctx
        )


def _given(value: Any) -> bool:
    return value not in (None, (), False)


@sessions_group.command("list", help="List sessions: ID, agent, status, adapter, resume command.")
@_list_options
@with_invocation
def list_command(inv: Invocation, **filters: Any) -> None:
    group_filters = click.get_current_context().meta.get(_GROUP_FILTERS, {})
    for name, value in group_filters.items():
        if _given(value) and not _given(filters[name]):
            filters[name] = value
    _list_sessions(inv, **filters)


def _stale_cutoff(inv: Invocation) -> datetime:
    """Active sessions last seen before this are stale."""
    return inv.clock() - timedelta(seconds=inv.settings.stale_after_seconds)


def _session_filter(
    stale_cutoff: datetime, *, statuses: tuple[str, ...], stale: bool, **narrowing: Any
) -> SessionFilter:
    """The filter options (``_FILTERS``) as a ``SessionFilter``; ``narrowing``: the others, by
    their names in it."""
    from roundtable_console.store.reads.listing import SessionFilter

    statuses = tuple(status.strip() for status in statuses)
    return SessionFilter(
        statuses=statuses, stale_before=stale_cutoff if stale else None, **narrowing
    )


def _list_sessions(
    inv: Invocation,
    *,
    sort: str | None,
    descending: bool,
    limit: int | None,
    cursor: str | None,
    **filter_options: Any,
) -> None:
    from roundtable_console.store.reads.listing import SessionOrder
    from roundtable_console.store.reads.sessions import list_sessions

    stale_cutoff = _stale_cutoff(inv)
    filters = _session_filter(stale_cutoff, **filter_options)
    order = SessionOrder(sort or "started", descending).at(stale_cutoff)
    with inv.store() as store:

        def fetch(size: int | None, after: str | None) -> Page[AgentSession]:
            with store.read() as db:
                return list_sessions(db=db, filters=filters, limit=size, cursor=after, order=order)

        pages = _pages(fetch, inv, limit=limit, cursor=cursor, what="sessions")
        if inv.json_mode:
            page = next(pages)
            output.emit_json(
                {"items": [s.to_json() for s in page.items], "next_cursor": page.next_cursor}
            )
            return
        table = output.Table(SESSION_COLUMNS)
        for page in pages:
            table.write(
                (s.id, s.agent_id, s.status, s.adapter, s.external_resume_command)
                for s in page.items
            )
        table.finish("No sessions.")


def _pages(
    fetch: Callable[[int | None, str | None], Page[Any]],
    inv: Invocation,
    *,
    limit: int | None,
    cursor: str | None,
    what: str,
) -> Iterator[Page[Any]]:
    """The pages to print. Human output without --limit follows every cursor, one page in
    memory at a time; --json and --limit give one page and its cursor."""
    from roundtable_console.store.validation import MAX_LIMIT

    follow = not inv.json_mode and limit is None
    while True:
        page = fetch(MAX_LIMIT if follow else limit, cursor)
        yield page
        if not page.next_cursor:
            return
        if not follow:
            if not inv.json_mode:
                click.echo(f"More {what}: --cursor {page.next_cursor}", err=True)
            return
        cursor = page.next_cursor


@sessions_group.command("register", help="Register a session (an upsert keyed by --id).")
@click.option("--id", "session_id", required=True, metavar="S")
@click.option("--agent", "agent_id", required=True, metavar="A")
@click.option("--run", "run_id", required=True, metavar="R")
@click.option("--adapter", required=True, metavar="NAME")
@click.option("--cwd", "working_directory", required=True, metavar="DIR")
@click.option("--provider", metavar="P")
@click.option("--model", metavar="M")
@click.option("--external-session-id", metavar="E")
@click.option("--resume-command", metavar="C")
@click.option("--mcp-socket", metavar="PATH")
@click.option("--status", metavar="ST", help="Default: active.")
@click.option("--metadata", metavar="JSON", help="A JSON object.")
@with_invocation
def register_command(inv: Invocation, **values: Any) -> None:
    """``values``: the options, by the names of ``store.writes.agent_writes.register``'s
    parameters."""
    from roundtable_console.store.writes import quick_writes

    adapters = inv.adapters()
    session = quick_writes.register(inv.url(), adapters=adapters, clock=inv.clock, **values)
    if session is None:  # a store the quick path does not take
        from roundtable_console.store.writes.agent_writes import register

        with inv.store() as store, store.write() as db:
            session = register(db=db, adapters=adapters, clock=inv.clock, **values)
    print_session("register", session, json_mode=inv.json_mode)


HEARTBEAT_HELP = (
    """Record that a session is alive (the agent's heartbeat).

With --session more than once, or --all-matching and filters (--status then selects by
status), it is the operator's heartbeat of each session instead, as the console's h key: from
an active state only, recorded with --operator's name.

"""
    + BULK_HELP
)


@sessions_group.command("heartbeat", help=HEARTBEAT_HELP)
@_sessions_option
@click.option(
    "--status",
    "statuses",
    multiple=True,
    metavar="ST",
    help="A new status (blank keeps the current one); with --all-matching, only sessions in "
    "this status (repeat).",
)
@click.option("--external-session-id", metavar="E", help="Blank keeps the current one.")
@click.option(
    "--waiting",
    metavar="REASON",
    help="The session waits for a human, for this reason (≤ 500 characters); "
    "the next heartbeat without it ends the wait.",
)
@click.option(
    "--every",
    metavar="SECONDS",
    type=click.FloatRange(min=0.05, max=86_400),
    help="Keep beating every SECONDS until interrupted (SIGINT or SIGTERM ends it cleanly).",
)
@_run_key_option
@_operator_option
@_all_matching_option
@_dry_run_option
@_filter_options(besides=("statuses", "waiting"))
@with_invocation
def heartbeat_command(
    inv: Invocation,
    session_ids: tuple[str, ...],
    statuses: tuple[str, ...],
    external_session_id: str | None,
    waiting: str | None,
    every: float | None,
    all_matching: bool,
    **options: Any,
) -> int | None:
    if all_matching or len(session_ids) > 1:
        singles = {
            "--every": every,
            "--external-session-id": external_session_id,
            "--waiting": waiting,
        }
        return _operator_heartbeats(inv, session_ids, statuses, all_matching, singles, **options)
    _refuse_bulk_only_options(options)
    if not session_ids:
        raise click.UsageError("Give --session S (or several, or --all-matching with filters).")
    if len(statuses) > 1:
        raise click.UsageError(
            "One session's heartbeat takes one --status (more select sessions, with "
            "--all-matching)."
        )
    status = statuses[0] if statuses else None
    session_id = _session_id(session_ids[0])
    _agent_heartbeat(inv, session_id, status, external_session_id, waiting, every)
    return None


def _operator_heartbeats(
    inv: Invocation,
    session_ids: tuple[str, ...],
    statuses: tuple[str, ...],
    all_matching: bool,
    singles: Mapping[str, Any],
    *,
    dry_run: bool,
    **options: Any,
) -> int:
    """The operator's heartbeat of several sessions (``singles``: the options of one
    session's own heartbeat, refused here)."""
    given = [flag for flag, value in singles.items() if value is not None]
    if given:
        raise click.UsageError(
            f"{_flags(given, 'applies', 'apply')} to one session's own heartbeat, not to the "
            "operator's heartbeat of several."
        )
    if statuses and not all_matching:
        raise click.UsageError(
            "--status sets one session's new status; to select sessions by status, use "
            "--all-matching --status ST."
        )
    filters = {name: options.pop(name, None) for name in _FILTER_NAMES}
    # Here --status selects by status (with --all-matching), and --waiting is one session's
    # own reason to wait, not the list's filter.
    filters.update(statuses=statuses, waiting=False)
    target = _bulk_selection(inv, session_ids, all_matching, dry_run, filters)
    assert target is not None  # several sessions, or a selection
    return _run_bulk(inv, "heartbeat", *target, dry_run=dry_run, **options)


def _refuse_bulk_only_options(options: Mapping[str, Any]) -> None:
    """One session's own heartbeat takes neither a selection nor the operator's options."""
    _refuse_filters_without_all_matching(options)
    operator_only = [
        flag
        for name, flag in (
            ("dry_run", "--dry-run"),
            ("idempotency_key", "--idempotency-key"),
            ("operator", "--operator"),
        )
        if _given(options.get(name))
    ]
    if operator_only:
        raise click.UsageError(
            f"{_flags(operator_only, 'applies', 'apply')} to the operator's heartbeat of "
            "several sessions (--session more than once, or --all-matching)."
        )


def _agent_heartbeat(
    inv: Invocation,
    session_id: str,
    status: str | None,
    external_session_id: str | None,
    waiting: str | None,
    every: float | None,
) -> None:
    table = None if inv.json_mode else output.Table(ROWS["heartbeat"][0])

    def show(session: SessionFields) -> None:
        if table is None:
            output.emit_json(session.to_json())
        else:
            table.write([ROWS["heartbeat"][1](session)])

    values = {
        "session_id": session_id,
        "status": status,
        "external_session_id": external_session_id,
        "waiting": waiting,
    }
    if every is None:
        from roundtable_console.store.writes import quick_writes

        quick = quick_writes.heartbeat(inv.url(), clock=inv.clock, **values)
        if quick is not None:
            show(quick)
            return
    from roundtable_console.store.writes.agent_writes import heartbeat

    def beat(store: Store) -> None:
        with store.write() as db:
            session = heartbeat(db=db, clock=inv.clock, **values)
        show(session)

    with inv.store() as store:
        if every is None:
            beat(store)
            return
        _beat_until_stopped(store, beat, every)


def _beat_until_stopped(store: Store, beat: Callable[[Store], None], every: float) -> None:
    """One process, one connection pool, many beats: agents pay start-up once. A database that
    is briefly unavailable is reported and retried at the next beat; any other refusal ends it."""
    import signal
    import threading

    from roundtable_console.store.errors import DatabaseUnavailable

    stopping = threading.Event()
    previous = {
        sig: signal.signal(sig, lambda _sig, _frame: stopping.set())
        for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        while not stopping.is_set():
            try:
                beat(store)
            except DatabaseUnavailable as error:
                output.echo_text(f"warning: {error.message} (retrying)", err=True)
            stopping.wait(every)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@sessions_group.command("end", help="Record that a session ended.")
@_session_option
@click.option("--status", metavar="ST", help="Final status (default: ended).")
@with_invocation
def end_command(inv: Invocation, session_id: str, status: str | None) -> None:
    from roundtable_console.store.writes import quick_writes

    session_id = _session_id(session_id)
    session = quick_writes.end(inv.url(), session_id=session_id, status=status, clock=inv.clock)
    if session is None:  # a store the quick path does not take
        from roundtable_console.store.writes.agent_writes import end

        with inv.store() as store, store.write() as db:
            session = end(db=db, session_id=session_id, status=status, clock=inv.clock)
    print_session("end", session, json_mode=inv.json_mode)


@sessions_group.command("show", help="Every field of one session.")
@_session_option
@with_invocation
def show_command(inv: Invocation, session_id: str) -> None:
    from roundtable_console.store.service import read_session

    with inv.store() as store:
        session = read_session(store=store, session_id=_session_id(session_id))
    record = session.to_json()
    if inv.json_mode:
        output.emit_json(record)  # redacted like every output: `export` alone is raw
        return
    waiting = session.waiting
    record["waiting"] = None if waiting is None else f"{waiting.reason} (since {waiting.since})"
    pairs = list(record.items())
    stale_after = timedelta(seconds=inv.settings.stale_after_seconds)
    position = next(i for i, (name, _) in enumerate(pairs) if name == "status") + 1
    pairs.insert(position, ("stale", session.is_stale(inv.clock(), stale_after)))
    output.write_record(pairs)


def _projection_command(name: str, *, paged: bool) -> None:
    def command(inv: Invocation, session_id: str, **page: Any) -> None:
        if paged:
            _show_projection_pages(inv, name, _session_id(session_id), **page)
        else:
            _show_projection_record(inv, name, _session_id(session_id))

    decorated = with_invocation(command)
    if paged:
        decorated = _page_options(decorated)
    decorated = _session_option(decorated)
    sessions_group.command(name, help=f"The session's {name} (a projection of the store).")(
        decorated
    )


def _show_projection_record(inv: Invocation, name: str, session_id: str) -> None:
    from roundtable_console.store.service import read_projection

    with inv.store() as store:
        result = read_projection(store=store, name=name, session_id=session_id)
    if inv.json_mode:
        output.emit_json(result)
    else:
        output.write_record(output.flatten(result))


def _show_projection_pages(
    inv: Invocation, name: str, session_id: str, *, limit: int | None, cursor: str | None
) -> None:
    from roundtable_console.store.service import read_projection_page

    with inv.store() as store:

        def fetch(size: int | None, after: str | None) -> Page[dict[str, Any]]:
            return read_projection_page(
                store=store, name=name, session_id=session_id, limit=size, cursor=after
            )

        pages = _pages(fetch, inv, limit=limit, cursor=cursor, what=name)
        if inv.json_mode:
            page = next(pages)
            output.emit_json({"items": page.items, "next_cursor": page.next_cursor})
            return
        table: output.Table | None = None
        for page in pages:
            if page.items and table is None:
                table = output.Table([key.replace("_", " ") for key in page.items[0]])
            if table is not None:
                table.write(list(item.values()) for item in page.items)
        if table is None and output.stdout_is_tty():
            click.echo(f"No {name}.")


for _name in (*PAGED_PROJECTIONS, *UNPAGED_PROJECTIONS):
    _projection_command(_name, paged=_name in PAGED_PROJECTIONS)


# ------------------------------------------------------------------------------------ lifecycle


def _lifecycle_command(action: str, summary: str, *, impact: bool = False) -> None:
    def command(
        inv: Invocation,
        session_ids: tuple[str, ...],
        all_matching: bool,
        dry_run: bool,
        expected_version: int | None,
        **options: Any,
    ) -> int | None:
        filters = {name: options.pop(name) for name in _FILTER_NAMES}
        target = _bulk_selection(inv, session_ids, all_matching, dry_run, filters)
        if target is None:
            session_id = _session_id(session_ids[0])
            _run_lifecycle(inv, action, session_id, expected_version=expected_version, **options)
            return None
        if expected_version is not None:
            raise click.UsageError(
                "--expected-version applies to one session; with several, each is judged as it "
                "is when the action reaches it."
            )
        return _run_bulk(inv, action, *target, dry_run=dry_run, **options)

    decorated = with_invocation(command)
    decorated = _filter_options()(decorated)
    decorated = _dry_run_option(_all_matching_option(decorated))
    if impact:
        decorated = click.option(
            "--impact-details",
            metavar="TEXT",
            help="Required when the agent holds active claims: what terminating affects.",
        )(decorated)
    decorated = click.option(
        "--expected-version",
        type=click.IntRange(min=0),
        metavar="N",
        help="Refuse if the session's version is no longer N (one session only).",
    )(decorated)
    decorated = _operator_option(decorated)
    decorated = _run_key_option(decorated)
    sessions_group.command(action, help=f"{summary}\n\n{BULK_HELP}")(_sessions_option(decorated))


_lifecycle_command("pause", "Pause a session (from an active state other than paused).")
_lifecycle_command("stop", "Stop a session (from an active state).")
_lifecycle_command(
    "resume", "Mark a paused or stopped session as resuming (needs --idempotency-key)."
)
_lifecycle_command(
    "terminate",
    "Terminate a session (needs --idempotency-key; releases no claim, cancels no task).",
    impact=True,
)


def _bulk_selection(
    inv: Invocation,
    session_ids: tuple[str, ...],
    all_matching: bool,
    dry_run: bool,
    filters: Mapping[str, Any],
) -> tuple[Selection, tuple[str, ...] | None] | None:
    """The sessions a lifecycle command acts on, as a bulk selection and, for --session
    repeated, the order they were given in; None for exactly one --session (and no
    --dry-run), which the command handles as it always has."""
    if session_ids and all_matching:
        raise click.UsageError(
            "Give sessions with --session or select them with --all-matching, not both."
        )
    if not all_matching:
        _refuse_filters_without_all_matching(filters)
    if not all_matching and not session_ids:
        raise click.UsageError(
            "Give --session S (repeat it for several sessions), or --all-matching with filters."
        )
    ids = [_session_id(session_id) for session_id in session_ids]
    if len(ids) == 1 and not dry_run:
        return None
    from roundtable_console.store.reads.listing import FilterSelection, Selection

    if all_matching:
        chosen = FilterSelection(_session_filter(_stale_cutoff(inv), **filters))
        return Selection(by_filter=(chosen,)), None
    return Selection(ids=frozenset(ids)), tuple(ids)


def _flags(flags: Sequence[str], one: str, many: str) -> str:
    """``--a, --b apply`` / ``--a applies``: flags named in a refusal, with their verb."""
    return f"{', '.join(flags)} {one if len(flags) == 1 else many}"


def _refuse_filters_without_all_matching(options: Mapping[str, Any]) -> None:
    given = [flag for name, flag, _option in _FILTERS if _given(options.get(name))]
    if given:
        raise click.UsageError(
            f"{_flags(given, 'selects', 'select')} sessions only with --all-matching, so a typo "
            "never acts on a fleet: add --all-matching to act on every session that matches."
        )


def _run_bulk(
    inv: Invocation,
    action: str,
    selection: Selection,
    order: tuple[str, ...] | None,
    *,
    dry_run: bool,
    operator: str | None,
    idempotency_key: str | None,
    impact_details: str | None = None,
) -> int:
    """The action on every selected session (store.writes.bulk), or with ``dry_run`` what it would
    do. Exit 1 when any session failed (or would)."""
    from roundtable_console.store.writes.bulk import plan_bulk, run_bulk

    key = (idempotency_key or "").strip() or None
    table = None if inv.json_mode else output.Table(BULK_COLUMNS)
    with inv.store() as store:
        if dry_run:
            plan = plan_bulk(
                store=store,
                action=action,
                selection=selection,
                order=order,
                impact_details=impact_details,
                run_key=key,
                clock=inv.clock,
                keep=None,
            )
            _print_bulk(inv, table, plan.tally, plan.to_json(), note="dry run: nothing written")
            return EXIT_REFUSED if plan.tally.failed else 0
        outcome = run_bulk(
            store=store,
            action=action,
            selection=selection,
            order=order,
            actor=inv.operator(operator),
            run_key=key,
            impact_details=impact_details,
            clock=inv.clock,
            # Text is written as each transaction commits, and not kept; JSON is one object.
            on_items=None if table is None else lambda items: table.write(map(_bulk_row, items)),
            keep=0 if table is not None else None,
        )
    note = f"idempotency key {key}" if key is not None else "no idempotency key"
    _print_bulk(inv, table, outcome.tally, outcome.to_json(), note=note, written=True)
    if outcome.error is not None:
        output.write_error(
            code=outcome.error.code,
            message=f"The run stopped: {outcome.error.message}",
            json_mode=inv.json_mode,
        )
    return EXIT_REFUSED if outcome.tally.failed or not outcome.complete else 0


BULK_COLUMNS = ("session", "outcome", "code", "message")


def _bulk_row(item: BulkItem) -> tuple[str, str, str | None, str]:
    return (item.session_id, item.outcome, item.code, item.message)


def _print_bulk(
    inv: Invocation,
    table: output.Table | None,
    tally: Tally,
    body: dict[str, Any],
    *,
    note: str,
    written: bool = False,
) -> None:
    """A bulk report: JSON, or a line per session (unless ``written`` as they came) and the
    totals."""
    if table is None:
        output.emit_json(body)
        return
    if not written:
        table.write(map(_bulk_row, tally.items))
    table.finish("No sessions.")
    click.echo(
        f"{tally.done} done, {tally.skipped} skipped, {tally.failed} failed ({output.cell(note)})."
    )


def _run_lifecycle(
    inv: Invocation, action: str, session_id: str, *, operator: str | None, **options: Any
) -> None:
    """``options``: the command's --idempotency-key, --expected-version and, to terminate,
    --impact-details, by the lifecycle function's parameter names."""
    from roundtable_console.store.service import perform_action

    arguments = {"session_id": session_id, "actor": inv.operator(operator), **options}
    with inv.store() as store:
        outcome = perform_action(store=store, action=action, clock=inv.clock, **arguments)
    if inv.json_mode:
        output.emit_json(outcome.to_json())
    else:
        _print_outcome(outcome)


def _print_outcome(outcome: ActionOutcome) -> None:
    session = outcome.session
    lines = [
        f"{outcome.action}: session {output.cell(session.id)} is now "
        f"{output.cell(session.status)} (version {session.version})."
    ]
    if outcome.claims:
        lines.append(f"Active claims of agent {output.cell(session.agent_id)}:")
        lines.extend(_claim_line(claim) for claim in outcome.claims)
    lines.extend(output.cell(note) for note in outcome.notes)
    if outcome.replayed:
        lines.append("(replayed: already applied with this key)")
    click.echo("\n".join(lines))


def _claim_line(claim: Mapping[str, Any]) -> str:
    expired = ", expired" if claim.get("expired") else ""
    return (
        f"  - {output.cell(claim.get('resource_id'))} (task {output.cell(claim.get('task_id'))}, "
        f"{output.cell(claim.get('claim_type'))}, expires "
        f"{output.cell(claim.get('expires_at'))}{expired})"
    )


# ------------------------------------------------------------------------------------ resume


RESUME_HELP = """Print a session's resume briefing (Markdown), then its resume plan.

With --exec: resume the session (the lifecycle resume, as `sessions resume`) and become its
agent, running the resume plan's argv in the session's working directory (never through a
shell), so the exit status is the agent's. Everything that can be checked is checked first (a
resume plan, the working directory, the program on PATH): a refusal changes nothing. A key is
made (and said on stderr) when --idempotency-key is not given; the same key again launches
without resuming twice. With --json nothing is printed before the agent starts."""


@cli.command("resume", help=RESUME_HELP)
@click.option("--session", "session_id", metavar="S", help="The session to resume.")
@click.option("--agent", metavar="A", help="The agent whose session to resume (active first).")
@click.option("--exec", "launch", is_flag=True, help="Resume, then run the agent in its place.")
@click.option("--idempotency-key", metavar="K", help="With --exec: the resume's key.")
@_operator_option
@with_invocation
def resume_command(
    inv: Invocation,
    session_id: str | None,
    agent: str | None,
    launch: bool,
    idempotency_key: str | None,
    operator: str | None,
) -> None:
    from roundtable_console.store.service import read_briefing
    from roundtable_console.store.validation import required

    if (session_id is None) == (agent is None):
        raise click.UsageError("Give exactly one of --session or --agent.")
    if not launch and (idempotency_key is not None or operator is not None):
        raise click.UsageError("--idempotency-key and --operator go with --exec.")
    if launch:
        _resume_and_exec(
            inv,
            session_id=None if session_id is None else required("--session", session_id),
            agent_id=None if agent is None else required("--agent", agent),
            idempotency_key=(idempotency_key or "").strip() or None,
            operator=operator,
        )
        return
    adapters = inv.adapters()
    with inv.store() as store:
        view = read_briefing(
            store=store,
            adapters=adapters,
            session_id=None if session_id is None else required("--session", session_id),
            agent_id=None if agent is None else required("--agent", agent),
            clock=inv.clock,
        )
    briefing, plan = view.briefing, view.plan
    if inv.json_mode:
        output.emit_json(
            {
                "session_id": view.session.id,
                "briefing": briefing.markdown,
                "resumable": plan.resumable,
                "resume_argv": list(plan.argv) if plan.resumable else None,
                "reason": plan.reason,
            }
        )
        return
    output.echo_text(briefing.markdown.rstrip("\n"))
    click.echo()
    if plan.resumable:
        click.echo("Resume command (the briefing above is its last argument):")
        output.echo_text(shlex.join(plan.argv))
    else:
        click.echo(f"Not resumable: {output.cell(plan.reason)}")


def _resume_and_exec(
    inv: Invocation,
    *,
    session_id: str | None,
    agent_id: str | None,
    idempotency_key: str | None,
    operator: str | None,
) -> None:
    """The launch plan (store.resume.launch: every check), the lifecycle resume, then ``execvp``."""
    import os
    from uuid import uuid4

    from roundtable_console.store.errors import NotLaunchable
    from roundtable_console.store.resume.launch import exec_launch, read_launch, resume_for_launch

    key = idempotency_key or str(uuid4())
    path = os.environ.get("PATH")
    adapters, actor = inv.adapters(), inv.operator(operator)
    with inv.store() as store:
        launch = read_launch(
            store=store,
            adapters=adapters,
            session_id=session_id,
            agent_id=agent_id,
            clock=inv.clock,
            path=path,
        )
        outcome = resume_for_launch(
            store=store, launch=launch, actor=actor, idempotency_key=key, clock=inv.clock
        )
    session = outcome.session
    if not inv.json_mode:
        done = "already resumed with this key" if outcome.replayed else "resumed"
        lines = [
            f"Session {output.cell(session.id)} {done} (now {output.cell(session.status)}, "
            f"idempotency key {key}); starting {output.cell(launch.program)} in "
            f"{output.cell(launch.cwd)}.",
            *(output.cell(note) for note in outcome.notes),
        ]
        click.echo("\n".join(lines), err=True)
    try:
        exec_launch(launch)
    except OSError as error:
        raise NotLaunchable(
            f"Session {session.id!r} was resumed, but {launch.program} could not be started: "
            f"{error.strerror or error}. Run the same command with --idempotency-key {key} to "
            "try again without resuming twice.",
            details={"reason": "exec_failed", "idempotency_key": key},
        ) from None


# ------------------------------------------------------------------------------------ the rest


def prefetch_first_rows(url: str, settings: Settings) -> Prefetch | None:
    """On PostgreSQL, a child process that reads the console's first rows in its first order
    (``store.reads.first_window.prefetch``); None for any other store."""
    from roundtable_console.screens.context import DEFAULT_PAGE_SIZE
    from roundtable_console.store.clock import system_clock
    from roundtable_console.store.reads.first_window import prefetch
    from roundtable_console.store.reads.listing import SessionOrder

    now = system_clock()
    column = settings.group or settings.sort  # a grouped list is read in its grouping's order
    order = SessionOrder(column).at(now - timedelta(seconds=settings.stale_after_seconds))
    return prefetch(url, limit=DEFAULT_PAGE_SIZE, now=now, order=order)


@cli.command("tui", help="Open the operator console.")
@click.option(
    "--demo",
    is_flag=True,
    help="Open the demo: its own store, demo.db beside the default store in the user data "
    "directory (or the --db URL given), seeded with demo sessions when empty. Never the store "
    "you work in ($ROUNDTABLE_DB, --root, the config's database, the default store).",
)
@_operator_option
@with_invocation
def tui_command(inv: Invocation, demo: bool, operator: str | None) -> int:
    from roundtable_console.tui.config import resolve_demo_url

    settings = inv.settings
    url = resolve_demo_url(db=inv.db) if demo else inv.url()
    adapters = inv.adapters()
    actor = inv.operator(operator)
    # Before Textual is imported: on PostgreSQL a child process reads the first rows meanwhile.
    early = prefetch_first_rows(url, settings)
    from roundtable_console.tui.app import run_console

    return int(
        run_console(
            url=url,
            settings=settings,
            operator=actor,
            adapters=adapters,
            demo=demo,
            prefetched=early,
            read_only=inv.read_only,
        )
        or 0
    )


WATCH_HELP = """Print one line per change of the sessions, as it happens, until interrupted.

\b
Changes: registered, status (from → to, by whom), waiting_started, waiting_stopped, stale,
ended; heartbeat only with --heartbeats. --status keeps changes from or to that status.
--json: one object a line, {"at", "session_id", "change", "status", "previous_status",
"actor", "reason"}. Lines are flushed at once, for a pipe into notify-send, a chat hook or a
pager. On PostgreSQL a lost connection is said on stderr and resumed without missing a change.
SIGINT or SIGTERM ends it with exit 0."""


@cli.command("watch", help=WATCH_HELP)
@_filter_options(besides=("active_only", "stale", "waiting", "text"))
@click.option("--heartbeats", is_flag=True, help="Print heartbeats too.")
@with_invocation
def watch_command(
    inv: Invocation,
    statuses: tuple[str, ...],
    agent_id: str | None,
    run_id: str | None,
    workspace_id: str | None,
    heartbeats: bool,
) -> int:
    from roundtable_console.store.reads.changes import ChangeFilter
    from roundtable_console.tui.watch import watch

    if any(not status.strip() for status in statuses):
        raise click.BadParameter("must not be blank.", param_hint="'--status'")
    filters = ChangeFilter(
        statuses=tuple(status.strip() for status in statuses),
        agent_id=agent_id,
        run_id=run_id,
        workspace_id=workspace_id,
        heartbeats=heartbeats,
    )
    with inv.store() as store:
        return watch(
            store=store,
            filters=filters,
            stale_after_seconds=inv.settings.stale_after_seconds,
            clock=inv.clock,
            as_json=inv.json_mode,
        )


@cli.command("demo", help="Seed the store with demo sessions, agents, tasks and claims.")
@click.option("--sessions", "count", type=click.IntRange(min=0), metavar="N")
@with_invocation
def demo_command(inv: Invocation, count: int | None) -> None:
    from roundtable_console.store.writes.demo import seed_demo

    extra = {"sessions": count} if count is not None else {}
    with inv.store() as store, store.write() as db:
        counts = seed_demo(db=db, clock=inv.clock, **extra)
    _print_counts(inv, counts)


def _print_counts(inv: Invocation, counts: Mapping[str, Any]) -> None:
    if inv.json_mode:
        output.emit_json(dict(counts))
    else:
        output.write_record(list(counts.items()))


@cli.group("db", help="The database itself.")
def db_group() -> None:
    pass


@db_group.command("upgrade", help="Bring the schema up to date; says whether anything ran.")
@with_invocation
def upgrade_command(inv: Invocation) -> None:
    from sqlalchemy import exc

    from roundtable_console.store.db.database import (
        create_store_engine,
        describe_url,
        unavailable_message,
    )
    from roundtable_console.store.db.revision import HEAD_REVISION
    from roundtable_console.store.db.schema import ensure_schema
    from roundtable_console.store.errors import DatabaseUnavailable

    url = inv.url()
    engine = create_store_engine(url)
    try:
        ran = ensure_schema(engine, progress=_progress)
    except exc.DBAPIError as error:
        reason = str(error.orig or error).strip().splitlines()[0]
        raise DatabaseUnavailable(unavailable_message(describe_url(url), reason)) from None
    finally:
        engine.dispose()
    _warn_if_exposed(url)
    where = describe_url(url)
    if inv.json_mode:
        output.emit_json({"upgraded": ran, "revision": HEAD_REVISION, "database": where})
    elif ran:
        click.echo(f"Upgraded {output.cell(where)} to {HEAD_REVISION}.")
    else:
        click.echo(f"{output.cell(where)} is already up to date ({HEAD_REVISION}).")


def _warn_if_exposed(url: str) -> None:
    """A warning on stderr when other users of the machine may read the SQLite store."""
    from roundtable_console.store.db.drivers import sqlite_file
    from roundtable_console.store.db.private_files import exposure

    path = sqlite_file(url)
    said = exposure(path) if path is not None else None
    if said:
        output.echo_text(f"warning: {said}", err=True)


GRANTS_HELP = """Print the GRANT statements that give a PostgreSQL role what it needs, for the
schema's owner to run (psql -f). Least privilege: a viewer reads everything; a writer reads,
and writes sessions, their history, the run events, idempotency keys and the counts the
triggers keep; neither may change the schema (only its owner migrates). --db names the
database the statements grant CONNECT on (default: the store's)."""


@db_group.command("grants", help=GRANTS_HELP)
@click.option("--role", required=True, metavar="NAME", help="The role to grant to.")
@click.option("--viewer", "kind", flag_value="viewer", help="Read-only: opens and reads.")
@click.option("--writer", "kind", flag_value="writer", help="Reads, and acts on sessions.")
@with_invocation
def grants_command(inv: Invocation, role: str, kind: str | None) -> None:
    from roundtable_console.store.db.grants import grant_statements, role_name_problem

    if kind is None:
        raise click.UsageError("Give --viewer or --writer.")
    problem = role_name_problem(role)
    if problem is not None:
        raise click.BadParameter(problem, param_hint="'--role'")
    statements = grant_statements(role=role, kind=kind, database=_database_name(inv))
    if inv.json_mode:
        output.emit_json({"role": role, "kind": kind, "statements": statements})
        return
    for statement in statements:
        click.echo(statement)


def _database_name(inv: Invocation) -> str | None:
    """The PostgreSQL database of the store's URL, when it is one."""
    from sqlalchemy import exc
    from sqlalchemy.engine import make_url

    try:
        url = make_url(inv.url())
    except exc.ArgumentError:  # an unreadable URL names no database
        return None
    return url.database if url.get_backend_name() == "postgresql" else None


AUDIT_COLUMNS = ("at", "actor", "db role", "action", "session", "from → to", "impact")
AUDIT_HELP = """The operators' actions across all sessions, newest first: pause, stop, resume,
terminate, and the operator's heartbeat (an agent's own heartbeat is not one). Each with its
time, the operator's name, the database role that made it (PostgreSQL), the session, the
status it went from and to, and the impact text given (redacted). --json: {"items": [{"at",
"actor", "db_user", "action", "session_id", "previous_status", "status", "impact_details"}],
"next_cursor"}."""


@cli.command("audit", help=AUDIT_HELP + "\n\n" + OUTPUT_HELP)
@click.option("--actor", metavar="NAME", help="Only this operator's actions.")
@click.option(
    "--action", metavar="A", help="Only this action: heartbeat, pause, stop, resume, terminate."
)
@click.option("--session", "session_id", metavar="S", help="Only actions on this session.")
@click.option(
    "--since", metavar="WHEN", help="From this time (2026-09-17T10:00:00Z) or this long ago (2h)."
)
@_page_options
@with_invocation
def audit_command(
    inv: Invocation,
    actor: str | None,
    action: str | None,
    session_id: str | None,
    since: str | None,
    limit: int | None,
    cursor: str | None,
) -> None:
    from roundtable_console.store.reads.audit import (
        AuditEntry,
        AuditFilter,
        action_event,
        audit_page,
        since_time,
    )

    if action is not None:
        action_event(action)  # refused before the store is opened
    filters = AuditFilter(
        actor=actor,
        action=action,
        session_id=None if session_id is None else _session_id(session_id),
        since=None if since is None else since_time(since, inv.clock()),
    )
    with inv.store() as store:

        def fetch(size: int | None, after: str | None) -> Page[AuditEntry]:
            with store.read() as db:
                return audit_page(db=db, filters=filters, limit=size, cursor=after)

        pages = _pages(fetch, inv, limit=limit, cursor=cursor, what="actions")
        if inv.json_mode:
            page = next(pages)
            output.emit_json(
                {"items": [e.to_json() for e in page.items], "next_cursor": page.next_cursor}
            )
            return
        table = output.Table(AUDIT_COLUMNS)
        for page in pages:
            table.write(
                (
                    e.at,
                    e.actor,
                    e.db_user or "",
                    e.action,
                    e.session_id,
                    f"{e.previous_status or '?'} → {e.status or '?'}",
                    e.impact_details or "",
                )
                for e in page.items
            )
        table.finish("No operator actions.")


PRUNE_HELP = """Remove old heartbeat history: the agent_session_events rows of type heartbeat
older than DURATION (7d, 12h, 30m, 90s, 2w), but each session's newest. Every other row stays.
It runs in short transactions, each sized to hold SQLite's write lock about 10 ms, so agents keep
beating meanwhile, and says how many rows went and how much space that frees."""


@db_group.command("prune", help=PRUNE_HELP)
@click.option(
    "--heartbeats-older-than",
    "older_than",
    required=True,
    metavar="DURATION",
    help="Heartbeat rows older than this go: a whole number and s, m, h, d or w (e.g. 7d).",
)
@click.option("--dry-run", is_flag=True, help="Count what would go; write nothing.")
@with_invocation
def prune_command(inv: Invocation, older_than: str, dry_run: bool) -> None:
    from roundtable_console.store.writes.retention import (
        byte_size,
        parse_duration,
        prune_heartbeats,
    )

    duration = parse_duration(older_than)
    if duration is None:
        raise click.BadParameter(
            f"{older_than!r} is not a duration: give a whole number above 0 and a unit, s, m, "
            "h, d or w (7d is a week), up to ten years.",
            param_hint="'--heartbeats-older-than'",
        )
    with inv.store() as store:
        report = prune_heartbeats(
            store=store, older_than=duration, dry_run=dry_run, clock=inv.clock
        )
    if inv.json_mode:
        output.emit_json({**report.to_json(), "older_than": older_than.strip()})
        return
    verb = "Would remove" if dry_run else "Removed"
    longest = report.longest_batch_seconds * 1000
    click.echo(
        f"{verb} {report.removed} heartbeat {'row' if report.removed == 1 else 'rows'} "
        f"older than {output.cell(older_than.strip())} "
        f"(before {report.cutoff}), in {report.batches} "
        f"{'batch' if report.batches == 1 else 'batches'} (longest {longest:.1f} ms); "
        "every other row and each session's newest heartbeat kept."
        + (" Dry run: nothing written." if dry_run else "")
    )
    freed = byte_size(report.row_bytes)
    if report.free_bytes is None:
        click.echo(
            f"About {freed} of row data {'would be' if dry_run else 'is'} freed: new rows reuse "
            "it once (auto)vacuum has run, and VACUUM FULL returns it to the operating system."
        )
    else:
        click.echo(
            f"{freed} of row data {'would be' if dry_run else 'is'} freed. The file has "
            f"{byte_size(report.free_bytes)} in free pages{' now' if dry_run else ''}: new rows "
            "reuse them, and VACUUM returns them to the operating system."
        )


@cli.command(
    "import",
    help="Import JSON Lines (FILE, or - for stdin) in one transaction: all or nothing.",
)
@click.argument("source", metavar="FILE|-", type=click.File("rb"))
@with_invocation
def import_command(inv: Invocation, source: Any) -> None:
    from roundtable_console.store.writes.transfer import import_records

    with inv.store() as store, store.write(durable=True) as db:
        counts = import_records(db=db, lines=_utf8_lines(source), clock=inv.clock)
    _print_counts(inv, counts)


def _utf8_lines(source: Any) -> Iterator[str]:
    """The file's lines as text; a line that is not UTF-8 is a bad record, named like any other."""
    from roundtable_console.store.errors import InvalidImport

    for number, raw in enumerate(source, start=1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InvalidImport(
                f"line {number}: not UTF-8 text (byte {error.start + 1} of the line).",
                details={"line": number},
            ) from None


@cli.command(
    "export",
    help="Export every record as JSON Lines on stdout. RAW: this is the backup, so secrets are "
    "NOT redacted (every other command redacts); keep the file as safe as the store.",
)
@with_invocation
def export_command(inv: Invocation) -> None:
    from roundtable_console.store.writes.transfer import export_records

    with inv.store() as store, store.read() as db:
        counts = export_records(db=db, write=sys.stdout.write)
    sys.stdout.flush()
    if not inv.json_mode:
        total = sum(counts.values())
        click.echo(f"Exported {total} records.", err=True)


def main(argv: Sequence[str] | None = None) -> None:
    """The console script ``roundtable``."""
    try:
        cli.main(args=argv, prog_name="roundtable")
    finally:
        # The process is about to exit: spare it the interpreter's last garbage-collection sweep
        # over every object the imports made (~90 ms, paid by an agent on every heartbeat).
        gc.freeze()


if __name__ == "__main__":
    main()
