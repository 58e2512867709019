"""A lifecycle action on many sessions at once from the web console, with the console's bulk
dialog's preview (``store.writes.bulk_plan.plan_bulk``: how many it applies to, which are skipped
and why, which would fail, and to terminate the claims of every agent concerned) and its run
(``store.writes.bulk_run.run_bulk``: each session alone under the lifecycle rules, in short
durable transactions).

A selection is the ids the operator ticked, or every session matching the list's filters less
the ones unticked, as the console's marks are. A token bound to workspaces acts only on the
sessions it reaches: the others answer as not found, as they would alone, each judged in the
transaction that would act on it (``store.access.walls``). The run's key is the
page's ``Idempotency-Key`` bound to the caller; each session's own key is derived from it, so a
retry after a lost answer replays what was done and does the rest, never twice.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from roundtable_console.api.context import Call, ServerContext
from roundtable_console.api.edge.identity import Caller
from roundtable_console.api.problems import Problem
from roundtable_console.api.routes import bodies
from roundtable_console.api.web.reads import SessionsQuery, stale_cutoff
from roundtable_console.store.reads.listing import FilterSelection, Selection
from roundtable_console.store.reads.sessions import count_selected
from roundtable_console.store.safety.display import printable
from roundtable_console.store.validation import has_control_characters
from roundtable_console.store.writes.bulk import BulkItem, Tally
from roundtable_console.store.writes.bulk_plan import PREVIEW_ITEMS, BulkPlan, plan_bulk
from roundtable_console.store.writes.bulk_run import run_bulk
from roundtable_console.store.writes.lifecycle import ACTIONS

# The most sessions one action from a page reaches: a larger run belongs to the CLI
# (``roundtable sessions pause --all-matching …``), which shows its progress and can be stopped.
MAX_SELECTED = 10_000
BODY_FIELDS = ("ids", "matching", "except", "impact_details")
# A terminate's preview is planned as if an impact text were given: the dialog asks for one
# where claims are held (and the run refuses those sessions without it).
PREVIEW_IMPACT = "(the impact text you give)"
_MAX_ID = 200
_MAX_KEY = 128


@dataclass(frozen=True)
class BulkAsk:
    """What a page asked: ``action`` on ``selection``; ``matching``: the selection is a
    filter's."""

    action: str
    selection: Selection
    impact_details: str | None
    matching: bool


def _ids(value: object, name: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise Problem("invalid_request_body", f"{name} is a list of session ids.")
    ids = list(dict.fromkeys(item for item in value if item))
    for session_id in ids:
        if len(session_id) > _MAX_ID or has_control_characters(session_id):
            raise Problem("invalid_request_body", f"{name} holds a value that is no session id.")
    if len(ids) > MAX_SELECTED:
        raise _too_many(len(ids))
    return ids


def _too_many(count: int) -> Problem:
    return Problem(
        "invalid_request",
        f"{count:,} sessions are selected; a page acts on at most {MAX_SELECTED:,} at once. "
        "Narrow the filters, or use the CLI (roundtable sessions <action> --all-matching), "
        "which shows its progress and can be stopped.",
    )


def read_ask(ctx: ServerContext, call: Call, caller: Caller, action: str) -> BulkAsk:
    """The page's selection, checked against what the caller reaches (a blocking call)."""
    if action not in ACTIONS:
        raise Problem("not_found", f"No action is called {action!r}.")
    body = bodies.decoded_object(
        call.body, fields=BODY_FIELDS, code="invalid_request_body", optional=False
    )
    ids = _ids(body.get("ids"), "ids")
    excluded = _ids(body.get("except"), "except")
    matching = body.get("matching")
    details = body.get("impact_details")
    if details is not None and (not isinstance(details, str) or "\x00" in details):
        raise Problem("invalid_request_body", "impact_details is text.")
    if matching is not None and not isinstance(matching, str):
        raise Problem("invalid_request_body", "matching is the list's query (status=…&agent=…).")
    if (matching is None) == (not ids):
        raise Problem("invalid_request_body", "Give the sessions' ids, or the list's filters.")
    if matching is not None:
        query = SessionsQuery.from_args(_args_of(matching))
        filters = query.filters(caller, stale_cutoff(ctx, ctx.clock()))
        if filters.workspace_id is not None and not caller.reaches(filters.workspace_id):
            raise Problem("not_found", f"No workspace has the id {filters.workspace_id!r}.")
        selection = Selection(by_filter=(FilterSelection(filters, frozenset(excluded)),))
        with ctx.store.read() as db:
            count = count_selected(db=db, selection=selection)
    else:
        # An id beyond the caller's reach stays in, as an id of no session does: the plan and
        # the run say "not found" of both alike, in their words and their order.
        selection = Selection(ids=frozenset(ids))
        count = len(ids)
    if count > MAX_SELECTED:
        raise _too_many(count)
    return BulkAsk(action, selection, details, matching is not None)


def _args_of(matching: str) -> Callable[[str], str | None]:
    if len(matching) > 4096:
        raise Problem("invalid_request_body", "matching is the list's query, a short one.")
    parsed = parse_qs(matching.lstrip("?"), keep_blank_values=True)
    return lambda name: parsed[name][-1] if parsed.get(name) else None


def run_key(call: Call, caller: Caller) -> str:
    """The run's key: the page's ``Idempotency-Key``, bound to the caller."""
    raw = call.headers.get("idempotency-key") or ""
    if not raw or len(raw) > _MAX_KEY or not all(0x21 <= ord(char) < 0x7F for char in raw):
        raise Problem(
            "idempotency_key_required",
            "An action on many sessions needs an Idempotency-Key header (1 to 128 printable "
            "characters), so a retry never applies twice.",
        )
    return json.dumps(["web", caller.name, raw])


def preview(ctx: ServerContext, call: Call, caller: Caller, action: str) -> BulkPlan:
    """What the action would do now (nothing is written), under the run's key: a session a
    retry of the run already did shows as a replay."""
    caller.require_human()
    ask = read_ask(ctx, call, caller, action)
    plan = plan_bulk(
        store=ctx.store,
        action=action,
        selection=ask.selection,
        impact_details=PREVIEW_IMPACT if action == "terminate" else None,
        run_key=run_key(call, caller),
        clock=ctx.clock,
        keep=PREVIEW_ITEMS,
        wall=caller.wall,
    )
    return plan


@dataclass(frozen=True)
class BulkDone:
    action: str
    tally: Tally
    error: str | None
    # The ticked ids the action was applied to (none for a filter's selection).
    applied: list[str]

    def to_json(self) -> dict[str, Any]:
        return {**self.tally.counts, "applied": self.applied, "error": self.error}


def run(ctx: ServerContext, call: Call, caller: Caller, action: str) -> BulkDone:
    """The action on every selected session, as the caller, each under its derived key."""
    caller.require_human()
    ask = read_ask(ctx, call, caller, action)
    key = run_key(call, caller)
    applied: list[str] = []

    def collect(items: Sequence[BulkItem]) -> None:
        if not ask.matching:
            applied.extend(item.session_id for item in items if item.outcome == "done")

    outcome = run_bulk(
        store=ctx.store,
        action=action,
        selection=ask.selection,
        actor=caller.name,
        run_key=key,
        impact_details=(ask.impact_details or "").strip() or None,
        clock=ctx.clock,
        on_items=collect,
        keep=PREVIEW_ITEMS,
        wall=caller.wall,
    )
    error = None if outcome.error is None else printable(outcome.error.message)
    return BulkDone(action, outcome.tally, error, applied)


# Ids named after a reason ("2 already paused: s1, s2"), as the console's dialog names them.
IDS_NAMED = 5
_HEADINGS = {
    "skipped": "will be skipped (the action does not apply; they stay selected)",
    "failed": "would fail (they stay selected)",
}
_DONE_HEADINGS = {"skipped": "skipped (the action did not apply)", "failed": "failed"}


@dataclass(frozen=True)
class Reason:
    count: int
    reason: str
    ids: list[str]
    more: bool


@dataclass(frozen=True)
class Section:
    outcome: str
    count: int
    heading: str
    reasons: list[Reason]


def sections(tally: Tally, *, done: bool = False) -> list[Section]:
    """The skipped and failed sessions by reason, with the first ids of each (the console's
    bulk dialog's lines); ``done``: worded for a run that happened."""
    found = []
    for outcome in ("skipped", "failed"):
        count = tally.counts[outcome]
        if not count:
            continue
        reasons = []
        for reason, times in tally.by_reason(outcome):
            named = [
                item.session_id
                for item in tally.items
                if item.outcome == outcome and item.reason == reason
            ][:IDS_NAMED]
            reasons.append(Reason(times, reason, named, times > len(named)))
        heading = (_DONE_HEADINGS if done else _HEADINGS)[outcome]
        found.append(Section(outcome, count, heading, reasons))
    return found
