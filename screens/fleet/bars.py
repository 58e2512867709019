"""Horizontal bar charts drawn with Rich: a label, a bar scaled to the largest value, the value.

Labels are store data: they are made one printable line and never read as markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from roundtable_console.store.safety.display import one_line

# A cell's eighths, for bars finer than a whole character.
_EIGHTHS = " ▏▎▍▌▋▊▉"
BAR_WIDTH = 24
LABEL_WIDTH = 22


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    shown: str  # the value in words ("1.2M", "$3.40", "1,000+")
    style: str = "cyan"
    label_style: str = ""


def bar_cells(value: float, largest: float, width: int = BAR_WIDTH) -> str:
    """A bar of ``value`` against ``largest`` in ``width`` cells, in eighths of a cell; any
    value above zero shows at least an eighth."""
    if largest <= 0 or value <= 0:
        return ""
    eighths = max(1, round(min(value / largest, 1.0) * width * 8))
    whole, part = divmod(eighths, 8)
    return "█" * whole + (_EIGHTHS[part] if part else "")


def bar_chart(
    title: str,
    bars: Sequence[Bar],
    *,
    empty: str,
    width: int = BAR_WIDTH,
    largest: float | None = None,
) -> RenderableType:
    """A titled chart, a row per bar; ``empty`` is said when there are none. ``largest``: the
    value of a full bar (else the largest bar's)."""
    if not bars:
        return Group(Text(title, style="bold"), Text(empty, style="dim"))
    table = Table(
        title=Text(title, style="bold"),
        title_justify="left",
        box=None,
        show_header=False,
        padding=(0, 1, 0, 0),
        expand=False,
    )
    table.add_column("label", no_wrap=True, width=LABEL_WIDTH, overflow="ellipsis")
    table.add_column("bar", no_wrap=True, width=width)
    table.add_column("value", no_wrap=True, justify="right")
    largest = max(bar.value for bar in bars) if largest is None else largest
    for bar in bars:
        table.add_row(
            Text(one_line(bar.label, LABEL_WIDTH * 2), style=bar.label_style),
            Text(bar_cells(bar.value, largest, width), style=bar.style),
            Text(bar.shown),
        )
    return table


def count_words(value: int, capped: bool = False) -> str:
    return f"{value:,}+" if capped else f"{value:,}"


def token_words(value: float) -> str:
    """Tokens in a few characters: 950, 12.3k, 4.5M, 1.2B."""
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.1f}{suffix}"
    return f"{value:,.0f}"


def cost_words(value: float) -> str:
    return f"${value:,.2f}"
