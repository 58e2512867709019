"""What a hook prints to answer its agent (``docs/reference/agent-facts.md#how-a-hook-answers``,
observed from the real CLIs): a permission decision (Claude Code's and Codex's
``PermissionRequest`` hook output), and a reply that continues a finished turn (Claude Code's
``Stop`` hook)."""

from __future__ import annotations

# typing is not imported at run time: every hook's process would pay ~3 ms for it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def answer_permission(record: Any) -> dict[str, Any]:
    """A decided request (``store.requests.records.PermissionRequestRecord``) as the
    ``PermissionRequest`` hook's output: allow (with the one suggestion of the agent's own the
    operator accepted) or deny (with the operator's message, which the model reads)."""
    decision: dict[str, Any]
    if record.state == "allowed":
        decision = {"behavior": "allow"}
        suggestions = record.suggestions
        if record.accepted_suggestion is not None and 0 <= record.accepted_suggestion < len(
            suggestions
        ):
            decision["updatedPermissions"] = [suggestions[record.accepted_suggestion]]
    else:
        message = record.message or f"{record.decided_by} denied this from Roundtable."
        decision = {"behavior": "deny", "message": message}
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}


def continue_with(reply: str) -> dict[str, Any]:
    """A ``Stop`` hook's output that makes the agent go on with ``reply`` as its instruction."""
    return {"decision": "block", "reason": reply}
