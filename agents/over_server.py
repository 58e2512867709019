"""A hook that waits for a human through ``roundtable serve`` (``hooks run --server``): its
permission request (``ServerAsks``) or its finished turn's listener (``ServerListens``) opened
over HTTP with the agent token, then followed by a long wait (``GET …?wait=``) that the server
answers as soon as the row moves; the hook's main thread keeps watching its agent and its
signals meanwhile, exactly as against a store (``agents.asking``, ``agents.listening``).

A server that goes away mid-wait is tried again for ``GIVE_UP_SECONDS``, then given up: the hook
answers nothing (the agent asks in its own terminal) and the row expires by itself.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from roundtable_console.agents.reporting import WAIT_SECONDS, Retry

if TYPE_CHECKING:
    from roundtable_console.agents.events import Ask
    from roundtable_console.agents.reporting import ServerReporter
    from roundtable_console.store.requests.records import PermissionRequestRecord

# One long wait asks the server to hold this long (it holds at most 30 s).
LONG_WAIT_SECONDS = 25.0
# A server unreachable (or refusing) this long, in a row, is given up.
GIVE_UP_SECONDS = 10.0
# What a row that can no longer be followed reads as: not waiting, nothing to answer.
GONE = "gone"


class NotOpened(Exception):
    """The server did not take the request or the listener: nothing is waited for."""


class LongWait:
    """The row at ``path`` followed in a thread: asked again as each long wait ends, while it
    still waits (``waiting``); the latest answer kept, ``changed`` set at each."""

    def __init__(
        self,
        reporter: ServerReporter,
        session_id: str,
        path: str,
        first: dict[str, Any],
        waiting: Callable[[dict[str, Any]], bool],
    ) -> None:
        self.reporter = reporter
        self.session_id = session_id
        self.path = path
        self.latest = first
        self.waiting = waiting
        self.changed = threading.Event()
        self.why_gone: str | None = None
        self._thread: threading.Thread | None = None

    def current(self) -> dict[str, Any]:
        """The row as last answered (``state`` GONE once it can no longer be followed)."""
        self.changed.clear()
        if self._thread is None and self.waiting(self.latest):
            self._thread = threading.Thread(target=self._follow, name="long-wait", daemon=True)
            self._thread.start()
        if self.why_gone is not None:
            return {**self.latest, "state": GONE}
        return self.latest

    def wait(self, seconds: float) -> None:
        self.changed.wait(seconds)

    def update(self, shown: dict[str, Any]) -> None:
        self.latest = shown
        self.changed.set()

    def _follow(self) -> None:
        failing_since: float | None = None
        while self.why_gone is None and self.waiting(self.latest):
            try:
                status, body = self.reporter.call(
                    "GET", self.session_id, f"{self.path}?wait={LONG_WAIT_SECONDS:g}", None, None,
                    timeout=LONG_WAIT_SECONDS + WAIT_SECONDS,
                )  # fmt: skip
            except Retry as retry:
                problem = str(retry)
            else:
                if status in (401, 403, 404):
                    self._gone(f"{self.reporter.base} answered {status}")
                    return
                shown = _object(body) if status == 200 else None
                if shown is not None:
                    self.update(shown)
                    failing_since = None
                    continue
                problem = f"{self.reporter.base} answered {status}"
            now = time.monotonic()
            failing_since = now if failing_since is None else failing_since
            if now - failing_since >= GIVE_UP_SECONDS:
                self._gone(problem)
                return
            time.sleep(1.0)

    def _gone(self, why: str) -> None:
        self.why_gone = why
        self.changed.set()


def _object(raw: bytes) -> dict[str, Any] | None:
    try:
        shown = json.loads(raw)
    except ValueError:
        return None
    return shown if isinstance(shown, dict) else None


def _json_of(
    reporter: ServerReporter,
    session_id: str,
    suffix: str,
    body: dict[str, Any],
    key: str | None = None,
    expected: tuple[int, ...] = (200,),
) -> dict[str, Any] | None:
    """The server's JSON answer to a POST, or None when it could not give one."""
    try:
        status, raw = reporter.call("POST", session_id, suffix, body, key)
    except Retry:
        return None
    return _object(raw) if status in expected else None


def _hook_fields(agent: str, wait_seconds: float) -> dict[str, Any]:
    return {
        "agent": agent,
        "wait_seconds": wait_seconds,
        "hook_host": socket.gethostname()[:255] or "?",
        "hook_pid": os.getpid(),
    }


def _opened(reporter: ServerReporter, session_id: str, suffix: str, body: dict[str, Any],
            key: str | None, what: str) -> dict[str, Any]:  # fmt: skip
    shown = _json_of(reporter, session_id, suffix, body, key, (200, 201))
    if shown is None or not isinstance(shown.get("id"), str):
        raise NotOpened(f"{reporter.base} did not take the {what}: nothing is waited for")
    return shown


class ServerAsks:
    """A permission request through the server (``agents.asking.Asks``)."""

    def __init__(self, reporter: ServerReporter) -> None:
        self.reporter = reporter
        self.session_id = ""
        self.follow: LongWait | None = None
        self._said_expired = False

    def open(self, *, session_id: str, agent: str, ask: Ask, reason: str,
             wait_seconds: float) -> PermissionRequestRecord:  # fmt: skip
        from roundtable_console.store.requests.records import PENDING, PermissionRequestRecord

        self.session_id = session_id
        body = {
            **_hook_fields(agent, wait_seconds),
            "tool_name": ask.tool_name[:200] or "?",
            "tool_input": ask.tool_input,
            "suggestions": ask.suggestions,
            "reason": reason[:1000],
        }
        key = f"ask:{os.urandom(12).hex()}"  # a retry of the same request is written once
        shown = _opened(self.reporter, session_id, "/requests", body, key, "permission request")
        path = f"/requests/{quote(shown['id'], safe='')}"
        self.follow = LongWait(
            self.reporter, session_id, path, shown, lambda row: row.get("state") == PENDING
        )
        return PermissionRequestRecord.from_json(shown)

    def _followed(self) -> LongWait:
        assert self.follow is not None, "opened first"
        return self.follow

    def current(self, request_id: str) -> PermissionRequestRecord:
        from roundtable_console.store.requests.records import EXPIRED, PermissionRequestRecord

        shown = self._followed().current()
        if shown.get("state") == EXPIRED and not self._said_expired:
            # The server shows a request past its wait as expired before its hook says so:
            # said once here, as a hook on the store says it (a decision at the last moment
            # wins, and is read instead).
            self._said_expired = True
            self.settle(request_id, EXPIRED)
            shown = self._followed().latest
        return PermissionRequestRecord.from_json(shown)

    def wait(self, request_id: str, seconds: float) -> None:
        self._followed().wait(seconds)

    def take(self, request_id: str) -> PermissionRequestRecord:
        """The decision, marked delivered; as last read when the server does not answer (a
        decision taken is the agent's, whether or not the mark is written)."""
        from roundtable_console.store.requests.records import PermissionRequestRecord

        path = f"/requests/{quote(request_id, safe='')}/delivered"
        shown = _json_of(self.reporter, self.session_id, path, {})
        if shown is None or shown.get("state") not in ("allowed", "denied"):
            shown = self._followed().latest
        return PermissionRequestRecord.from_json(shown)

    def settle(self, request_id: str, state: str) -> bool:
        path = f"/requests/{quote(request_id, safe='')}/settle"
        shown = _json_of(self.reporter, self.session_id, path, {"state": state})
        if shown is None or not isinstance(shown.get("request"), dict):
            return True  # nothing more can be said: the request expires by itself
        if not shown.get("settled"):
            self._followed().update(shown["request"])
        return bool(shown.get("settled"))

    def close(self) -> None:
        pass


class Listener:
    """A listener as the server showed it: its id and state."""

    def __init__(self, shown: dict[str, Any]) -> None:
        self.id = str(shown.get("id", ""))
        self.state = str(shown.get("state", GONE))


class ServerListens:
    """A finished turn's listener through the server (``agents.listening.Listens``)."""

    def __init__(self, reporter: ServerReporter) -> None:
        self.reporter = reporter
        self.session_id = ""
        self.follow: LongWait | None = None
        self._said_expired = False

    def open(self, *, session_id: str, agent: str, wait_seconds: float) -> Listener:
        from roundtable_console.store.replies.listeners import LISTENING

        self.session_id = session_id
        body = _hook_fields(agent, wait_seconds)
        shown = _opened(self.reporter, session_id, "/listeners", body, None, "reply listener")
        path = f"/listeners/{quote(shown['id'], safe='')}"
        self.follow = LongWait(
            self.reporter, session_id, path, shown, lambda row: row.get("state") == LISTENING
        )
        return Listener(shown)

    def _followed(self) -> LongWait:
        assert self.follow is not None, "opened first"
        return self.follow

    def current(self, listener_id: str) -> Listener:
        from roundtable_console.store.replies.listeners import EXPIRED

        shown = self._followed().current()
        if shown.get("state") == EXPIRED and not self._said_expired:
            self._said_expired = True  # said once, as ServerAsks does
            self.end(listener_id, EXPIRED)
            shown = self._followed().latest
        return Listener(shown)

    def wait(self, listener_id: str, seconds: float) -> None:
        self._followed().wait(seconds)

    def take(self, listener_id: str) -> str | None:
        path = f"/listeners/{quote(listener_id, safe='')}/delivered"
        shown = _json_of(self.reporter, self.session_id, path, {})
        message = None if shown is None else shown.get("message")
        return message if isinstance(message, str) else None

    def end(self, listener_id: str, state: str) -> bool:
        path = f"/listeners/{quote(listener_id, safe='')}/end"
        shown = _json_of(self.reporter, self.session_id, path, {"state": state})
        if shown is None or not isinstance(shown.get("listener"), dict):
            return True
        if not shown.get("ended"):
            self._followed().update(shown["listener"])
        return bool(shown.get("ended"))

    def close(self) -> None:
        pass
