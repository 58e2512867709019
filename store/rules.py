"""What the statuses mean, and which lifecycle action may start from which status.

Plain data, no database: the console's start-up and its footer need these before the store's
SQLAlchemy layer is loaded.
"""

from __future__ import annotations

# The active states (ref); every other status is terminal for lifecycle purposes.
ACTIVE_STATES: tuple[str, ...] = ("starting", "active", "running", "paused", "resuming")
# Tasks in these states are skipped when the briefing picks the agent's task.
FINISHED_TASK_STATES: tuple[str, ...] = ("completed", "done", "cancelled", "canceled")

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
    "resume": (frozenset({"paused", "stopped"}), "only from 'paused' or 'stopped'"),
    "terminate": (_ACTIVE, _ACTIVE_TEXT),
}


def is_allowed(action: str, status: str) -> bool:
    return status in ALLOWED_FROM[action][0]
