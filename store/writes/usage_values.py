"""Ours: what a session spent, as its hook reports it from the agent's own transcript
(``agents.usage``), kept as the session's ``metadata.usage``, which the Metrics projection and the
overview's totals already read (``store.reads.overview.usage_amounts``).

- Tokens: input, output, cache read and cache write, the session's totals so far; ``total_tokens``
  is their sum.
- Cost in dollars (``cost_usd``): the agent's own figure where it states one for all of them
  (``cost_basis`` "stated"); else an estimate from a price per model (``cost_basis``
  "estimated", with the prices' date in ``priced_as_of``): the defaults below, or the
  configuration's ``[prices]``; else none at all (``cost_basis`` "unknown"), never 0.

Standard library only (the hooks' quick writes use it).
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Mapping

from roundtable_console.store.errors import InvalidSession

# typing is not imported at run time: every hook's process would pay ~3 ms for it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TOKENS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)
MOST_TOKENS = 10**15
MOST_DOLLARS = 1e9
STATED, ESTIMATED, UNKNOWN = "stated", "estimated", "unknown"
# Only over the metadata it was merged into: a register committed in between (PostgreSQL's
# READ COMMITTED lets one through) is read again and merged, never overwritten.
UPDATE_METADATA = """
UPDATE agent_sessions SET metadata_json = :metadata_json, version = version + 1
WHERE id = :session_id
  AND (metadata_json = CAST(:old AS TEXT) OR (metadata_json IS NULL AND CAST(:old AS TEXT) IS NULL))
RETURNING id"""
READ_METADATA = "SELECT metadata_json FROM agent_sessions WHERE id = :session_id"
MERGE_TRIES = 3


class Price(namedtuple("Price", ("input", "output", "cache_read", "cache_write"))):
    """Dollars per million tokens of each kind."""

    __slots__ = ()
    input: float
    output: float
    cache_read: float
    cache_write: float


# The vendors' list prices per million tokens, as known when this table was dated: estimates,
# which the configuration's [prices] overrides. A model takes the entry of its longest prefix.
PRICES_AS_OF = "2026-12"
DEFAULT_PRICES: dict[str, Price] = {
    "claude-opus": Price(5.0, 25.0, 0.5, 6.25),
    "claude-opus-4-1": Price(15.0, 75.0, 1.5, 18.75),
    "claude-opus-4-2025": Price(15.0, 75.0, 1.5, 18.75),  # Opus 4, by its dated name
    "claude-sonnet": Price(3.0, 15.0, 0.3, 3.75),
    "claude-haiku": Price(1.0, 5.0, 0.1, 1.25),
    "gpt-5": Price(1.25, 10.0, 0.125, 0.0),
    "gpt-5-mini": Price(0.25, 2.0, 0.025, 0.0),
    "gpt-5-nano": Price(0.05, 0.4, 0.005, 0.0),
    "gemini-2.5-pro": Price(1.25, 10.0, 0.125, 0.0),
    "gemini-2.5-flash": Price(0.3, 2.5, 0.03, 0.0),
    "gemini-2.5-flash-lite": Price(0.1, 0.4, 0.01, 0.0),
}


class Prices(namedtuple("Prices", ("table", "as_of"))):
    """A price table and the date it holds for (the configuration's, or the defaults)."""

    __slots__ = ()
    table: Mapping[str, Price]
    as_of: str


SHIPPED = Prices(DEFAULT_PRICES, PRICES_AS_OF)


def price_of(model: str | None, prices: Prices) -> Price | None:
    """The price of ``model``: its table entry with the longest prefix of its name."""
    if not model:
        return None
    found = [prefix for prefix in prices.table if model.startswith(prefix)]
    return prices.table[max(found, key=len)] if found else None


def _number(usage: Mapping[str, Any], key: str, most: float) -> float | None:
    value = usage.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= most:
        raise InvalidSession(f"usage.{key} is a number from 0 to {most:g}.")
    return value


def checked_usage(usage: Any) -> dict[str, Any]:
    """A hook's report, checked: the four token counts (whole numbers), the model, the agent's
    own cost; ``InvalidSession`` in words."""
    if not isinstance(usage, Mapping):
        raise InvalidSession("usage is an object of token counts.")
    unknown = set(usage) - {*TOKENS, "model", "cost_usd"}
    if unknown:
        raise InvalidSession(f"usage holds no {sorted(unknown)[0][:40]!r}.")
    checked: dict[str, Any] = {}
    for key in TOKENS:
        count = _number(usage, key, MOST_TOKENS) or 0
        if not float(count).is_integer():
            raise InvalidSession(f"usage.{key} is a whole number of tokens.")
        checked[key] = int(count)
    model = usage.get("model")
    if model is not None:
        if (
            not isinstance(model, str)
            or not 0 < len(model) <= 200
            or any(ord(char) < 32 or 127 <= ord(char) < 160 for char in model)
        ):
            raise InvalidSession("usage.model is a name of at most 200 characters, no control.")
        checked["model"] = model
    cost = _number(usage, "cost_usd", MOST_DOLLARS)
    if cost is not None:
        checked["cost_usd"] = float(cost)
    return checked


def session_usage(usage: Any, prices: Prices = SHIPPED) -> dict[str, Any]:
    """What ``metadata.usage`` holds for a hook's report: its tokens and their sum, the model,
    and the cost with its basis (see the module's docstring)."""
    checked = checked_usage(usage)
    kept: dict[str, Any] = {key: checked[key] for key in TOKENS}
    kept["total_tokens"] = sum(checked[key] for key in TOKENS)
    if "model" in checked:
        kept["model"] = checked["model"]
    price = price_of(checked.get("model"), prices)
    if "cost_usd" in checked:
        kept["cost_usd"], kept["cost_basis"] = checked["cost_usd"], STATED
    elif price is not None:
        dollars = (
            checked["input_tokens"] * price.input
            + checked["output_tokens"] * price.output
            + checked["cache_read_input_tokens"] * price.cache_read
            + checked["cache_creation_input_tokens"] * price.cache_write
        ) / 1_000_000
        kept["cost_usd"], kept["cost_basis"] = round(dollars, 6), ESTIMATED
        kept["priced_as_of"] = prices.as_of
    else:
        kept["cost_basis"] = UNKNOWN
    return kept


def metadata_with_usage(metadata_json: str | None, usage: dict[str, Any]) -> str | None:
    """The session's metadata with ``usage`` in it, as stored; None when it holds it already
    (nothing to write)."""
    from roundtable_console.store import validation

    current = validation.decode_metadata(metadata_json)
    if current is None and metadata_json and metadata_json.strip():
        return None  # not an object we can read: left as the agent wrote it
    metadata = dict(current or {})
    if metadata.get("usage") == usage:
        return None
    metadata["usage"] = usage
    return validation.metadata(metadata)


def configured_prices(values: Mapping[str, Any]) -> Prices:
    """A configuration's ``[prices."MODEL PREFIX"]`` tables (dollars per million tokens:
    ``input``, ``output``, ``cache_read``, ``cache_write``) and its ``prices_as_of`` (the date
    they hold for), over the shipped prices; ``ValueError`` in words."""
    import math

    table = values.get("prices")
    if table is None:
        return SHIPPED
    if not isinstance(table, Mapping):
        raise ValueError("[prices] is a table of models' prices.")
    configured: dict[str, Price] = {}
    for prefix, entry in table.items():
        if not isinstance(entry, Mapping) or set(entry) - set(Price._fields):
            raise ValueError(
                f"[prices.{str(prefix)[:60]!r}] holds input, output, cache_read and cache_write, "
                "in dollars per million tokens."
            )
        figures = []
        for name in Price._fields:
            value = entry.get(name, 0.0)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or not 0 <= value < 1e6
            ):
                raise ValueError(f"prices.{str(prefix)[:60]!r}.{name} is a number from 0 to 1e6.")
            figures.append(float(value))
        configured[str(prefix)] = Price(*figures)
    as_of = values.get("prices_as_of", "your configuration")
    if not isinstance(as_of, str) or not as_of.strip() or not as_of.isprintable():
        raise ValueError("prices_as_of is the date the prices hold for, as text.")
    return Prices({**SHIPPED.table, **configured}, as_of.strip()[:40])


if TYPE_CHECKING:
    # Runs a statement in the writer's transaction: its first row, or None.
    Run = Callable[[str, Mapping[str, Any]], Any]


def keep_usage(run: Run, session: Any, spent: dict[str, Any] | None, now: str) -> None:
    """``session``'s metadata with what it spent (``session_usage``'s), when that changed,
    merged into the metadata as it is when written (``UPDATE_METADATA``), and what it grew by
    past what was counted added to the day's spending (``store.budgets.spend_days``): the
    quick writes' and the store's path alike. ``now``: the write's time, as stored."""
    if spent is None:
        return
    from roundtable_console.store.budgets.spend_days import ADD_SPEND, COUNTED, grown_by, spend_row

    current = session.metadata_json
    for _ in range(MERGE_TRIES):
        metadata = metadata_with_usage(current, spent)
        if metadata is None:
            return
        row = {"session_id": session.id, "metadata_json": metadata, "old": current}
        if run(UPDATE_METADATA, row) is not None:
            # After the update: the session's row is held, so what is counted stays so.
            grown = grown_by(run(COUNTED, {"session_id": session.id}), spent)
            if grown is not None:
                run(ADD_SPEND, spend_row(session, grown, now))
            return
        found = run(READ_METADATA, {"session_id": session.id})
        if found is None:
            return
        current = found[0]
