"""What each lifecycle action may do from which status, and how its outcome is put in words."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from roundtable_console.store.clock import parse_ts
from roundtable_console.store.errors import StoreError
from roundtable_console.store.records import SessionFields
from roundtable_console.store.rules import ALLOWED_FROM
from roundtable_console.store.safety.display import one_line

if TYPE_CHECKING:
    from roundtable_console.store.writes.lifecycle_outcomes import ActionOutcome

PAST_TENSE: dict[str, str] = {
    "heartbeat": "Heartbeat recorded for",
    "pause": "Paused",
    "stop": "Stopped",
    "resume": "Resuming",
    "terminate": "Terminated",
}

# Refusals after which the session the operator saw is out of date: the dialog closes and the
# screen reloads. Any other refusal leaves the dialog open so a retry reuses its key.
STALE_VIEW_CODES = frozenset(
    {"session_transition_conflict", "illegal_session_transition", "session_not_found"}
)


def why_not(action: str, session: SessionFields | None) -> str:
    if session is None:
        return f"No session is selected, so there is nothing to {action}."
    return (
        f"Cannot {action} {one_line(session.id, 40)}: its status is "
        f"{one_line(session.status, 30)!r}; {action} is allowed {ALLOWED_FROM[action][1]}."
    )


@dataclass(frozen=True)
class ActionResult:
    """How a lifecycle action ended: an outcome, a refusal, or neither (cancelled)."""

    action: str
    session: SessionFields
    outcome: ActionOutcome | None = None
    error: StoreError | None = None

    @property
    def cancelled(self) -> bool:
        return self.outcome is None and self.error is None


@dataclass(frozen=True)
class AgentStopResult(ActionResult):
    """``X``: the agent's process asked to stop; what it took, in words (``report``)."""

    report: str = ""

    @property
    def cancelled(self) -> bool:
        return not self.report and self.error is None


@dataclass(frozen=True)
class LaunchResult(ActionResult):
    """A resume and launch (``R``): the resume's outcome, and what became of the agent
    (``report``, in words; ``exit_status`` when it ran in this terminal)."""

    report: str = ""
    exit_status: int | None = None


def describe_outcome(outcome: ActionOutcome, before: SessionFields) -> str:
    session = outcome.session
    head = f"{PAST_TENSE.get(outcome.action, outcome.action)} {one_line(session.id, 40)}"
    if outcome.action != "heartbeat":
        head += f" ({one_line(before.status, 20)} → {one_line(session.status, 20)})"
    lines = [head + "."]
    if outcome.replayed:
        lines.append("This key was already used: the first outcome is shown; nothing was redone.")
    lines.extend(one_line(note, 300) for note in outcome.notes)
    return "\n".join(lines)


def describe_error(error: StoreError) -> str:
    return f"{one_line(error.message, 400)} [{error.code}]"


_COMPARED = ("status", "last_seen_at", "ended_at", "agent_id", "run_id", "adapter")
# Sensitive: a change is reported, never the value.
_SENSITIVE = ("external_session_id", "external_resume_command")


def what_changed(seen: SessionFields, current: dict[str, Any] | SessionFields) -> list[str]:
    """The fields that differ between the row the operator saw and the row as it is now."""
    now = current.to_json() if isinstance(current, SessionFields) else current
    changes = []
    for name in _COMPARED:
        before, after = getattr(seen, name), now.get(name)
        if name.endswith("_at") and parse_ts(before) == parse_ts(after):
            continue
        if before != after:
            changes.append(f"{name}: {one_line(str(before), 40)} → {one_line(str(after), 40)}")
    changes.extend(f"{name} changed" for name in _SENSITIVE if getattr(seen, name) != now.get(name))
    if seen.version != now.get("version"):
        changes.append(f"version: {seen.version} → {now.get('version')}")
    return changes


def describe_conflict(seen: SessionFields, error: StoreError) -> str:
    current = error.details.get("current")
    lines = [describe_error(error)]
    if isinstance(current, dict):
        changed = what_changed(seen, current)
        if changed:
            lines.append("What changed since you looked: " + "; ".join(changed) + ".")
    lines.append("Nothing was done. The row has been reloaded; decide again.")
    return "\n".join(lines)
