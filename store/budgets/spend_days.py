"""What each session spent on each day (UTC), as its hooks report it: the rows budgets count
(``usage_days``, migration 0024). A session's usage is a running total (``metadata.usage``); the
day's row takes what it grew by, in the transaction that keeps the new total
(``store.writes.usage_values.keep_usage``).

Standard library only (the hooks' quick writes use it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

# Returns a row on both engines, so that every writer can take its first row.
ADD_SPEND = """
INSERT INTO usage_days (session_id, day, agent_id, run_id, workspace_id, tokens, cost_usd,
                        unpriced_tokens, changed_at)
VALUES (:session_id, :day, :agent_id, :run_id, :workspace_id, :tokens, :cost_usd,
        :unpriced_tokens, :changed_at)
ON CONFLICT (session_id, day) DO UPDATE SET
  tokens = usage_days.tokens + excluded.tokens,
  cost_usd = usage_days.cost_usd + excluded.cost_usd,
  unpriced_tokens = usage_days.unpriced_tokens + excluded.unpriced_tokens,
  changed_at = excluded.changed_at
RETURNING session_id"""


class Spend(NamedTuple):
    """Tokens, the dollars they cost where known, and the tokens of no known price."""

    tokens: int
    dollars: float
    unpriced_tokens: int


def _figure(usage: Mapping[str, Any] | None, key: str) -> float | None:
    value = None if usage is None else usage.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def grown_by(before: Any, after: Mapping[str, Any]) -> Spend | None:
    """What a session's usage grew by from ``before`` (the ``metadata.usage`` it had, if any) to
    ``after`` (``session_usage``'s); None when nothing grew. Totals that went down (an agent
    that counts again from zero) add nothing: what was spent stays spent."""
    old = before if isinstance(before, Mapping) else None
    grown = (_figure(after, "total_tokens") or 0) - (_figure(old, "total_tokens") or 0)
    tokens = max(int(grown), 0)
    cost = _figure(after, "cost_usd")
    dollars = 0.0 if cost is None else max(cost - (_figure(old, "cost_usd") or 0.0), 0.0)
    unpriced = tokens if cost is None else 0
    if not tokens and not dollars:
        return None
    return Spend(tokens, round(dollars, 9), unpriced)


def spend_row(session: Any, spend: Spend, now: str) -> dict[str, Any]:
    """``ADD_SPEND``'s values: ``session``'s (any session record), on the day of ``now`` (the
    store's time text, UTC)."""
    return {
        "session_id": session.id,
        "day": now[:10],
        "agent_id": session.agent_id,
        "run_id": session.run_id,
        "workspace_id": session.workspace_id,
        "tokens": spend.tokens,
        "cost_usd": spend.dollars,
        "unpriced_tokens": spend.unpriced_tokens,
        "changed_at": now,
    }
