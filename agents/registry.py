"""The three agents by the names the CLI gives them."""

from __future__ import annotations

from roundtable_console.agents.spec import AgentSpec

AGENT_NAMES = ("claude-code", "codex", "gemini")


def spec_of(name: str) -> AgentSpec:
    """The agent named ``name`` (one of ``AGENT_NAMES``); its module alone is imported (a hook
    process reads one agent's events)."""
    if name == "claude-code":
        from roundtable_console.agents.claude_code import SPEC
    elif name == "codex":
        from roundtable_console.agents.codex import SPEC
    elif name == "gemini":
        from roundtable_console.agents.gemini import SPEC
    else:
        raise KeyError(name)
    return SPEC
