"""What the web console shows of permission requests (``store.requests``): each pending one with
its tool, the agent's reason, its whole input as text, when it was asked and until when it waits,
which decisions can reach the agent from here (and, where one cannot, why), and the agent's own
suggestions offered with an allow. Read for one session's page, or across the fleet the caller
reaches; and the words a decision's notice says."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from roundtable_console.api.context import ServerContext
from roundtable_console.api.edge.identity import Caller
from roundtable_console.api.web.views import Moment, moment
from roundtable_console.store.clock import format_ts
from roundtable_console.store.requests.reads import MAX_LISTED, list_requests
from roundtable_console.store.requests.records import (
    ALLOW,
    ALLOWED,
    DECISIONS,
    DENIED,
    DENY,
    EXPIRED,
    PermissionRequestRecord,
)
from roundtable_console.store.safety.display import exact

# A suggestion's compact text on its button: at most this long (the whole of it shown beside).
SUGGESTION_SHOWN = 160


@dataclass(frozen=True)
class Suggestion:
    """One of the agent's own suggestions, by its index in the agent's list."""

    index: int
    text: str
    short: str

    @property
    def cut(self) -> bool:
        return self.short != self.text


@dataclass(frozen=True)
class RequestView:
    id: str
    session_id: str
    agent: str
    tool: str
    reason: str
    input_text: str
    input_cut: bool
    # Redaction hid parts of the input: what is shown is not all the agent would run (an allow
    # says it knows: ``deciding``'s ``hidden_seen``).
    hidden: str | None
    # No hook waits for the answer (nothing asked through one, as in the demo): said, in words.
    unheard: str | None
    asked: Moment
    until: Moment
    # The decisions the agent's hooks can carry from here; why the others cannot.
    allow: bool
    deny: bool
    why_not: tuple[str, ...]
    suggestions: tuple[Suggestion, ...]


def compact(value: Any) -> str:
    """A suggestion as one line of JSON text."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), sort_keys=False)


def suggestion_of(index: int, value: Any) -> Suggestion:
    text = compact(value)
    short = text if len(text) <= SUGGESTION_SHOWN else text[: SUGGESTION_SHOWN - 1] + "…"
    return Suggestion(index, text, short)


def request_view(record: PermissionRequestRecord, now: datetime) -> RequestView:
    allow = record.why_not(ALLOW) is None
    reasons = (record.why_not(decision) for decision in DECISIONS)
    return RequestView(
        id=record.id,
        session_id=record.session_id,
        agent=record.agent,
        tool=record.tool_name,
        reason=record.reason,
        input_text=record.input_text,
        input_cut=record.input_cut,
        hidden=record.HIDDEN_WARNING if record.input_hidden else None,
        unheard=record.unheard,
        asked=moment(record.asked_at, now),
        until=moment(record.expires_at, now),
        allow=allow,
        deny=record.why_not(DENY) is None,
        why_not=tuple(dict.fromkeys(reason for reason in reasons if reason)),
        suggestions=tuple(
            suggestion_of(index, value) for index, value in enumerate(record.suggestions)
        )
        if allow
        else (),
    )


def session_requests(ctx: ServerContext, caller: Caller, session_id: str) -> list[RequestView]:
    """The session's pending requests, the oldest first (not found: out of the caller's reach)."""
    records = list_requests(
        store=ctx.store, wall=caller.wall, session_id=session_id, clock=ctx.clock
    )
    now = ctx.clock()
    return [request_view(record, now) for record in records]


@dataclass(frozen=True)
class FleetRequests:
    requests: list[RequestView]
    # As many as one read lists: the oldest of them shown, more may wait.
    full: bool


def fleet_requests(ctx: ServerContext, caller: Caller) -> FleetRequests:
    """The pending requests of every session the caller reaches, the longest-waiting first."""
    records = list_requests(store=ctx.store, wall=caller.wall, clock=ctx.clock)
    now = ctx.clock()
    return FleetRequests(
        [request_view(record, now) for record in records], len(records) >= MAX_LISTED
    )


def decided_words(record: PermissionRequestRecord) -> str:
    """What the operator's decision did, for its notice (and that nobody hears it, when no hook
    asked)."""
    said = _decided(record)
    return f"{said} {record.unheard}" if record.unheard else said


def _decided(record: PermissionRequestRecord) -> str:
    where = f"{record.tool_name} for {record.session_id}"
    if record.state == ALLOWED:
        index = record.accepted_suggestion
        suggestions = record.suggestions
        if index is not None and 0 <= index < len(suggestions):
            return f"Allowed {where}, and don't ask again: {compact(suggestions[index])}."
        return f"Allowed {where}."
    if record.message:
        return f"Denied {where}, with the message: {record.message}"
    return f"Denied {where}."


def lost_words(record: PermissionRequestRecord, decision: str, ctx: ServerContext) -> str:
    """Why a decision changed nothing: another came first, or the request ended."""
    state = record.state_at(format_ts(ctx.clock()))
    where = f"{record.tool_name} for {record.session_id}"
    if state in (ALLOWED, DENIED):
        return (
            f"Already {state} by {record.decided_by} ({exact(record.decided_at)}): "
            f"your {decision} of {where} was not sent."
        )
    if state == EXPIRED:
        return (
            f"Too late: the request for {where} expired at {exact(record.expires_at)}; the "
            "agent asks in its own terminal now."
        )
    return f"Too late: the agent withdrew its request for {where} (it moved on)."
