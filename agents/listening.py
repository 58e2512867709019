"""A finished turn's hook that listens for a human's reply (``hooks install --reply-wait``):
it says it listens, waits woken by the store's own change signal (PostgreSQL's LISTEN, SQLite's
data version), and, given a reply, answers the agent in its own format so that it goes on with
it (Claude Code's ``Stop`` hook: ``{"decision": "block", "reason": …}``). Never in the agent's
way: past its wait it says nothing (the turn ends as it would have) and the row has expired; if
the agent stops the hook or goes away first, it is withdrawn.
"""

from __future__ import annotations

import os
import time
from typing import Any

from roundtable_console.agents.asking import (
    PARENT_CHECK_SECONDS,
    on_stop_signals,
    restore_signals,
)


def listen_for_reply(
    url: str, agent: str, session_id: str, wait_seconds: float
) -> dict[str, Any] | None:
    """Listen up to ``wait_seconds`` for a reply to ``session_id``; the agent's hook output
    carrying it, or None (nothing to say)."""
    from roundtable_console.agents.registry import spec_of
    from roundtable_console.store.db.database import open_store
    from roundtable_console.store.replies import listeners
    from roundtable_console.store.replies.listeners import EXPIRED, LISTENING, REPLIED, WITHDRAWN

    spec = spec_of(agent)
    if spec.continue_turn is None:
        return None
    store = open_store(url)
    parent = os.getppid()
    stopped: list[int] = []
    previous = on_stop_signals(stopped)
    try:
        record = listeners.open_listener(
            store, session_id=session_id, agent=agent, wait_seconds=wait_seconds
        )
        deadline = time.monotonic() + wait_seconds
        while True:
            token = store.change_token()
            record = listeners.read_listener(store, record.id)
            if record.state == REPLIED:
                taken = listeners.take_reply(store, record.id)
                return None if taken is None else spec.continue_turn(taken.message or "")
            if record.state != LISTENING:
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                if listeners.end_listener(store, record.id, EXPIRED):
                    return None
                continue  # a reply at the last moment: read it
            if stopped or os.getppid() != parent:
                if listeners.end_listener(store, record.id, WITHDRAWN):
                    return None
                continue
            store.wait_for_change(token, min(left, PARENT_CHECK_SECONDS))
    finally:
        restore_signals(previous)
        store.dispose()
