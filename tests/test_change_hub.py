"""The server's change hub (api.streams.change_hub): a stream that subscribed before the hub's first
change token is woken once that token is taken, since a change committed in between sends it no
signal of its own (bench/serve.py's first stream on a fresh PostgreSQL server waited 10 s)."""

from __future__ import annotations

import asyncio
import threading

from roundtable_console.api.streams.change_hub import ChangeHub


class QuietStore:
    """A store whose change token is taken only when the test lets it, and never changes."""

    def __init__(self) -> None:
        self.take_token = threading.Event()
        self.tokens_taken = 0

    def change_token(self) -> object:
        self.take_token.wait(5)
        self.tokens_taken += 1
        return "token"

    def wait_for_change(self, since: object | None, timeout: float) -> object | None:
        threading.Event().wait(timeout)
        return since


async def test_a_stream_subscribed_before_the_first_token_is_woken_to_read_again() -> None:
    store = QuietStore()
    hub = ChangeHub(store)  # type: ignore[arg-type]
    woken = hub.subscribe()
    # Here the stream reads for the first time, and a change commits before the token is taken.
    store.take_token.set()
    try:
        await asyncio.wait_for(woken.wait(), timeout=3)
        assert store.tokens_taken == 1
        woken.clear()
        # With no change after the token, nothing wakes it again.
        await asyncio.sleep(1.3)
        assert not woken.is_set()
    finally:
        hub.close()


def test_a_stop_signalled_inside_an_unsubscribe_does_not_deadlock() -> None:
    """The server's stop runs ``close`` from a signal handler on the main thread, which may be
    inside ``unsubscribe`` (holding the hub's lock) at that moment: it must not wait on itself."""
    hub = ChangeHub(store=None)  # type: ignore[arg-type]
    finished = threading.Event()

    async def scenario() -> None:
        woken = asyncio.Event()
        with hub.waiting_lock:  # as unsubscribe holds it when the signal comes
            hub.close()
        hub.unsubscribe(woken)
        finished.set()

    runner = threading.Thread(target=lambda: asyncio.run(scenario()), daemon=True)
    runner.start()
    runner.join(timeout=5)
    assert finished.is_set(), "close() waited on the lock its own thread held"
