"""Budgets, watched by a server (issue 46 point 3): every ``LOOK_EVERY`` seconds the notifier's
thread asks where each configured budget stands (``store.budgets.standing.cross_budgets``). A
budget at 80 % or 100 % of its limit is claimed once in the store, whoever looks. Every crossing
not yet told, by this server's looking or a console's, is taken once and told to the devices
that want ``budget`` news and may see the budget, and to the webhooks (``serve --notify``). A
``stop`` budget at 100 % has the agents it counts stopped, in a thread of their own
(``agents.budget_stops``).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from roundtable_console.store.budgets.limits import Budget
from roundtable_console.store.budgets.standing import Crossing, cross_budgets, take_untold
from roundtable_console.store.clock import Clock, format_ts
from roundtable_console.store.db.database import Store
from roundtable_console.store.push.subscriptions import BUDGET
from roundtable_console.store.push.telling import Notice, Recipient, budget_recipients

if TYPE_CHECKING:
    from roundtable_console.agents.budget_stops import BudgetStopper

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
        self.budgets = tuple(budgets)
        self.stopper: BudgetStopper | None = None
        self._stopping: threading.Thread | None = None

    def look(self) -> None:
        """Claim what the budgets crossed, tell what is untold, stop what must be stopped."""
        owner = self.owner
        if not self.budgets:
            return
        cross_budgets(owner.store, self.budgets, clock=owner.clock)
        for crossing in take_untold(owner.store, clock=owner.clock):
            self.tell(crossing)
        if any(budget.stop for budget in self.budgets):
            if self._stopping is None or not self._stopping.is_alive():
                self._stopping = threading.Thread(
                    target=self._stop, name="roundtable-budget-stop", daemon=True
                )
                self._stopping.start()

    def tell(self, crossing: Crossing) -> None:
        owner = self.owner
        notice = notice_of_crossing(crossing, format_ts(owner.clock()))
        with owner.store.read() as db:
            devices = budget_recipients(db, crossing.workspace_id, clock=owner.clock)
        if devices:
            owner.sender.send(devices, notice)
        owner.post_to(list(owner.settings.webhooks), owner.webhook_body(notice))
        log.info("budgets: %s told to %d devices", crossing.title, len(devices))

    def _stop(self) -> None:
        from roundtable_console.agents.budget_stops import BudgetStopper

        if self.stopper is None:
            self.stopper = BudgetStopper(self.owner.store, clock=self.owner.clock)
        try:
            done = self.stopper.stop_due(self.budgets)
        except Exception:  # noqa: BLE001 - the store is unreachable: the next look tries again
            log.warning("budgets: the agents over a stop budget could not be stopped")
            return
        for name, stops in done.items():
            if stops.stopped or stops.unreachable:
                log.info("budgets: %s reached: %d agents stopped, %d not reachable",
                         name, len(stops.stopped), len(stops.unreachable))  # fmt: skip
