"""A thread that waits for the store to change and says so, so the screen on show reads again at
once instead of at its next timed refresh; given a change feed (store.reads.changes), it also reads
what changed, after each change of the store and when the next session goes stale.

Used by the console and by ``roundtable watch``; no Textual here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from roundtable_console.screens.context import InputHold

if TYPE_CHECKING:  # the console starts before the database layer is imported
    from roundtable_console.store.db.database import Store
    from roundtable_console.store.reads.changes import Change, ChangeFeed

# However fast the store changes, ``notify`` is called at most once in this long (unless the
# watcher is given another ``gap``); and the thread checks this often whether it should stop.
NOTICE_SECONDS = 0.25
# A feed read that failed (the database went away) is tried again after this long, or at once
# when the store is heard from again.
RETRY_SECONDS = 1.0
# However close the next deadline, a wait is at least this long (a clock that stands still, as in
# tests, must not make the thread spin).
MIN_WAIT_SECONDS = 0.01


class ChangeWatcher:
    """Calls ``notify`` (from its own thread: it must be thread-safe) after each change of the
    store: PostgreSQL's notifications wake it; on SQLite it reads the data version. Neither
    reads a table. With a ``feed``, ``on_changes`` gets what changed (never an empty list), and
    ``on_link`` hears, in words, that PostgreSQL's listening connection was lost or is back, or
    that a read failed. ``on_ready``: it listens, and the feed starts from here. ``gap``: after
    a change is told, the next is told no sooner than this (changes meanwhile are told at once
    then, together). ``input_wait``: seconds until the operator's input has paused (0: it has);
    a feed read waits for that, but no longer than ``hold`` seconds, so a key's frame never
    shares the GIL with it."""

    def __init__(
        self,
        store: Store,
        notify: Callable[[], None],
        *,
        feed: ChangeFeed | None = None,
        on_changes: Callable[[list[Change]], None] | None = None,
        on_link: Callable[[str], None] | None = None,
        on_ready: Callable[[], None] | None = None,
        gap: float = NOTICE_SECONDS,
        input_wait: Callable[[], float] | None = None,
        hold: float = 0.0,
    ) -> None:
        self._store = store
        self._notify = notify
        self._feed = feed
        self._on_changes = on_changes
        self._on_link = on_link
        self._on_ready = on_ready
        self._gap = gap
        # A feed read due while the operator's input goes on waits for it.
        self._input_hold = None if input_wait is None else InputHold(input_wait, hold)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="roundtable-watch", daemon=True)
        self._retry_at: float | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _watch(self) -> None:
        token = self._store.change_token()
        linked = ever_linked = token is not None
        if self._feed is not None:
            self._read_feed()  # the feed's start: from now on
        if self._on_ready is not None:
            self._on_ready()
        while not self._stopped.is_set():
            changed = self._store.wait_for_change(token, timeout=self._timeout())
            if self._stopped.is_set():
                return
            if changed is None and linked and self._store.dialect == "postgresql":
                self._tell("lost the database's notifications; reconnecting")
            elif changed is not None and not linked and ever_linked:
                self._tell("reconnected to the database; reading what changed meanwhile")
            linked = changed is not None
            ever_linked = ever_linked or linked
            moved = changed is not None and changed != token
            token = changed
            if moved:
                self._notify()
            held = self._input_hold is not None and self._input_hold.since is not None
            if self._feed is not None and (moved or held or self._due()) and not self._holding():
                self._read_feed()
            if moved:
                self._stopped.wait(self._gap)

    def _holding(self) -> bool:
        """Whether the feed read due now waits for the operator's input to pause."""
        return self._input_hold is not None and self._input_hold.wait() > 0

    def _timeout(self) -> float:
        if self._input_hold is not None and self._input_hold.since is not None:
            # Until the input pauses (or the hold ends), not sooner: each wake takes the GIL.
            return max(min(self._input_hold.left(), NOTICE_SECONDS), MIN_WAIT_SECONDS)
        timeout = NOTICE_SECONDS
        if self._feed is not None:
            left = self._feed.seconds_to_deadline()
            if left is not None:
                timeout = min(timeout, max(left, MIN_WAIT_SECONDS))
        return timeout

    def _due(self) -> bool:
        assert self._feed is not None
        if self._retry_at is not None:
            return time.monotonic() >= self._retry_at
        return self._feed.seconds_to_deadline() == 0

    def _read_feed(self) -> None:
        assert self._feed is not None
        try:
            with self._store.read() as db:
                changes = self._feed.read(db=db)
        except Exception as error:  # noqa: BLE001 - said in words; the next change retries
            if self._retry_at is None:
                message = getattr(error, "message", None) or f"{type(error).__name__}: {error}"
                self._tell(f"cannot read the changes: {message}")
            self._retry_at = time.monotonic() + RETRY_SECONDS
            return
        self._retry_at = None
        if changes and self._on_changes is not None:
            self._on_changes(changes)

    def _tell(self, message: str) -> None:
        if self._on_link is not None:
            self._on_link(message)
