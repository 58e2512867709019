"""A permission request answered by a human: the hook records it, waits for a decision — woken by
the store's own change signal (PostgreSQL's LISTEN, SQLite's data version), or through
``roundtable serve`` by a long wait the server wakes the same way — and answers the agent in its
own format. Never in the agent's way: it waits at most the install's bound, then answers
nothing (the agent asks in its own terminal) and the request has expired; if the agent's process
goes away first, the request is withdrawn.

Only the permission path imports the store's full layer (SQLAlchemy): its wait dwarfs the import.
"""

from __future__ import annotations

import os
import signal
import time
from typing import TYPE_CHECKING, Any, Protocol

from roundtable_console.agents.events import AgentEvent, Ask

if TYPE_CHECKING:
    from roundtable_console.store.requests.records import PermissionRequestRecord

# How often, at most, the hook looks whether its agent is still there between changes.
PARENT_CHECK_SECONDS = 0.5


class Asks(Protocol):
    """Where a hook's permission request is recorded and its decision waited for: the store
    itself (``StoreAsks``) or ``roundtable serve`` (``agents.over_server.ServerAsks``)."""

    def open(self, *, session_id: str, agent: str, ask: Ask, reason: str,
             wait_seconds: float) -> PermissionRequestRecord: ...  # fmt: skip

    def current(self, request_id: str) -> PermissionRequestRecord:
        """The request as it stands now."""

    def wait(self, request_id: str, seconds: float) -> None:
        """Until the request may have changed since ``current``, at most ``seconds``."""

    def take(self, request_id: str) -> PermissionRequestRecord:
        """The decision, marked delivered."""

    def settle(self, request_id: str, state: str) -> bool:
        """Expired or withdrawn; False when a decision came first."""

    def close(self) -> None: ...


class StoreAsks:
    """The request in the store at ``url``, its wait woken by the store's change signal."""

    def __init__(self, url: str) -> None:
        from roundtable_console.store.db.database import open_store

        self.store = open_store(url)
        self._token: Any = None

    def open(self, *, session_id: str, agent: str, ask: Ask, reason: str,
             wait_seconds: float) -> PermissionRequestRecord:  # fmt: skip
        from roundtable_console.store.requests import asking

        return asking.open_request(
            self.store,
            session_id=session_id,
            agent=agent,
            tool_name=ask.tool_name,
            tool_input=ask.tool_input,
            suggestions=ask.suggestions,
            reason=reason,
            wait_seconds=wait_seconds,
        )

    def current(self, request_id: str) -> PermissionRequestRecord:
        from roundtable_console.store.requests import asking

        self._token = self.store.change_token()
        return asking.read_request(self.store, request_id)

    def wait(self, request_id: str, seconds: float) -> None:
        self.store.wait_for_change(self._token, seconds)

    def take(self, request_id: str) -> PermissionRequestRecord:
        from roundtable_console.store.requests import asking

        return asking.take_decision(self.store, request_id)

    def settle(self, request_id: str, state: str) -> bool:
        from roundtable_console.store.requests import asking

        return asking.settle(self.store, request_id, state)

    def close(self) -> None:
        self.store.dispose()


def ask_human(
    asks: Asks, agent: str, session_id: str, event: AgentEvent, ask: Ask, wait_seconds: float
) -> dict[str, Any] | None:
    """Record ``ask`` for ``session_id`` and wait up to ``wait_seconds`` for a decision; the
    agent's answer (its hook output) or None (nothing to say: expired, withdrawn, or the server
    it asked through went away)."""
    from roundtable_console.agents.registry import spec_of
    from roundtable_console.store.requests.records import EXPIRED, PENDING, WITHDRAWN

    spec = spec_of(agent)
    parent = os.getppid()
    stopped: list[int] = []  # the agent stopped the hook (a signal): the request is withdrawn
    previous = on_stop_signals(stopped)
    try:
        record = asks.open(
            session_id=session_id,
            agent=agent,
            ask=ask,
            reason=event.reason or f"asks to run {ask.tool_name}",
            wait_seconds=wait_seconds,
        )
        if not record.answers or spec.answer_permission is None:
            return None  # shown, but nothing from here reaches the agent (Gemini CLI)
        deadline = time.monotonic() + wait_seconds
        while True:
            record = asks.current(record.id)
            if record.state in ("allowed", "denied"):
                return spec.answer_permission(_as_offered(asks.take(record.id), ask))
            if record.state != PENDING:
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                if asks.settle(record.id, EXPIRED):
                    return None
                continue  # decided at the last moment: read it
            if stopped or os.getppid() != parent:
                if asks.settle(record.id, WITHDRAWN):
                    return None
                continue
            asks.wait(record.id, min(left, PARENT_CHECK_SECONDS))
    finally:
        restore_signals(previous)
        asks.close()


def on_stop_signals(stopped: list[int]) -> dict[int, Any]:
    """Noted, not raised: an exception in the middle of a database call would break its
    connection, and the hook still has to say the request is withdrawn."""

    def stop(signum: int, _frame: Any) -> None:
        stopped.append(signum)

    previous = {}
    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        try:
            previous[number] = signal.signal(number, stop)
        except (ValueError, OSError):  # not the main thread (tests call it in one)
            pass
    return previous


def restore_signals(previous: dict[int, Any]) -> None:
    for number, handler in previous.items():
        signal.signal(number, handler)


def _as_offered(record: Any, ask: Ask) -> Any:
    """The decision with the accepted suggestion only if it is, as stored, exactly one the agent
    offered this hook, and never one that switches every later question off (a row changed by
    anyone who can write the store, or a server's answer, grants nothing more)."""
    from dataclasses import replace

    index = record.accepted_suggestion
    offered = ask.suggestions if isinstance(ask.suggestions, list) else []
    stored = record.suggestions
    if index is None:
        return record
    if (
        isinstance(index, int)
        and not isinstance(index, bool)
        and 0 <= index < min(len(offered), len(stored))
        and offered[index] == stored[index]
        and not _switches_asking_off(offered[index])
    ):
        return record
    return replace(record, accepted_suggestion=None)


def _switches_asking_off(suggestion: Any) -> bool:
    return isinstance(suggestion, dict) and str(suggestion.get("mode", "")).lower() == (
        "bypasspermissions"
    )
