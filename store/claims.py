"""The claims an agent holds, as terminate and the briefing need them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, select

from store.clock import parse_ts
from store.models import Claim

CLAIMS = Claim.__table__  # type: ignore[attr-defined]


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


def active_claims(*, db: Connection, agent_id: str, now: datetime) -> list[ActiveClaim]:
    """The agent's claims with status ``active``, by resource id; expired ones are marked."""
    rows = db.execute(
        select(
            CLAIMS.c.id,
            CLAIMS.c.resource_id,
            CLAIMS.c.task_id,
            CLAIMS.c.claim_type,
            CLAIMS.c.expires_at,
        )
        .where(CLAIMS.c.agent_id == agent_id, CLAIMS.c.status == "active")
        .order_by(CLAIMS.c.resource_id, CLAIMS.c.id)
    ).all()
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
