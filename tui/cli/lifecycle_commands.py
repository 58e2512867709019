"""The lifecycle actions, as ``sessions`` subcommands: ``pause``, ``stop``, ``resume`` and
``terminate``, each on one session (``store.service.perform_action``) or on several, given by
--session more than once or selected by --all-matching and the list's filters
(``store.writes.bulk_run``; the operator's heartbeat of several sessions runs here too)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from roundtable_console.tui import output
from roundtable_console.tui.cli.invocation import (
    Invocation,
    with_invocation,
    with_source_invocation,
)
from roundtable_console.tui.cli.options import (
    FILTER_NAMES,
    all_matching_option,
    checked_session_id,
    dry_run_option,
    filter_options,
    operator_option,
    refuse_filters_without_all_matching,
    run_key_option,
    session_filter,
    sessions_option,
    stale_cutoff_for,
)
from roundtable_console.tui.cli.printing import (
    BULK_COLUMNS,
    BULK_HELP,
    EXIT_REFUSED,
    bulk_row,
    print_bulk,
    print_outcome,
)

if TYPE_CHECKING:
    from roundtable_console.store.reads.listing import Selection


def _lifecycle_command(action: str, summary: str, *, impact: bool = False) -> click.Command:
    def command(
        inv: Invocation,
        session_ids: tuple[str, ...],
        all_matching: bool,
        dry_run: bool,
        expected_version: int | None,
        **options: Any,
    ) -> int | None:
        filters = {name: options.pop(name) for name in FILTER_NAMES}
        stop_agent = options.pop("stop_agent", False)
        if inv.server is not None:
            refuse_through_server(inv, session_ids, all_matching, dry_run, stop_agent, options)
        target = bulk_selection(inv, session_ids, all_matching, dry_run, filters)
        if target is None:
            session_id = checked_session_id(session_ids[0])
            return _run_lifecycle(
                inv, action, session_id, expected_version=expected_version,
                stop_agent=stop_agent, **options,
            )  # fmt: skip
        if expected_version is not None:
            raise click.UsageError(
                "--expected-version applies to one session; with several, each is judged as it "
                "is when the action reaches it."
            )
        if stop_agent:
            raise click.UsageError("--stop-agent applies to one session.")
        return run_bulk_action(inv, action, *target, dry_run=dry_run, **options)

    decorated = with_source_invocation(command)
    decorated = filter_options()(decorated)
    decorated = dry_run_option(all_matching_option(decorated))
    if impact:
        decorated = click.option(
            "--impact-details",
            metavar="TEXT",
            help="Required when the agent holds active claims: what terminating affects.",
        )(decorated)
        decorated = click.option(
            "--stop-agent",
            is_flag=True,
            help="Once terminated, stop its agent too, as stop-agent does (one session; an "
            "agent R or its host started may still run, and terminating alone leaves it).",
        )(decorated)
    decorated = click.option(
        "--expected-version",
        type=click.IntRange(min=0),
        metavar="N",
        help="Refuse if the session's version is no longer N (one session only).",
    )(decorated)
    decorated = operator_option(decorated)
    decorated = run_key_option(decorated)
    return click.command(action, help=f"{summary}\n\n{BULK_HELP}")(sessions_option(decorated))


LIFECYCLE_COMMANDS = (
    _lifecycle_command("pause", "Pause a session (from an active state other than paused)."),
    _lifecycle_command("stop", "Stop a session (from an active state)."),
    _lifecycle_command(
        "resume", "Mark a paused or stopped session as resuming (needs --idempotency-key)."
    ),
    _lifecycle_command(
        "terminate",
        "Terminate a session (needs --idempotency-key; releases no claim, cancels no task).",
        impact=True,
    ),
)


@click.command(
    "stop-agent",
    help="Stop the session's agent process: SIGINT, then SIGTERM after --grace seconds. For an "
    "agent started by R in this machine's tmux, or by a host (asked through the store: a server "
    "or, on PostgreSQL, the host itself answers). The session's status is its hooks' to change.",
)
@click.option("--session", "session_id", required=True, metavar="ID", help="The session.")
@click.option("--grace", type=click.FloatRange(0, 60), default=10.0, show_default=True,
              metavar="SECONDS", help="How long SIGINT is given before SIGTERM.")  # fmt: skip
@operator_option
@with_invocation
def stop_agent_command(
    inv: Invocation, session_id: str, grace: float, operator: str | None
) -> None:
    from roundtable_console.agents.stopping import stop_session_agent

    session_id = checked_session_id(session_id)
    actor = inv.operator(operator)
    with inv.store() as store:
        stopped = stop_session_agent(store, session_id, actor=actor, grace=grace, clock=inv.clock)
    if inv.json_mode:
        output.emit_json({"session_id": session_id, **stopped.payload})
    else:
        output.echo_text(stopped.words(session_id))


def bulk_selection(
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
        refuse_filters_without_all_matching(filters)
    if not all_matching and not session_ids:
        raise click.UsageError(
            "Give --session S (repeat it for several sessions), or --all-matching with filters."
        )
    ids = [checked_session_id(session_id) for session_id in session_ids]
    if len(ids) == 1 and not dry_run:
        return None
    from roundtable_console.store.reads.listing import FilterSelection, Selection

    if all_matching:
        chosen = FilterSelection(session_filter(stale_cutoff_for(inv), **filters))
        return Selection(by_filter=(chosen,)), None
    return Selection(ids=frozenset(ids)), tuple(ids)


def run_bulk_action(
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
    """The action on every selected session (store.writes.bulk_run), or with ``dry_run`` what it
    would do (store.writes.bulk_plan). Exit 1 when any session failed (or would)."""
    from roundtable_console.store.writes.bulk_plan import plan_bulk
    from roundtable_console.store.writes.bulk_run import run_bulk

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
            print_bulk(table, plan.tally, plan.to_json(), note="dry run: nothing written")
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
            on_items=None if table is None else lambda items: table.write(map(bulk_row, items)),
            keep=0 if table is not None else None,
        )
    note = f"idempotency key {key}" if key is not None else "no idempotency key"
    print_bulk(table, outcome.tally, outcome.to_json(), note=note, written=True)
    if outcome.error is not None:
        output.write_error(
            code=outcome.error.code,
            message=f"The run stopped: {outcome.error.message}",
            json_mode=inv.json_mode,
        )
    return EXIT_REFUSED if outcome.tally.failed or not outcome.complete else 0


def refuse_through_server(
    inv: Invocation,
    session_ids: tuple[str, ...],
    all_matching: bool,
    dry_run: bool,
    stop_agent: bool,
    options: Mapping[str, Any],
) -> None:
    """Through a server, an action is on one session, as the token's own name."""
    if len(session_ids) != 1 or all_matching or dry_run:
        raise click.UsageError(
            "Through a server, an action is on one session (--session S); several sessions, "
            "--all-matching and --dry-run act on a store (--db)."
        )
    if stop_agent:
        raise click.UsageError(
            "Through a server, stop the agent from the web console's session page; "
            "--stop-agent acts on a store (--db)."
        )
    inv.operator_through_server(options.get("operator"))


def _act_through_server(inv: Invocation, action: str, session_id: str, **options: Any) -> None:
    """The action through the server, which records the token's name as who acted."""
    with inv.source() as source:
        outcome = source.act(action, session_id, **options)
    if inv.json_mode:
        output.emit_json(outcome.to_json())
    else:
        print_outcome(outcome)


def _run_lifecycle(
    inv: Invocation,
    action: str,
    session_id: str,
    *,
    operator: str | None,
    stop_agent: bool = False,
    **options: Any,
) -> int | None:
    """``options``: the command's --idempotency-key, --expected-version and, to terminate,
    --impact-details, by the lifecycle function's parameter names. ``stop_agent``: once done,
    its agent stopped where it runs; why not, after the outcome (exit 1)."""
    from roundtable_console.agents.stopping import stop_session_agent
    from roundtable_console.store.errors import StoreError
    from roundtable_console.store.service import perform_action, read_termination_impact

    if inv.server is not None:
        return _act_through_server(inv, action, session_id, **options)
    actor = inv.operator(operator)
    arguments = {"session_id": session_id, "actor": actor, **options}
    refusal: StoreError | None = None
    with inv.store() as store:
        outcome = perform_action(store=store, action=action, clock=inv.clock, **arguments)
        stopped = None
        still_runs = None
        if stop_agent:
            try:
                stopped = stop_session_agent(store, session_id, actor=actor, clock=inv.clock)
            except StoreError as error:
                refusal = error
        elif action == "terminate" and not inv.json_mode:
            still_runs = read_termination_impact(store=store, session_id=session_id).agent_note
    if inv.json_mode:
        extra = {"agent_stopped": stopped.payload} if stopped is not None else {}
        output.emit_json({**outcome.to_json(), **extra})
    else:
        print_outcome(outcome)
        if stopped is not None:
            output.echo_text(stopped.words(session_id))
        if still_runs is not None:
            output.echo_text(f"{still_runs} (roundtable sessions stop-agent --session ID)")
    if refusal is not None:
        output.write_error(code=refusal.code, message=f"Its agent: {refusal.message}",
                           json_mode=inv.json_mode)  # fmt: skip
        return EXIT_REFUSED
    return None
