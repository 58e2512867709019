"""What every screen needs to reach the store: the opened store, the clock, who is acting.

The app builds one ``ConsoleContext`` and hands it to each screen, so screens never import
``tui`` (arrows go one way: tui → screens → store).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from roundtable_console.store.clock import Clock, system_clock
from roundtable_console.store.resume.adapters import AdapterConfig

if TYPE_CHECKING:
    from roundtable_console.screens.source import ConsoleSource
    from roundtable_console.store.budgets.limits import Budget
    from roundtable_console.store.db.database import Store
    from roundtable_console.store.reads.first_window import FirstWindow
    from roundtable_console.store.reads.listing import SessionOrder

# Reads the list's first page (size, now, order) before the store is open, without its database
# layer.
FirstRead = Callable[[int, datetime, "SessionOrder"], "FirstWindow | None"]

DEFAULT_PAGE_SIZE = 50
# While the operator presses keys or uses the mouse, reads of the store's changes (the list's,
# the change feed's) wait until the input pauses this long: keys' frames come first (a read's
# Python holds the GIL, its repaint shares their frames) and rows do not move under a moving
# cursor. However long the input goes on, they wait no longer than INPUT_HOLD_SECONDS.
INPUT_QUIET_SECONDS = 0.3
INPUT_HOLD_SECONDS = 2.0
DEFAULT_WINDOW_PAGES = 4


class InputHold:
    """A read that waits for the operator's input to pause (``input_wait``: seconds until it
    has, 0 when it has), but no longer than ``hold`` seconds after it first had to wait. The
    list's re-reads (on the UI thread) and the change watcher's feed reads (on its own thread)
    each hold theirs."""

    def __init__(self, input_wait: Callable[[], float], hold: float) -> None:
        self.input_wait = input_wait
        self.hold = hold
        # Since when a read has been held back (time.monotonic()); None: none is.
        self.since: float | None = None

    def left(self) -> float:
        """Seconds the read held back still waits (0: none is, or it is due now)."""
        if self.since is None:
            return 0.0
        return max(0.0, min(self.input_wait(), self.since + self.hold - time.monotonic()))

    def wait(self) -> float:
        """Seconds the read due now waits, its hold starting if it has not; 0: run it now (the
        hold is then over)."""
        if self.since is None:
            self.since = time.monotonic()
        left = self.left()
        if left == 0:
            self.since = None
        return left

    def release(self) -> None:
        self.since = None


@dataclass
class ConsoleContext:
    """Shared, long-lived state of one console. ``store`` is None until it has been opened."""

    description: str
    operator: str
    clock: Clock = system_clock
    refresh_seconds: float = 2.0
    stale_after_seconds: float = 300.0
    # The list's first order (config ``sort``): what needs a human first.
    sort: str = "attention"
    # The list's first grouping (config ``group``): workspace, run, agent, or None.
    group: str | None = None
    adapters: Mapping[str, AdapterConfig] = field(default_factory=dict)
    # The configuration's budgets: looked at by a console on a store, shown in its overview.
    budgets: tuple[Budget, ...] = ()
    store: Store | None = None
    # Set when the console starts before its store is open (a current SQLite store): the list's
    # first rows come from here while the store opens in the background.
    first_read: FirstRead | None = None
    page_size: int = DEFAULT_PAGE_SIZE
    window_pages: int = DEFAULT_WINDOW_PAGES
    # Where the briefing screen's ``w`` writes (None: the current directory).
    export_dir: Path | None = None
    # Read-only (--read-only, config read_only, $ROUNDTABLE_READ_ONLY): the store is opened so
    # that nothing can write, and no lifecycle key, mark or bulk action is offered.
    read_only: bool = False
    # Tests and snapshots turn this off so screenshots do not depend on the blink phase.
    cursor_blink: bool = True
    # When the operator last pressed a key or used the mouse (time.monotonic()), set by the
    # app: the list's reads of the store's changes wait for a pause in the input.
    last_input: float = float("-inf")
    # What the screens read and act through (screens.source), set by the app at start-up: the
    # store above (screens.data.StoreConsole), or a server.
    source: ConsoleSource = field(init=False)

    def input_wait(self) -> float:
        """Seconds until the operator's keys and mouse have paused for ``INPUT_QUIET_SECONDS``
        (0: they have). Safe from any thread: it reads one float."""
        return max(0.0, self.last_input + INPUT_QUIET_SECONDS - time.monotonic())

    @property
    def stale_after(self) -> timedelta:
        return timedelta(seconds=self.stale_after_seconds)

    def now(self) -> datetime:
        return self.clock()
