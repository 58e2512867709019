"""A session resumed and its agent started on its own machine by that machine's host (issue 41,
point 4): what the server's launch (``api.hosts.launch``) and the console's ``R``
(``screens.dialogs.launch``) share.

The plan is read before anything changes: the session resumable, its briefing short enough for
a host to take as a prompt. The host is then asked twice, by whoever holds or reaches it: once
to check (a project it was given, an agent it has, tmux), and, after the lifecycle resume, to
start. What it answers is kept as the ``launched`` row that the audit, the pane view and a stop
read, each value only in its own shape: a host's words are not trusted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from roundtable_console.store.access.walls import OPEN, Wall
from roundtable_console.store.clock import Clock, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.models import AgentSession
from roundtable_console.store.errors import HostUnavailable, NotLaunchable
from roundtable_console.store.hosts import protocol
from roundtable_console.store.safety.display import one_line, printable

if TYPE_CHECKING:
    from roundtable_console.store.hosts.registry import HostRow

LAUNCH_SECONDS = 30.0  # tmux starts the agent at once; the host answers when it has


@dataclass(frozen=True)
class HostLaunch:
    """The session as its plan read it, the host that starts it, and its briefing (the prompt)."""

    session: AgentSession
    host: str
    prompt: str

    def args(self, *, check: bool = False) -> dict[str, Any]:
        """What the ``LAUNCH`` call says; ``check``: only whether it could start."""
        args = {"session": protocol.call_session(self.session), "prompt": self.prompt}
        return {**args, "check": True} if check else args

    @property
    def tmux_session(self) -> str:
        """Where the host starts the agent: ours to name, never the host's words."""
        return protocol.tmux_session_name(self.session.id)

    @property
    def attach(self) -> str:
        """The command that shows the agent, on its host's machine."""
        return f"tmux -L {protocol.TMUX_LABEL} attach -t ={self.tmux_session}"


def plan_host_launch(
    *,
    store: Store,
    adapters: Mapping[str, Any] | None,
    session_id: str,
    host: str,
    clock: Clock = system_clock,
    wall: Wall = OPEN,
) -> HostLaunch:
    """The launch of ``session_id`` by ``host``, or ``NotLaunchable`` saying why not."""
    from roundtable_console.store.service import read_briefing

    view = read_briefing(
        store=store, adapters=adapters, session_id=session_id, clock=clock, wall=wall
    )
    shown = one_line(view.session.id, 60)
    if not view.plan.resumable:
        raise NotLaunchable(
            f"Session {shown!r} is not resumable: {view.plan.reason} Nothing was started."
        )
    prompt = view.plan.argv[-1]
    if len(prompt.encode()) > protocol.PROMPT_MOST_BYTES:
        raise NotLaunchable(
            f"The briefing of session {shown!r} is longer than "
            f"{protocol.PROMPT_MOST_BYTES // 1024} KiB, more than a host takes as a prompt. "
            "Nothing was started."
        )
    return HostLaunch(session=view.session, host=host, prompt=prompt)


def record_host_launch(
    *,
    store: Store,
    launch: HostLaunch,
    started: Mapping[str, Any],
    actor: str,
    clock: Clock = system_clock,
) -> None:
    """The ``launched`` row of what the host said it started; ``HostUnavailable`` when it did
    not say where."""
    from roundtable_console.store.service import record_launch

    record_launch(
        store=store, session_id=launch.session.id, actor=actor, clock=clock,
        via_host=launch.host, **shaped_launch(started, launch.host),
    )  # fmt: skip


def shaped_launch(started: Mapping[str, Any], host: str) -> dict[str, str | None]:
    """Where a host said it started an agent, each value only in its own shape (a host's words
    are not trusted): ``record_launch``'s pane, socket, server pid and machine."""

    def shaped(key: str, pattern: re.Pattern[str]) -> str | None:
        value = started.get(key)
        return value if isinstance(value, str) and pattern.fullmatch(value) else None

    pane = shaped("tmux_pane", _PANE)
    if pane is None:
        raise HostUnavailable(f"The host {printable(host)} did not say where it started the agent.")
    return {
        "tmux_pane": pane,
        "tmux_socket": shaped("tmux_socket", _SOCKET),
        "tmux_server_pid": shaped("tmux_server_pid", _PID),
        "machine": shaped("machine", _MACHINE),
    }


_PANE = re.compile(r"%[0-9]{1,9}")
_PID = re.compile(r"[0-9]{1,10}")
_SOCKET = re.compile(r"/[^\x00-\x1f\x7f]{1,400}")
_MACHINE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}")


def ask_host(store: Store, launch: HostLaunch, *, check: bool) -> dict[str, Any]:
    """The host asked through the store, by a process that holds no link to it (the console):
    the server that holds it, or on PostgreSQL the host itself, answers (``store.hosts.calls``).
    Its refusal is ``NotLaunchable``; no answer, ``HostUnavailable``. Blocking: for a worker."""
    from roundtable_console.store.hosts.calls import ask_and_wait

    answer = ask_and_wait(
        store, launch.host, protocol.LAUNCH, launch.args(check=check), seconds=LAUNCH_SECONDS
    )
    try:
        return protocol.outcome_of(launch.host, answer)
    except protocol.HostRefused as refused:
        raise NotLaunchable(f"{refused} Nothing was started.") from None
    except protocol.HostUnreachable as unreachable:
        raise HostUnavailable(str(unreachable)) from None


def plan_launch_by_host(
    *,
    store: Store,
    adapters: Mapping[str, Any] | None,
    session_id: str,
    here: str | None,
    clock: Clock = system_clock,
) -> HostLaunch | None:
    """The launch of ``session_id`` by its machine's host, when it runs on another machine than
    ``here`` whose host the store knows; None when it does not (it is started here, if at all).
    ``HostUnavailable`` when that host is offline."""
    from roundtable_console.store.hosts.registry import runs_elsewhere
    from roundtable_console.store.reads.sessions import get_session

    with store.read() as db:
        session = get_session(db=db, session_id=session_id)
        host = runs_elsewhere(db, session, here, clock=clock)
    if host is None:
        return None
    if not host.online:
        raise HostUnavailable(offline_words(session.id, host))
    return plan_host_launch(
        store=store, adapters=adapters, session_id=session.id, host=host.name, clock=clock
    )


def offline_words(session_id: str, host: HostRow) -> str:
    return (
        f"Session {one_line(session_id, 60)!r} runs on {printable(host.name)}, whose host is "
        f"offline (last seen {host.last_seen_at or 'never'}): it starts the agent there once it "
        "is back. Nothing was started."
    )


def launch_by_host(
    *,
    store: Store,
    plan: HostLaunch,
    actor: str,
    idempotency_key: str,
    clock: Clock = system_clock,
) -> Any:
    """The host asked whether it can start the agent, the lifecycle resume (as ``actor``, of the
    row the plan was read from; the same key again replays it), the host asked to start it, and
    the ``launched`` row of where it did. The resume's outcome. Blocking: for a worker."""
    from roundtable_console.store.resume.launch import resume_for_launch

    ask_host(store, plan, check=True)
    outcome = resume_for_launch(
        store=store, launch=plan, actor=actor, idempotency_key=idempotency_key, clock=clock
    )
    started = ask_host(store, plan, check=False)
    record_host_launch(store=store, launch=plan, started=started, actor=actor, clock=clock)
    return outcome
