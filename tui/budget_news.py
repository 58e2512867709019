"""The budgets' news for the console (issue 46 point 3): every ``LOOK_SECONDS`` a thread asks the
console's source for the crossings of 80 % and 100 % claimed since the console opened
(``ConsoleContext.source.budget_news``: on a store, the console looks at its configured budgets
first), and each one not yet told becomes one notification. No Textual here."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from roundtable_console.store.safety.display import one_line

if TYPE_CHECKING:
    from roundtable_console.screens.source import ConsoleSource
    from roundtable_console.store.budgets.standing import Crossing

LOOK_SECONDS = 2.0
OVER = 100


class BudgetLooks:
    """What was told already, from when the console opened; one look at a time."""

    def __init__(self, since: str) -> None:
        self.since = since
        self.told: set[str] = set()
        self._looking = threading.Lock()

    def look(self, source: ConsoleSource, tell: Callable[[list[Crossing]], None]) -> None:
        """Blocking (a thread's): the crossings not yet told, given to ``tell``. A look while
        another runs does nothing."""
        if not self._looking.acquire(blocking=False):
            return
        try:
            found = source.budget_news(self.since)
        except Exception:  # noqa: BLE001 - the store or server is away: the list says so
            return
        finally:
            self._looking.release()
        fresh = [crossing for crossing in found if crossing.id not in self.told]
        self.told.update(crossing.id for crossing in fresh)
        if fresh:
            tell(fresh)


def notice_words(crossing: Crossing) -> tuple[str, str, bool]:
    """A crossing's notification: its title, its message (plain text), and whether it is the
    100 % one."""
    message = f"{crossing.body} Press O for the overview's budgets."
    return one_line(crossing.title, 80), one_line(message, 300), crossing.level >= OVER
