"""What each session spent on each day (UTC), as its hooks report it: the rows budgets count
(``usage_days``, migration 0024). A session's usage is a running total (``metadata.usage``); the
day's row takes what it grew by, in the transaction that keeps the new total
(``store.writes.usage_values.keep_usage``).

What it grew by is measured from what its rows count already, never from its metadata: an agent
writes its metadata as it likes (a register replaces it, and the hook tells the whole total
again), but the rows only grow. A total that went down adds nothing until it passes what was
counted. A row is the session's spend under one agent, run and workspace (no workspace: ''):
a session registered again under another run counts its new spend there.

Standard library only (the hooks' quick writes use it).
"""

from __future__ import annotations

from collections.abc import Mapping

# typing is not imported at run time: every hook's process would pay ~3 ms for it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Returns a row on both engines, so that every writer can take its first row.
ADD_SPEND = """
INSERT INTO usage_days (session_id, day, agent_id, run_id, workspace_id, tokens, cost_usd,
                        unpriced_tokens, changed_at)
VALUES (:session_id, :day, :agent_id, :run_id, :workspace_id, :tokens, :cost_usd,
        :unpriced_tokens, :changed_at)
ON CONFLICT (session_id, day, agent_id, run_id, workspace_id) DO UPDATE SET
  tokens = usage_days.tokens + excluded.tokens,
  cost_usd = usage_days.cost_usd + excluded.cost_usd,
  unpriced_tokens = usage_days.unpriced_tokens + excluded.unpriced_tokens,
  changed_at = excluded.changed_at
RETURNING session_id"""


# What a session's rows count so far, the baseline of what its next report grew by.
COUNTED = """
SELECT COALESCE(sum(tokens), 0), COALESCE(sum(cost_usd), 0) FROM usage_days
WHERE session_id = :session_id"""


def _figure(usage: Mapping[str, Any] | None, key: str) -> float | None:
    value = None if usage is None else usage.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def grown_by(counted: Any, after: Mapping[str, Any]) -> tuple[int, float, int] | None:
    """What a session's usage grew by: ``after`` (``session_usage``'s: checked, within bounds)
    past ``counted`` (``COUNTED``'s row: the tokens and dollars its rows hold), as tokens,
    dollars and tokens of no known price (a plain tuple: a hook builds no class); None when
    nothing grew."""
    tokens_counted, dollars_counted = (float(value or 0) for value in counted or (0, 0))
    tokens = max(int((_figure(after, "total_tokens") or 0) - tokens_counted), 0)
    cost = _figure(after, "cost_usd")
    dollars = 0.0 if cost is None else max(cost - dollars_counted, 0.0)
    unpriced = tokens if cost is None else 0
    if not tokens and not dollars:
        return None
    return tokens, round(dollars, 9), unpriced


def spend_row(session: Any, spend: tuple[int, float, int], now: str) -> dict[str, Any]:
    """``ADD_SPEND``'s values: ``session``'s (any session record), on the day of ``now`` (the
    store's time text, UTC)."""
    return {
        "session_id": session.id,
        "day": now[:10],
        "agent_id": session.agent_id,
        "run_id": session.run_id,
        "workspace_id": session.workspace_id or "",
        "tokens": spend[0],
        "cost_usd": spend[1],
        "unpriced_tokens": spend[2],
        "changed_at": now,
    }
