"""When the console's garbage collector walks everything: while the operator is not typing.

Python starts a full collection after enough allocations, whenever that falls; in the console
that is in the middle of a key press (a page of rows allocates thousands of objects), and it
costs it 10–40 ms. `roundtable tui` leaves young collections to Python and holds the full ones
back (``hold_full_collections``); the app runs them from a timer through ``QuietCollector``,
after a second without input, at most every ``EVERY`` seconds, and at least every ``AT_MOST``
seconds however busy the keyboard is.
"""

from __future__ import annotations

import gc
from collections.abc import Callable

# A third threshold this high means: never by allocation count (full collections are ours).
HELD_THRESHOLD = 1_000_000
QUIET_SECONDS = 1.0
EVERY_SECONDS = 10.0
AT_MOST_SECONDS = 60.0


def hold_full_collections() -> None:
    """Python's young collections stay as they are; full ones wait for ``QuietCollector``."""
    young, middle, _full = gc.get_threshold()
    gc.set_threshold(young, middle, HELD_THRESHOLD)


class QuietCollector:
    """Runs ``collect`` (a full collection) when the keyboard and mouse have been quiet."""

    def __init__(self, now: float, collect: Callable[[], object] = gc.collect) -> None:
        self.collect = collect
        self.last_input = now
        self.last_collection = now

    def note_input(self, now: float) -> None:
        self.last_input = now

    def tick(self, now: float) -> bool:
        """Collect if it is time; True when it did."""
        since = now - self.last_collection
        quiet = now - self.last_input >= QUIET_SECONDS
        if since < EVERY_SECONDS or (not quiet and since < AT_MOST_SECONDS):
            return False
        self.collect()
        self.last_collection = now
        return True
