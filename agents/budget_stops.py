"""A budget with ``stop = true`` at 100 % (issue 46 point 3): the agent of each live session it
counts is stopped as ``stop-agent`` stops one (``agents.stopping``: SIGINT, then SIGTERM after
the grace, where the agent runs), each recorded with the budget as its actor (``budget:NAME``) in
the audit. While the budget stays at 100 % in its period, a session that starts in its scope
later is stopped too, at the next look; a session already stopped by the budget is not asked
again. An agent Roundtable did not start (no pane it knows), or whose host is offline, cannot be
reached: it is asked once per looker, and the crossing's notice has told the humans. Blocking (a
stop takes up to its grace): for a thread of its own."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import text

from roundtable_console.agents.stopping import stop_session_agent
from roundtable_console.store.budgets.limits import ALL, OVER, SCOPE_COLUMNS, Budget
from roundtable_console.store.budgets.standing import budget_state
from roundtable_console.store.clock import Clock, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import StoreError

# The live sessions a budget's stop reaches in one look at most, and how many are stopped at once.
MOST_SESSIONS = 200
AT_ONCE = 4


class BudgetStops(NamedTuple):
    """The sessions whose agent was sent its signals, and those no stop could reach."""

    stopped: tuple[str, ...]
    unreachable: tuple[str, ...]


def actor_of(budget: Budget) -> str:
    """The actor the audit records for what ``budget`` did."""
    return f"budget:{budget.name}"


def live_sessions(store: Store, budget: Budget, since: str = "") -> list[str]:
    """The sessions ``budget`` counts that have not ended and that it has not stopped since
    ``since`` (its period's start: a day's budget stops a session again the next day)."""
    where = [
        "s.ended_at IS NULL",
        *(f"s.{SCOPE_COLUMNS[name]} = :{name}" for name, _ in budget.scoped()),
        "NOT EXISTS (SELECT 1 FROM agent_session_events e WHERE e.session_id = s.id"
        " AND e.event_type = 'agent_stopped' AND e.actor = :actor AND e.created_at >= :since)",
    ]
    statement = text(
        f"SELECT s.id FROM agent_sessions s WHERE {' AND '.join(where)} ORDER BY s.id LIMIT :most"
    )
    values = {**dict(budget.scoped()), "actor": actor_of(budget), "since": since,
              "most": MOST_SESSIONS}  # fmt: skip
    with store.read() as db:
        return list(db.execute(statement, values).scalars())


class BudgetStopper:
    """Stops what the ``stop`` budgets at 100 % count, look after look: a server's watch and a
    console on a store each keep one."""

    def __init__(self, store: Store, *, grace: float = 10.0, clock: Clock = system_clock) -> None:
        self.store = store
        self.grace = grace
        self.clock = clock
        # Sessions no stop could reach, per budget: not asked again by this looker.
        self.unreachable: dict[str, set[str]] = {}
        self._busy = threading.Lock()

    def stop_due(self, budgets: Sequence[Budget]) -> dict[str, BudgetStops]:
        """Each ``stop`` budget at 100 % in its period now: the agents of its live sessions
        stopped (see the module's docstring), by budget name. A call while another runs does
        nothing."""
        stopping = [budget for budget in budgets if budget.stop]
        if not stopping or not self._busy.acquire(blocking=False):
            return {}
        try:
            now = self.clock()
            with self.store.read() as db:
                over = [b for b in stopping if (budget_state(db, b, now).level or 0) >= OVER]
            return {budget.name: self.stop(budget, now) for budget in over}
        finally:
            self._busy.release()

    def stop(self, budget: Budget, now: datetime) -> BudgetStops:
        period = budget.period(now)
        passed = self.unreachable.setdefault(f"{budget.key}:{period}", set())
        since = "" if budget.per == ALL else period
        found = live_sessions(self.store, budget, since)
        sessions = [session for session in found if session not in passed]

        def stop(session_id: str) -> bool:
            try:
                stop_session_agent(self.store, session_id, actor=actor_of(budget),
                                   grace=self.grace, clock=self.clock)  # fmt: skip
            except (StoreError, OSError):  # not started by Roundtable, its host offline, gone
                return False
            return True

        with ThreadPoolExecutor(
            max_workers=AT_ONCE, thread_name_prefix="roundtable-budget"
        ) as pool:
            outcomes = list(pool.map(stop, sessions))
        stopped = tuple(found for found, done in zip(sessions, outcomes, strict=True) if done)
        missed = tuple(found for found, done in zip(sessions, outcomes, strict=True) if not done)
        passed.update(missed)
        return BudgetStops(stopped, missed)
