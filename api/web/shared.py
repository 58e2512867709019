"""An answer many open pages ask for at the same moment, worked out once (``SingleFlight``).

Every page open on a server hears of a change from the same live batch and asks again for the
rows it shows; pages showing the same rows ask the same question. Each question is keyed by
what it asks and by the live batch it answers (``seq``), so an answer is shared only among
pages reacting to the same batch, and it is always worked out after that batch was read."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")
# Answers kept (a few live batches' worth of distinct questions).
KEPT = 64


class SingleFlight(Generic[T]):
    """``answer(key, work)``: the first caller of a key runs ``work``; callers of the same key
    meanwhile, and soon after, get its result (or its error)."""

    def __init__(self, kept: int = KEPT) -> None:
        self.kept = kept
        self._answers: OrderedDict[Hashable, asyncio.Future[T]] = OrderedDict()

    async def answer(self, key: Hashable, work: Callable[[], Awaitable[T]]) -> T:
        loop = asyncio.get_running_loop()
        found = self._answers.get(key)
        if found is not None and found.get_loop() is loop:
            return await asyncio.shield(found)
        future: asyncio.Future[T] = loop.create_future()
        self._answers[key] = future
        while len(self._answers) > self.kept:
            self._answers.popitem(last=False)
        try:
            result = await work()
        except BaseException as error:
            self._answers.pop(key, None)
            future.set_exception(error)
            future.exception()  # retrieved: a question nobody else asked is no warning
            raise
        future.set_result(result)
        return result
