"""Lifecycle actions by a human operator: heartbeat, pause, stop, resume, terminate.

Each action is one transaction: idempotency look-up, state checks, a compare-and-swap update on
the row's ``version``, the session event, the run's ``session.<event>`` event, and the idempotency
record. A success proves all of them were written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cache, partial
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Row, bindparam, select, tuple_, update
from sqlalchemy.exc import IntegrityError

from roundtable_console.store import errors, validation
from roundtable_console.store.clock import Clock, format_ts, system_clock
from roundtable_console.store.db.models import Agent, AgentSession, IdempotencyKey, Workspace
from roundtable_console.store.db.session_rows import SESSIONS, as_session
from roundtable_console.store.reads.claims import ActiveClaim, active_claims
from roundtable_console.store.reads.sessions import get_session
from roundtable_console.store.resume.gitcheck import BranchReading, read_branch
from roundtable_console.store.rules import ACTIVE_STATES, ALLOWED_FROM, is_allowed
from roundtable_console.store.writes.history import (
    Prepared,
    append_events,
    append_run_event,
    append_session_event,
    prepared_insert,
    run_event_row,
    session_event_row,
)

_KEYS = IdempotencyKey.__table__  # type: ignore[attr-defined]
_AGENTS = Agent.__table__  # type: ignore[attr-defined]
_WORKSPACES = Workspace.__table__  # type: ignore[attr-defined]
# Every statement of an action is built once (a bulk run sends thousands); the writes go
# straight to the DBAPI as a heartbeat's do (store.writes.history.Prepared).
_FIND_KEY = select(_KEYS.c.action, _KEYS.c.session_id, _KEYS.c.outcome).where(
    _KEYS.c.key == bindparam("key")
)
_INSERT_KEY = prepared_insert(_KEYS, ("key", "action", "session_id", "outcome", "created_at"))

NOT_DONE_BY_TERMINATE = (
    "Terminating records the session as terminated. It releases no claim, cancels no task, "
    "resolves no proposal, and starts or kills no process."
)


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


def termination_impact(
    *, db: Connection, session_id: str, clock: Clock = system_clock
) -> TerminationImpact:
    session = get_session(db=db, session_id=session_id)
    return TerminationImpact(
        session=session, claims=active_claims(db=db, agent_id=session.agent_id, now=clock())
    )


# An action-specific check: it may refuse (raise), and returns extra history payload.
Check = Callable[[Connection, AgentSession, str], dict[str, Any]]


@dataclass(frozen=True)
class _Rule:
    """What an action writes (DESIGN §5's table): its history event, the new status (None keeps
    the current one), the columns set to now and those cleared, whether a key is required."""

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


def _swapped(rule: _Rule, now: Any) -> dict[str, Any]:
    """What the rule's update sets, ``now`` being the time (a value or a bind parameter). Any
    operator action answers a session that waits for a human, and moves its version."""
    return {
        **rule.changes(now),
        "waiting_reason": None,
        "waiting_since": None,
        "version": SESSIONS.c.version + 1,
    }


@cache
def _compare_and_swap(rule: _Rule) -> Prepared:
    """The rule's update of one session at the version it was read at (``:session``,
    ``:read``, ``:now``), returning the new row; one statement per rule, built once."""
    return Prepared(
        update(SESSIONS)
        .where(SESSIONS.c.id == bindparam("session"), SESSIONS.c.version == bindparam("read"))
        .values(_swapped(rule, bindparam("now")))
        .returning(*SESSIONS.c)
    )


_RULES: dict[str, _Rule] = {
    rule.action: rule
    for rule in (
        _Rule("heartbeat", "heartbeat", None, stamped=("last_seen_at",)),
        _Rule("pause", "paused", "paused"),
        _Rule("stop", "stopped", "stopped", stamped=("ended_at", "last_seen_at")),
        _Rule(
            "resume",
            "resuming",
            "resuming",
            stamped=("last_seen_at",),
            cleared=("ended_at",),
            key_required=True,
        ),
        _Rule(
            "terminate",
            "terminated",
            "terminated",
            stamped=("ended_at", "last_seen_at"),
            key_required=True,
        ),
    )
}


# The action an operator names (the CLI's command) → the history event it writes.
ACTION_EVENTS: dict[str, str] = {action: rule.event_type for action, rule in _RULES.items()}


def key_required(action: str) -> bool:
    """Whether ``action`` refuses to run without an idempotency key (resume, terminate)."""
    return _RULES[action].key_required


def result_status(action: str) -> str | None:
    """The status ``action`` leaves a session in; None when it keeps the current one."""
    return _RULES[action].status


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


def _replay(db: Connection, key: str | None, action: str, session_id: str) -> ActionOutcome | None:
    if key is None:
        return None
    row = db.execute(_FIND_KEY, {"key": key}).one_or_none()
    if row is None:
        return None
    return _replayed(row, key, action, session_id)


def _replayed(row: Row[Any], key: str, action: str, session_id: str) -> ActionOutcome:
    """The first outcome under ``key`` (a row of ``_KEYS``), when it was for this action and
    session; else the key's reuse is refused."""
    if row.action != action or row.session_id != session_id:
        raise errors.IdempotencyKeyReuse(
            f"The idempotency key {key!r} was already used to {row.action} session "
            f"{row.session_id!r}; use a new key for this action."
        )
    return ActionOutcome.from_json(json.loads(row.outcome), replayed=True)


def _apply(rule: _Rule, request: _Request, check: Check | None = None) -> ActionOutcome:
    """The action in the caller's transaction. Every refusal is raised before the first write
    (the key, the row, the version, the status rule, the action's check), except a key recorded
    by another transaction at the same moment, which fails a statement: ``store.writes.bulk``
    relies on it to run many sessions in one PostgreSQL transaction without a savepoint each."""
    db, action, session_id, actor = request.db, rule.action, request.session_id, request.actor
    key = (request.idempotency_key or "").strip() or None
    if rule.key_required and key is None:
        raise errors.IdempotencyKeyRequired(
            f"To {action} a session, give an idempotency key so a retry never applies twice."
        )
    replayed = _replay(db, key, action, session_id)
    if replayed is not None:
        return replayed
    session = get_session(db=db, session_id=session_id)
    if request.expected_version is not None and session.version != request.expected_version:
        raise _conflict(session)
    _refuse_illegal(action, session)
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
    written = _Written(rule, session, outcome, actor, now, extra)
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
        _record_keys(db, [written.key_row(key)])
    return outcome


def _refuse_illegal(action: str, session: AgentSession) -> None:
    """The status rule (store.rules): the action may start from the session's status, or not."""
    if not is_allowed(action, session.status):
        raise errors.IllegalSessionTransition(
            f"Cannot {action} session {session.id!r}: its status is {session.status!r}; "
            f"{action} is allowed {ALLOWED_FROM[action][1]}."
        )


@dataclass(frozen=True)
class _Written:
    """What an applied action writes besides the row: its history event, its run's event and,
    under a key, the key with the outcome (``session``: the row as read, before the action)."""

    rule: _Rule
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


def _record_keys(db: Connection, rows: list[dict[str, Any]], *, many: bool = False) -> None:
    try:
        if many:
            _INSERT_KEY.executemany(db, rows)
        else:
            (row,) = rows
            _INSERT_KEY.execute(db, row)
    except IntegrityError:
        # Another transaction recorded the same key after our look-up (PostgreSQL lets both
        # look-ups run at once; the key's primary key is where they meet). Its action won.
        if many:
            raise BatchInterrupted() from None
        raise errors.IdempotencyKeyReuse(
            f"The idempotency key {rows[0]['key']!r} was used by another action at the same "
            "moment; nothing was applied. Use a new key for this action."
        ) from None


def _conflict(current: AgentSession) -> errors.SessionTransitionConflict:
    return errors.SessionTransitionConflict(
        f"Session {current.id!r} changed since it was read: it is now {current.status!r} "
        f"(version {current.version}). Reload it and decide again.",
        details={"current": current.to_json()},
    )


# ------------------------------------------------------------------ many sessions at once

# The actions whose rule alone decides (no check of their own, no key required): many sessions
# can be applied in a few statements (``apply_many``), as store.writes.bulk does.
PLAIN_ACTIONS = frozenset({"heartbeat", "pause", "stop"})


class BatchInterrupted(Exception):
    """A statement of ``apply_many`` failed after its first write (another transaction recorded
    one of its keys at the same moment): the caller rolls the transaction back and applies the
    sessions one at a time, where that refusal falls on the one session it concerns."""


@dataclass(frozen=True)
class Applied:
    """What ``apply_many`` did to a session: its ``outcome`` (applied, or replayed), or its
    refusal (``error``; ``status``: the session's status when the status rule refused it), or
    neither when the row changed between the batch's read and its update: the caller then
    applies that session alone, which judges it as it is now."""

    outcome: ActionOutcome | None = None
    error: errors.StoreError | None = None
    status: str | None = None


_ALONE = Applied()


def apply_many(
    *,
    db: Connection,
    action: str,
    requests: Sequence[tuple[str, str | None]],
    actor: str,
    clock: Clock = system_clock,
) -> dict[str, Applied]:
    """``action`` (one of ``PLAIN_ACTIONS``, the operator's heartbeat setting no status) on each
    ``(session id, idempotency key or None)`` of ``requests`` (each session once, each key its
    own), in the caller's transaction: exactly what ``_apply`` does for each of them one after
    the other, the same checks in the same order with the same refusals, writing the same rows
    (each table's in the order of ``requests``), in a few statements for them all: the keys
    read, the rows read, one compare-and-swap update of every row the action applies to, then
    the history, the runs' events and the keys, each table's rows in one ``executemany``. The
    time is read once, for them all.

    Every refusal is decided before the first write. A write that fails raises
    ``BatchInterrupted`` (the transaction must be rolled back); any other error of the store
    is raised as it is."""
    if action not in PLAIN_ACTIONS:
        raise ValueError(f"{action!r} checks more than its rule: apply it one session at a time")
    rule = _RULES[action]
    done: dict[str, Applied] = {}
    requests = [(session_id, (key or "").strip() or None) for session_id, key in requests]
    keys = {key: session_id for session_id, key in requests if key}
    if keys:
        for row in _find_keys(db, list(keys)):
            session_id = keys[row.key]
            try:
                done[session_id] = Applied(_replayed(row, row.key, action, session_id))
            except errors.StoreError as error:
                done[session_id] = Applied(error=error)
    wanted = [session_id for session_id, _key in requests if session_id not in done]
    read = {}
    if wanted:
        statement = select(SESSIONS).where(SESSIONS.c.id.in_(wanted))
        read = {row.id: as_session(row._mapping) for row in db.execute(statement)}
    applies: list[AgentSession] = []
    for session_id in wanted:
        session = read.get(session_id)
        try:
            if session is None:
                get_session(db=db, session_id=session_id)  # refuses, in its own words
                done[session_id] = _ALONE  # written since the batch's read
                continue
            _refuse_illegal(action, session)
        except errors.StoreError as error:
            status = None if session is None else session.status
            done[session_id] = Applied(error=error, status=status)
            continue
        applies.append(session)
    if applies:
        _write_many(db, rule, applies, dict(requests), actor, format_ts(clock()), done)
    return {session_id: done[session_id] for session_id, _key in requests}


def _find_keys(db: Connection, keys: list[str]) -> list[Row[Any]]:
    """The recorded ``keys`` among these, as ``_replay`` reads one."""
    columns = (_KEYS.c.key, _KEYS.c.action, _KEYS.c.session_id, _KEYS.c.outcome)
    return list(db.execute(select(*columns).where(_KEYS.c.key.in_(keys))))


def _write_many(
    db: Connection,
    rule: _Rule,
    sessions: list[AgentSession],
    keys: dict[str, str | None],
    actor: str,
    now: str,
    done: dict[str, Applied],
) -> None:
    """``_compare_and_swap`` for every session at once, then what each one writes besides."""
    read = [(session.id, session.version) for session in sessions]
    statement = (
        update(SESSIONS)
        .where(
            SESSIONS.c.id.in_([session_id for session_id, _ in read]),
            tuple_(SESSIONS.c.id, SESSIONS.c.version).in_(read),
        )
        .values(_swapped(rule, now))
        .returning(*SESSIONS.c)
    )
    updated = {row.id: as_session(row._mapping) for row in db.execute(statement)}
    written: list[_Written] = []
    for session in sessions:
        row = updated.get(session.id)
        if row is None:
            done[session.id] = _ALONE  # changed since it was read
            continue
        outcome = ActionOutcome(action=rule.action, session=row)
        written.append(_Written(rule, session, outcome, actor, now))
        done[session.id] = Applied(outcome)
    append_events(db, [w.session_event() for w in written], [w.run_event() for w in written])
    key_rows = [w.key_row(key) for w in written if (key := keys[w.session.id])]
    if key_rows:
        _record_keys(db, key_rows, many=True)


def operator_heartbeat(
    *,
    db: Connection,
    session_id: str,
    actor: str,
    clock: Clock = system_clock,
    status: str | None = None,
    idempotency_key: str | None = None,
    expected_version: int | None = None,
) -> ActionOutcome:
    """The operator vouches for the session: last seen now, optionally a new active status."""
    new_status = validation.status(status) if status and status.strip() else None
    if new_status is not None and new_status not in ACTIVE_STATES:
        raise errors.InvalidSessionStatus(
            f"A heartbeat may only set an active status ({', '.join(ACTIVE_STATES)}), "
            f"not {new_status!r}."
        )
    rule = replace(_RULES["heartbeat"], status=new_status)
    return _apply(rule, _Request(db, session_id, actor, idempotency_key, expected_version, clock))


def _status_change(action: str, **request: Any) -> ActionOutcome:
    """An action that needs no check of its own: the rule's columns change, nothing else.
    ``request``: the keyword arguments every action takes (``_Request``'s fields)."""
    return _apply(_RULES[action], _Request(**request))


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
) -> ActionOutcome:
    def check(db: Connection, session: AgentSession, now: str) -> dict[str, Any]:
        enabled = db.execute(
            select(_AGENTS.c.is_enabled).where(_AGENTS.c.id == session.agent_id)
        ).one_or_none()
        if enabled is None:
            raise errors.AgentNotFound(
                f"Session {session.id!r} belongs to agent {session.agent_id!r}, "
                "which is not in the store; register the agent before resuming."
            )
        if not enabled.is_enabled:
            raise errors.AgentUnavailable(
                f"Agent {session.agent_id!r} is disabled; enable it before resuming its session."
            )
        return _branch_check(db, session, branch_reader)

    request = _Request(db, session_id, actor, idempotency_key, expected_version, clock)
    return _apply(_RULES["resume"], request, check)


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
) -> ActionOutcome:
    details = (impact_details or "").strip()

    def check(db: Connection, session: AgentSession, now: str) -> dict[str, Any]:
        claims = active_claims(db=db, agent_id=session.agent_id, now=clock())
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

    request = _Request(db, session_id, actor, idempotency_key, expected_version, clock)
    return _apply(_RULES["terminate"], request, check)


# Every operator action by name, as the console and the CLI call them.
ACTIONS: dict[str, Callable[..., ActionOutcome]] = {
    "heartbeat": operator_heartbeat,
    "pause": pause,
    "stop": stop,
    "resume": resume,
    "terminate": terminate,
}
