"""The console's garbage-collection schedule (tui.heap): full collections wait for a quiet
keyboard, and what the first read from the store left behind is frozen."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from roundtable_console.store.db.database import Store
from roundtable_console.tui.heap import (
    AT_MOST_SECONDS,
    EVERY_SECONDS,
    HELD_THRESHOLD,
    QUIET_SECONDS,
    QuietCollector,
    hold_full_collections,
)
from tests.test_tui_support import add_session, console, settle, sqlite_url


class Collections:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


def test_a_full_collection_waits_for_its_time_and_a_quiet_keyboard():
    collect = Collections()
    collector = QuietCollector(100.0, collect)
    assert not collector.tick(100.0 + EVERY_SECONDS / 2)  # not yet due
    collector.note_input(100.0 + EVERY_SECONDS)
    assert not collector.tick(100.0 + EVERY_SECONDS + QUIET_SECONDS / 2)  # typing
    assert collect.count == 0
    assert collector.tick(100.0 + EVERY_SECONDS + QUIET_SECONDS)
    assert collect.count == 1
    # The next one is EVERY_SECONDS later, not at once.
    assert not collector.tick(100.0 + EVERY_SECONDS + QUIET_SECONDS + 1)
    assert collect.count == 1


def test_a_keyboard_that_never_rests_still_gets_a_full_collection():
    collect = Collections()
    collector = QuietCollector(0.0, collect)
    now = 0.0
    while now < AT_MOST_SECONDS:
        collector.note_input(now)
        assert not collector.tick(now)
        now += 0.5
    collector.note_input(now)
    assert collector.tick(now)
    assert collect.count == 1


@pytest.fixture
def thresholds() -> Iterator[None]:
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)


@pytest.mark.usefixtures("thresholds")
def test_holding_full_collections_leaves_the_young_ones_alone():
    gc.set_threshold(700, 10, 10)
    hold_full_collections()
    assert gc.get_threshold() == (700, 10, HELD_THRESHOLD)


async def test_the_console_notes_input_and_collects_when_quiet(tmp_path: Path, db: Store):
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(100, 24)) as pilot:
        await settle(pilot)
        before = app.collector.last_input
        await pilot.press("down")
        assert app.collector.last_input > before
        # A test's app shares its process: it neither freezes the heap nor collects on a timer.
        assert not app.manages_heap
        assert not app.heap_frozen
        app.collector.last_input -= 2 * QUIET_SECONDS
        app.collector.last_collection -= 2 * EVERY_SECONDS
        assert app.collect_if_quiet()
        assert not app.collect_if_quiet()


async def test_the_first_read_from_the_store_is_frozen_when_the_console_owns_the_process(
    tmp_path: Path, db: Store
):
    add_session(db, "s1")
    app = console(sqlite_url(tmp_path))
    app.manages_heap = True  # as run_console sets it
    frozen = gc.get_freeze_count()
    try:
        async with app.run_test(size=(100, 24)) as pilot:
            await settle(pilot)
            assert app.heap_frozen
            assert gc.get_freeze_count() > frozen
    finally:
        gc.unfreeze()
