"""The session detail's projection tabs: which, titled how, with which columns."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProjectionSpec:
    name: str
    title: str
    # (item key, column label, width)
    columns: tuple[tuple[str, str, int | None], ...] = ()


SPECS: tuple[ProjectionSpec, ...] = (
    ProjectionSpec(
        "logs",
        "Logs",
        (
            ("id", "#", 6),
            ("created_at", "When", 23),
            ("event_type", "Event", 12),
            ("payload", "Payload (redacted)", 64),
        ),
    ),
    ProjectionSpec(
        "tool-calls",
        "Tool calls",
        (
            ("id", "#", 6),
            ("created_at", "When", 23),
            ("tool", "Tool", 14),
            ("action", "Action", 30),
            ("status", "Status", 8),
            ("duration_ms", "ms", 7),
            ("actor", "Actor", 14),
        ),
    ),
    ProjectionSpec(
        "claims",
        "Claims",
        (
            ("resource_id", "Resource", 22),
            ("task_id", "Task", 12),
            ("claim_type", "Type", 10),
            ("status", "Status", 9),
            ("expires_at", "Expires", 23),
            ("rationale", "Rationale", 48),
        ),
    ),
    ProjectionSpec(
        "proposals",
        "Proposals",
        (
            ("id", "Proposal", 12),
            ("task_id", "Task", 10),
            ("title", "Title", 26),
            ("status", "Status", 9),
            ("risk", "Risk", 7),
            ("created_at", "Created", 23),
            ("summary", "Summary", 48),
        ),
    ),
    ProjectionSpec("metrics", "Metrics"),
    ProjectionSpec("environment", "Environment"),
)
TIME_KEYS = ("created_at", "expires_at")
