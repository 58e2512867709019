"""The demo store's cast, as plain data (``store.writes.demo`` makes its rows): workspaces, runs
and agents, the hand-placed sessions and the status mix of the generated ones, tasks, claims,
proposals, decisions, and the tools and fixed events of the activity stream.

Times are seconds before the seeding clock's now (a claim's expiry: seconds after it, negative
when past). The agents' loop (a permission request, a finished turn, their transcripts) is
``store.writes.demo_agents``'s. Hostile text (markup, escape codes) is the tests' own, never the
demo's: a newcomer's first screen is not a test of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from roundtable_console.store.writes.demo_agents import RELEASE_CLEANUP

DEMO_ROOT = "/tmp/roundtable-demo"
STALE_AFTER = timedelta(seconds=300)

MINUTE = 60
HOUR = 60 * MINUTE
DAY = 24 * HOUR


@dataclass(frozen=True)
class AgentSpec:
    id: str
    name: str
    role: str
    adapter: str
    provider: str
    model: str
    run_id: str
    enabled: bool = True


# workspace id, name, display name, default branch
WORKSPACES = (
    ("ws-atlas", "atlas", "Atlas — session store", "main"),
    ("ws-harbor", "harbor", "Harbor API", "develop"),
    ("ws-lumen", "lumen", "Lumen docs", "main"),
)
# run id, workspace, goal, status, started (seconds ago), ended (seconds ago)
RUNS = (
    (
        "run-atlas-store",
        "ws-atlas",
        "Move the session store to SQLAlchemy",
        "active",
        3 * DAY,
        None,
    ),
    ("run-harbor-api", "ws-harbor", "Harden the heartbeat endpoint", "active", 2 * DAY, None),
    ("run-lumen-docs", "ws-lumen", "Document adapters and resume", "active", 4 * DAY, None),
    ("run-atlas-spike", "ws-atlas", "Spike: keyset pagination", "completed", 13 * DAY, 11 * DAY),
)
AGENTS = (
    AgentSpec("ada", "Ada", "builder", "codex", "openai", "gpt-5-codex", "run-atlas-store"),
    AgentSpec(
        "grace", "Grace", "reviewer", "claude", "anthropic", "claude-sonnet-4-5", "run-harbor-api"
    ),
    AgentSpec("linus", "Linus", "builder", "gemini", "google", "gemini-2.5-pro", "run-harbor-api"),
    AgentSpec(
        "hopper", "Hopper", "tester", "opencode", "openrouter", "qwen3-coder", "run-atlas-store"
    ),
    AgentSpec("turing", "Turing", "planner", "generic", "local", "llama-3.1-8b", "run-lumen-docs"),
    AgentSpec(
        "knuth",
        "Knuth",
        "reviewer",
        "claude",
        "anthropic",
        "claude-opus-4-1",
        "run-lumen-docs",
        enabled=False,
    ),
)
AGENT_BY_ID = {agent.id: agent for agent in AGENTS}
RUN_WORKSPACE = {run[0]: run[1] for run in RUNS}
BRANCH = {workspace[0]: workspace[3] for workspace in WORKSPACES}
RESUME_COMMANDS = {
    "codex": "codex resume {}",
    "claude": "claude --resume {}",
    "gemini": "gemini --resume {}",
    "opencode": "opencode --session {}",
}
OPERATORS = ("maria", "dev-oncall")


@dataclass(frozen=True)
class SessionSpec:
    agent: str
    status: str
    started: int  # seconds ago
    seen: int  # seconds ago
    external: bool = False
    # Waits for a human since this many seconds ago, for this reason.
    waiting: tuple[int, str] | None = None
    # A Claude Code session as its hooks report it: ASKS a permission, or its turn is DONE.
    loop: str | None = None


ASKS, DONE = "asks", "done"


# The hand-placed sessions, first in line so even a small demo shows every status, a stale row
# and the agents' loop. Terminal statuses are ended when last seen.
FEATURED = (
    SessionSpec("ada", "active", 3 * HOUR, 20, external=True),
    SessionSpec(
        "grace",
        "running",
        90 * MINUTE,
        45,
        external=True,
        waiting=(4 * MINUTE, RELEASE_CLEANUP.reason),
        loop=ASKS,
    ),
    SessionSpec("linus", "paused", 5 * HOUR, 25 * MINUTE, external=True),  # stale
    SessionSpec("hopper", "starting", 40, 5),
    SessionSpec(
        "turing",
        "resuming",
        2 * DAY,
        70,
        external=True,
        waiting=(3 * MINUTE, "choose: keep the v1 API or migrate the callers"),
    ),
    SessionSpec("ada", "stopped", DAY, 20 * HOUR, external=True),
    SessionSpec("grace", "ended", 2 * DAY, 30 * HOUR),
    SessionSpec("linus", "terminated", 3 * DAY, 2 * DAY, external=True),
    SessionSpec("hopper", "failed", 4 * DAY, 3 * DAY),
    SessionSpec("grace", "active", 6 * HOUR, 3 * MINUTE, external=True, loop=DONE),
    SessionSpec("grace", "running", 8 * HOUR, 2 * HOUR, external=True),  # stale
    SessionSpec("knuth", "paused", 2 * DAY, DAY),  # stale, and its agent is disabled
)
# Status mix of the generated sessions beyond the featured ones.
STATUS_WEIGHTS = (
    ("ended", 34),
    ("active", 14),
    ("running", 10),
    ("paused", 8),
    ("stopped", 8),
    ("terminated", 6),
    ("failed", 6),
    ("starting", 4),
    ("resuming", 4),
)
TERMINAL = frozenset({"stopped", "ended", "terminated", "failed"})

# id, title, status, priority, agent, risk, created (seconds ago)
TASKS = (
    ("task-101", "Migrate the session store to SQLAlchemy", "in_progress", 10, "ada",
     "high", 3 * DAY),
    ("task-102", "Add keyset pagination to the session list", "open", 20, "ada",
     "normal", 2 * DAY),
    ("task-103", "Review heartbeat timeout handling", "in_progress", 30, "grace",
     "normal", 2 * DAY),
    ("task-104", "Write resume briefing tests", "open", 50, "hopper", "low", DAY),
    ("task-105", "Document adapter resume patterns", "done", 40, "turing", "low",
     5 * DAY),
    ("task-106", "Fix the flaky PostgreSQL fixture", "done", 15, "hopper", "normal",
     6 * DAY),
    ("task-107", "Investigate stale session alerts", "open", 25, None, "normal", DAY),
    ("task-108", "Show agent output as plain text", "open", 35,
     "turing", "high", 10 * HOUR),
    ("task-109", "Retire the legacy dashboard", "cancelled", 90, "knuth", "low", 9 * DAY),
)  # fmt: skip
# id, resource, agent, task, status, expires (seconds from now; negative = past), ws
CLAIMS = (
    ("claim-401", "store/sessions.py", "ada", "task-101", "active", 2 * HOUR, "ws-atlas"),
    ("claim-402", "store/models.py", "ada", "task-101", "active", 90 * MINUTE, "ws-atlas"),
    ("claim-403", "api/heartbeat.go", "grace", "task-103", "active", -HOUR, "ws-harbor"),
    ("claim-404", "tui/alerts.py", "linus", "task-107", "active", 3 * HOUR, "ws-harbor"),
    ("claim-405", "tests/conftest.py", "hopper", "task-106", "released", -DAY, "ws-atlas"),
    ("claim-406", "docs/adapters.md", "turing", "task-105", "released", -2 * DAY,
     "ws-lumen"),
)  # fmt: skip
# id, task, agent, title, status, risk, created (seconds ago), session index
PROPOSALS = (
    ("prop-201", "task-101", "ada", "Store: SQLModel tables and migrations", "pending",
     "high", 40 * MINUTE, 1),
    ("prop-202", "task-102", "ada", "Keyset cursor for the session list",
     "changes_requested", "normal", 6 * HOUR, 6),
    ("prop-203", "task-103", "grace", "Heartbeat: reject terminal source states",
     "accepted", "normal", DAY, 7),
    ("prop-204", "task-106", "hopper", "Retry PostgreSQL start-up forever", "rejected",
     "high", 3 * DAY, 9),
    ("prop-205", "task-107", "linus", "Stale filter in the TUI", "pending", "low",
     2 * HOUR, 3),
)  # fmt: skip
# id, proposal, task, decision, rationale, created (seconds ago)
DECISIONS = (
    ("dec-301", "prop-203", "task-103", "accept", "Covers every terminal state.", DAY / 2),
    ("dec-302", "prop-204", "task-106", "reject", "Unbounded retries hide real faults.",
     2 * DAY),
    ("dec-303", "prop-202", "task-102", "changes_requested",
     "Encode the cursor opaquely; never expose raw ids.", 5 * HOUR),
    ("dec-304", None, "task-101", "note", "Keep reference column names unchanged.",
     20 * MINUTE),
)  # fmt: skip
# The tools of the activity stream's tool events: (tool, action).
TOOLS = (
    ("shell", "pytest -q"),
    ("editor", "write store/sessions.py"),
    ("git", "diff --stat"),
    ("mcp", "table.query"),
    ("browser", "open https://docs.example.com/adapters"),
)
# The activity stream's fixed events: seconds ago, run id, type, actor, payload, task.
ACTIVITY: tuple[tuple[float, str, str, str, dict[str, Any], str | None], ...] = (
    # No "tool" in the payload: the projection falls back to the type.
    (50 * MINUTE, "run-atlas-store", "tool.shell", "ada",
     {"action": "ls -la", "status": "ok"}, None),
    (45 * MINUTE, "run-atlas-store", "task.claimed", "ada",
     {"task_id": "task-101", "resource_id": "store/sessions.py"}, "task-101"),
    (40 * MINUTE, "run-atlas-store", "proposal.submitted", "ada",
     {"proposal_id": "prop-201"}, "task-101"),
    (35 * MINUTE, "run-harbor-api", "message.posted", "grace",
     {"text": "Waiting for tool approval from maria."}, None),
    (30 * MINUTE, "run-harbor-api", "message.posted", "linus",
     {"text": "Retrying with token=demo-not-a-secret now."}, None),
    (20 * MINUTE, "run-atlas-store", "decision.recorded", "maria",
     {"decision_id": "dec-304"}, "task-101"),
)  # fmt: skip
