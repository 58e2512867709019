"""A budget with ``stop = true`` at 100 % (issue 46 point 3): the agents of its live sessions
stopped as ``stop-agent`` stops one (``agents.stopping``: SIGINT, then SIGTERM after the grace,
where the agent runs), each recorded with the budget as its actor (``budget:NAME``) in the audit.
An agent Roundtable did not start (no pane it knows), or whose host is offline, cannot be
reached: it is counted, and the crossing's notice already told the humans. Blocking (a stop
takes up to its grace): for a thread of its own."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

from sqlalchemy import text

from roundtable_console.agents.stopping import stop_session_agent
from roundtable_console.store.budgets.limits import Budget
from roundtable_console.store.clock import Clock, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import StoreError

# The live sessions a budget's stop reaches at most, and how many are stopped at once.
MOST_SESSIONS = 200
AT_ONCE = 4
_COLUMNS = {"agent": "agent_id", "run": "run_id", "workspace": "workspace_id"}


class BudgetStops(NamedTuple):
    """The sessions whose agent was sent its signals, and those no stop could reach."""

    stopped: tuple[str, ...]
    unreachable: tuple[str, ...]


def actor_of(budget: Budget) -> str:
    """The actor the audit records for what ``budget`` did."""
    return f"budget:{budget.name}"


def live_sessions(store: Store, budget: Budget) -> list[str]:
    """The sessions ``budget`` counts that have not ended."""
    where = ["ended_at IS NULL", *(f"{_COLUMNS[name]} = :{name}" for name, _ in budget.scoped())]
    statement = text(
        f"SELECT id FROM agent_sessions WHERE {' AND '.join(where)} ORDER BY id LIMIT :most"
    )
    with store.read() as db:
        return list(
            db.execute(statement, {**dict(budget.scoped()), "most": MOST_SESSIONS}).scalars()
        )


def stop_over_budget(
    store: Store, budget: Budget, *, grace: float = 10.0, clock: Clock = system_clock
) -> BudgetStops:
    """Stop the agents of ``budget``'s live sessions (see the module's docstring)."""
    sessions = live_sessions(store, budget)

    def stop(session_id: str) -> bool:
        try:
            stop_session_agent(store, session_id, actor=actor_of(budget), grace=grace, clock=clock)
        except (StoreError, OSError):  # not started by Roundtable, its host offline, already gone
            return False
        return True

    with ThreadPoolExecutor(max_workers=AT_ONCE, thread_name_prefix="roundtable-budget") as pool:
        outcomes = list(pool.map(stop, sessions))
    return BudgetStops(
        tuple(session for session, done in zip(sessions, outcomes, strict=True) if done),
        tuple(session for session, done in zip(sessions, outcomes, strict=True) if not done),
    )
