"""What a host says of itself as it connects: its name, the agent CLIs it found with their
versions, tmux, the project directories it was given, its own version and platform.

It comes from the host's machine, which the server does not trust: every field is checked here,
bounded and printable, before it is stored or shown. A host's name is its token's name (a token
with the role ``host`` connects one host, of its own name), so it follows the same form.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from roundtable_console.store.errors import InvalidHost
from roundtable_console.store.validation import has_control_characters

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
_AGENT = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
MAX_AGENTS = 16
MAX_PROJECTS = 64
MAX_PATH_LENGTH = 1024
MAX_LABEL_LENGTH = 64


@dataclass(frozen=True)
class AgentFound:
    """An agent CLI on the host's PATH (``claude-code``, ``codex``, ``gemini``) and the version
    it printed (None: it printed none)."""

    name: str
    version: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version}


@dataclass(frozen=True)
class HostFacts:
    name: str
    agents: tuple[AgentFound, ...] = ()
    tmux: str | None = None
    projects: tuple[str, ...] = ()
    version: str | None = None
    platform: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "agents": [agent.to_json() for agent in self.agents],
            "tmux": self.tmux,
            "projects": list(self.projects),
            "version": self.version,
            "platform": self.platform,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> HostFacts:
        """The facts of a host's hello, checked; ``InvalidHost`` names what is wrong."""
        agents = body.get("agents", [])
        projects = body.get("projects", [])
        if not isinstance(agents, list) or len(agents) > MAX_AGENTS:
            raise InvalidHost(f"agents is a list of at most {MAX_AGENTS} agents.")
        if not isinstance(projects, list) or len(projects) > MAX_PROJECTS:
            raise InvalidHost(f"projects is a list of at most {MAX_PROJECTS} directories.")
        found = []
        for agent in agents:
            if not isinstance(agent, Mapping):
                raise InvalidHost('Each agent is {"name": …, "version": …}.')
            found.append(
                AgentFound(
                    name=agent_name(agent.get("name")),
                    version=label(agent.get("version"), "An agent's version"),
                )
            )
        if len({agent.name for agent in found}) != len(found):
            raise InvalidHost("Each agent is named once.")
        return cls(
            name=host_name(body.get("name")),
            agents=tuple(found),
            tmux=label(body.get("tmux"), "tmux's version"),
            projects=tuple(dict.fromkeys(project_path(path) for path in projects)),
            version=label(body.get("version"), "The host's version"),
            platform=label(body.get("platform"), "The host's platform"),
        )


def host_name(value: Any) -> str:
    if not isinstance(value, str) or not NAME.fullmatch(value):
        raise InvalidHost(
            "A host's name is 1–64 letters, digits, '.', '_', '@' or '-', starting with a "
            f"letter or digit (as a token's name): not {str(value)[:80]!r}."
        )
    return value


def agent_name(value: Any) -> str:
    if not isinstance(value, str) or not _AGENT.fullmatch(value):
        raise InvalidHost(f"An agent's name is a short lowercase word: not {str(value)[:40]!r}.")
    return value


def label(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_LABEL_LENGTH or has_control_characters(value):
        raise InvalidHost(f"{what} is printable text of at most {MAX_LABEL_LENGTH} characters.")
    return value.strip() or None


def project_path(value: Any) -> str:
    if (
        not isinstance(value, str)
        or not value.startswith("/")
        or len(value) > MAX_PATH_LENGTH
        or has_control_characters(value)
        or "/../" in value + "/"
    ):
        raise InvalidHost(
            f"A project is an absolute directory, printable, at most {MAX_PATH_LENGTH} "
            "characters, with no '..'."
        )
    return value
