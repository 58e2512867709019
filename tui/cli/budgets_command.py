"""``roundtable budgets``: the budgets the configuration sets (``[[budgets]]``), or through a
server the server's, each with what it counts, its limit, what was spent in its period and what
is left (``store.budgets``)."""

from __future__ import annotations

import click

from roundtable_console.tui import output
from roundtable_console.tui.cli.invocation import Invocation, with_source_invocation
from roundtable_console.tui.cli.printing import OUTPUT_HELP

BUDGET_COLUMNS = ("name", "counts", "per", "limit", "spent", "left", "%", "stop")
BUDGETS_HELP = """The budgets and where each stands: what it counts (an agent, a run, a workspace,
or every session), per UTC day or in all, its limit in tokens or dollars, what was spent in its
period, what is left, and whether it stops its agents at 100 %. On a store: the budgets of your
config.toml ([[budgets]]); through a server: the server's, those your token may see. --json:
{"budgets": [{"name", "unit", "limit", "per", "agent", "run", "workspace", "stop", "period",
"tokens", "dollars", "unpriced_tokens", "spent", "left", "percent", "level", "words"}]}."""


def _amount(unit: str, value: float) -> str:
    return f"{value:,.0f}" if unit == "tokens" else f"${value:,.2f}"


def _counts(budget: dict[str, object]) -> str:
    parts = [f"{name} {budget[name]}" for name in ("agent", "run", "workspace") if budget[name]]
    return " in ".join(parts) or "every session"


@click.command("budgets", help=BUDGETS_HELP + "\n\n" + OUTPUT_HELP)
@with_source_invocation
def budgets_command(inv: Invocation) -> None:
    with inv.source() as source:
        budgets = source.budgets()
    if inv.json_mode:
        output.emit_json({"budgets": budgets})
        return
    table = output.Table(BUDGET_COLUMNS)
    table.write(
        (
            b["name"], _counts(b), "day" if b["per"] == "day" else "all",
            _amount(str(b["unit"]), float(b["limit"])), _amount(str(b["unit"]), float(b["spent"])),
            _amount(str(b["unit"]), float(b["left"])), f"{float(b['percent']):.0f}",
            "yes" if b["stop"] else "",
        )
        for b in budgets
    )  # fmt: skip
    table.finish("No budgets: [[budgets]] in config.toml sets them.")
