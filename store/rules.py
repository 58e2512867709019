"""What the statuses mean, which lifecycle action may start from which status, and the names of
a session's projections.

Plain data, no database: the console's start-up and its footer, and the CLI's command list, need
these before the store's SQLAlchemy layer is loaded.
"""

from __future__ import annotations

# The active states (ref); every other status is terminal for lifecycle purposes.
ACTIVE_STATES: tuple[str, ...] = ("starting", "active", "running", "paused", "resuming")
# Tasks in these states are skipped when the briefing picks the agent's task.
FINISHED_TASK_STATES: tuple[str, ...] = ("completed", "done", "cancelled", "canceled")
# Proposals in these states are decided; any other waits for a decision.
RESOLVED_PROPOSAL_STATES: tuple[str, ...] = ("accepted", "rejected")

# Every operator action, in the order the console's keys (h p s r t) name them.
LIFECYCLE_ACTIONS: tuple[str, ...] = ("heartbeat", "pause", "stop", "resume", "terminate")

_ACTIVE = frozenset(ACTIVE_STATES)
_ACTIVE_TEXT = "from an active state (" + ", ".join(ACTIVE_STATES) + ")"
# The statuses each action may start from, and that rule in words for a refusal. The console
# offers an action only where this allows it.
ALLOWED_FROM: dict[str, tuple[frozenset[str], str]] = {
    "heartbeat": (_ACTIVE, _ACTIVE_TEXT),
    "pause": (_ACTIVE - {"paused"}, "from an active state other than 'paused'"),
    "stop": (_ACTIVE, _ACTIVE_TEXT),
    # Ours: also from 'ended' (an agent that exited is the common case, and its own resume
    # continues the conversation, its hooks bringing the same session back); the reference
    # resumes only a paused or stopped one. 'terminated' stays final.
    "resume": (
        frozenset({"paused", "stopped", "ended"}),
        "only from 'paused', 'stopped' or 'ended'",
    ),
    "terminate": (_ACTIVE, _ACTIVE_TEXT),
}


def is_allowed(action: str, status: str) -> bool:
    return status in ALLOWED_FROM[action][0]


# The orders a session list can be sorted in (store.reads.listing.SessionOrder).
SORT_COLUMNS: tuple[str, ...] = ("attention", "started", "last_seen", "status", "agent")
# What the console's list can group its sessions by, in the order ``g`` cycles through them
# (after none). A grouped list is read in its group's own order: the group, then start, then id.
GROUP_COLUMNS: tuple[str, ...] = ("workspace", "run", "agent")

# The reference's six subresources of a session, by name, in the order they are shown; the functions
# that read them are store.reads.projections.PROJECTIONS. The paged ones are read a page at a time,
# the others are one record each.
PAGED_PROJECTIONS: tuple[str, ...] = ("logs", "tool-calls", "claims", "proposals")
UNPAGED_PROJECTIONS: tuple[str, ...] = ("metrics", "environment")

# A session's fields the reference calls sensitive: shown masked until revealed, and revealing
# one is recorded as an operator's action (``REVEAL_EVENT``, in the audit trail).
SENSITIVE_FIELDS: tuple[str, ...] = ("external_session_id", "external_resume_command", "mcp_socket")
REVEAL_EVENT = "revealed"
# Ours: an operator started the session's agent in a tmux pane (``R`` in tmux), which the
# console can then show. Like a reveal, history that is not a change of the session.
LAUNCH_EVENT = "launched"
# Ours: an operator stopped the agent's process (``stop-agent``); its hooks say the rest.
AGENT_STOP_EVENT = "agent_stopped"
# Ours: a tool the agent ran, as its hook told (store.writes.tool_calls): the session's own
# history, not a change of it.
TOOL_CALL_EVENT = "tool.call"
QUIET_EVENTS: tuple[str, ...] = (REVEAL_EVENT, LAUNCH_EVENT, AGENT_STOP_EVENT, TOOL_CALL_EVENT)
