"""What the operator's lifecycle actions (``store.writes.lifecycle``) return and show: an action's
outcome (``ActionOutcome``, kept as JSON under its idempotency key so a retry returns it), and
what terminating a session touches (``TerminationImpact``: the agent's active claims, which the
terminate dialog shows before a human acknowledges it) and what it does not
(``NOT_DONE_BY_TERMINATE``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from sqlalchemy import Connection

from roundtable_console.store import validation
from roundtable_console.store.access.walls import OPEN, Wall
from roundtable_console.store.clock import Clock, system_clock
from roundtable_console.store.db.models import AgentSession
from roundtable_console.store.db.session_rows import as_session
from roundtable_console.store.reads.claims import ActiveClaim, claims_of_session
from roundtable_console.store.reads.launches import last_launch
from roundtable_console.store.reads.sessions import get_session
from roundtable_console.store.safety.display import one_line

NOT_DONE_BY_TERMINATE = (
    "Terminating records the session as terminated. It releases no claim, cancels no task, "
    "resolves no proposal, and starts or kills no process."
)
# Its second sentence: what a dialog says after its own account of what terminating records.
WHAT_TERMINATE_DOES_NOT = NOT_DONE_BY_TERMINATE.split(". ", 1)[-1]


@dataclass(frozen=True)
class ActionOutcome:
    action: str
    session: AgentSession
    replayed: bool = False
    notes: tuple[str, ...] = ()
    claims: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "session": self.session.to_json(),
            "replayed": self.replayed,
            "notes": list(self.notes),
            "claims": list(self.claims),
        }

    @classmethod
    def from_json(cls, body: dict[str, Any], *, replayed: bool) -> ActionOutcome:
        stored = dict(body["session"])
        metadata = stored.pop("metadata", None)
        stored["metadata_json"] = validation.metadata(metadata)
        # An operator action ended any wait: the outcome's session waits for nobody.
        stored.pop("waiting", None)
        stored.update(waiting_reason=None, waiting_since=None)
        return cls(
            action=body["action"],
            session=as_session(stored),
            replayed=replayed,
            notes=tuple(body.get("notes", ())),
            claims=tuple(body.get("claims", ())),
        )


@dataclass(frozen=True)
class TerminationImpact:
    """What the terminate dialog shows before a human acknowledges it."""

    session: AgentSession
    claims: list[ActiveClaim]
    # Where Roundtable last started the session's agent (its ``launched`` row), if it did.
    launch: Mapping[str, Any] | None = None

    @property
    def agent_note(self) -> str | None:
        """That terminating leaves an agent Roundtable started running, and where it runs."""
        if not self.launch or not isinstance(self.launch.get("tmux_pane"), str):
            return None
        pane = one_line(self.launch["tmux_pane"], 12)
        via, machine = self.launch.get("via_host"), self.launch.get("host")
        where = (
            f"host {one_line(via, 60)}" if isinstance(via, str)
            else f"machine {one_line(machine, 60)}" if isinstance(machine, str)
            else "this machine"
        )  # fmt: skip
        return (
            f"Its agent was started by Roundtable (tmux pane {pane} on {where}) and may still "
            "run: terminating does not stop it. Stop the agent too, or leave it running."
        )

    @property
    def live_claims(self) -> list[ActiveClaim]:
        return [claim for claim in self.claims if not claim.expired]

    @property
    def expired_claims(self) -> list[ActiveClaim]:
        return [claim for claim in self.claims if claim.expired]

    @property
    def requires_details(self) -> bool:
        # Expired claims still have status "active": the agent holds them until someone
        # releases them, so they count too; they are only shown apart.
        return bool(self.claims)

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session.to_json(),
            "claims": [claim.to_json() for claim in self.claims],
            "launch": dict(self.launch) if self.launch is not None else None,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> TerminationImpact:
        """An impact a server sent (``to_json``'s)."""
        from roundtable_console.store.records import SessionRecord

        names = [one.name for one in fields(ActiveClaim)]
        claims = [ActiveClaim(**{name: claim[name] for name in names})
                  for claim in body.get("claims", [])]  # fmt: skip
        session: Any = SessionRecord.from_json(body["session"])
        return cls(session=session, claims=claims, launch=body.get("launch"))


def termination_impact(
    *, db: Connection, session_id: str, clock: Clock = system_clock, wall: Wall = OPEN
) -> TerminationImpact:
    """The session and the active claims of its agent that the caller behind ``wall`` sees."""
    session = wall.checked(get_session(db=db, session_id=session_id))
    return TerminationImpact(
        session=session,
        claims=claims_of_session(db=db, session=session, now=clock(), wall=wall),
        launch=last_launch(db, session.id),
    )
