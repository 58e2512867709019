"""Whether a session can be resumed, and the argv that resumes it
(``docs/operators-guide.md#resume-and-launch``).

No store read: the list shows whether each row is resumable, and the console paints its first
rows before the database layer is loaded.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from roundtable_console.store.records import SessionFields
from roundtable_console.store.resume.adapters import (
    AGENT_RESUME_PATTERNS,
    PLACEHOLDER,
    AdapterConfig,
    resolve,
)
from roundtable_console.store.safety.display import markdown_line

DEFAULT_EXTERNAL_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


@dataclass(frozen=True)
class ResumePlan:
    resumable: bool
    argv: list[str] = field(default_factory=list)
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"resumable": self.resumable, "resume_argv": list(self.argv), "reason": self.reason}


def _refuse(reason: str) -> ResumePlan:
    return ResumePlan(resumable=False, argv=[], reason=reason)


def _captured_command(session: SessionFields) -> str | None:
    """The stored resume command of a session ``roundtable hooks`` registered (its metadata
    names the agent whose hooks did), for ``resolve`` to recognise; None for any other (a built-in
    adapter then resumes nothing, as the reference has it)."""
    command = session.external_resume_command
    if not command or session.adapter not in AGENT_RESUME_PATTERNS:
        return None
    return command if session.reported_by_hooks else None


def resume_blocker(
    *, session: SessionFields, adapters: Mapping[str, AdapterConfig] | None
) -> str | None:
    """Why the session cannot be resumed, in words, or None when a resume plan can be made: an
    explicitly configured adapter with a resume_pattern that splits like a shell line, and an
    external session id it accepts. Cheap (no store read), so a list can show it on every row.
    Reasons never quote the external session id: it is sensitive."""
    external_id = (session.external_session_id or "").strip()
    if not external_id:
        return "The session has no external session id, so there is nothing to resume."
    adapter = resolve(
        adapters,
        session.adapter,
        _captured_command(session),
        (session.external_session_id or "").strip(),
    )
    name = markdown_line(session.adapter)
    if not adapter.explicit:
        return (
            f"Adapter {name!r} is not configured; built-in adapters are disposable and "
            "cannot resume a session. Configure adapters.<name>.resume_pattern to enable it."
        )
    if not (adapter.resume_pattern or "").strip():
        return f"Adapter {name!r} has no resume_pattern configured."
    if not adapter.accepts_external_id(external_id):
        return (
            "The external session id does not match the allowed pattern "
            f"({adapter.external_session_id_pattern or DEFAULT_EXTERNAL_ID.pattern}); "
            "it is not passed to a command."
        )
    try:
        shlex.split(adapter.resume_pattern or "")
    except ValueError as error:
        return f"The resume_pattern of adapter {name!r} cannot be split: {error}."
    return None


def resume_plan(
    *,
    session: SessionFields,
    briefing_markdown: str,
    adapters: Mapping[str, AdapterConfig] | None,
) -> ResumePlan:
    """The argv that resumes the agent's external session, briefing last; never a shell line."""
    blocker = resume_blocker(session=session, adapters=adapters)
    if blocker is not None:
        return _refuse(blocker)
    adapter = resolve(
        adapters,
        session.adapter,
        _captured_command(session),
        (session.external_session_id or "").strip(),
    )
    external_id = (session.external_session_id or "").strip()
    # Split the pattern first and substitute per argument, so an id can never add arguments.
    words = shlex.split(adapter.resume_pattern or "")
    argv = [word.replace(PLACEHOLDER, external_id) for word in words]
    return ResumePlan(resumable=True, argv=[*argv, briefing_markdown], reason=None)
