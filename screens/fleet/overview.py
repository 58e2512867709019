"""The fleet at a glance (``O`` from the list): sessions by status, how many need a human and
why, tokens and cost per agent and per run, and sessions started per hour over the last day.

Every figure comes from ``store.reads.overview`` in a thread worker, read again when the store
changes (as the detail screen re-reads) and every half minute for what the clock alone moves (stale
sessions, the hours). The bars are Rich tables (screens.fleet.bars); the starts per hour are
Textual's ``Sparkline``.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Header, Sparkline, Static

from roundtable_console.screens.banner import StoreBanner
from roundtable_console.screens.context import ConsoleContext
from roundtable_console.screens.failures import Failure, ReportsFailures
from roundtable_console.screens.fleet.bars import (
    Bar,
    bar_chart,
    cost_words,
    count_words,
    token_words,
)
from roundtable_console.screens.footer import ConsoleFooter
from roundtable_console.screens.live import StoreChanged
from roundtable_console.screens.text import STATUS_STYLES
from roundtable_console.store.budgets.standing import BudgetState
from roundtable_console.store.reads.overview import (
    HOURS,
    USAGE_GROUPINGS,
    USAGE_MEASURES,
    Measure,
    Overview,
    UsageBars,
    UsageTotal,
)

# A change in the store is read at once; without one, what the clock alone moves (stale
# sessions, the hours) is read again this often: each read counts the whole fleet.
CLOCK_READ_SECONDS = 30.0
REASON_STYLES = ("bold yellow", "magenta", "bold dark_orange", "yellow")
MEASURE_WORDS = {"tokens": token_words, "cost": cost_words}
BUDGET_STYLES = {None: "green", 80: "bold yellow", 100: "bold red"}


def status_bars(statuses: dict[str, int]) -> RenderableType:
    ordered = sorted(statuses.items(), key=lambda item: (-item[1], item[0]))
    bars = [
        Bar(status, count, count_words(count), STATUS_STYLES.get(status, "magenta"))
        for status, count in ordered
    ]
    total = sum(statuses.values())
    return bar_chart(f"Sessions by status · {total:,}", bars, empty="No sessions yet.")


def attention_bars(overview: Overview) -> RenderableType:
    counts = overview.attention
    bars = [
        Bar(count.reason, count.sessions, count_words(count.sessions, count.capped), style)
        for count, style in zip(counts, REASON_STYLES, strict=False)
    ]
    needing = [count for count in counts if count.needs_human]
    capped = any(count.capped for count in needing)
    total = count_words(sum(count.sessions for count in needing), capped)
    return bar_chart(f"Need a human · {total}", bars, empty="")


def _sessions(count: int) -> str:
    return f"{count:,} session{'' if count == 1 else 's'}"


def _label(total: UsageTotal) -> str:
    if total.name is not None:
        return total.name
    return f"{total.groups:,} other{'s' if total.groups != 1 else ''}"


def usage_chart(bars: UsageBars) -> RenderableType:
    measure: Measure = bars.measure
    words = MEASURE_WORDS[measure]
    rows = [
        Bar(_label(item), item.amount(measure), words(item.amount(measure)), "green")
        for item in bars.leaders
    ]
    if bars.rest is not None:
        rest = bars.rest
        rows.append(Bar(_label(rest), rest.amount(measure), words(rest.amount(measure)), "dim"))
    whole = words(bars.total.amount(measure))
    title = f"{measure.capitalize()} by {bars.grouping} · {whole}"
    empty = f"No {bars.grouping}s with usage (metadata.usage) yet."
    return bar_chart(title, rows, empty=empty)


def budget_bars(states: list[BudgetState]) -> RenderableType:
    """Each budget's share spent (a full bar: its limit), what it spent and what is left."""
    bars = [
        Bar(
            state.budget.name + (" ■" if state.budget.stop else ""),
            min(state.percent, 100.0),
            state.words(),
            BUDGET_STYLES[state.level],
        )
        for state in states
    ]
    stops = any(state.budget.stop for state in states)
    title = "Budgets" + (" · ■ stops its agents at 100 %" if stops else "")
    return bar_chart(title, bars, empty="No budgets ([[budgets]] in config.toml sets them).",
                     largest=100.0)  # fmt: skip


def started_caption(started: list[int]) -> Text:
    total, peak = sum(started), max(started, default=0)
    text = Text("Sessions started per hour, last 24 h", style="bold")
    text.append(f" · {total:,} started · busiest hour {peak:,}")
    return text


class OverviewScreen(ReportsFailures, Screen[None]):
    """The fleet's figures; escape goes back to the list."""

    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("ctrl+r", "reload", "Refresh", show=False),
    ]

    def __init__(self, ctx: ConsoleContext) -> None:
        super().__init__(id="overview")
        self.ctx = ctx
        self.overview: Overview | None = None
        self.refresh_timer: Timer | None = None
        # One read at a time; a change while one is out reads once more after it.
        self.reading = False
        self.read_again = False

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text("The fleet at a glance · loading…"), id="overview-summary")
        yield StoreBanner()
        with VerticalScroll(id="overview-body"):
            yield Static("", id="overview-budgets")
            with Horizontal(classes="overview-row"):
                yield Static("", id="overview-statuses", classes="overview-chart")
                yield Static("", id="overview-attention", classes="overview-chart")
            for measure in USAGE_MEASURES:
                with Horizontal(classes="overview-row"):
                    for grouping in USAGE_GROUPINGS:
                        yield Static(
                            "", id=f"overview-{measure}-{grouping}", classes="overview-chart"
                        )
            yield Static("", id="overview-started-caption")
            yield Sparkline([0] * HOURS, id="overview-started", summary_function=max)
            yield Static(
                Text("24 h ago".ljust(53) + "now", style="dim"), id="overview-started-axis"
            )
        yield ConsoleFooter()

    def on_mount(self) -> None:
        every = max(self.ctx.refresh_seconds, CLOCK_READ_SECONDS)
        self.refresh_timer = self.set_interval(every, self.reload)
        self.reload()

    def on_screen_suspend(self) -> None:
        if self.refresh_timer is not None:
            self.refresh_timer.pause()

    def on_screen_resume(self) -> None:
        if self.refresh_timer is not None:
            self.refresh_timer.resume()

    @on(StoreChanged)
    def _store_changed(self) -> None:
        self.reload()

    def action_reload(self) -> None:
        self.reload()

    def action_back(self) -> None:
        self.dismiss(None)

    def reload(self) -> None:
        if self.reading:
            self.read_again = True
            return
        self.reading, self.read_again = True, False
        self.run_in_thread(
            self.ctx.source.fleet_overview,
            what="read the fleet's overview",
            group="overview",
            done=self._shown,
            failed=self._failed,
        )

    def _shown(self, overview: Overview) -> None:
        self.overview = overview
        self.query_one(StoreBanner).clear()
        self._draw()
        self._read_done()

    def _failed(self, failure: Failure) -> None:
        retrying = failure.unexpected or failure.code == "database_unavailable"
        hint = f"Retrying every {self.ctx.refresh_seconds:g}s." if retrying else ""
        self.query_one(StoreBanner).show_failure(failure.text, hint=hint)
        self._read_done()

    def _read_done(self) -> None:
        self.reading = False
        if self.read_again:
            self.reload()

    def _draw(self) -> None:
        overview = self.overview
        if overview is None:
            return
        sessions = sum(overview.statuses.values())
        tokens = overview.usage["agent", "tokens"].total
        summary = Text("The fleet at a glance", style="bold")
        summary.append(f" · {_sessions(sessions)} · {token_words(tokens.tokens)} tokens")
        summary.append(f" · {cost_words(tokens.cost)}")
        summary.append(f" over {_sessions(tokens.sessions)} with usage", style="dim")
        self.query_one("#overview-summary", Static).update(summary)
        self.query_one("#overview-budgets", Static).update(
            Group(budget_bars(overview.budgets), Text(""))
        )
        self.query_one("#overview-statuses", Static).update(status_bars(overview.statuses))
        self.query_one("#overview-attention", Static).update(attention_bars(overview))
        for measure in USAGE_MEASURES:
            for grouping in USAGE_GROUPINGS:
                self.query_one(f"#overview-{measure}-{grouping}", Static).update(
                    Group(usage_chart(overview.usage[grouping, measure]), Text(""))
                )
        self.query_one("#overview-started-caption", Static).update(
            started_caption(overview.started)
        )
        self.query_one("#overview-started", Sparkline).data = overview.started
