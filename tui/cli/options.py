"""The options several commands share: the list's filters (which also select the sessions of a
bulk action), its order and pages, the session or sessions acted on, a bulk action's
selection, dry run and key, the operator; and their values checked and turned into a
``SessionFilter``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import click

from roundtable_console.store.rules import SORT_COLUMNS

if TYPE_CHECKING:
    from roundtable_console.store.reads.listing import SessionFilter
    from roundtable_console.tui.cli.invocation import Invocation

# The list's filters: (parameter name, flag, option). The parameter names are those of
# store.reads.listing.SessionFilter, but for ``statuses`` and ``stale``, which ``session_filter``
# turns into theirs. `sessions list` and every bulk action (--all-matching) take these: a
# filter added here, with its field in SessionFilter, works in both.
FILTERS: tuple[tuple[str, str, Callable[[Callable[..., Any]], Callable[..., Any]]], ...] = (
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
        "host",
        "--host",
        click.option("--host", metavar="NAME", help="Only sessions on this machine."),
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
FILTER_NAMES: tuple[str, ...] = tuple(name for name, _flag, _option in FILTERS)


def filter_options(
    *, besides: tuple[str, ...] = ()
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The list's filters as options, but those named in ``besides`` (a command's own option of
    the same flag takes their place)."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        for name, _flag, option in reversed(FILTERS):
            if name not in besides:
                func = option(func)
        return func

    return decorate


def order_options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = click.option("--descending", is_flag=True, help="Sort the other way round.")(func)
    return click.option(
        "--sort",
        type=click.Choice(SORT_COLUMNS),
        help="The order: attention (what needs a human first), started (the default), "
        "last_seen, status or agent.",
    )(func)


def page_options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = click.option("--cursor", metavar="C", help="Continue after the page that gave C.")(func)
    return click.option("--limit", type=int, metavar="N", help="One page of N (1…200).")(func)


def list_options(func: Callable[..., Any]) -> Callable[..., Any]:
    return filter_options()(order_options(page_options(func)))


session_option = click.option("--session", "session_id", required=True, metavar="S")
sessions_option = click.option(
    "--session", "session_ids", multiple=True, metavar="S", help="The session (repeat for several)."
)
all_matching_option = click.option(
    "--all-matching",
    is_flag=True,
    help="Act on every session the filters select (filters are refused without it).",
)
dry_run_option = click.option(
    "--dry-run",
    is_flag=True,
    help="Say what would happen to each session; write nothing (exit 1 if any would fail).",
)
run_key_option = click.option(
    "--idempotency-key",
    metavar="K",
    help="The same key never applies twice; with several sessions, each one's key is derived "
    "from K, so running the same command again with K replays instead of applying.",
)
operator_option = click.option(
    "--operator", metavar="NAME", help="Who acts (default: config, $ROUNDTABLE_OPERATOR, login)."
)


def checked_session_id(value: str) -> str:
    from roundtable_console.store.validation import required

    return required("--session", value)


def was_given(value: Any) -> bool:
    return value not in (None, (), False)


def stale_cutoff_for(inv: Invocation) -> datetime:
    """Active sessions last seen before this are stale."""
    return inv.clock() - timedelta(seconds=inv.settings.stale_after_seconds)


def session_filter(
    stale_cutoff: datetime, *, statuses: tuple[str, ...], stale: bool, **narrowing: Any
) -> SessionFilter:
    """The filter options (``FILTERS``) as a ``SessionFilter``; ``narrowing``: the others, by
    their names in it."""
    from roundtable_console.store.reads.listing import SessionFilter

    statuses = tuple(status.strip() for status in statuses)
    return SessionFilter(
        statuses=statuses, stale_before=stale_cutoff if stale else None, **narrowing
    )


def flags_with_verb(flags: Sequence[str], one: str, many: str) -> str:
    """``--a, --b apply`` / ``--a applies``: flags named in a refusal, with their verb."""
    return f"{', '.join(flags)} {one if len(flags) == 1 else many}"


def refuse_filters_without_all_matching(options: Mapping[str, Any]) -> None:
    given = [flag for name, flag, _option in FILTERS if was_given(options.get(name))]
    if given:
        raise click.UsageError(
            f"{flags_with_verb(given, 'selects', 'select')} sessions only with --all-matching, "
            "so a typo never acts on a fleet: add --all-matching to act on every session that "
            "matches."
        )
