"""Typed store errors. Each carries a stable ``code`` shared by the CLI, the TUI and the tests."""

from __future__ import annotations

# typing is not imported at run time: every hook's process would pay ~3 ms for it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


# Codes that mean "the input was bad" (CLI exit 2); every other code is a refusal (exit 1).
BAD_INPUT_CODES = frozenset(
    {
        "invalid_session",
        "invalid_session_status",
        "invalid_limit",
        "invalid_cursor",
        "invalid_import",
        "idempotency_key_required",
        "invalid_token_request",
        "invalid_event_cursor",
        "invalid_decision",
        "invalid_reply",
        "invalid_host",
        "invalid_device",
        "invalid_new_session",
    }
)


class StoreError(Exception):
    """A refusal with a stable code and a sentence a person can act on."""

    code: str = "store_error"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = details or {}

    @property
    def is_bad_input(self) -> bool:
        return self.code in BAD_INPUT_CODES

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            body["details"] = self.details
        return {"error": body}


def _error(code: str, doc: str) -> type[StoreError]:
    name = "".join(part.capitalize() for part in code.split("_"))
    return type(name, (StoreError,), {"code": code, "__doc__": doc})


InvalidSession = _error("invalid_session", "Required session values are missing or malformed.")
InvalidSessionStatus = _error("invalid_session_status", "A status string is not acceptable.")
SessionNotFound = _error("session_not_found", "No session has that id.")
AgentNotFound = _error("agent_not_found", "The session's agent is not in the store.")
AgentUnavailable = _error("agent_unavailable", "The session's agent is disabled.")
IllegalSessionTransition = _error(
    "illegal_session_transition", "The action is not allowed from the session's current status."
)
SessionTransitionConflict = _error(
    "session_transition_conflict", "The session changed since it was read."
)
SessionBranchConflict = _error(
    "session_branch_conflict", "The workspace is not on the session's saved branch."
)
TerminationImpactRequired = _error(
    "termination_impact_required", "The agent holds active claims; impact details are required."
)
IdempotencyKeyRequired = _error("idempotency_key_required", "The action needs an idempotency key.")
IdempotencyKeyReuse = _error(
    "idempotency_key_reuse", "The idempotency key was used for another action or session."
)
InvalidLimit = _error("invalid_limit", "A page limit is outside 1…200.")
InvalidCursor = _error("invalid_cursor", "A page cursor is not one this store issued.")
InvalidImport = _error("invalid_import", "An import record is malformed.")
DatabaseUnavailable = _error("database_unavailable", "The database cannot be opened or reached.")
ReadOnly = _error(
    "read_only", "The store was opened read-only, or the database role may not write there."
)
NotLaunchable = _error(
    "not_launchable", "The session's agent cannot be started here (resume and launch)."
)
InvalidTokenRequest = _error(
    "invalid_token_request", "A token cannot be made or revoked as asked (name, role, agent)."
)
InvalidToken = _error("invalid_token", "A bearer token is unknown, revoked or expired.")
TokenNotFound = _error("token_not_found", "No token has that name.")
DeviceNotFound = _error(
    "device_not_found", "No device sign-in has that id (within the caller's reach)."
)
InvalidDevice = _error(
    "invalid_device", "A device's name, key or proof is malformed, or the proof does not hold."
)
WorkspaceNotFound = _error(
    "workspace_not_found", "No workspace has that id, or it is not reachable."
)
SessionCreateConflict = _error("session_create_conflict", "A new session could not be stored.")
InvalidEventCursor = _error("invalid_event_cursor", "An event stream position is not one it gave.")
RequestNotFound = _error("request_not_found", "No permission request has that id (within reach).")
RequestAlreadySettled = _error(
    "request_already_settled", "The permission request was decided, expired or withdrawn already."
)
TooManyPending = _error(
    "too_many_pending_requests",
    "The session, or its agent, has as many permission requests pending as it may.",
)
InvalidDecision = _error("invalid_decision", "A decision is allow or deny, with what it may carry.")
NotDeliverable = _error(
    "not_deliverable", "The agent's hooks cannot deliver that answer (say how it can be answered)."
)
NoReplyPath = _error("no_reply_path", "The session's agent cannot be sent a reply from here.")
InvalidReply = _error("invalid_reply", "A reply is 1…4000 printable characters.")
AgentNotRunning = _error(
    "agent_not_running", "The session's agent runs in no tmux pane Roundtable started."
)
InvalidHost = _error(
    "invalid_host", "A host's name or what it says it found is malformed (store.hosts.facts)."
)
HostUnavailable = _error(
    "host_unavailable", "The session's host is offline, or did not answer in time."
)
InvalidNewSession = _error(
    "invalid_new_session", "A new session's host, project, agent, branch or prompt is malformed."
)
NotStarted = _error(
    "not_started", "The host would not start the new session (its project, agent, branch, base)."
)
NotFinishable = _error(
    "not_finishable", "The session's worktree cannot be removed (none, its agent runs, its host)."
)
WorktreeNotClean = _error(
    "worktree_not_clean", "The session's worktree holds what is not committed: discard it, or not."
)
# A client of the server (the command line and the console through roundtable serve).
ServerUnavailable = _error(
    "server_unavailable", "roundtable serve did not answer, or answered with something else."
)
NotThroughServer = _error(
    "not_through_server", "What the console does not do through a server yet."
)
