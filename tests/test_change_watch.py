"""The watcher thread (tui/change_watch.py) with a change feed, on SQLite and on PostgreSQL: an
idle store is not read (no table read on a timer), a change is read at once, and the stale
deadline wakes it with no write at all."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

from roundtable_console.screens.context import InputHold
from roundtable_console.store.clock import fixed_clock, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.reads.changes import Change, ChangeFeed
from roundtable_console.store.writes import agent_writes
from roundtable_console.tui.change_watch import ChangeWatcher
from tests.helpers import register_session


class Counted:
    """A feed whose reads are counted, with what the watcher handed on."""

    def __init__(
        self, store: Store, stale_after_seconds: float = 300.0, **watcher_options: Any
    ) -> None:
        self.feed = ChangeFeed(stale_after_seconds=stale_after_seconds, clock=system_clock)
        self.reads = 0
        self.changes: list[Change] = []
        self.arrived = threading.Event()
        self.ready = threading.Event()
        read = self.feed.read

        def counting(**arguments: Any) -> list[Change]:
            self.reads += 1
            return read(**arguments)

        self.feed.read = counting  # type: ignore[method-assign]
        self.watcher = ChangeWatcher(
            store,
            lambda: None,
            feed=self.feed,
            on_changes=self._got,
            on_ready=self.ready.set,
            **watcher_options,
        )

    def _got(self, changes: list[Change]) -> None:
        self.changes.extend(changes)
        self.arrived.set()


def test_an_idle_store_is_not_read_and_a_change_is_read_at_once(store: Store) -> None:
    counted = Counted(store)
    counted.watcher.start()
    try:
        assert counted.ready.wait(10)
        time.sleep(1.5)
        assert counted.reads == 1  # the feed's start, nothing since
        with store.write() as db:
            register_session(db, "s1")
        written = time.monotonic()
        assert counted.arrived.wait(5)
        assert time.monotonic() - written < 1.0
        assert [(c.session_id, c.change) for c in counted.changes] == [("s1", "registered")]
        assert counted.reads == 2
    finally:
        counted.watcher.stop()
        counted.watcher.join(5)


def test_the_stale_deadline_wakes_it_without_a_write(store: Store) -> None:
    with store.write() as db:  # last seen 1.5 s short of stale
        register_session(db, "quiet", clock=fixed_clock(system_clock() - timedelta(seconds=0.5)))
    counted = Counted(store, stale_after_seconds=2.0)
    counted.watcher.start()
    try:
        assert counted.ready.wait(10)
        assert counted.arrived.wait(5)
        assert [(c.session_id, c.change) for c in counted.changes] == [("quiet", "stale")]
        time.sleep(0.5)
        assert counted.reads == 2  # the start, and once at the deadline
    finally:
        counted.watcher.stop()
        counted.watcher.join(5)


def test_a_stream_of_changes_is_told_at_most_once_a_gap(sqlite_store: Store) -> None:
    """A fleet's heartbeats, twenty commits a second for two seconds: with a gap of half a
    second, ``notify`` is called a handful of times, not forty, and the last commit is told."""
    with sqlite_store.write() as db:
        register_session(db, "beating")
    told: list[float] = []
    watcher = ChangeWatcher(sqlite_store, lambda: told.append(time.monotonic()), gap=0.5)
    watcher.start()
    try:
        time.sleep(0.3)  # listening
        began = time.monotonic()
        while time.monotonic() - began < 2.0:
            with sqlite_store.write() as db:
                agent_writes.heartbeat(db=db, session_id="beating")
            time.sleep(0.05)
        last_commit = time.monotonic()
        time.sleep(1.0)
    finally:
        watcher.stop()
        watcher.join(5)
    during = [at for at in told if at >= began]
    assert 2 <= len(during) <= 6, during
    assert all(later - earlier >= 0.45 for earlier, later in zip(during, during[1:], strict=False))
    assert during[-1] >= last_commit - 0.5  # the stream's end was told, not dropped


def test_a_feed_read_waits_for_the_operators_input_but_only_so_long(sqlite_store: Store) -> None:
    """While ``input_wait`` says the operator is typing, changes are noticed (the list is told)
    but the feed is not read; once the input pauses it is, and a hold caps the wait."""
    typing = threading.Event()
    typing.set()
    counted = Counted(sqlite_store, input_wait=lambda: 0.3 if typing.is_set() else 0.0, hold=60.0)
    counted.watcher.start()
    try:
        assert counted.ready.wait(10)
        reads_at_start = counted.reads
        with sqlite_store.write() as db:
            register_session(db, "s1")
        time.sleep(1.0)
        assert counted.reads == reads_at_start and not counted.arrived.is_set()
        typing.clear()  # the operator pauses: the change is read at once
        assert counted.arrived.wait(5)
        assert [(c.session_id, c.change) for c in counted.changes] == [("s1", "registered")]
    finally:
        counted.watcher.stop()
        counted.watcher.join(5)

    capped = Counted(sqlite_store, input_wait=lambda: 0.3, hold=0.5)  # typing for ever
    capped.watcher.start()
    try:
        assert capped.ready.wait(10)
        with sqlite_store.write() as db:
            register_session(db, "s2")
        written = time.monotonic()
        assert capped.arrived.wait(5), "the input held the change back for good"
        assert time.monotonic() - written >= 0.4
        assert [(c.session_id, c.change) for c in capped.changes] == [("s2", "registered")]
    finally:
        capped.watcher.stop()
        capped.watcher.join(5)


def test_an_input_hold_waits_for_the_pause_but_no_longer_than_its_hold() -> None:
    typing = [10.0]
    hold = InputHold(lambda: typing[0], 0.05)
    assert hold.left() == 0 and hold.since is None  # nothing held yet
    first = hold.wait()
    assert 0 < first <= 0.05 and hold.since is not None
    time.sleep(0.06)
    assert hold.left() == 0 and hold.since is not None  # over, still held until asked again
    assert hold.wait() == 0 and hold.since is None  # asked: run the read, the hold is over
    typing[0] = 0.2
    assert 0.04 < hold.wait() <= 0.05  # held again, for the shorter of the two
    typing[0] = 0.0  # the input paused
    assert hold.wait() == 0 and hold.since is None
    hold.wait()
    hold.release()
    assert hold.since is None
