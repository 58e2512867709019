"""Ours, for the terminal console reading through the server (``roundtable tui --server``): its
list's reads, answered by the very functions a console on the store calls
(``store.window.rows``), the questions and answers in their JSON (``store.window.wire``). They
are reads, sent as POST for their bodies (a read's question holds a row and a filter).

A person's token reads them (a viewer's too); an agent's or a host's is refused. A token bound
to workspaces reads one of them at a time, as on the web console: the one its filter names, else
its first; nothing is counted beyond it (``read_rows``'s wall)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.edge.identity import Caller
from roundtable_console.api.problems import Problem
from roundtable_console.api.routes.bodies import decoded_object
from roundtable_console.api.routes.session_records import person
from roundtable_console.store.reads.listing import FilterSelection, Selection, SessionFilter
from roundtable_console.store.safety.credentials import redact_output_value
from roundtable_console.store.window import rows, wire


def _question(
    ctx: ServerContext, call: Call, fields: tuple[str, ...]
) -> tuple[Caller, dict[str, Any]]:
    caller = person(ctx, call)
    body = decoded_object(call.body, fields=fields, code="invalid_request_body", optional=False)
    return caller, body


def within_reach(caller: Caller, filters: SessionFilter) -> SessionFilter:
    """``filters`` as the caller may read them: behind a wall, narrowed to the workspace they
    name (one the caller reaches), else to the caller's first."""
    if caller.workspaces is None:
        return filters
    chosen = filters.workspace_id or caller.workspaces[0]
    if filters.without_workspace or not caller.reaches(chosen):
        raise Problem("workspace_not_found", f"No workspace has the id {chosen!r}.")
    return replace(filters, workspace_id=chosen)


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


def count_selected(ctx: ServerContext, call: Call) -> Answer:
    """How many sessions a selection holds (behind a wall: those it reaches)."""
    caller, body = _question(ctx, call, ("selection",))
    try:
        selection = wire.selection_from(body.get("selection"))
    except wire.WireError as error:
        raise _refused(error) from None
    if caller.workspaces is not None:
        reached: set[str] = set()
        for workspace in caller.workspaces:
            reached |= rows.admitted_among(
                store=ctx.store, filters=SessionFilter(workspace_id=workspace),
                ids=sorted(selection.ids - reached),
            )  # fmt: skip
        selection = Selection(
            ids=frozenset(reached),
            by_filter=tuple(
                FilterSelection(within_reach(caller, chosen.filters), chosen.excluded)
                for chosen in selection.by_filter
            ),
        )
    return Answer(200, {"total": rows.count_marked(store=ctx.store, selection=selection)})


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
