"""A permission request as the surfaces read it: its tool, its input (redacted, bounded), the
agent's suggestions, what can be answered from here, and its state."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

PENDING = "pending"
ALLOWED = "allowed"
DENIED = "denied"
EXPIRED = "expired"
WITHDRAWN = "withdrawn"  # the agent moved on, or its process went away, before anyone decided
STATES = (PENDING, ALLOWED, DENIED, EXPIRED, WITHDRAWN)

ALLOW = "allow"
DENY = "deny"
DECISIONS = (ALLOW, DENY)
DECIDED = {ALLOW: ALLOWED, DENY: DENIED}

# A tool's input is kept whole up to this many characters of JSON text; beyond, cut (and said).
MAX_INPUT_CHARACTERS = 64 * 1024
# The agent's suggestions: at most this many, this long as JSON text all together.
MAX_SUGGESTIONS = 20
MAX_SUGGESTIONS_CHARACTERS = 16 * 1024
# A decision's message to the agent (its model reads it).
MAX_MESSAGE_CHARACTERS = 2000
# A request waits at most this long by default, and never longer than the hook's own bound.
DEFAULT_WAIT_SECONDS = 120
MAX_WAIT_SECONDS = 3600

# The history events of a request (each with its actor when a human's).
ASKED_EVENT = "permission_requested"
DECIDED_EVENT = "permission_decided"
REPLY_EVENT = "replied"
# A finished turn's hook listens for a reply, and stops (its wait over, or it was stopped): in the
# history, so that every page following the session learns it can reply now, and now cannot.
LISTENING_EVENT = "reply_listening"
LISTENING_ENDED_EVENT = "reply_listening_ended"
# Rows that say nothing of the session's own state (its status, its wait): the change feed
# compares a row with the last one that does. A decision says what its session waits on after
# it (``WAITING_AFTER``: the next request's reason, or null).
SIDE_EVENTS = (ASKED_EVENT, REPLY_EVENT, LISTENING_EVENT, LISTENING_ENDED_EVENT)
WAITING_AFTER = "waiting_after"

# What each agent's hook protocol can deliver (docs/reference/agent-facts.md#how-a-hook-answers).
ANSWERS_BY_AGENT = {"claude-code": (ALLOW, DENY), "codex": (ALLOW, DENY), "gemini": ()}
WHY_NOT = {
    "gemini": (
        "Gemini CLI's hooks cannot allow a tool, and its permission dialog tells no hook of the "
        "answer: answer it in Gemini's own terminal."
    ),
}


NOBODY_LISTENS = (
    "Nobody is listening: no hook asked for this answer (as in the demo), so no agent is told."
)


@dataclass(frozen=True)
class PermissionRequestRecord:
    """One request; text fields are as stored (redacted when written)."""

    id: str
    session_id: str
    agent: str
    tool_name: str
    tool_input_json: str
    input_cut: bool
    input_hidden: bool
    suggestions_json: str | None
    answers: tuple[str, ...]
    reason: str
    asked_at: str
    expires_at: str
    state: str
    decided_by: str | None
    decided_at: str | None
    message: str | None
    accepted_suggestion: int | None
    delivered_at: str | None
    # The hook that asked, waiting for the answer; none when nothing asked through a hook.
    hook_host: str | None = None
    hook_pid: int | None = None

    @classmethod
    def from_row(cls, row: Any) -> PermissionRequestRecord:
        values = row._mapping
        return cls(
            id=values["id"],
            session_id=values["session_id"],
            agent=values["agent"],
            tool_name=values["tool_name"],
            tool_input_json=values["tool_input_json"],
            input_cut=bool(values["input_cut"]),
            input_hidden=bool(values["input_hidden"]),
            suggestions_json=values["suggestions_json"],
            answers=tuple(part for part in (values["answers"] or "").split(",") if part),
            reason=values["reason"],
            asked_at=values["asked_at"],
            expires_at=values["expires_at"],
            state=values["state"],
            decided_by=values["decided_by"],
            decided_at=values["decided_at"],
            message=values["message"],
            accepted_suggestion=values["accepted_suggestion"],
            delivered_at=values["delivered_at"],
            hook_host=values["hook_host"],
            hook_pid=values["hook_pid"],
        )

    @classmethod
    def from_json(cls, shown: dict[str, Any]) -> PermissionRequestRecord:
        """A request as the API answered it (``to_json``): what a hook asking through a server
        reads of it."""
        suggestions = shown.get("suggestions") or []
        return cls(
            id=str(shown["id"]),
            session_id=str(shown["session_id"]),
            agent=str(shown["agent"]),
            tool_name=str(shown["tool_name"]),
            tool_input_json=json.dumps(shown.get("tool_input"), ensure_ascii=False),
            input_cut=bool(shown.get("input_cut")),
            input_hidden=bool(shown.get("input_hidden")),
            suggestions_json=json.dumps(suggestions, ensure_ascii=False) if suggestions else None,
            answers=tuple(str(answer) for answer in shown.get("answers") or ()),
            reason=str(shown.get("reason") or ""),
            asked_at=str(shown["asked_at"]),
            expires_at=str(shown["expires_at"]),
            state=str(shown["state"]),
            decided_by=shown.get("decided_by"),
            decided_at=shown.get("decided_at"),
            message=shown.get("message"),
            accepted_suggestion=shown.get("accepted_suggestion"),
            delivered_at=shown.get("delivered_at"),
        )

    def state_at(self, now: str) -> str:
        """The state as it stands at ``now``: a pending request past its wait has expired,
        even when its hook could not say so (the store was down)."""
        if self.state == PENDING and self.expires_at <= now:
            return EXPIRED
        return self.state

    def is_open(self, now: str) -> bool:
        return self.state_at(now) == PENDING

    @property
    def tool_input(self) -> Any:
        try:
            return json.loads(self.tool_input_json)
        except ValueError:
            return self.tool_input_json

    @property
    def input_text(self) -> str:
        """The whole input as indented JSON text (a string input as itself)."""
        value = self.tool_input
        if isinstance(value, str):
            return value
        return json.dumps(value, indent=2, ensure_ascii=False)

    @property
    def suggestions(self) -> list[Any]:
        if not self.suggestions_json:
            return []
        try:
            value = json.loads(self.suggestions_json)
        except ValueError:
            return []
        return value if isinstance(value, list) else []

    HIDDEN_WARNING = (
        "Parts of this input look like secrets and are hidden: what is shown is not all the "
        "agent would run."
    )

    @property
    def unheard(self) -> str | None:
        """Why no agent is told of a decision, when no hook asked for it; else None."""
        return NOBODY_LISTENS if self.hook_pid is None else None

    @property
    def who_hears(self) -> str:
        """Who is told of a decision, in words."""
        return self.unheard or "Its agent is told within a second."

    def why_not(self, decision: str) -> str | None:
        """Why ``decision`` cannot be delivered to this agent; None when it can."""
        if decision in self.answers:
            return None
        return WHY_NOT.get(self.agent) or f"This agent's hooks cannot deliver a {decision}."

    def to_json(self, now: str) -> dict[str, Any]:
        return {
            "id": self.id,
            "session_id": self.session_id,
            "agent": self.agent,
            "tool_name": self.tool_name,
            "tool_input": self.tool_input,
            "input_cut": self.input_cut,
            "input_hidden": self.input_hidden,
            "suggestions": self.suggestions,
            "answers": list(self.answers),
            "reason": self.reason,
            "asked_at": self.asked_at,
            "expires_at": self.expires_at,
            "state": self.state_at(now),
            "decided_by": self.decided_by,
            "decided_at": self.decided_at,
            "message": self.message,
            "accepted_suggestion": self.accepted_suggestion,
            "delivered_at": self.delivered_at,
        }
