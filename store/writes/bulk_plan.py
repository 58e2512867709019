"""What a bulk action would do (``plan_bulk``), judged on one snapshot of its sessions; nothing is
written. The console's preview of an action on its marks and the CLI's ``--dry-run`` show it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, select

from roundtable_console.store import errors
from roundtable_console.store.access.walls import OPEN, Wall
from roundtable_console.store.clock import Clock, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.models import AgentSession, IdempotencyKey
from roundtable_console.store.db.session_rows import as_session
from roundtable_console.store.reads.claims import ActiveClaim, claims_of_session
from roundtable_console.store.reads.listing import Selection
from roundtable_console.store.rules import is_allowed
from roundtable_console.store.writes.bulk import (
    REPLAYED,
    BulkItem,
    Tally,
    checked_order,
    redacted_item,
    selected_pages,
    session_key,
    skipped_item,
)
from roundtable_console.store.writes.lifecycle import ACTIONS
from roundtable_console.store.writes.lifecycle_outcomes import (
    WHAT_TERMINATE_DOES_NOT,
    TerminationImpact,
)

_KEYS = IdempotencyKey.__table__  # type: ignore[attr-defined]

# What the console shows of a plan before its counts.
PREVIEW_ITEMS = 20
# Claims named in one message; the rest are counted.
_CLAIMS_NAMED = 5

# What each action does to the sessions it applies to, and what it does not (the console's
# bulk dialog and the web console's say it before the operator confirms).
BULK_EFFECTS: dict[str, tuple[str, str]] = {
    "heartbeat": (
        "Each one's last-seen time becomes now, recorded as your heartbeat; one waiting for a "
        "human stops waiting. ",
        "Nothing is sent to the agents.",
    ),
    "pause": ("Each one's status becomes paused. ", "No process is paused: tell the agents."),
    "stop": (
        "Each one's status becomes stopped and its end time is set to now. ",
        "No process is stopped: tell the agents.",
    ),
    "resume": (
        "Each one's status becomes resuming and its end time is cleared. ",
        "Each agent must exist and be enabled, and a saved branch must match: a session that "
        "fails these checks fails alone. Nothing is started.",
    ),
    "terminate": (
        "Terminating sets each session's status to terminated and its end and last-seen times "
        "to now, and records your name and the impact text below in each one's history. ",
        WHAT_TERMINATE_DOES_NOT,
    ),
}


@dataclass(frozen=True)
class BulkPlan:
    """What a bulk action would do, judged on one snapshot; nothing was written.

    ``claims``: to terminate, the active claims (expired ones included, marked) of each agent
    whose sessions the action applies to, for agents holding any."""

    action: str
    tally: Tally
    claims: Mapping[str, tuple[ActiveClaim, ...]] = field(default_factory=dict)

    @property
    def requires_impact_details(self) -> bool:
        return any(self.claims.values())

    def to_json(self) -> dict[str, Any]:
        return {**self.tally.to_json(), "dry_run": True}


def plan_bulk(
    *,
    store: Store,
    action: str,
    selection: Selection,
    order: Sequence[str] | None = None,
    impact_details: str | None = None,
    run_key: str | None = None,
    clock: Clock = system_clock,
    keep: int | None = PREVIEW_ITEMS,
    wall: Wall = OPEN,
) -> BulkPlan:
    """What ``store.writes.bulk_run.run_bulk`` would do now with the same arguments, from one
    snapshot: per session, done, skipped (the status rule) or failed (unknown; to terminate, an
    agent holding claims and no ``impact_details``; with ``run_key``, a session already done under
    it is a replay, and its key used otherwise a reuse). Resume's agent and branch checks are made
    only when it runs. ``keep``: the items kept of each outcome (None: all); the counts cover every
    session. ``order``: see ``store.writes.bulk.selected_pages``. ``wall``: the caller's reach
    (``store.access.walls``): a session beyond it is not found, and the claims are those it sees.
    """
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}")
    order = checked_order(selection, order)
    details = (impact_details or "").strip()
    key = (run_key or "").strip() or None
    tally = Tally(keep)
    claims: dict[tuple[str, str | None], tuple[ActiveClaim, ...]] = {}
    with store.read() as db:

        def claims_of(session: AgentSession) -> tuple[ActiveClaim, ...]:
            seen = (session.agent_id, wall.around(session))
            if seen not in claims:
                found = claims_of_session(db=db, session=session, now=clock(), wall=wall)
                claims[seen] = tuple(found)
            return claims[seen]

        for page in selected_pages(lambda: nullcontext(db), selection, order, rows=True):
            used = _used_keys(db, key, [session_id for session_id, _ in page])
            for session_id, row in page:
                session = None if row is None else as_session(row._mapping)
                if session is not None and not wall.admits(session):
                    session = None
                tally.add(
                    _judge(action, session_id, session, used.get(session_id), details, claims_of)
                )
    held: dict[str, tuple[ActiveClaim, ...]] = {}
    for (agent, _workspace), found in claims.items():
        known = {claim.id for claim in held.get(agent, ())}
        held[agent] = (*held.get(agent, ()), *(c for c in found if c.id not in known))
    return BulkPlan(action=action, tally=tally, claims={a: c for a, c in held.items() if c})


def _used_keys(
    db: Connection, run_key: str | None, session_ids: Sequence[str]
) -> dict[str, tuple[str, str]]:
    """For each session whose derived key is already recorded: (action, session id) it holds."""
    if run_key is None or not session_ids:
        return {}
    keys = {session_key(run_key, session_id): session_id for session_id in session_ids}
    rows = db.execute(
        select(_KEYS.c.key, _KEYS.c.action, _KEYS.c.session_id).where(_KEYS.c.key.in_(keys))
    ).all()
    return {keys[row.key]: (row.action, row.session_id) for row in rows}


def _judge(
    action: str,
    session_id: str,
    session: AgentSession | None,
    used: tuple[str, str] | None,
    details: str,
    claims_of: Callable[[AgentSession], tuple[ActiveClaim, ...]],
) -> BulkItem:
    """One session's planned outcome, in the order the lifecycle checks: key, row, status,
    then terminate's claims."""
    if used is not None:
        if used == (action, session_id):
            return redacted_item(
                session_id, "done", REPLAYED, "already done under this run's key: it would be "
                "replayed, not applied again",
            )  # fmt: skip
        return redacted_item(
            session_id,
            "failed",
            errors.IdempotencyKeyReuse.code,
            f"This run's key for session {session_id!r} was already used to {used[0]} it; "
            "use a new key for this run.",
        )
    if session is None:
        return _not_found(session_id)
    if not is_allowed(action, session.status):
        return skipped_item(session_id, action, session.status)
    message = f"would {action} (status {session.status!r})"
    if action == "terminate":
        impact = TerminationImpact(session=session, claims=list(claims_of(session)))
        if impact.requires_details:
            held = _claims_text(session.agent_id, impact.claims)
            if not details:
                return redacted_item(
                    session_id,
                    "failed",
                    errors.TerminationImpactRequired.code,
                    f"{held[0].upper()}{held[1:]}; describe the impact of terminating "
                    "(impact details) before you confirm.",
                )
            message += f"; {held}"
    return redacted_item(session_id, "done", None, message)


def _claims_text(agent_id: str, claims: Sequence[ActiveClaim]) -> str:
    named = ", ".join(claim.resource_id for claim in claims[:_CLAIMS_NAMED])
    more = f" and {len(claims) - _CLAIMS_NAMED} more" if len(claims) > _CLAIMS_NAMED else ""
    return f"agent {agent_id!r} holds {len(claims)} active claim(s): {named}{more}"


def _not_found(session_id: str) -> BulkItem:
    return redacted_item(
        session_id,
        "failed",
        errors.SessionNotFound.code,
        f"No session has the id {session_id!r}.",
    )
