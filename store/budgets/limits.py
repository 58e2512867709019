"""The budgets a configuration sets (``[[budgets]]`` in ``config.toml``): a limit in tokens or
dollars on what one agent, one run, one workspace (or several of them at once: all must match),
or the whole fleet spends, per UTC day or in all. ``stop``: at 100 % the agents of its live
sessions are stopped where a host (or this machine's tmux) can reach them.

Who may see a budget: one bound to a workspace, those whose token reaches that workspace; any
other, those whose token reaches every workspace (its sums cross them).

Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

DAY, ALL = "day", "all"
TOKENS, DOLLARS = "tokens", "dollars"
WARN, OVER = 80, 100
LEVELS = (WARN, OVER)
SCOPES = ("agent", "run", "workspace")
# The column of a session (and of its spend) each scope matches.
SCOPE_COLUMNS = {"agent": "agent_id", "run": "run_id", "workspace": "workspace_id"}
KEYS = frozenset({"name", *SCOPES, TOKENS, DOLLARS, "per", "stop"})
MOST_TOKENS = 10**15
MOST_DOLLARS = 1e9
NAME_LENGTH = 60


class Budget(NamedTuple):
    name: str
    unit: str  # TOKENS or DOLLARS
    limit: float
    per: str = ALL  # DAY or ALL
    agent: str | None = None
    run: str | None = None
    workspace: str | None = None
    stop: bool = False

    @property
    def key(self) -> str:
        """Its identity for the crossings told: what it counts and its limit (a budget whose
        limit changes is a new one, told anew; a new name alone is not)."""
        import hashlib

        parts = (self.unit, repr(float(self.limit)), self.per, self.agent, self.run, self.workspace)
        return hashlib.sha256(repr(parts).encode("utf-8")).hexdigest()[:32]

    def period(self, now: datetime) -> str:
        """The period ``now`` falls in: its UTC day, or ``all``."""
        return now.astimezone(UTC).strftime("%Y-%m-%d") if self.per == DAY else ALL

    def scope_words(self) -> str:
        parts = [f"{name} {value}" for name, value in self.scoped()]
        return " in ".join(parts) if parts else "every session"

    def scoped(self) -> list[tuple[str, str]]:
        return [
            (name, value)
            for name, value in (("agent", self.agent), ("run", self.run),
                                ("workspace", self.workspace))
            if value is not None
        ]  # fmt: skip

    def amount_words(self, amount: float) -> str:
        return f"{amount:,.0f} tokens" if self.unit == TOKENS else f"${amount:,.2f}"


def _text(entry: Mapping[str, Any], key: str, where: str) -> str | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or not value.isprintable():
        raise ValueError(f"{where}.{key} is a name, as text.")
    if len(value) > 200:
        raise ValueError(f"{where}.{key} is at most 200 characters.")
    return value


def _limit(entry: Mapping[str, Any], where: str) -> tuple[str, float]:
    given = [unit for unit in (TOKENS, DOLLARS) if unit in entry]
    if len(given) != 1:
        raise ValueError(f"{where} gives one limit: tokens = N or dollars = N.")
    unit = given[0]
    value = entry[unit]
    most = MOST_TOKENS if unit == TOKENS else MOST_DOLLARS
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 < value <= most
        or (unit == TOKENS and not float(value).is_integer())
    ):
        kind = "a whole number of tokens" if unit == TOKENS else "a number of dollars"
        raise ValueError(f"{where}.{unit} is {kind}, more than 0 and at most {most:g}.")
    return unit, float(value)


def budget_of(entry: Any, index: int) -> Budget:
    """One ``[[budgets]]`` table, checked; ``ValueError`` in words."""
    where = f"budgets[{index}]"
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where} is a table ([[budgets]]).")
    unknown = sorted(set(map(str, entry)) - KEYS)
    if unknown:
        raise ValueError(
            f"{where} has no key {unknown[0][:40]!r} (it takes {', '.join(sorted(KEYS))})."
        )
    unit, limit = _limit(entry, where)
    per = entry.get("per", ALL)
    if per not in (DAY, ALL):
        raise ValueError(f'{where}.per is "day" or "all".')
    stop = entry.get("stop", False)
    if not isinstance(stop, bool):
        raise ValueError(f"{where}.stop is true or false.")
    scope = {name: _text(entry, name, where) for name in SCOPES}
    budget = Budget(name="", unit=unit, limit=limit, per=per, stop=stop, **scope)
    name = _text(entry, "name", where)
    if name is None:
        amount = budget.amount_words(limit)
        name = f"{budget.scope_words()}: {amount}" + (" a day" if per == DAY else "")
    return budget._replace(name=name[:NAME_LENGTH])


def configured_budgets(values: Mapping[str, Any]) -> tuple[Budget, ...]:
    """A configuration's ``[[budgets]]``; ``ValueError`` in words (names are unique: a budget's
    stop is audited under its name)."""
    entries = values.get("budgets")
    if entries is None:
        return ()
    if not isinstance(entries, Sequence) or isinstance(entries, str):
        raise ValueError("budgets is a list of tables ([[budgets]]).")
    budgets = tuple(budget_of(entry, index) for index, entry in enumerate(entries))
    names = [budget.name for budget in budgets]
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f"Two budgets are named {name!r}: give each its own name.")
    keys: dict[str, str] = {}
    for budget in budgets:
        if budget.key in keys:
            raise ValueError(
                f"The budgets {keys[budget.key]!r} and {budget.name!r} count the same sessions "
                "with the same limit: keep one."
            )
        keys[budget.key] = budget.name
    return budgets
