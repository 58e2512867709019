"""Knowing that a PostgreSQL store changed without reading its tables: one connection of its own
LISTENs on the channel the triggers of migration 0005 notify, and a thread counts what arrives.

The count, with the identity of the connection it was counted on, is the store's change token:
after a reconnection notifications may have been missed, so the token starts afresh and callers
read again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

CHANNEL = "roundtable_changes"
# Calls for hosts (migration 0020): a host on the store itself listens here only, so a busy
# fleet's changes do not wake it.
HOST_CALLS_CHANNEL = "roundtable_host_calls"
# How long the listening thread waits for notifications before it checks whether it should
# stop: what closing a store may take at most.
LISTEN_SLICE_SECONDS = 0.25
# After a notification the thread lets more arrive for this long, then counts them all at once:
# a fleet's hundreds of notifications a second wake it a few times a second, not hundreds (each
# wake takes the GIL from the console's UI thread), and a change is known this much later.
BATCH_SECONDS = 0.05


class ChangeListener:
    """Counts the notifications of ``channel`` (``CHANNEL`` unless told) on a connection from
    ``connect`` (a psycopg connection in autocommit mode). Opened on the first ``token()``;
    reopened by a later one when it breaks. Safe to use from any thread."""

    def __init__(self, connect: Callable[[], Any], channel: str = CHANNEL) -> None:
        self._connect = connect
        self._channel = channel
        self._arrived = threading.Condition()
        self._identity: object | None = None
        self._received = 0
        self._closed = False

    def token(self) -> object | None:
        """The change token now; None when no connection listens (callers then re-read)."""
        with self._arrived:
            if self._identity is None and not self._closed:
                self._start()
            return self._current()

    def wait(self, since: object | None, timeout: float) -> object | None:
        """The token once it differs from ``since``, or after ``timeout`` seconds."""
        with self._arrived:
            if self._identity is None and not self._closed:
                self._start()
            if self._identity is None:  # nothing listens: nothing can be told before the timeout
                self._arrived.wait(timeout)
            else:
                self._arrived.wait_for(lambda: self._current() != since, timeout)
            return self._current()

    def close(self) -> None:
        """Stop listening; the thread closes its connection within ``LISTEN_SLICE_SECONDS``."""
        with self._arrived:
            self._closed = True
            self._identity = None
            self._arrived.notify_all()

    def _current(self) -> object | None:
        return None if self._identity is None else (self._identity, self._received)

    def _start(self) -> None:
        """Listen before the first token is handed out: a change committed after it always
        arrives as a notification. Called with the lock held."""
        try:
            connection = self._connect()
            connection.execute(f"LISTEN {self._channel}")
        except Exception:  # noqa: BLE001 - no listener means "re-read"; reads report the cause
            return
        identity = object()
        self._identity, self._received = identity, 0
        threading.Thread(
            target=self._listen, args=(connection, identity), name="roundtable-listen", daemon=True
        ).start()

    def _listen(self, connection: Any, identity: object) -> None:
        try:
            while self._is_current(identity):
                waited = connection.notifies(timeout=LISTEN_SLICE_SECONDS, stop_after=1)
                arrived = sum(1 for _notification in waited)
                if not arrived:
                    continue
                time.sleep(BATCH_SECONDS)
                arrived += sum(1 for _notification in connection.notifies(timeout=0))
                with self._arrived:
                    if self._identity is identity:
                        self._received += arrived
                        self._arrived.notify_all()
        except Exception:  # noqa: BLE001 - a broken connection: the next token() reconnects
            with self._arrived:
                if self._identity is identity:
                    self._identity = None
                    self._arrived.notify_all()
        finally:
            try:
                connection.close()
            except Exception:  # noqa: BLE001 - closing a broken connection may fail; it is gone
                pass

    def _is_current(self, identity: object) -> bool:
        with self._arrived:
            return self._identity is identity
