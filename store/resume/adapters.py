"""Adapter settings: what the reference's ``adapters.<name>`` config says about resuming."""

from __future__ import annotations

import re
from collections import namedtuple
from collections.abc import Mapping

# typing is not imported at run time: every hook's process would pay ~3 ms for it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

BUILTIN_ADAPTERS: tuple[str, ...] = ("codex", "claude", "gemini", "opencode", "generic")
PLACEHOLDER = "{{external_session_id}}"
DEFAULT_EXTERNAL_ID_PATTERN = r"^[A-Za-z0-9._:-]{1,128}$"
# The commands that continue an agent's own conversation (ours,
# ``docs/reference/agent-facts.md#resuming-a-conversation``): a session that ``roundtable hooks``
# registered (its metadata says so) and whose stored resume command is one of these resumes with
# it though its adapter is not configured. The pattern is ours, never the stored text: a stored
# command can only choose which of these runs, with an id the pattern check accepts.
AGENT_RESUME_PATTERNS: dict[str, str] = {
    "claude": "claude --resume " + PLACEHOLDER,
    "codex": "codex resume " + PLACEHOLDER,
    "gemini": "gemini --resume " + PLACEHOLDER,
}


# A named tuple, not a dataclass: an agent's heartbeat imports this, and building a dataclass
# compiles its methods at every start (about 1 ms each on the hot path).
_ADAPTER_FIELDS = (
    "name", "command", "supports_resume", "resume_pattern", "supports_mcp",
    "supports_readonly_workspace", "captures_session_id", "external_session_id_pattern",
    "explicit",
)  # fmt: skip


class AdapterConfig(
    namedtuple(
        "AdapterConfig",
        _ADAPTER_FIELDS,
        defaults=(None, False, None, False, False, False, None, True),
    )  # fmt: skip
):
    """One adapter as configured. ``explicit`` is False for the built-in disposable defaults
    (every other field defaults to None or False)."""

    __slots__ = ()
    name: str
    command: str | None
    supports_resume: bool
    resume_pattern: str | None
    supports_mcp: bool
    supports_readonly_workspace: bool
    captures_session_id: bool
    external_session_id_pattern: str | None
    explicit: bool

    @classmethod
    def from_mapping(cls, name: str, values: Mapping[str, Any]) -> AdapterConfig:
        def flag(key: str) -> bool:
            return bool(values.get(key, False))

        def text(key: str) -> str | None:
            value = values.get(key)
            return str(value) if value not in (None, "") else None

        return cls(
            name=name,
            command=text("command"),
            supports_resume=flag("supports_resume"),
            resume_pattern=text("resume_pattern"),
            supports_mcp=flag("supports_mcp"),
            supports_readonly_workspace=flag("supports_readonly_workspace"),
            captures_session_id=flag("captures_session_id"),
            external_session_id_pattern=text("external_session_id_pattern"),
        )

    def accepts_external_id(self, external_id: str) -> bool:
        # Whatever the pattern (ours): an id that begins with "-" would be read as an option of
        # the agent's command (claude --resume --dangerously-skip-permissions), never an id.
        if external_id.startswith("-"):
            return False
        pattern = self.external_session_id_pattern or DEFAULT_EXTERNAL_ID_PATTERN
        try:
            return re.fullmatch(pattern, external_id) is not None
        except re.error:
            return False

    def expand(self, external_id: str) -> str | None:
        """The resume pattern with the external id in place, if this adapter has one."""
        if not self.explicit or not self.resume_pattern or not external_id:
            return None
        return self.resume_pattern.replace(PLACEHOLDER, external_id)


def builtin(name: str) -> AdapterConfig:
    return AdapterConfig(name=name, explicit=False)


def resolve(
    adapters: Mapping[str, AdapterConfig] | None,
    name: str,
    resume_command: str | None = None,
    external_id: str | None = None,
) -> AdapterConfig:
    """The configured adapter of that name, else the agent's own resume for a session its hooks
    registered (``captured``), else a disposable built-in with no resume pattern."""
    if adapters and name in adapters:
        return adapters[name]
    captured = captured_adapter(name, resume_command, external_id)
    return captured if captured is not None else builtin(name)


def captured_adapter(
    name: str, resume_command: str | None, external_id: str | None
) -> AdapterConfig | None:
    """The adapter of a session registered by ``roundtable hooks``: its stored resume command is
    exactly the agent's own pattern with the session's own external id, an id (not an option)."""
    pattern = AGENT_RESUME_PATTERNS.get(name)
    if pattern is None or not resume_command or not external_id:
        return None
    if resume_command != pattern.replace(PLACEHOLDER, external_id):
        return None
    if external_id.startswith("-") or not re.fullmatch(DEFAULT_EXTERNAL_ID_PATTERN, external_id):
        return None
    return AdapterConfig(
        name=name,
        command=name,
        supports_resume=True,
        resume_pattern=pattern,
        captures_session_id=True,
    )
