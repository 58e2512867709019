"""Lifecycle actions by a human operator: heartbeat, pause, stop, resume, terminate.

Each action is one transaction: idempotency look-up, state checks, a compare-and-swap update on
the row's ``version``, the session event, the run's ``session.<event>`` event, and the idempotency
record. A success proves all of them were written.

Here: what each action writes (``RULES``), ``_apply``, which writes it, and the actions by name
(``ACTIONS``). What an action returns is ``store.writes.lifecycle_outcomes``'s, its key's
look-up and record ``store.writes.lifecycle_keys``'s; ``store.writes.lifecycle_many`` applies a
plain action to many sessions at once, by the same rules.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cache, partial
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, bindparam, select, update

from roundtable_console.store import errors, validation
from roundtable_console.store.access.walls import OPEN, Wall
from roundtable_console.store.clock import Clock, format_ts, system_clock
from roundtable_console.store.db.models import Agent, AgentSession, Workspace
from roundtable_console.store.db.session_rows import SESSIONS, as_session
from roundtable_console.store.reads.claims import claims_of_session
from roundtable_console.store.reads.sessions import get_session
from roundtable_console.store.resume.gitcheck import BranchReading, read_branch
from roundtable_console.store.rules import ACTIVE_STATES, ALLOWED_FROM, is_allowed
from roundtable_console.store.writes.history import (
    Prepared,
    append_run_event,
    append_session_event,
    run_event_row,
    session_event_row,
)
from roundtable_console.store.writes.lifecycle_keys import record_keys, replay
from roundtable_console.store.writes.lifecycle_outcomes import NOT_DONE_BY_TERMINATE, ActionOutcome

_AGENTS = Agent.__table__  # type: ignore[attr-defined]
_WORKSPACES = Workspace.__table__  # type: ignore[attr-defined]


# An action-specific check: it may refuse (raise), and returns extra history payload.
Check = Callable[[Connection, AgentSession, str], dict[str, Any]]


@dataclass(frozen=True)
class Rule:
    """What an action writes (the table of ``docs/reference/roundtable.md#statuses-and-lifecycle``):
    its history event, the new status (None keeps the current one), the columns set to now and those
    cleared, whether a key is required."""

    action: str
    event_type: str
    status: str | None
    stamped: tuple[str, ...] = ()
    cleared: tuple[str, ...] = ()
    key_required: bool = False

    def changes(self, now: str) -> dict[str, Any]:
        values: dict[str, Any] = dict.fromkeys(self.stamped, now)
        values.update(dict.fromkeys(self.cleared))
        if self.status is not None:
            values["status"] = self.status
        return values


def swapped(rule: Rule, now: Any) -> dict[str, Any]:
    """What the rule's update sets, ``now`` being the time (a value or a bind parameter). Any
    operator action answers a session that waits for a human, and moves its version."""
    return {
        **rule.changes(now),
        "waiting_reason": None,
        "waiting_since": None,
        "version": SESSIONS.c.version + 1,
    }


@cache
def _compare_and_swap(rule: Rule) -> Prepared:
    """The rule's update of one session at the version it was read at (``:session``,
    ``:read``, ``:now``), returning the new row; one statement per rule, built once."""
    return Prepared(
        update(SESSIONS)
        .where(SESSIONS.c.id == bindparam("session"), SESSIONS.c.version == bindparam("read"))
        .values(swapped(rule, bindparam("now")))
        .returning(*SESSIONS.c)
    )


RULES: dict[str, Rule] = {
    rule.action: rule
    for rule in (
        Rule("heartbeat", "heartbeat", None, stamped=("last_seen_at",)),
        Rule("pause", "paused", "paused"),
        Rule("stop", "stopped", "stopped", stamped=("ended_at", "last_seen_at")),
        Rule(
            "resume",
            "resuming",
            "resuming",
            stamped=("last_seen_at",),
            cleared=("ended_at",),
            key_required=True,
        ),
        Rule(
            "terminate",
            "terminated",
            "terminated",
            stamped=("ended_at", "last_seen_at"),
            key_required=True,
        ),
    )
}


# The action an operator names (the CLI's command) → the history event it writes.
ACTION_EVENTS: dict[str, str] = {action: rule.event_type for action, rule in RULES.items()}


def key_required(action: str) -> bool:
    """Whether ``action`` refuses to run without an idempotency key (resume, terminate)."""
    return RULES[action].key_required


def result_status(action: str) -> str | None:
    """The status ``action`` leaves a session in; None when it keeps the current one."""
    return RULES[action].status


@dataclass(frozen=True)
class _Request:
    """Who asks for an action on which session, under which key, against which version: the
    arguments every action takes, by their names."""

    db: Connection
    session_id: str
    actor: str
    idempotency_key: str | None = None
    expected_version: int | None = None
    clock: Clock = system_clock
    # The actor's reach (store.access.walls): a session beyond it is not found, checked in the
    # action's own transaction.
    wall: Wall = OPEN


def checked_key(action: str, idempotency_key: str | None) -> str | None:
    """The action's key, stripped (None: none given); refused when the action needs one."""
    key = (idempotency_key or "").strip() or None
    if key is None and key_required(action):
        raise errors.IdempotencyKeyRequired(
            f"To {action} a session, give an idempotency key so a retry never applies twice."
        )
    return key


def _apply(rule: Rule, request: _Request, check: Check | None = None) -> ActionOutcome:
    """The action in the caller's transaction. Every refusal is raised before the first write
    (the key, the row, the version, the status rule, the action's check), except a key recorded
    by another transaction at the same moment, which fails a statement: ``store.writes.bulk_run``
    relies on it to run many sessions in one PostgreSQL transaction without a savepoint each."""
    db, action, session_id, actor = request.db, rule.action, request.session_id, request.actor
    key = checked_key(action, request.idempotency_key)
    replayed = replay(db, key, action, session_id)
    if replayed is not None:
        return replayed
    session = request.wall.checked(get_session(db=db, session_id=session_id))
    if request.expected_version is not None and session.version != request.expected_version:
        raise _conflict(session)
    refuse_illegal(action, session)
    now = format_ts(request.clock())
    extra = check(db, session, now) if check is not None else {}
    notes = tuple(extra.pop("notes", ()))
    claims = tuple(extra.pop("claims", ()))
    row = _compare_and_swap(rule).execute(
        db, {"session": session.id, "read": session.version, "now": now}
    )
    if row is None:
        raise _conflict(get_session(db=db, session_id=session_id))
    outcome = ActionOutcome(action=action, session=as_session(row), notes=notes, claims=claims)
    written = Written(rule, session, outcome, actor, now, extra)
    event_type, payload = rule.event_type, written.payload
    append_session_event(
        db, session_id=session.id, event_type=event_type, payload=payload, now=now, actor=actor
    )
    append_run_event(
        db,
        run_id=session.run_id,
        event_type=f"session.{event_type}",
        actor=actor,
        payload=written.run_payload,
        now=now,
    )
    if key is not None:
        record_keys(db, [written.key_row(key)])
    return outcome


def refuse_illegal(action: str, session: AgentSession) -> None:
    """The status rule (store.rules): the action may start from the session's status, or not."""
    if not is_allowed(action, session.status):
        raise errors.IllegalSessionTransition(
            f"Cannot {action} session {session.id!r}: its status is {session.status!r}; "
            f"{action} is allowed {ALLOWED_FROM[action][1]}."
        )


@dataclass(frozen=True)
class Written:
    """What an applied action writes besides the row: its history event, its run's event and,
    under a key, the key with the outcome (``session``: the row as read, before the action)."""

    rule: Rule
    session: AgentSession
    outcome: ActionOutcome
    actor: str
    now: str
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def payload(self) -> dict[str, Any]:
        values = self.rule.changes(self.now)
        return {
            "status": self.outcome.session.status,
            "previous_status": self.session.status,
            "actor": self.actor,
            **{name: values[name] for name in ("last_seen_at", "ended_at") if name in values},
            **self.extra,
        }

    def session_event(self) -> dict[str, Any]:
        return session_event_row(
            session_id=self.session.id,
            event_type=self.rule.event_type,
            payload=self.payload,
            now=self.now,
            actor=self.actor,
        )

    @property
    def run_payload(self) -> dict[str, Any]:
        return {"session_id": self.session.id, **self.payload}

    def run_event(self) -> dict[str, Any]:
        return run_event_row(
            run_id=self.session.run_id,
            event_type=f"session.{self.rule.event_type}",
            actor=self.actor,
            payload=self.run_payload,
            now=self.now,
        )

    def key_row(self, key: str) -> dict[str, Any]:
        return {
            "key": key,
            "action": self.rule.action,
            "session_id": self.session.id,
            "outcome": json.dumps(self.outcome.to_json(), sort_keys=True),
            "created_at": self.now,
        }


def _conflict(current: AgentSession) -> errors.SessionTransitionConflict:
    return errors.SessionTransitionConflict(
        f"Session {current.id!r} changed since it was read: it is now {current.status!r} "
        f"(version {current.version}). Reload it and decide again.",
        details={"current": current.to_json()},
    )


def operator_heartbeat(
    *,
    db: Connection,
    session_id: str,
    actor: str,
    clock: Clock = system_clock,
    status: str | None = None,
    idempotency_key: str | None = None,
    expected_version: int | None = None,
    wall: Wall = OPEN,
) -> ActionOutcome:
    """The operator vouches for the session: last seen now, optionally a new active status."""
    new_status = validation.status(status) if status and status.strip() else None
    if new_status is not None and new_status not in ACTIVE_STATES:
        raise errors.InvalidSessionStatus(
            f"A heartbeat may only set an active status ({', '.join(ACTIVE_STATES)}), "
            f"not {new_status!r}."
        )
    rule = replace(RULES["heartbeat"], status=new_status)
    request = _Request(db, session_id, actor, idempotency_key, expected_version, clock, wall)
    return _apply(rule, request)


def _status_change(action: str, **request: Any) -> ActionOutcome:
    """An action that needs no check of its own: the rule's columns change, nothing else.
    ``request``: the keyword arguments every action takes (``_Request``'s fields)."""
    return _apply(RULES[action], _Request(**request))


# Pause: from an active state other than paused, to paused.
pause = partial(_status_change, "pause")
# Stop: from an active state, to stopped, ended now.
stop = partial(_status_change, "stop")


def workspace_root(db: Connection, session: AgentSession) -> str:
    """Where the session's workspace lives: its workspace row's root, else its working dir."""
    workspace_id = session.effective_workspace_id
    if workspace_id:
        root = db.execute(
            select(_WORKSPACES.c.root_path).where(_WORKSPACES.c.id == workspace_id)
        ).scalar_one_or_none()
        if root:
            return str(root)
    return session.working_directory


def resume(
    *,
    db: Connection,
    session_id: str,
    actor: str,
    idempotency_key: str | None,
    expected_version: int | None = None,
    clock: Clock = system_clock,
    branch_reader: Callable[[str | Path], BranchReading] = read_branch,
    wall: Wall = OPEN,
) -> ActionOutcome:
    def check(db: Connection, session: AgentSession, now: str) -> dict[str, Any]:
        enabled = db.execute(
            select(_AGENTS.c.is_enabled).where(_AGENTS.c.id == session.agent_id)
        ).one_or_none()
        if enabled is None and not session.reported_by_hooks:
            # Ours: a session its agent's own hooks registered (Claude Code, Codex, Gemini CLI)
            # names a program, not an agent of the Roundtable system: it needs no agents row.
            raise errors.AgentNotFound(
                f"Session {session.id!r} belongs to agent {session.agent_id!r}, "
                "which is not in the store; register the agent before resuming."
            )
        if enabled is not None and not enabled.is_enabled:
            raise errors.AgentUnavailable(
                f"Agent {session.agent_id!r} is disabled; enable it before resuming its session."
            )
        return _branch_check(db, session, branch_reader)

    request = _Request(db, session_id, actor, idempotency_key, expected_version, clock, wall)
    return _apply(RULES["resume"], request, check)


def _branch_check(
    db: Connection, session: AgentSession, branch_reader: Callable[[str | Path], BranchReading]
) -> dict[str, Any]:
    saved = (session.metadata_dict or {}).get("branch")
    if not saved:
        return {}
    root = workspace_root(db, session)
    reading = branch_reader(root)
    if not reading.repository:
        problem = reading.problem or f"{root} is not a git repository"
        note = f"Branch {saved!r} was not checked: {problem}."
        return {"notes": [note], "branch_checked": False}
    if reading.branch is None:
        raise errors.SessionBranchConflict(
            f"The repository at {root} could not be inspected ({reading.problem}); "
            f"the session expects branch {saved!r}. Fix the repository and retry."
        )
    if reading.branch != saved:
        raise errors.SessionBranchConflict(
            f"The workspace at {root} is on branch {reading.branch!r}, but the session was "
            f"saved on {saved!r}. Check out {saved!r} and retry."
        )
    return {"branch_checked": True, "branch": saved}


def terminate(
    *,
    db: Connection,
    session_id: str,
    actor: str,
    impact_details: str | None = None,
    idempotency_key: str | None,
    expected_version: int | None = None,
    clock: Clock = system_clock,
    wall: Wall = OPEN,
) -> ActionOutcome:
    """``wall``: the actor's reach; the claims that need an impact text are those it sees (a
    caller bound to workspaces: the session's workspace's, ``store.access.walls``)."""
    details = (impact_details or "").strip()

    def check(db: Connection, session: AgentSession, now: str) -> dict[str, Any]:
        claims = claims_of_session(db=db, session=session, now=clock(), wall=wall)
        if claims and not details:
            raise errors.TerminationImpactRequired(
                f"Agent {session.agent_id!r} holds {len(claims)} active claim(s) "
                f"({', '.join(claim.resource_id for claim in claims)}); describe the impact of "
                "terminating before you confirm."
            )
        return {
            "impact_details": details or None,
            "active_claims": [claim.id for claim in claims],
            "claims": [claim.to_json() for claim in claims],
            "notes": [NOT_DONE_BY_TERMINATE],
        }

    request = _Request(db, session_id, actor, idempotency_key, expected_version, clock, wall)
    return _apply(RULES["terminate"], request, check)


# Every operator action by name, as the console and the CLI call them.
ACTIONS: dict[str, Callable[..., ActionOutcome]] = {
    "heartbeat": operator_heartbeat,
    "pause": pause,
    "stop": stop,
    "resume": resume,
    "terminate": terminate,
}
