"""The claims an agent holds, as terminate and the briefing need them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, case, func, literal, select

from roundtable_console.store.access.walls import OPEN, Wall
from roundtable_console.store.clock import format_ts, parse_ts
from roundtable_console.store.db.models import AgentSession, Claim, Proposal
from roundtable_console.store.reads.sqlfuncs import ts_key
from roundtable_console.store.records import ClaimCount
from roundtable_console.store.rules import RESOLVED_PROPOSAL_STATES

CLAIMS = Claim.__table__  # type: ignore[attr-defined]
PROPOSALS = Proposal.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class ActiveClaim:
    id: str
    resource_id: str
    task_id: str
    claim_type: str
    expires_at: str
    expired: bool

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "resource_id": self.resource_id,
            "task_id": self.task_id,
            "claim_type": self.claim_type,
            "expires_at": self.expires_at,
            "expired": self.expired,
        }


def active_claims(
    *, db: Connection, agent_id: str, now: datetime, workspace_id: str | None = None
) -> list[ActiveClaim]:
    """The agent's claims with status ``active``, by resource id; expired ones are marked.
    ``workspace_id``: only that workspace's (what a caller behind a wall sees)."""
    statement = select(
        CLAIMS.c.id,
        CLAIMS.c.resource_id,
        CLAIMS.c.task_id,
        CLAIMS.c.claim_type,
        CLAIMS.c.expires_at,
    ).where(CLAIMS.c.agent_id == agent_id, CLAIMS.c.status == "active")
    if workspace_id is not None:
        statement = statement.where(CLAIMS.c.workspace_id == workspace_id)
    rows = db.execute(statement.order_by(CLAIMS.c.resource_id, CLAIMS.c.id)).all()
    found = []
    for row in rows:
        expires = parse_ts(row.expires_at)
        found.append(
            ActiveClaim(
                id=row.id,
                resource_id=row.resource_id,
                task_id=row.task_id,
                claim_type=row.claim_type,
                expires_at=row.expires_at,
                expired=expires is not None and expires <= now,
            )
        )
    return found


def claims_of_session(
    *, db: Connection, session: AgentSession, now: datetime, wall: Wall = OPEN
) -> list[ActiveClaim]:
    """The active claims of the session's agent that the caller behind ``wall`` sees: all of
    them, or (bound to workspaces) those of the session's workspace. What terminate asks a
    human to acknowledge, and what its impact and the briefing name."""
    return active_claims(
        db=db, agent_id=session.agent_id, now=now, workspace_id=wall.around(session)
    )


def claim_counts(
    *,
    db: Connection,
    agent_ids: Iterable[str],
    now: datetime,
    workspace_id: str | None = None,
) -> dict[str, ClaimCount]:
    """``active_claims`` counted for many agents in one grouped query (the list's claim column),
    and their proposals waiting for a decision (the attention reason), in another.

    Agents holding no active claim and no waiting proposal are absent. Expiry is judged in SQL
    on the same chronological key the lists sort by, so every timestamp form counts alike;
    unreadable text is not expired, as in ``active_claims``. ``workspace_id``: only the claims
    and proposals of that workspace."""
    wanted = sorted(set(agent_ids))
    if not wanted:
        return {}
    claims_within = () if workspace_id is None else (CLAIMS.c.workspace_id == workspace_id,)
    proposals_within = () if workspace_id is None else (PROPOSALS.c.workspace_id == workspace_id,)
    expired = case((ts_key(CLAIMS.c.expires_at) <= ts_key(literal(format_ts(now))), 1), else_=0)
    rows = db.execute(
        select(CLAIMS.c.agent_id, func.count(), func.sum(expired))
        .where(CLAIMS.c.agent_id.in_(wanted), CLAIMS.c.status == "active", *claims_within)
        .group_by(CLAIMS.c.agent_id)
    ).all()
    waiting = dict(
        db.execute(
            select(PROPOSALS.c.agent_id, func.count())
            .where(
                PROPOSALS.c.agent_id.in_(wanted),
                PROPOSALS.c.status.not_in(RESOLVED_PROPOSAL_STATES),
                *proposals_within,
            )
            .group_by(PROPOSALS.c.agent_id)
        ).all()
    )
    found = {
        str(agent): ClaimCount(
            live=int(total) - int(gone or 0),
            expired=int(gone or 0),
            proposals=int(waiting.pop(agent, 0)),
        )
        for agent, total, gone in rows
    }
    found.update({str(agent): ClaimCount(proposals=int(count)) for agent, count in waiting.items()})
    return found
