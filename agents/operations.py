"""What a hook writes: one ``Operation`` per event (register, heartbeat or end of a session), kept
as plain JSON so that the spool can hold it and a later hook replay it."""

from __future__ import annotations

import os
from collections import namedtuple

from roundtable_console.agents import events
from roundtable_console.agents.spec import AgentSpec

# typing is not imported at run time: every hook's process would pay ~3 ms for it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_SESSION_CHARACTERS = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:@-"
)
ENV_SESSION = "ROUNDTABLE_SESSION_ID"
ENV_AGENT = "ROUNDTABLE_AGENT"
ENV_HOST = "ROUNDTABLE_HOST"
ENV_RUN = "ROUNDTABLE_RUN"
WORKING = "running"
IDLE = "active"
TURN_DONE = "its turn is done"  # when the agent gives no last words


class Where:
    """Whose session this is: the install's options, else the agent's environment."""

    __slots__ = ("agent_id", "run_id", "workspace_id")

    def __init__(
        self,
        agent_id: str | None = None,
        run_id: str | None = None,
        workspace_id: str | None = None,
    ) -> None:
        self.agent_id = agent_id
        self.run_id = run_id
        self.workspace_id = workspace_id


# A named tuple without typing.NamedTuple (see TYPE_CHECKING above).
_OPERATION = namedtuple(
    "Operation",
    ("op", "session_id", "fields", "at", "key", "given_session", "own_session", "external_id",
     "target"),
    defaults=(False, "", "", ""),
)  # fmt: skip


class Operation(_OPERATION):
    """``op``: ``start`` (register, or a heartbeat of a session the console launched), ``beat``,
    ``end``. ``at``: when the event came (RFC 3339), ``key``: its idempotency key."""

    __slots__ = ()
    op: str
    session_id: str
    fields: dict[str, Any]
    at: str
    key: str
    given_session: bool  # the session id came from ROUNDTABLE_SESSION_ID (default False)
    own_session: str  # the id derived from the agent's own: where it goes if not given
    external_id: str  # the agent's own session id
    target: str  # which store or server it is for (a digest): a spool holds several

    def for_itself(self) -> Operation:
        """This write on the session derived from the agent's own id (a session given by
        ROUNDTABLE_SESSION_ID turned out to be another agent's: an agent started by the one
        ``R`` launched inherits its environment)."""
        return self._replace(session_id=self.own_session, given_session=False)

    def to_json(self) -> dict[str, Any]:
        return self._asdict()


def session_id_for(spec: AgentSpec, event: events.AgentEvent) -> tuple[str, bool]:
    """The Roundtable session: ``ROUNDTABLE_SESSION_ID`` when the agent was started with one
    (the console's ``R``, ``resume --exec``), else one derived from the agent's own id."""
    given = os.environ.get(ENV_SESSION, "").strip()
    if 0 < len(given) <= 200 and all(char in _SESSION_CHARACTERS for char in given):
        return given, True
    return f"{spec.adapter}-{event.external_id}", False


def resume_command(spec: AgentSpec, external_id: str) -> str:
    """The command that continues the agent's own conversation (the store's resume plan knows the
    same patterns: ``store.resume.adapters.AGENT_RESUME_PATTERNS``)."""
    from roundtable_console.store.resume.adapters import AGENT_RESUME_PATTERNS, PLACEHOLDER

    return AGENT_RESUME_PATTERNS[spec.adapter].replace(PLACEHOLDER, external_id)


def operation_for(
    spec: AgentSpec, event: events.AgentEvent, where: Where, *, at: str, key: str
) -> Operation | None:
    """The write ``event`` means, or None (nothing to write)."""
    if event.kind == events.IGNORE:
        return None
    session_id, given = session_id_for(spec, event)
    own = f"{spec.adapter}-{event.external_id}"
    extra = {"own_session": own, "external_id": event.external_id}
    if event.kind == events.END:
        return Operation("end", session_id, {"status": "ended"}, at, key, given, **extra)
    if event.kind == events.START:
        fields = start_fields(spec, event, where)
        return Operation("start", session_id, fields, at, key, given, **extra)
    status = IDLE if event.kind == events.TURN else WORKING
    fields: dict[str, Any] = {
        "status": status,
        "waiting": event.reason if event.kind == events.WAIT else None,
        "turn": (event.reason or TURN_DONE) if event.kind == events.TURN else None,
        "tool_calls": [event.tool.to_json()] if event.tool is not None else [],
        # A session first seen mid-way (hooks installed while it ran) is registered from these.
        "start": start_fields(spec, event, where),
    }
    return Operation("beat", session_id, fields, at, key, given, **extra)


def in_agents_home(path: str) -> bool:
    """Whether ``path`` lies in the agent's own home (its user's, or $CODEX_HOME): a payload
    naming a file anywhere else is not kept (a reader would be shown that file)."""
    from pathlib import Path

    homes = [Path.home()]
    if os.environ.get("CODEX_HOME", "").strip():
        homes.append(Path(os.environ["CODEX_HOME"]))
    try:
        resolved = Path(path).resolve()
        return any(resolved.is_relative_to(home.resolve()) for home in homes)
    except (OSError, RuntimeError, ValueError):
        return False


def start_fields(spec: AgentSpec, event: events.AgentEvent, where: Where) -> dict[str, Any]:
    cwd = event.cwd or os.getcwd()
    agent_id = where.agent_id or os.environ.get(ENV_AGENT, "").strip() or spec.name
    run_id = where.run_id or os.environ.get(ENV_RUN, "").strip() or os.path.basename(cwd) or "hooks"
    metadata: dict[str, Any] = {"hooks": spec.name}
    if where.workspace_id:
        metadata["workspace_id"] = where.workspace_id
    if event.transcript and in_agents_home(event.transcript):
        metadata["transcript_path"] = event.transcript
    return {
        "agent_id": agent_id,
        "run_id": run_id,
        "adapter": spec.adapter,
        "working_directory": cwd,
        "provider": spec.provider,
        "model": event.model,
        "external_session_id": event.external_id,
        "resume_command": resume_command(spec, event.external_id),
        "status": IDLE,
        "metadata": metadata,
        "host": machine_name(),
    }


def machine_name() -> str | None:
    """The machine a session runs on: ``ROUNDTABLE_HOST`` (a machine's name in the team, which
    its host is given too), else its own name."""
    # os.uname's node name is socket.gethostname's, without importing socket at every hook.
    return (os.environ.get(ENV_HOST, "").strip() or os.uname().nodename or "")[:255] or None
