"""``roundtable watch``: one line per change of the store's sessions, as it happens.

The lines come from ``store.reads.changes`` through the console's own watcher thread
(``tui.change_watch``): read after each change of the store, never on a timer. Each line is
written and flushed at once, so it can be piped into ``notify-send``, a chat hook or a pager.
No Textual here.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from roundtable_console.store.safety.display import one_line

if TYPE_CHECKING:
    from roundtable_console.store.clock import Clock
    from roundtable_console.store.db.database import Store
    from roundtable_console.store.reads.changes import Change, ChangeFilter


def change_line(change: Change) -> str:
    """One change as one line of text, store text made printable."""
    sid, status = one_line(change.session_id), one_line(change.status) or "?"
    before = one_line(change.previous_status) or "?"
    by = f" by {one_line(change.actor)}" if change.actor else ""
    reason = f": {one_line(change.reason)}" if change.reason else ""
    words = {
        "registered": f"registered ({status}){by}",
        "status": f"status {before} → {status}{by}{reason}",
        "waiting_started": f"waiting for a human{reason}",
        "waiting_stopped": f"no longer waiting ({status}){by}",
        "turn_done": f"turn done{reason}",
        "stale": f"went stale ({status}, {one_line(change.reason)})",
        "ended": f"ended ({before} → {status}){by}",
        "heartbeat": f"heartbeat ({status}){by}",
    }
    said = words.get(change.change, one_line(change.change))  # a server's word: text only
    return f"{one_line(change.at)}  {sid}  {said}"


def change_json(change: Change) -> str:
    # ensure_ascii: every control character of store text stays escaped.
    return json.dumps(change.to_json())


class LineWriter:
    """Writes whole lines from the watcher's thread, flushed at once; a closed pipe (the reader
    went away) ends the watch instead of raising."""

    def __init__(self, stream: TextIO, done: threading.Event) -> None:
        self._stream = stream
        self._done = done
        self._lock = threading.Lock()

    def write(self, lines: list[str]) -> None:
        with self._lock:
            if self._done.is_set():
                return
            try:
                self._stream.write("".join(f"{line}\n" for line in lines))
                self._stream.flush()
            except (BrokenPipeError, ValueError, OSError):
                self._done.set()


class Printed:
    """What a watch prints: changes on stdout (``done`` once it is closed), its own words on
    stderr."""

    def __init__(self, stdout: TextIO | None, stderr: TextIO | None, as_json: bool) -> None:
        self.done = threading.Event()
        self._out = LineWriter(stdout or sys.stdout, self.done)
        self._err = LineWriter(stderr or sys.stderr, threading.Event())
        self._render = change_json if as_json else change_line

    def changes(self, changes: list[Change]) -> None:
        self._out.write([self._render(change) for change in changes])

    def said(self, words: str) -> None:
        self._err.write([f"roundtable watch: {words}"])


def watch(
    *,
    store: Store,
    filters: ChangeFilter,
    stale_after_seconds: float,
    clock: Clock,
    as_json: bool,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Print changes until SIGINT or SIGTERM (exit 0) or until stdout is closed."""
    from roundtable_console.store.reads.changes import ChangeFeed
    from roundtable_console.tui.change_watch import ChangeWatcher

    printed = Printed(stdout, stderr, as_json)
    feed = ChangeFeed(filters=filters, stale_after_seconds=stale_after_seconds, clock=clock)
    watcher = ChangeWatcher(
        store,
        lambda: None,
        feed=feed,
        on_changes=printed.changes,
        on_link=printed.said,
        on_ready=lambda: printed.said(
            f"watching {one_line(store.description)}; Ctrl-C to stop"
        ),
    )
    _until_stopped(printed.done, watcher.start, watcher.stop)
    watcher.join(2.0)
    return 0


def watch_through_server(
    *,
    server: str,
    token: str,
    path: str,
    filters: ChangeFilter,
    as_json: bool,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """``watch`` on a server's stream of changes (``tui.server_watch``, the console's own
    follower): the same lines, a dropped link said and followed again from the last change it
    gave. Exit 0 on SIGINT or SIGTERM, 1 when the server no longer takes the token."""
    from roundtable_console.tui.server_watch import ServerWatcher

    printed = Printed(stdout, stderr, as_json)
    params = [("status", status) for status in filters.statuses]
    params += [(name, value) for name, value in (("agent_id", filters.agent_id),
               ("run_id", filters.run_id)) if value is not None]  # fmt: skip
    params.append(("heartbeats", "true" if filters.heartbeats else "false"))
    watcher = ServerWatcher(
        server, token, lambda: None, on_changes=printed.changes, on_link=printed.said,
        gap=0.0, path=path, params=params, heartbeats_news=True,
    )  # fmt: skip
    printed.said(f"watching {one_line(server)}; Ctrl-C to stop")
    _until_stopped(printed.done, watcher.start, watcher.stop, watcher.following)
    return 0 if printed.done.is_set() else 1


def _until_stopped(
    done: threading.Event,
    start: Callable[[], None],
    stop: Callable[[], None],
    following: Callable[[], bool] = lambda: True,
) -> None:
    """``start``, then wait for SIGINT or SIGTERM, stdout closed (``done``) or the watcher
    given up (``following``); ``stop`` in any case, the signals' handlers put back."""
    previous = _stop_on_signals(done)
    try:
        start()
        while not done.wait(0.2) and following():
            pass
    finally:
        stop()
        _restore(previous)


def _stop_on_signals(done: threading.Event) -> dict[int, Any]:
    return {
        sig: signal.signal(sig, lambda _sig, _frame: done.set())
        for sig in (signal.SIGINT, signal.SIGTERM)
    }


def _restore(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)
