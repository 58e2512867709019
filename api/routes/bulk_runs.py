"""Ours: a lifecycle action on many sessions at once through the server, for the terminal
console's marks (``roundtable tui --server``): the run the console's bulk dialog confirms, by
``store.writes.bulk_run.run_bulk``, each session alone under the lifecycle rules, as the
caller's name, behind its wall. The run's key is the request's ``Idempotency-Key`` bound to the
caller (the key the preview was planned under): a retry replays what was done and does the
rest, never twice. An operator's."""

from __future__ import annotations

from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.problems import Problem
from roundtable_console.api.routes.bodies import decoded_object
from roundtable_console.api.routes.console_reads import (
    bound_run_key,
    bulk_action,
    selection_within_reach,
)
from roundtable_console.api.routes.session_records import person
from roundtable_console.store.safety.credentials import redact_output_value
from roundtable_console.store.writes.bulk_plan import PREVIEW_ITEMS
from roundtable_console.store.writes.bulk_run import run_bulk
from roundtable_console.store.writes.bulk_wire import outcome_json


def run(ctx: ServerContext, call: Call, action: str) -> Answer:
    caller = person(ctx, call)
    caller.require_human()
    action = bulk_action(action)
    key = bound_run_key(caller, call.headers.get("idempotency-key"))
    body = decoded_object(
        call.body, fields=("selection", "impact_details"), code="invalid_request_body",
        optional=False,
    )  # fmt: skip
    selection = selection_within_reach(ctx, caller, body.get("selection"))
    impact = body.get("impact_details")
    if impact is not None and not isinstance(impact, str):
        raise Problem("invalid_request_body", "impact_details is text, or null.")
    outcome = run_bulk(
        store=ctx.store, action=action, selection=selection, actor=caller.name, run_key=key,
        impact_details=(impact or "").strip() or None, clock=ctx.clock,
        # Sessions marked one by one are few (store.window.wire.MAX_IDS): every item comes
        # back, so the console unmarks each one done; a filter's run keeps the first few.
        keep=PREVIEW_ITEMS if selection.by_filter else None, wall=caller.wall,
    )  # fmt: skip
    return Answer(200, redact_output_value(outcome_json(outcome)))
