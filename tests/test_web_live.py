"""The web console's live path on the server (issue 21 point 3, and what keeps twenty pages
light): one answer worked out once for the pages asking the same at the same moment, batches
waiting for a slow page merged into one, and a page bound to a workspace told only of its own."""

from __future__ import annotations

import asyncio

import pytest

from roundtable_console.api.edge.identity import Caller
from roundtable_console.api.web.live import CLOSING, Batch, _merged
from roundtable_console.api.web.shared import SingleFlight


async def test_pages_asking_the_same_at_once_share_one_answer() -> None:
    shared: SingleFlight[str] = SingleFlight()
    runs: list[str] = []

    async def work(name: str) -> str:
        runs.append(name)
        await asyncio.sleep(0.05)
        return f"rows of {name}"

    asked = [shared.answer(("seq-1", "a"), lambda: work("a")) for _ in range(20)]
    asked.append(shared.answer(("seq-1", "b"), lambda: work("b")))
    answers = await asyncio.gather(*asked)
    assert answers == ["rows of a"] * 20 + ["rows of b"]
    assert sorted(runs) == ["a", "b"]
    assert await shared.answer(("seq-2", "a"), lambda: work("a")) == "rows of a"
    assert runs.count("a") == 2  # a later batch is read again


async def test_a_failed_answer_reaches_every_asker_and_is_not_kept() -> None:
    shared: SingleFlight[str] = SingleFlight()
    calls = 0

    async def failing() -> str:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.01)
        raise RuntimeError("store gone")

    results = await asyncio.gather(
        *(shared.answer("k", failing) for _ in range(3)), return_exceptions=True
    )
    assert all(isinstance(result, RuntimeError) for result in results) and calls == 1
    with pytest.raises(RuntimeError):
        await shared.answer("k", failing)
    assert calls == 2


async def test_only_the_last_answers_are_kept() -> None:
    shared: SingleFlight[int] = SingleFlight(kept=2)
    runs = 0

    async def work() -> int:
        nonlocal runs
        runs += 1
        return runs

    for key in ("a", "b", "c"):
        await shared.answer(key, work)
    assert await shared.answer("c", work) == 3  # kept
    assert await shared.answer("a", work) == 4  # dropped, read again


def test_batches_waiting_for_a_slow_page_become_one() -> None:
    queue: asyncio.Queue[Batch | str] = asyncio.Queue()
    queue.put_nowait(Batch("t2", {"s2": {"status"}, "s1": {"heartbeat"}}, seq=2))
    queue.put_nowait(Batch("t3", {"s1": {"status"}}, {"s1": "ws-a"}, seq=3))
    merged = _merged(Batch("t1", {"s1": {"heartbeat"}}, seq=1), queue)
    assert isinstance(merged, Batch)
    assert (merged.token, merged.seq) == ("t3", 3)
    assert merged.kinds == {"s1": {"heartbeat", "status"}, "s2": {"status"}}
    assert queue.empty()
    queue.put_nowait(Batch("t5", {"s3": {"status"}}, seq=4))
    caught_up = _merged(Batch("t4", {"s1": {"status"}}), queue)  # a page's own catch-up
    assert isinstance(caught_up, Batch) and caught_up.seq == 0  # its read is not shared
    queue.put_nowait(CLOSING)
    assert _merged(Batch("t4", {"s1": {"heartbeat"}}), queue) == CLOSING


def test_a_page_bound_to_a_workspace_hears_only_of_its_own() -> None:
    batch = Batch(
        "t1",
        {"mine": {"status"}, "theirs": {"status"}, "nowhere": {"heartbeat"}},
        {"mine": "ws-a", "theirs": "ws-b", "nowhere": None},
    )
    bound = Caller(name="bea", role="operator", mode="browser", workspaces=("ws-a",))
    everyone = Caller(name="olivia", role="operator", mode="browser")
    assert batch.for_caller(bound) == {"mine": {"status"}}
    assert set(batch.for_caller(everyone)) == {"mine", "theirs", "nowhere"}
