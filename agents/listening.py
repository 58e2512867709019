"""A finished turn's hook that listens for a human's reply (``hooks install --reply-wait``): it
says it listens, waits — woken by the store's own change signal (PostgreSQL's LISTEN, SQLite's
data version), or through ``roundtable serve`` by a long wait the server wakes the same way —
and, given a reply, answers the agent in its own format so that it goes on with it (Claude
Code's ``Stop`` hook: ``{"decision": "block", "reason": …}``). Never in the agent's
way: past its wait it says nothing (the turn ends as it would have) and the row has expired; if
the agent stops the hook or goes away first, it is withdrawn.
"""

from __future__ import annotations

import os
import time
from typing import Any, Protocol

from roundtable_console.agents.asking import (
    PARENT_CHECK_SECONDS,
    on_stop_signals,
    restore_signals,
)


class Listens(Protocol):
    """Where a finished turn's hook listens: the store itself (``StoreListens``) or
    ``roundtable serve`` (``agents.over_server.ServerListens``). A listener is read as its id and
    state."""

    def open(self, *, session_id: str, agent: str, wait_seconds: float) -> Any: ...

    def current(self, listener_id: str) -> Any:
        """The listener as it stands now."""

    def wait(self, listener_id: str, seconds: float) -> None:
        """Until the listener may have changed since ``current``, at most ``seconds``."""

    def take(self, listener_id: str) -> str | None:
        """The reply's text, marked delivered; None when there is none to take."""

    def end(self, listener_id: str, state: str) -> bool:
        """Expired or withdrawn; False when a reply came first."""

    def close(self) -> None: ...


class StoreListens:
    """The listener in the store at ``url``, its wait woken by the store's change signal."""

    def __init__(self, url: str) -> None:
        from roundtable_console.store.db.database import open_store

        self.store = open_store(url)
        self._token: Any = None

    def open(self, *, session_id: str, agent: str, wait_seconds: float) -> Any:
        from roundtable_console.store.replies import listeners

        return listeners.open_listener(
            self.store, session_id=session_id, agent=agent, wait_seconds=wait_seconds
        )

    def current(self, listener_id: str) -> Any:
        from roundtable_console.store.replies import listeners

        self._token = self.store.change_token()
        return listeners.read_listener(self.store, listener_id)

    def wait(self, listener_id: str, seconds: float) -> None:
        self.store.wait_for_change(self._token, seconds)

    def take(self, listener_id: str) -> str | None:
        from roundtable_console.store.replies import listeners

        taken = listeners.take_reply(self.store, listener_id)
        return None if taken is None else taken.message or ""

    def end(self, listener_id: str, state: str) -> bool:
        from roundtable_console.store.replies import listeners

        return listeners.end_listener(self.store, listener_id, state)

    def close(self) -> None:
        self.store.dispose()


def listen_for_reply(
    listens: Listens, agent: str, session_id: str, wait_seconds: float
) -> dict[str, Any] | None:
    """Listen up to ``wait_seconds`` for a reply to ``session_id``; the agent's hook output
    carrying it, or None (nothing to say)."""
    from roundtable_console.agents.registry import spec_of
    from roundtable_console.store.replies.listeners import EXPIRED, LISTENING, REPLIED, WITHDRAWN

    spec = spec_of(agent)
    if spec.continue_turn is None:
        listens.close()
        return None
    parent = os.getppid()
    stopped: list[int] = []
    previous = on_stop_signals(stopped)
    try:
        record = listens.open(session_id=session_id, agent=agent, wait_seconds=wait_seconds)
        deadline = time.monotonic() + wait_seconds
        while True:
            record = listens.current(record.id)
            if record.state == REPLIED:
                message = listens.take(record.id)
                return None if message is None else spec.continue_turn(message)
            if record.state != LISTENING:
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                if listens.end(record.id, EXPIRED):
                    return None
                continue  # a reply at the last moment: read it
            if stopped or os.getppid() != parent:
                if listens.end(record.id, WITHDRAWN):
                    return None
                continue
            listens.wait(record.id, min(left, PARENT_CHECK_SECONDS))
    finally:
        restore_signals(previous)
        listens.close()
