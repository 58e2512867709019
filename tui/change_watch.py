"""A thread that waits for the store to change and says so, so the screen on show reads again at
once instead of at its next timed refresh."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the console starts before the database layer is imported
    from store.database import Store

# However fast the store changes, ``notify`` is called at most this often; and the thread checks
# this often whether it should stop.
NOTICE_SECONDS = 0.25


class ChangeWatcher:
    """Calls ``notify`` (from its own thread: it must be thread-safe) after each change of the
    store: PostgreSQL's notifications wake it; on SQLite it reads the data version. Neither
    reads a table."""

    def __init__(self, store: Store, notify: Callable[[], None]) -> None:
        self._store = store
        self._notify = notify
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="roundtable-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()

    def _watch(self) -> None:
        token = self._store.change_token()
        while not self._stopped.is_set():
            changed = self._store.wait_for_change(token, timeout=NOTICE_SECONDS)
            if changed is not None and changed != token and not self._stopped.is_set():
                self._notify()
                self._stopped.wait(NOTICE_SECONDS)
            token = changed
