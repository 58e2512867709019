"""A bulk action's preview and outcome as JSON, for a console acting through ``roundtable serve``:
the server plans and runs with the same functions as a console on the store
(``store.writes.bulk_plan``, ``store.writes.bulk_run``) and the console reads back the same
values: the tally (counts, reasons, the items kept), the claims a terminate touches, and an
error that stopped a run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from roundtable_console.store import errors
from roundtable_console.store.reads.claims import ActiveClaim
from roundtable_console.store.writes.bulk import BulkItem, Tally
from roundtable_console.store.writes.bulk_plan import BulkPlan
from roundtable_console.store.writes.bulk_run import BulkOutcome

_CLAIM_FIELDS = tuple(one.name for one in fields(ActiveClaim))


def tally_json(tally: Tally) -> dict[str, Any]:
    return {
        "keep": tally.keep,
        "items": [item.to_json() for item in tally.items],
        "counts": dict(tally.counts),
        "reasons": [
            [outcome, reason, count] for (outcome, reason), count in tally.reasons.items()
        ],  # fmt: skip
    }


def item_from(body: Mapping[str, Any]) -> BulkItem:
    code = body.get("code")
    return BulkItem(str(body["session_id"]), str(body["outcome"]),
                    None if code is None else str(code), str(body["message"]))  # fmt: skip


def tally_from(body: Mapping[str, Any]) -> Tally:
    tally = Tally(keep=body.get("keep"))
    tally.items = [item_from(item) for item in body["items"]]
    tally.counts = {str(outcome): int(count) for outcome, count in body["counts"].items()}
    tally.reasons = {(str(outcome), str(reason)): int(count)
                     for outcome, reason, count in body["reasons"]}  # fmt: skip
    return tally


def plan_json(plan: BulkPlan) -> dict[str, Any]:
    return {
        "action": plan.action,
        "tally": tally_json(plan.tally),
        "claims": {
            agent: [claim.to_json() for claim in held] for agent, held in plan.claims.items()
        },  # fmt: skip
    }


def plan_from(body: Mapping[str, Any]) -> BulkPlan:
    claims = {
        str(agent): tuple(
            ActiveClaim(**{name: claim[name] for name in _CLAIM_FIELDS}) for claim in held
        )  # fmt: skip
        for agent, held in body["claims"].items()
    }
    return BulkPlan(action=str(body["action"]), tally=tally_from(body["tally"]), claims=claims)


def outcome_json(outcome: BulkOutcome) -> dict[str, Any]:
    error = outcome.error
    return {
        "action": outcome.action,
        "total": outcome.total,
        "tally": tally_json(outcome.tally),
        "cancelled": outcome.cancelled,
        "error": None if error is None else {"code": error.code, "message": error.message},
    }


def outcome_from(body: Mapping[str, Any], run_key: str | None) -> BulkOutcome:
    """A run's outcome; its error (the store became unavailable) as the store's own kind."""
    said = body.get("error")
    error = None
    if said is not None:
        kind = next(
            (cls for cls in errors.StoreError.__subclasses__() if cls.code == said["code"]),
            errors.DatabaseUnavailable,
        )
        error = kind(str(said["message"]))
    return BulkOutcome(
        action=str(body["action"]), run_key=run_key, total=int(body["total"]),
        tally=tally_from(body["tally"]), cancelled=bool(body["cancelled"]), error=error,
    )  # fmt: skip
