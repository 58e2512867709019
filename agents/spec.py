"""What an agent is to Roundtable: ``AgentSpec`` (its names, how its events read, where its hook
settings live, which events it is hooked on). ``agents.registry`` has the three by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from roundtable_console.agents.events import AgentEvent

# Our hook process answers within this (seconds); the agent's timeout for it.
HOOK_TIMEOUT_SECONDS = 10


class HookEvent(NamedTuple):
    name: str
    matcher: str | None = None
    timeout: int = HOOK_TIMEOUT_SECONDS


class AgentSpec(NamedTuple):
    name: str  # as the CLI names it: claude-code, codex, gemini
    adapter: str  # the session's adapter
    provider: str
    program: str
    read_event: Callable[[Mapping[str, Any]], AgentEvent]
    user_file: Callable[[Path], Path]
    project_file: Callable[[Path], Path]
    events: tuple[HookEvent, ...]
    timeout_unit: int  # the settings' timeouts: 1 for seconds, 1000 for milliseconds
    needs_trust: bool = False  # Codex runs no hook its config.toml does not trust
    named_handlers: bool = False  # Gemini's handlers carry a name
