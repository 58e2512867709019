"""A human's decision on a permission request: allow (with one of the agent's own suggestions,
if it offered any) or deny (with a message the model reads). The first decision wins; a second,
from another operator or screen, is told who decided and how.

One durable transaction: the access check (``before``), the request's compare-and-set from
pending, the session's wait answered, the history row with its actor (the audit trail), a denied
tool call among the session's tool calls (``store.writes.tool_calls``), and the caller's
idempotency record (``within``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection, text

from roundtable_console.store.access.walls import OPEN, Wall
from roundtable_console.store.clock import Clock, format_ts, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import (
    InvalidDecision,
    NotDeliverable,
    RequestAlreadySettled,
    RequestNotFound,
    SessionNotFound,
)
from roundtable_console.store.reads.sessions import get_session
from roundtable_console.store.requests.asking import answered, get_request
from roundtable_console.store.requests.records import (
    ALLOW,
    DECIDED,
    DECIDED_EVENT,
    DECISIONS,
    DENY,
    MAX_MESSAGE_CHARACTERS,
    WAITING_AFTER,
    PermissionRequestRecord,
)
from roundtable_console.store.safety.credentials import redact_output_text
from roundtable_console.store.safety.redaction import redact_text
from roundtable_console.store.validation import has_control_characters
from roundtable_console.store.writes.history import append_session_event
from roundtable_console.store.writes.tool_calls import (
    INSERT_TOOL_CALL,
    tool_call_rows,
    tool_subject,
)

_DECIDE = text(
    "UPDATE permission_requests SET state = :state, decided_by = :actor, decided_at = :now,"
    " message = :message, accepted_suggestion = :suggestion"
    " WHERE id = :id AND state = 'pending' AND expires_at > :now"
)


def checked_message(decision: str, message: str | None) -> str | None:
    if message is None or not message.strip():
        return None
    if decision != DENY:
        raise InvalidDecision(
            "A message goes with a deny (the model reads it as the reason); an allow has none."
        )
    message = message.strip()
    if len(message) > MAX_MESSAGE_CHARACTERS or has_control_characters(message.replace("\n", " ")):
        raise InvalidDecision(
            f"A message is at most {MAX_MESSAGE_CHARACTERS} printable characters."
        )
    return message


def settled_words(record: PermissionRequestRecord, now: str) -> str:
    state = record.state_at(now)
    if state in ("allowed", "denied"):
        return f"It was {state} by {record.decided_by} at {record.decided_at}."
    if state == "expired":
        return f"It expired at {record.expires_at}: the agent asks in its own terminal now."
    return "It was withdrawn: the agent moved on before anyone decided."


def reach(db: Connection, request_id: str, wall: Wall, session_id: str | None) -> Any:
    """The request and its session, when ``wall`` reaches them (and, with ``session_id``, the
    request is that session's); else one answer for missing and out of reach."""
    missing = RequestNotFound(f"No permission request has the id {request_id!r}.")
    try:
        record = get_request(db, request_id)
        session = wall.checked(get_session(db=db, session_id=record.session_id))
    except (RequestNotFound, SessionNotFound):
        raise missing from None
    if session_id is not None and record.session_id != session_id:
        raise missing
    return record, session


def decide_request(
    *,
    store: Store,
    request_id: str,
    decision: str,
    actor: str,
    message: str | None = None,
    suggestion: int | None = None,
    hidden_seen: bool = False,
    wall: Wall = OPEN,
    session_id: str | None = None,
    clock: Clock = system_clock,
    before: Callable[[Connection], object] | None = None,
    within: Callable[[Connection, PermissionRequestRecord], None] | None = None,
) -> PermissionRequestRecord:
    """Decide ``request_id`` as ``actor``. Refusals: ``RequestNotFound`` (missing or out of
    reach), ``InvalidDecision``, ``NotDeliverable`` (the agent's hooks cannot carry it),
    ``RequestAlreadySettled`` (decided, expired or withdrawn: who and when, in words)."""
    if decision not in DECISIONS:
        raise InvalidDecision(f"A decision is allow or deny, not {decision[:40]!r}.")
    message = checked_message(decision, message)
    with store.write(durable=True) as db:
        if before is not None:
            before(db)
        now = format_ts(clock())
        record, _session = reach(db, request_id, wall, session_id)
        why_not = record.why_not(decision)
        if why_not is not None:
            raise NotDeliverable(why_not)
        if decision == ALLOW and record.input_hidden and not hidden_seen:
            raise InvalidDecision(
                f"{record.HIDDEN_WARNING} Allow it only knowing that (the CLI's --despite-hidden, "
                "the API's \"despite_hidden\": true, the console's y twice), or answer it in the "
                "agent's own terminal."
            )
        if suggestion is not None:
            if decision != ALLOW:
                raise InvalidDecision("A suggestion is accepted with an allow only.")
            if not 0 <= suggestion < len(record.suggestions):
                raise InvalidDecision(
                    f"The agent offered {len(record.suggestions)} suggestion(s); "
                    f"there is no number {suggestion}."
                )
        changed = db.execute(
            _DECIDE,
            {
                "id": request_id,
                "state": DECIDED[decision],
                "actor": actor,
                "now": now,
                "message": None if message is None else redact_output_text(message),
                "suggestion": suggestion,
            },
        ).rowcount
        if changed == 0:
            raise RequestAlreadySettled(
                f"Nothing was decided: {settled_words(record, now)}",
                details={"state": record.state_at(now), "decided_by": record.decided_by},
            )
        payload: dict[str, Any] = {
            "request_id": request_id,
            "tool_name": record.tool_name,
            "decision": decision,
        }
        if message is not None:
            payload["message"] = redact_text(message)
        if suggestion is not None:
            payload["suggestion"] = suggestion
        payload[WAITING_AFTER] = answered(db, record, now)
        if decision == DENY:  # a tool call the agent does not make: one of its tool calls
            denied = {"tool": record.tool_name, "outcome": "denied",
                      "summary": tool_subject(record.tool_name, record.tool_input)}  # fmt: skip
            rows = tool_call_rows([denied], session_id=record.session_id, now=now)
            db.execute(text(INSERT_TOOL_CALL), rows)
        append_session_event(
            db,
            session_id=record.session_id,
            event_type=DECIDED_EVENT,
            payload=payload,
            now=now,
            actor=actor,
        )
        decided = get_request(db, request_id)
        if within is not None:
            within(db, decided)
        return decided
