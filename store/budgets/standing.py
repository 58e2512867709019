"""Where each budget stands, and its crossings told once.

- **Spent** (``budget_state``): one sum of ``usage_days`` on an index (the day's rows, or all of
  them) for what the budget counts.
- **Crossed** (``cross_budgets``): a budget at 80 % or 100 % of its limit has a row in
  ``budget_crossings`` for that level and period, inserted once whoever looks (every server and
  console of the store looks): the looker that inserted it tells it (a console its operator; a
  server stops the agents of a ``stop`` budget), and a server tells every crossing not yet told
  to devices and webhooks (``take_untold``). A budget that passes both levels in one step is told
  once, at 100 %.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy import Connection, bindparam, text

from roundtable_console.store.access.walls import Wall
from roundtable_console.store.budgets.limits import ALL, OVER, SCOPE_COLUMNS, TOKENS, WARN, Budget
from roundtable_console.store.clock import Clock, format_ts, system_clock
from roundtable_console.store.db.database import Store

# A crossing older than this is not told to devices and webhooks by a server that starts later.
TELL_WITHIN = timedelta(hours=1)
_CLAIM = text(
    "INSERT INTO budget_crossings (id, budget_key, period, level, name, workspace_id, unit,"
    " limit_amount, spent, stop, crossed_at) VALUES (:id, :budget_key, :period, :level, :name,"
    " :workspace_id, :unit, :limit_amount, :spent, :stop, :crossed_at)"
    " ON CONFLICT (budget_key, period, level) DO NOTHING RETURNING id"
)
_CROSSING_COLUMNS = (
    "id, budget_key, period, level, name, workspace_id, unit, limit_amount, spent, stop, crossed_at"
)
# The newest first: however many were claimed since, the latest are read.
_SINCE = (
    f"SELECT {_CROSSING_COLUMNS} FROM budget_crossings WHERE crossed_at >= :since{{walled}}"
    " ORDER BY crossed_at DESC, id DESC LIMIT 500"
)
_SINCE_OPEN = text(_SINCE.format(walled=""))
_SINCE_WALLED = text(_SINCE.format(walled=" AND workspace_id IN :workspaces")).bindparams(
    bindparam("workspaces", expanding=True)
)
# Looked for first, in a read: a server looks every 2 s, and the store's writer is not taken
# for nothing.
_ANY_UNTOLD = text(
    "SELECT 1 FROM budget_crossings WHERE told_at IS NULL AND crossed_at >= :since LIMIT 1"
)
_UNTOLD = text(
    f"UPDATE budget_crossings SET told_at = :now WHERE told_at IS NULL AND crossed_at >= :since"
    f" RETURNING {_CROSSING_COLUMNS}"
)


class Spend(NamedTuple):
    """Tokens, the dollars they cost where known, and the tokens of no known price."""

    tokens: int
    dollars: float
    unpriced_tokens: int


def _spend_statement(budget: Budget) -> str:
    where = [f"{SCOPE_COLUMNS[name]} = :{name}" for name, _value in budget.scoped()]
    if budget.per != ALL:
        where.append("day = :day")
    condition = (" WHERE " + " AND ".join(where)) if where else ""
    return (
        "SELECT COALESCE(sum(tokens), 0), COALESCE(sum(cost_usd), 0),"
        f" COALESCE(sum(unpriced_tokens), 0) FROM usage_days{condition}"
    )


@dataclass(frozen=True)
class BudgetState:
    """What ``budget`` counts in ``period``: spent so far, as its unit measures it."""

    budget: Budget
    period: str
    spend: Spend

    @property
    def spent(self) -> float:
        return float(self.spend.tokens) if self.budget.unit == TOKENS else self.spend.dollars

    @property
    def left(self) -> float:
        return max(self.budget.limit - self.spent, 0.0)

    @property
    def percent(self) -> float:
        return 100.0 * self.spent / self.budget.limit

    @property
    def level(self) -> int | None:
        """The highest level reached (80 or 100), or None."""
        reached = [level for level in (WARN, OVER) if self.percent >= level]
        return reached[-1] if reached else None

    def words(self) -> str:
        """Spent of the limit, the share, and what is left (in its unit), in words."""
        budget = self.budget
        said = (
            f"{budget.amount_words(self.spent)} of {budget.amount_words(budget.limit)}"
            f" ({self.percent:.0f} %), {budget.amount_words(self.left)} left"
        )
        if budget.unit != TOKENS and self.spend.unpriced_tokens:
            said += f"; {self.spend.unpriced_tokens:,} tokens of unknown price not counted"
        return said + (" today (UTC)" if budget.per != ALL else "")


def budget_state(db: Connection, budget: Budget, now: datetime) -> BudgetState:
    values = dict(budget.scoped()) | {"day": format_ts(now)[:10]}
    tokens, dollars, unpriced = db.execute(text(_spend_statement(budget)), values).one()
    spend = Spend(int(tokens), float(dollars), int(unpriced))
    return BudgetState(budget, budget.period(now), spend)


def visible(budget: Budget, wall: Wall) -> bool:
    """Whether a caller behind ``wall`` may see ``budget`` (the module ``limits``' rule)."""
    return wall.reaches(budget.workspace) if budget.workspace is not None else not wall.bound


def budget_states(
    db: Connection, budgets: Iterable[Budget], now: datetime, wall: Wall | None = None
) -> list[BudgetState]:
    """The budgets a caller behind ``wall`` may see, where each stands now."""
    seen = Wall.of(None) if wall is None else wall
    return [budget_state(db, budget, now) for budget in budgets if visible(budget, seen)]


@dataclass(frozen=True)
class Crossing:
    """A budget that reached ``level`` % of its limit in ``period``, as told."""

    id: str
    budget_key: str
    period: str
    level: int
    name: str
    workspace_id: str | None
    unit: str
    limit: float
    spent: float
    stop: bool
    crossed_at: str

    @property
    def title(self) -> str:
        what = "reached" if self.level >= OVER else f"at {self.level} %"
        return f"Budget {self.name} {what}"

    @property
    def body(self) -> str:
        def amount(value: float) -> str:
            return f"{value:,.0f} tokens" if self.unit == TOKENS else f"${value:,.2f}"

        period = "" if self.period == ALL else f" on {self.period} (UTC)"
        said = f"{amount(self.spent)} of {amount(self.limit)} spent{period}"
        if self.level >= OVER and self.stop:
            said += "; its agents are being stopped"
        return said + "."

    def seen_by(self, wall: Wall) -> bool:
        if self.workspace_id is not None:
            return wall.reaches(self.workspace_id)
        return not wall.bound


def highest(crossings: Iterable[Crossing]) -> list[Crossing]:
    """Of each budget's crossings in a period, the highest level's: one told, not two."""
    best: dict[tuple[str, str], Crossing] = {}
    for crossing in crossings:
        key = (crossing.budget_key, crossing.period)
        if key not in best or crossing.level > best[key].level:
            best[key] = crossing
    return sorted(best.values(), key=lambda crossing: (crossing.crossed_at, crossing.id))


def cross_budgets(
    store: Store, budgets: Sequence[Budget], *, clock: Clock = system_clock
) -> list[Crossing]:
    """Every level the ``budgets`` reached now, claimed once in the store; the crossings this
    call claimed (the highest of each budget), for the caller to tell."""
    if not budgets:
        return []
    now = clock()
    with store.read() as db:
        states = [budget_state(db, budget, now) for budget in budgets]
    due = [state for state in states if state.level is not None]
    if not due:
        return []
    at = format_ts(now)
    claimed: list[Crossing] = []
    with store.write() as db:
        for state in due:
            budget = state.budget
            for level in (WARN, OVER):
                if state.percent < level:
                    continue
                crossing = Crossing(
                    id=uuid.uuid4().hex, budget_key=budget.key, period=state.period,
                    level=level, name=budget.name, workspace_id=budget.workspace,
                    unit=budget.unit, limit=budget.limit, spent=state.spent, stop=budget.stop,
                    crossed_at=at,
                )  # fmt: skip
                values = {**crossing.__dict__, "limit_amount": budget.limit}
                del values["limit"]
                if db.execute(_CLAIM, values).first() is not None:
                    claimed.append(crossing)
    return highest(claimed)


def _crossing(row: Sequence[object]) -> Crossing:
    (id_, key, period, level, name, workspace, unit, limit, spent, stop, at) = row
    return Crossing(
        id=str(id_), budget_key=str(key), period=str(period), level=int(level),  # type: ignore[call-overload]
        name=str(name), workspace_id=None if workspace is None else str(workspace),
        unit=str(unit), limit=float(limit), spent=float(spent),  # type: ignore[arg-type]
        stop=bool(stop), crossed_at=str(at),
    )  # fmt: skip


def crossings_since(db: Connection, since: str, wall: Wall | None = None) -> list[Crossing]:
    """The crossings claimed at ``since`` or later that a caller behind ``wall`` may see, each
    budget's highest, oldest first."""
    seen = Wall.of(None) if wall is None else wall
    if seen.workspaces is None:
        rows = db.execute(_SINCE_OPEN, {"since": since})
    elif not seen.workspaces:
        return []
    else:
        values = {"since": since, "workspaces": sorted(seen.workspaces)}
        rows = db.execute(_SINCE_WALLED, values)
    return highest(crossing for crossing in map(_crossing, rows) if crossing.seen_by(seen))


def take_untold(store: Store, *, clock: Clock = system_clock) -> list[Crossing]:
    """The recent crossings no server told devices and webhooks of, taken by this one (each
    budget's highest)."""
    now = clock()
    values = {"now": format_ts(now), "since": format_ts(now - TELL_WITHIN)}
    with store.read() as db:
        if db.execute(_ANY_UNTOLD, values).first() is None:
            return []
    with store.write() as db:
        rows = db.execute(_UNTOLD, values).all()
    return highest(_crossing(row) for row in rows)


def state_json(state: BudgetState) -> dict[str, object]:
    """A budget where it stands, as a server sends it (``state_from`` reads it back)."""
    budget = state.budget
    return {
        "name": budget.name, "unit": budget.unit, "limit": budget.limit, "per": budget.per,
        "agent": budget.agent, "run": budget.run, "workspace": budget.workspace,
        "stop": budget.stop, "period": state.period, "tokens": state.spend.tokens,
        "dollars": state.spend.dollars, "unpriced_tokens": state.spend.unpriced_tokens,
        "spent": state.spent, "left": state.left, "percent": round(state.percent, 2),
        "level": state.level, "words": state.words(),
    }  # fmt: skip


def state_from(body: Mapping[str, Any]) -> BudgetState:
    """A budget's standing a server sent (``state_json``'s)."""
    budget = Budget(
        name=str(body["name"]), unit=str(body["unit"]), limit=float(body["limit"]),
        per=str(body["per"]), agent=body.get("agent"), run=body.get("run"),
        workspace=body.get("workspace"), stop=bool(body.get("stop")),
    )  # fmt: skip
    spend = Spend(int(body["tokens"]), float(body["dollars"]), int(body["unpriced_tokens"]))
    return BudgetState(budget, str(body["period"]), spend)


def crossing_json(crossing: Crossing) -> dict[str, object]:
    return {**crossing.__dict__, "title": crossing.title, "body": crossing.body}


def crossing_from(body: Mapping[str, Any]) -> Crossing:
    fields = {name: body[name] for name in Crossing.__dataclass_fields__}
    return Crossing(**fields)
