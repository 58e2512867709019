"""Budgets, watched by a server (issue 46 point 3): every ``LOOK_EVERY`` seconds the notifier's
thread asks where each configured budget stands (``store.budgets.standing.cross_budgets``). A
budget at 80 % or 100 % of its limit is claimed once in the store, whoever looks; a ``stop``
budget this server claimed at 100 % has its agents stopped, in a thread of their own
(``agents.budget_stops``). Then every crossing not yet told, by this server's looking or a
console's, is taken once and told to the devices that want ``budget`` news and may see the
budget, and to the webhooks (``serve --notify``).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Sequence
from typing import Protocol

from roundtable_console.store.budgets.limits import OVER, Budget
from roundtable_console.store.budgets.standing import Crossing, cross_budgets, take_untold
from roundtable_console.store.clock import Clock, format_ts
from roundtable_console.store.db.database import Store
from roundtable_console.store.push.subscriptions import BUDGET
from roundtable_console.store.push.telling import Notice, Recipient, budget_recipients

log = logging.getLogger("roundtable.serve")
LOOK_EVERY = 2.0


def notice_of_crossing(crossing: Crossing, at: str) -> Notice:
    """A crossing as a push and a webhook tell it: it opens the overview's budgets."""
    tag = hashlib.sha256(f"{crossing.budget_key}:{crossing.period}".encode()).hexdigest()[:24]
    return Notice(
        kind=BUDGET, session_id="", agent_id="", title=crossing.title, body=crossing.body,
        url="/overview#budgets", at=at, tag=f"roundtable:budget:{tag}",
    )  # fmt: skip


class Sender(Protocol):
    def send(self, devices: list[Recipient], notice: Notice) -> None: ...


class Settings(Protocol):
    @property
    def webhooks(self) -> tuple[str, ...]: ...


class Telling(Protocol):
    """What of the notifier (``api.notify.notifier.Notifier``) tells a budget's crossing."""

    store: Store
    clock: Clock
    settings: Settings
    sender: Sender

    def post_to(self, urls: list[str], body: bytes) -> None: ...

    def webhook_body(self, notice: Notice) -> bytes: ...


class BudgetWatch:
    def __init__(self, owner: Telling, budgets: Sequence[Budget]) -> None:
        self.owner = owner
        self.budgets = {budget.key: budget for budget in budgets}

    def look(self) -> None:
        """Claim what the budgets crossed, stop what must be stopped, tell what is untold."""
        owner = self.owner
        if not self.budgets:
            return
        for crossing in cross_budgets(owner.store, list(self.budgets.values()), clock=owner.clock):
            budget = self.budgets.get(crossing.budget_key)
            if budget is not None and budget.stop and crossing.level >= OVER:
                threading.Thread(
                    target=self._stop, args=(budget,), name="roundtable-budget-stop", daemon=True
                ).start()
        for crossing in take_untold(owner.store, clock=owner.clock):
            self.tell(crossing)

    def tell(self, crossing: Crossing) -> None:
        owner = self.owner
        notice = notice_of_crossing(crossing, format_ts(owner.clock()))
        with owner.store.read() as db:
            devices = budget_recipients(db, crossing.workspace_id, clock=owner.clock)
        if devices:
            owner.sender.send(devices, notice)
        owner.post_to(list(owner.settings.webhooks), owner.webhook_body(notice))
        log.info("budgets: %s told to %d devices", crossing.title, len(devices))

    def _stop(self, budget: Budget) -> None:
        from roundtable_console.agents.budget_stops import stop_over_budget

        try:
            stops = stop_over_budget(self.owner.store, budget, clock=self.owner.clock)
        except Exception:  # noqa: BLE001 - the store is unreachable: said in the log
            log.warning("budgets: the agents over %s could not be stopped", budget.name)
            return
        log.info(
            "budgets: %s reached: %d agents stopped, %d not reachable",
            budget.name, len(stops.stopped), len(stops.unreachable),
        )  # fmt: skip
