"""Ours, for the terminal console reading through the server (``roundtable tui --server``): its
list's reads, answered by the very functions a console on the store calls
(``store.window.rows``), the questions and answers in their JSON (``store.window.wire``). They
are reads, sent as POST for their bodies (a read's question holds a row and a filter).

A person's token reads them (a viewer's too); an agent's or a host's is refused. A token bound
to workspaces reads one of them at a time, as on the web console: the one its filter names, else
its first; nothing is counted beyond it (``read_rows``'s wall)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.edge.identity import Caller
from roundtable_console.api.problems import Problem
from roundtable_console.api.routes.bodies import decoded_object
from roundtable_console.api.routes.session_records import person, within_reach
from roundtable_console.store.reads.listing import FilterSelection, Selection, SessionFilter
from roundtable_console.store.safety.credentials import redact_output_value
from roundtable_console.store.validation import has_control_characters
from roundtable_console.store.window import rows, wire
from roundtable_console.store.writes.bulk_plan import PREVIEW_ITEMS, plan_bulk
from roundtable_console.store.writes.bulk_wire import plan_json
from roundtable_console.store.writes.lifecycle import ACTIONS


def _question(
    ctx: ServerContext, call: Call, fields: tuple[str, ...]
) -> tuple[Caller, dict[str, Any]]:
    caller = person(ctx, call)
    body = decoded_object(call.body, fields=fields, code="invalid_request_body", optional=False)
    return caller, body


def _refused(error: ValueError) -> Problem:
    return Problem("invalid_request_body", str(error))


def read_rows(ctx: ServerContext, call: Call) -> Answer:
    """The rows a console's list asks for, with their claims and the counts."""
    caller, body = _question(ctx, call, wire.ASKED_FIELDS)
    try:
        asked = wire.asked_from(body)
    except wire.WireError as error:
        raise _refused(error) from None
    current = ctx.store.change_token()
    same = asked.unless_token is not None and wire.token_text(current) == asked.unless_token
    asked = replace(
        asked, unless_token=current if same else None, filters=within_reach(caller, asked.filters)
    )
    try:
        answer = rows.read_rows(
            store=ctx.store, asked=asked, counts=rows.StatusCounts(), groups=rows.GroupCounts(),
            wall=caller.wall,
        )  # fmt: skip
    except (ValueError, OverflowError) as error:  # a time or a place no list has
        raise Problem("invalid_request_body", f"The question cannot be answered: {error}") from None
    body = wire.answer_json(answer)
    # Redacted as every read path is (a metadata's key, a resume command's password).
    body["rows"] = [redact_output_value(row) for row in body.get("rows", [])]
    return Answer(200, body)


def count(ctx: ServerContext, call: Call) -> Answer:
    """How many sessions a filter lets through, or (``grouping``) its groups."""
    caller, body = _question(ctx, call, ("filters", "grouping", "descending"))
    try:
        filters = within_reach(caller, wire.filter_from(body.get("filters")))
    except wire.WireError as error:
        raise _refused(error) from None
    grouping = body.get("grouping")
    if grouping is None:
        return Answer(200, {"total": rows.count_rows(store=ctx.store, filters=filters)})
    if grouping not in ("workspace", "run", "agent"):
        raise Problem("invalid_request_body", "grouping is workspace, run, agent or null.")
    groups = rows.count_grouped(
        store=ctx.store, grouping=grouping, filters=filters,
        descending=body.get("descending") is True,
    )  # fmt: skip
    return Answer(200, {"groups": wire.groups_json(groups)})


def selection_within_reach(ctx: ServerContext, caller: Caller, body: Any) -> Selection:
    """A selection the console sent, as the caller may act on it: behind a wall, its ids those
    of sessions it reaches, its filters narrowed as ``within_reach`` narrows them (so nothing
    beyond its workspaces is counted, planned or judged)."""
    try:
        selection = wire.selection_from(body)
    except wire.WireError as error:
        raise _refused(error) from None
    if caller.workspaces is None:
        return selection
    reached: set[str] = set()
    for workspace in caller.workspaces:
        reached |= rows.admitted_among(
            store=ctx.store, filters=SessionFilter(workspace_id=workspace),
            ids=sorted(selection.ids - reached),
        )  # fmt: skip
    return Selection(
        ids=frozenset(reached),
        by_filter=tuple(
            FilterSelection(within_reach(caller, chosen.filters), chosen.excluded)
            for chosen in selection.by_filter
        ),
    )


def count_selected(ctx: ServerContext, call: Call) -> Answer:
    """How many sessions a selection holds (behind a wall: those it reaches)."""
    caller, body = _question(ctx, call, ("selection",))
    selection = selection_within_reach(ctx, caller, body.get("selection"))
    return Answer(200, {"total": rows.count_marked(store=ctx.store, selection=selection)})


def bulk_plan(ctx: ServerContext, call: Call) -> Answer:
    """What a lifecycle action would do to each selected session now (the console's bulk
    dialog's preview), under the run's key: a session the run already did is a replay."""
    caller, body = _question(ctx, call, ("action", "selection", "impact_details", "run_key"))
    caller.require_human()
    action = bulk_action(body.get("action"))
    selection = selection_within_reach(ctx, caller, body.get("selection"))
    impact = body.get("impact_details")
    if impact is not None and not isinstance(impact, str):
        raise Problem("invalid_request_body", "impact_details is text, or null.")
    plan = plan_bulk(
        store=ctx.store, action=action, selection=selection, impact_details=impact,
        run_key=bound_run_key(caller, body.get("run_key")), clock=ctx.clock,
        keep=PREVIEW_ITEMS, wall=caller.wall,
    )  # fmt: skip
    return Answer(200, redact_output_value(plan_json(plan)))


def bulk_action(action: Any) -> str:
    if action not in ACTIONS:
        raise Problem("invalid_request_body", f"action is one of {', '.join(sorted(ACTIONS))}.")
    return str(action)


def bound_run_key(caller: Caller, key: Any) -> str:
    """A bulk run's key, bound to the caller: another's run with the same key is another run."""
    if not isinstance(key, str) or not 0 < len(key) <= 128 or has_control_characters(key):
        raise Problem(
            "idempotency_key_required",
            "An action on many sessions needs a run key (1 to 128 printable characters), so "
            "a retry never applies twice.",
        )
    return json.dumps(["console", caller.name, key])


def admitted(ctx: ServerContext, call: Call) -> Answer:
    """Which of ``ids`` a filter lets through, as the store decides it."""
    caller, body = _question(ctx, call, ("filters", "ids"))
    try:
        filters = within_reach(caller, wire.filter_from(body.get("filters")))
        ids = wire.ids_from(body.get("ids"))
    except wire.WireError as error:
        raise _refused(error) from None
    found = rows.admitted_among(store=ctx.store, filters=filters, ids=ids)
    return Answer(200, {"ids": sorted(found)})
