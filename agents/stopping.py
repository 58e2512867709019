"""Stop a session's agent process (issue 41, point 4), for the command line
(``roundtable sessions stop-agent``) and the console (``X``): SIGINT, then SIGTERM after a grace,
sent where the agent runs. An agent ``R`` started in this machine's tmux is stopped here; one a
host started is stopped by that host, asked through the store (the server that holds it, or on
PostgreSQL the host itself, answers: ``store.hosts.calls``). An agent started by hand has no
pane Roundtable knows: that is said. The session's status is its hooks' to change; the stop is
recorded with its actor (``agent_stopped``). The server's route does the same over its links
(``api.hosts.stop_agent``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from roundtable_console.agents.panes import GRACE_SECONDS, stop_agent
from roundtable_console.agents.transcripts import TranscriptUnavailable
from roundtable_console.store import service
from roundtable_console.store.clock import Clock, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import AgentNotRunning
from roundtable_console.store.hosts import calls, protocol
from roundtable_console.store.hosts.registry import get_host
from roundtable_console.store.reads.launches import last_launch
from roundtable_console.store.safety.display import one_line, printable

HOST_MARGIN_SECONDS = 15.0  # a host's stop takes the grace, then up to 5 s for SIGTERM's


@dataclass(frozen=True)
class AgentStopped:
    """The signal the agent took last, whether it exited, and the host that stopped it."""

    signal: str
    exited: bool
    via_host: str | None

    @property
    def payload(self) -> dict[str, Any]:
        return {"signal": self.signal, "exited": self.exited, "via_host": self.via_host}

    def words(self, session_id: str) -> str:
        how = "it exited" if self.exited else "it has not exited yet"
        return f"Sent {self.signal} to the agent of {one_line(session_id, 60)}: {how}."


def stop_session_agent(
    store: Store,
    session_id: str,
    *,
    actor: str,
    grace: float = GRACE_SECONDS,
    clock: Clock = system_clock,
) -> AgentStopped:
    """Stop the agent of ``session_id`` where it runs, and record it; ``AgentNotRunning``
    saying why nothing was stopped. Blocking (up to the grace and more): for a worker."""
    with store.read() as db:
        session = service.sessions.get_session(db=db, session_id=session_id)
        launch = started_launch(db, session.id)
    shown = one_line(session.id, 60)
    via = launch.get("via_host")
    if isinstance(via, str):
        signal_name, exited = _through_host(store, via, launch, grace, shown, clock)
    else:
        try:
            signal_name, exited = stop_agent(launch, grace=grace)
        except TranscriptUnavailable as why:
            raise AgentNotRunning(f"{why} Nothing was stopped.") from None
    stopped = AgentStopped(signal_name, exited, via if isinstance(via, str) else None)
    service.record_agent_stopped(
        store=store, session_id=session.id, actor=actor, payload=stopped.payload, clock=clock
    )
    return stopped


def started_launch(db: Connection, session_id: str) -> Mapping[str, Any]:
    """Where Roundtable started the session's agent (its ``launched`` row); ``AgentNotRunning``
    when it did not (an agent started by hand: stopped in its own terminal)."""
    launch = last_launch(db, session_id)
    if not launch or not launch.get("tmux_pane"):
        raise AgentNotRunning(
            f"The agent of session {one_line(session_id, 60)!r} was not started by Roundtable "
            "(R, or its host): stop it in its own terminal. Nothing was stopped."
        )
    return launch


def _through_host(
    store: Store, host: str, launch: Mapping[str, Any], grace: float, shown: str, clock: Clock
) -> tuple[str, bool]:
    """The stop asked of the host that started the agent, through the store."""
    with store.read() as db:
        row = get_host(db, host, clock=clock)
    if row is None or not row.online:
        raise AgentNotRunning(
            f"The agent of session {shown!r} was started by the host {printable(host)}, which "
            "is offline: nothing was stopped."
        )
    answer = calls.ask_and_wait(
        store, host, protocol.STOP_AGENT, {"launch": dict(launch), "grace": grace},
        seconds=grace + HOST_MARGIN_SECONDS,
    )  # fmt: skip
    try:
        body = protocol.outcome_of(host, answer)
    except (protocol.HostRefused, protocol.HostUnreachable) as why:
        raise AgentNotRunning(f"{why} Nothing was stopped.") from None
    return protocol.stop_outcome(body)
