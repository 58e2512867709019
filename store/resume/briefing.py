"""The resume briefing (the reference's Markdown layout); the resume plan is ``store.resume.plan``.

``build_briefing`` is meant to run inside one ``Store.read()`` transaction, so every section comes
from the same snapshot (the reference read each section separately). The briefing never carries
task bodies, review findings, votes, patches, test logs or memory results.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, case, func, or_, select, union

from roundtable_console.store.access.walls import OPEN, Wall
from roundtable_console.store.clock import Clock, system_clock
from roundtable_console.store.db.models import AgentSession, Claim, Decision, Proposal, Task
from roundtable_console.store.reads.claims import ActiveClaim, claims_of_session
from roundtable_console.store.reads.sessions import get_session
from roundtable_console.store.reads.sqlfuncs import ts_key
from roundtable_console.store.rules import FINISHED_TASK_STATES, RESOLVED_PROPOSAL_STATES
from roundtable_console.store.safety.display import markdown_line
from roundtable_console.store.safety.redaction import redact_text

_TASKS = Task.__table__  # type: ignore[attr-defined]
_PROPOSALS = Proposal.__table__  # type: ignore[attr-defined]
_DECISIONS = Decision.__table__  # type: ignore[attr-defined]
_CLAIMS = Claim.__table__  # type: ignore[attr-defined]

LATEST_DECISIONS = 3
NONE_LINE = "- none"
NO_TASK = "(no assigned task)"
WAIT_ACTION = "Query the table and memory, then wait for task assignment or claim work."

# How a stored value is written into the Markdown: as it is for agents and files; a viewer that
# renders the Markdown passes a function that makes the value literal text.
Quote = Callable[[str], str]


def as_is(value: str) -> str:
    return value


@dataclass(frozen=True)
class BriefingTask:
    id: str
    title: str
    status: str
    priority: int


@dataclass(frozen=True)
class BriefingProposal:
    id: str
    status: str
    created_at: str | None


@dataclass(frozen=True)
class BriefingDecision:
    id: str
    rationale: str
    created_at: str | None


@dataclass(frozen=True)
class Briefing:
    session: AgentSession
    task: BriefingTask | None
    claims: list[ActiveClaim]
    proposals: list[BriefingProposal]
    decisions: list[BriefingDecision]
    next_action: str
    markdown: str

    def to_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session.id,
            "task": None if self.task is None else self.task.__dict__.copy(),
            "claims": [claim.to_json() for claim in self.claims],
            "proposals": [proposal.__dict__.copy() for proposal in self.proposals],
            "decisions": [decision.__dict__.copy() for decision in self.decisions],
            "next_action": self.next_action,
            "markdown": self.markdown,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Briefing:
        """A briefing a server sent: ``to_json``'s, with its whole session (``session``)."""
        from roundtable_console.store.records import SessionRecord

        task = body.get("task")
        session: Any = SessionRecord.from_json(body["session"])
        return cls(
            session=session,
            task=None if task is None else BriefingTask(**task),
            claims=[ActiveClaim(**claim) for claim in body.get("claims", [])],
            proposals=[BriefingProposal(**item) for item in body.get("proposals", [])],
            decisions=[BriefingDecision(**item) for item in body.get("decisions", [])],
            next_action=str(body["next_action"]),
            markdown=str(body["markdown"]),
        )

    def render(self, quote: Quote) -> str:
        """The same Markdown with every stored value passed through ``quote``."""
        return render_markdown(
            self.session, self.task, self.claims, self.proposals, self.decisions, quote=quote
        )


def _safe(value: str | None) -> str:
    return markdown_line(redact_text(value or ""))


def _not_finished() -> Any:
    return func.lower(_TASKS.c.status).not_in(FINISHED_TASK_STATES)


def _task(row: Any) -> BriefingTask:
    return BriefingTask(
        id=markdown_line(row.id), title=_safe(row.title), status=row.status, priority=row.priority
    )


_TASK_COLUMNS = (_TASKS.c.id, _TASKS.c.title, _TASKS.c.status, _TASKS.c.priority)


def _tasks_of(workspace_id: str) -> Any:
    """The ids of the tasks a workspace's claims or proposals name (a task names no workspace)."""
    return union(
        select(_CLAIMS.c.task_id).where(_CLAIMS.c.workspace_id == workspace_id),
        select(_PROPOSALS.c.task_id).where(_PROPOSALS.c.workspace_id == workspace_id),
    )


def _assigned_task(db: Connection, agent_id: str, within: str | None) -> BriefingTask | None:
    """``in_progress`` first, then lower priority number, then older, then id; ``within``: a
    task of that workspace only."""
    where = [_TASKS.c.assigned_agent_id == agent_id, _not_finished()]
    if within is not None:
        where.append(_TASKS.c.id.in_(_tasks_of(within)))
    row = db.execute(
        select(*_TASK_COLUMNS)
        .where(*where)
        .order_by(
            case((_TASKS.c.status == "in_progress", 0), else_=1),
            _TASKS.c.priority,
            ts_key(_TASKS.c.created_at).asc().nulls_last(),
            _TASKS.c.id,
        )
        .limit(1)
    ).first()
    return _task(row) if row is not None else None


def _claim_order(claims: list[ActiveClaim]) -> list[ActiveClaim]:
    """Unexpired claims before expired ones, each by resource id: "the first active claim"."""
    return sorted(claims, key=lambda claim: claim.expired)


def _claimed_task(db: Connection, claims: list[ActiveClaim]) -> BriefingTask | None:
    """The unfinished task behind the first active claim that has one."""
    task_ids = {claim.task_id for claim in claims}
    if not task_ids:
        return None
    rows = db.execute(
        select(*_TASK_COLUMNS).where(_TASKS.c.id.in_(task_ids), _not_finished())
    ).all()
    found = {row.id: row for row in rows}
    for claim in _claim_order(claims):
        if claim.task_id in found:
            return _task(found[claim.task_id])
    return None


def _pending_proposals(db: Connection, agent_id: str, within: str | None) -> list[BriefingProposal]:
    where = [
        _PROPOSALS.c.agent_id == agent_id,
        _PROPOSALS.c.status.not_in(RESOLVED_PROPOSAL_STATES),
    ]
    if within is not None:
        where.append(_PROPOSALS.c.workspace_id == within)
    rows = db.execute(
        select(_PROPOSALS.c.id, _PROPOSALS.c.status, _PROPOSALS.c.created_at)
        .where(*where)
        .order_by(ts_key(_PROPOSALS.c.created_at).desc().nulls_last(), _PROPOSALS.c.id.desc())
    ).all()
    return [
        BriefingProposal(
            id=markdown_line(row.id), status=_safe(row.status), created_at=row.created_at
        )
        for row in rows
    ]


def _latest_decisions(db: Connection, within: str | None) -> list[BriefingDecision]:
    """The newest across the store (ref); ``within``: of that workspace's proposals, and its
    tasks' decisions on no proposal."""
    statement = select(_DECISIONS.c.id, _DECISIONS.c.rationale_md, _DECISIONS.c.created_at)
    if within is not None:
        of_proposals = select(_PROPOSALS.c.id).where(_PROPOSALS.c.workspace_id == within)
        # A decision on a proposal is that proposal's workspace's; one on no proposal, its
        # task's (a task named by this workspace's claims or proposals).
        statement = statement.where(
            or_(
                _DECISIONS.c.proposal_id.in_(of_proposals),
                and_(
                    or_(_DECISIONS.c.proposal_id.is_(None), _DECISIONS.c.proposal_id == ""),
                    _DECISIONS.c.task_id.in_(_tasks_of(within)),
                ),
            )
        )
    rows = db.execute(
        statement.order_by(
            ts_key(_DECISIONS.c.created_at).desc().nulls_last(), _DECISIONS.c.id.desc()
        ).limit(LATEST_DECISIONS)
    ).all()
    return [
        BriefingDecision(
            id=markdown_line(row.id), rationale=_safe(row.rationale_md), created_at=row.created_at
        )
        for row in rows
    ]


def next_action(
    task: BriefingTask | None,
    claims: list[ActiveClaim],
    proposals: list[BriefingProposal],
    quote: Quote = as_is,
) -> str:
    """Newest pending proposal, else the task, else the first active claim, else wait (ref)."""
    if proposals:
        return (
            f"Review proposal {quote(proposals[0].id)} and address any blocking feedback before "
            "resubmitting or applying."
        )
    if task is not None:
        return f"Resume task {quote(task.id)}: {quote(task.title)}"
    if claims:
        first = _claim_order(claims)[0]
        return (
            f"Reconcile active claim {quote(markdown_line(first.id))} with current table state "
            "before continuing."
        )
    return WAIT_ACTION


def _section(title: str, lines: list[str]) -> list[str]:
    return [title, *(lines or [NONE_LINE]), ""]


def render_markdown(
    session: AgentSession,
    task: BriefingTask | None,
    claims: list[ActiveClaim],
    proposals: list[BriefingProposal],
    decisions: list[BriefingDecision],
    *,
    quote: Quote = as_is,
) -> str:
    """The reference layout, line for line."""
    lines = [
        "# Roundtable Resume Briefing",
        "",
        f"You are resuming as {quote(markdown_line(session.agent_id))}.",
        "",
        f"Run: {quote(markdown_line(session.run_id))}",
    ]
    if session.external_session_id:
        lines.append(f"External session: {quote(markdown_line(session.external_session_id))}")
    lines.append("")
    current = f"{quote(task.id)} {quote(task.title)}" if task else NO_TASK
    lines += ["Current task:", current, ""]
    lines += _section(
        "Your active claims:",
        [
            f"- {quote(_safe(claim.resource_id))}" + (" (expired)" if claim.expired else "")
            for claim in claims
        ],
    )
    lines += _section(
        "Pending proposals:",
        [f"- {quote(item.id)} from you: {quote(item.status)}" for item in proposals],
    )
    lines += _section(
        "Latest decisions:",
        [f"- {quote(item.id)}: {quote(item.rationale)}" for item in decisions],
    )
    lines += ["Required next action:", next_action(task, claims, proposals, quote)]
    return "\n".join(lines) + "\n"


def build_briefing(
    *, db: Connection, session_id: str, clock: Clock = system_clock, wall: Wall = OPEN
) -> Briefing:
    """The session's resume briefing; call it inside one ``Store.read()`` for a snapshot.
    ``wall``: a caller bound to workspaces reads of the rows around the session only those of
    its workspace (``store.access.walls``): claims and proposals by their workspace, tasks and
    decisions through them."""
    session = wall.checked(get_session(db=db, session_id=session_id))
    within = wall.around(session)
    claims = claims_of_session(db=db, session=session, now=clock(), wall=wall)
    task = _assigned_task(db, session.agent_id, within) or _claimed_task(db, claims)
    proposals = _pending_proposals(db, session.agent_id, within)
    decisions = _latest_decisions(db, within)
    return Briefing(
        session=session,
        task=task,
        claims=claims,
        proposals=proposals,
        decisions=decisions,
        next_action=next_action(task, claims, proposals),
        markdown=render_markdown(session, task, claims, proposals, decisions),
    )
