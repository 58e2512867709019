"""One thread per server waits on the store's own change signal (``Store.wait_for_change``:
PostgreSQL's LISTEN, SQLite's data version, never a table read on a timer) and wakes every open
stream, each in its own event loop."""

from __future__ import annotations

import asyncio
import logging
import threading

from roundtable_console.store.db.database import Store

log = logging.getLogger("roundtable.serve")
WAIT_SECONDS = 1.0


class ChangeHub:
    """Wakes every open stream when the store changes (one waiting thread per server)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._waiting: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        self._watchers: set[threading.Event] = set()
        # Reentrant: the server's stop (a signal handler, run on the main thread between two
        # bytecodes) wakes every stream, maybe while that thread is inside ``unsubscribe``.
        self.waiting_lock = threading.RLock()
        self._thread: threading.Thread | None = None
        self.closing = threading.Event()

    def subscribe(self) -> asyncio.Event:
        woken = asyncio.Event()
        with self.waiting_lock:
            self._waiting.add((asyncio.get_running_loop(), woken))
            self._start()
        return woken

    def watch(self, changed: threading.Event) -> None:
        """``changed`` set on every change, for a thread of the server's own (the notifier)."""
        with self.waiting_lock:
            self._watchers.add(changed)
            self._start()

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._wait, name="change-hub", daemon=True)
            self._thread.start()

    def unsubscribe(self, woken: asyncio.Event) -> None:
        with self.waiting_lock:
            self._waiting = {entry for entry in self._waiting if entry[1] is not woken}

    def close(self) -> None:
        self.closing.set()
        self._wake_all()

    def _wake_all(self) -> None:
        with self.waiting_lock:
            waiting = list(self._waiting)
            watchers = list(self._watchers)
        for changed in watchers:
            changed.set()
        for loop, woken in waiting:
            try:
                loop.call_soon_threadsafe(woken.set)
            except RuntimeError:  # that stream's loop has closed
                pass

    def _wait(self) -> None:
        token = self.store.change_token()
        # A stream that subscribed before this first token may have read before a change that
        # committed before it: no signal will come for that one, so every stream reads again.
        self._wake_all()
        while not self.closing.is_set():
            try:
                latest = self.store.wait_for_change(token, WAIT_SECONDS)
            except Exception:  # noqa: BLE001 - the store is unreachable for now: retry
                log.warning("the change watch failed; retrying", exc_info=True)
                self.closing.wait(WAIT_SECONDS)
                continue
            if latest is None or latest != token:
                self._wake_all()
            token = latest
