"""Ours: a lifecycle action on many sessions at once through the server, for the terminal
console's marks (``roundtable tui --server``): the run the console's bulk dialog confirms, by
``store.writes.bulk_run.run_bulk``, each session alone under the lifecycle rules, as the
caller's name, behind its wall. The run's key is the request's ``Idempotency-Key`` bound to the
caller (the key the preview was planned under): a retry replays what was done and does the
rest, never twice. An operator's."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from roundtable_console.api.answering import call_of
from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.edge.identity import Caller
from roundtable_console.api.problems import Problem, from_store_error, refusal_of
from roundtable_console.api.routes.bodies import decoded_object
from roundtable_console.api.routes.console_reads import (
    bound_run_key,
    bulk_action,
    selection_within_reach,
)
from roundtable_console.api.routes.session_records import person
from roundtable_console.api.streams.events import sse_response
from roundtable_console.store.errors import StoreError
from roundtable_console.store.reads.listing import Selection
from roundtable_console.store.safety.credentials import redact_output_value
from roundtable_console.store.writes.bulk import BulkItem
from roundtable_console.store.writes.bulk_plan import PREVIEW_ITEMS
from roundtable_console.store.writes.bulk_run import BulkOutcome, run_bulk
from roundtable_console.store.writes.bulk_wire import outcome_json


@dataclass(frozen=True)
class BulkAsked:
    """A run as its request asks it, checked: who, what, under which key, on which sessions."""

    caller: Caller
    action: str
    key: str
    selection: Selection
    impact: str | None


def asked_run(ctx: ServerContext, call: Call, action: str) -> BulkAsked:
    """The run ``call`` asks for, refused in words when it may not be made (blocking)."""
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
    return BulkAsked(caller, action, key, selection, (impact or "").strip() or None)


def run_asked(
    ctx: ServerContext,
    asked: BulkAsked,
    *,
    progress: Callable[[int, int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    on_items: Callable[[Sequence[BulkItem]], None] | None = None,
    keep_all: bool = True,
) -> BulkOutcome:
    """``keep_all``: an outcome of sessions marked one by one holds every item (else the first
    few of each kind, as a filter's run: a stream tells each item as it is settled)."""
    return run_bulk(
        store=ctx.store, action=asked.action, selection=asked.selection,
        actor=asked.caller.name, run_key=asked.key, impact_details=asked.impact,
        clock=ctx.clock, progress=progress, cancelled=cancelled, on_items=on_items,
        # Sessions marked one by one are few (store.window.wire.MAX_IDS): every item comes
        # back, so the console unmarks each one done; a filter's run keeps the first few.
        keep=None if keep_all and not asked.selection.by_filter else PREVIEW_ITEMS,
        wall=asked.caller.wall,
    )  # fmt: skip


def run(ctx: ServerContext, call: Call, action: str) -> Answer:
    outcome = run_asked(ctx, asked_run(ctx, call, action))
    return Answer(200, redact_output_value(outcome_json(outcome)))


async def run_with_progress(request: Request) -> Response:
    """The run as a stream of server-sent events, for a client that shows its progress and may
    stop it: ``progress`` ({"done", "total"}) after each of its transactions, ``items`` (the
    sessions each one settled), then ``outcome`` (what ``run`` answers). A client that goes
    away stops the run: what it did is committed, and the same key again does the rest."""
    ctx: ServerContext = request.app.state.ctx
    call = call_of(request.scope, await request.body(), request.state.request_id)
    try:
        asked = await ctx.in_worker(asked_run, ctx, call, request.path_params["action"])
    except Problem as problem:
        return refusal_of(call, problem)
    except StoreError as error:
        return refusal_of(call, from_store_error(error))
    loop = asyncio.get_running_loop()
    said: asyncio.Queue[str | None] = asyncio.Queue()
    stopped = threading.Event()

    def say(event: str, data: Any) -> None:
        line = f"event: {event}\ndata: {json.dumps(redact_output_value(data))}\n\n"
        loop.call_soon_threadsafe(said.put_nowait, line)

    def work() -> None:
        try:
            outcome = run_asked(
                ctx, asked, cancelled=stopped.is_set, keep_all=False,
                progress=lambda done, total: say("progress", {"done": done, "total": total}),
                on_items=lambda items: say("items", [item.to_json() for item in items]),
            )  # fmt: skip
            say("outcome", outcome_json(outcome))
        except StoreError as error:
            say("problem", {"code": error.code, "message": error.message})
        finally:
            loop.call_soon_threadsafe(said.put_nowait, None)

    running = loop.run_in_executor(ctx.workers, work)

    async def events() -> AsyncIterator[str]:
        while (line := await said.get()) is not None:
            yield line
        await running

    return sse_response(events(), stopped.set)
