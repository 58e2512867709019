"""A human's reply to an agent, as every surface sends it (the console, the web console, the
API, the CLI): which route can carry it, shown before a reply is offered, and the reply sent.
The rules are the store's (``store.replies.sending``); this module adds the tmux pane the session
was started in, whose keys only this machine can type."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from roundtable_console.agents.panes import type_into_pane, verified_pane
from roundtable_console.agents.transcripts import TranscriptUnavailable
from roundtable_console.store.access.walls import OPEN, Wall
from roundtable_console.store.clock import Clock, format_ts, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import NoReplyPath
from roundtable_console.store.reads.sessions import get_session
from roundtable_console.store.replies.sending import (
    PANE,
    ReplyRoute,
    SentReply,
    route_in_store,
    send_reply,
)


def pane_route(launch: Mapping[str, Any]) -> ReplyRoute:
    try:
        _, pane = verified_pane(launch, running=True)
    except TranscriptUnavailable as why:
        return ReplyRoute(None, f"{why} Answer in the agent's own terminal.")
    return ReplyRoute(PANE, f"typed into tmux pane {pane}, where it was started", launch=launch)


def type_keys(launch: Mapping[str, Any], line: str) -> None:
    if not type_into_pane(launch, line):
        raise NoReplyPath("The agent's tmux pane did not take the keys: nothing was sent.")


class Panes(NamedTuple):
    """How a launch's pane is looked at and typed into: here (``LOCAL``), or through the host
    that started it (``api.hosts.panes``)."""

    route: Callable[[Mapping[str, Any]], ReplyRoute]
    type_keys: Callable[[Mapping[str, Any], str], None]


LOCAL = Panes(pane_route, type_keys)


def reply_route(
    store: Store,
    session_id: str,
    *,
    wall: Wall = OPEN,
    clock: Clock = system_clock,
    panes: Panes = LOCAL,
) -> ReplyRoute:
    """What can carry a reply to ``session_id`` now (a read, and for a tmux pane a look at it:
    never on an event loop)."""
    with store.read() as db:
        session = wall.checked(get_session(db=db, session_id=session_id))
        route, launch = route_in_store(db, session, format_ts(clock()))
    if route is not None:
        return route
    assert launch is not None
    return panes.route(launch)


def reply(
    store: Store,
    session_id: str,
    message: str,
    actor: str,
    *,
    panes: Panes = LOCAL,
    **options: Any,
) -> SentReply:
    """``message`` sent to ``session_id``'s agent as ``actor`` (``store.replies.sending``)."""
    return send_reply(
        store=store,
        session_id=session_id,
        message=message,
        actor=actor,
        pane_route=panes.route,
        type_keys=panes.type_keys,
        **options,
    )


class StoreReplies(NamedTuple):
    """``store.replies.sending.Replies`` on the store itself, as ``actor``, a pane of this
    machine typed into from here (the command line's ``reply``)."""

    store: Store
    actor: str
    clock: Clock = system_clock

    def route_to(self, session_id: str) -> ReplyRoute:
        return reply_route(self.store, session_id, clock=self.clock)

    def send_to(self, session_id: str, message: str) -> SentReply:
        return reply(self.store, session_id, message, self.actor, clock=self.clock)
