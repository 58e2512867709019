"""What an agent is to Roundtable: ``AgentSpec`` (its names, how its events read, where its hook
settings live, which events it is hooked on). ``agents.registry`` has the three by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from roundtable_console.agents.events import AgentEvent

# typing is not imported at run time: every hook's process would pay ~3 ms for it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Our hook process answers within this (seconds); the agent's timeout for it.
HOOK_TIMEOUT_SECONDS = 10


class HookEvent:
    """One event an agent is hooked on. Plain classes here, not NamedTuples: each hook process
    imports these, and a NamedTuple is built (exec'd) at every start."""

    __slots__ = ("name", "matcher", "timeout", "asks", "listens")

    def __init__(
        self,
        name: str,
        matcher: str | None = None,
        timeout: int = HOOK_TIMEOUT_SECONDS,
        asks: bool = False,  # a permission request: its hook waits for a human
        listens: bool = False,  # a finished turn its hook may continue: it listens for a reply
    ) -> None:
        self.asks = asks
        self.listens = listens
        self.name = name
        self.matcher = matcher
        self.timeout = timeout


class AgentSpec:
    __slots__ = (
        "name",
        "adapter",
        "provider",
        "read_event",
        "user_file",
        "project_file",
        "events",
        "timeout_unit",
        "needs_trust",
        "named_handlers",
        "answer_permission",
        "continue_turn",
    )

    def __init__(
        self,
        *,
        name: str,  # as the CLI names it: claude-code, codex, gemini
        adapter: str,  # the session's adapter
        provider: str,
        read_event: Callable[[Mapping[str, Any]], AgentEvent],
        user_file: Callable[[Path], Path],
        project_file: Callable[[Path], Path],
        events: tuple[HookEvent, ...],
        timeout_unit: int,  # the settings' timeouts: 1 for seconds, 1000 for milliseconds
        needs_trust: bool = False,  # Codex runs no hook its config.toml does not trust
        named_handlers: bool = False,  # Gemini's handlers carry a name
        # A decided permission request as the agent's hook output; None: its hooks cannot
        # answer one (Gemini CLI's).
        answer_permission: Callable[[Any], dict[str, Any]] | None = None,
        # A human's reply as the output of the hook that ``listens``: the agent goes on with
        # it; None: no hook of its can carry one.
        continue_turn: Callable[[str], dict[str, Any]] | None = None,
    ) -> None:
        self.answer_permission = answer_permission
        self.continue_turn = continue_turn
        self.name = name
        self.adapter = adapter
        self.provider = provider
        self.read_event = read_event
        self.user_file = user_file
        self.project_file = project_file
        self.events = events
        self.timeout_unit = timeout_unit
        self.needs_trust = needs_trust
        self.named_handlers = named_handlers
