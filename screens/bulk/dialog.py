"""The preview of a lifecycle action on every marked session: how many it applies to, which
(the first ``PREVIEW_ITEMS``, then a count), which it will skip and why, which would fail; to
terminate, the active claims of every agent concerned and one impact text for them all.

The preview is ``store.writes.bulk_plan.plan_bulk``, read in a thread under the run's key (a session
already done under it shows as a replay). Confirmed, the dialog closes with a ``BulkRequest``, which
the list screen runs with a progress bar (screens.bulk.run); nothing is written here. ``y`` / ``n``
/ ``escape`` answer it; to terminate, the impact field has focus, ``ctrl+s`` submits and a blank
text is refused when claims are held, as in the terminate dialog of one session.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static, TextArea

from roundtable_console.screens.context import ConsoleContext
from roundtable_console.screens.dialogs.terminate import (
    agent_claims_text,
    blank_refusal,
    impact_area,
)
from roundtable_console.screens.failures import Failure, ReportsFailures
from roundtable_console.store.reads.listing import Selection
from roundtable_console.store.safety.display import one_line
from roundtable_console.store.writes.bulk import BulkItem
from roundtable_console.store.writes.bulk_plan import BULK_EFFECTS, BulkPlan

# Ids named after a reason ("2 already paused: s1, s2"); the rest are counted.
IDS_NAMED = 5
# Reasons listed under each outcome; the rest are counted.
REASONS_LISTED = 8
# The cells a line of the preview has (the dialog's width less its border, padding and
# scrollbar): longer lines end in an ellipsis.
LINE_WIDTH = 86
# A confirmed terminate always carries an impact text where claims are held (a blank one is
# refused), so its preview is planned as if one were given.
PREVIEW_IMPACT = "(the impact text you give)"


@dataclass(frozen=True)
class BulkRequest:
    """What the operator confirmed: ``action`` on the sessions of ``selection``, each under a
    key derived from ``run_key``. ``total``: how many the preview counted."""

    action: str
    selection: Selection
    run_key: str
    impact_details: str | None
    total: int


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _reason_lines(
    text: Text, plan: BulkPlan, outcome: str, items: list[BulkItem], style: str
) -> None:
    """Each reason of ``outcome`` with its count, then the ids it was seen on (on the same line
    when they fit)."""
    reasons = plan.tally.by_reason(outcome)
    for reason, count in reasons[:REASONS_LISTED]:
        line = Text("\n  • ")
        line.append(f"{count:,} {one_line(reason, LINE_WIDTH)}", style=style)
        named = [one_line(item.session_id, 30) for item in items if item.reason == reason]
        if named:
            ids = ", ".join(named[:IDS_NAMED]) + (", …" if count > len(named[:IDS_NAMED]) else "")
            if line.cell_len + len(ids) + 2 <= LINE_WIDTH:
                line.append(f": {ids}")
            else:
                line.append(f"\n      {ids}", style="dim")
        text.append_text(line)
    if len(reasons) > REASONS_LISTED:
        text.append(f"\n  … and {len(reasons) - REASONS_LISTED:,} other reasons")


def plan_text(plan: BulkPlan) -> Text:
    """The preview: how many the action applies to and which, which it skips and why, which
    would fail and why. Store text is shown as text, a line each (``#bulk-plan`` cuts them at
    the dialog's width)."""
    tally, action = plan.tally, plan.action
    text = Text()
    text.append(
        f"{action.capitalize()} applies to {tally.done:,} of the "
        f"{_plural(tally.total, 'marked session')}",
        style="bold",
    )
    done = [item for item in tally.items if item.outcome == "done"]
    text.append(":" if done else ".")
    for item in done:
        text.append("\n  • ")
        text.append(one_line(item.session_id, 40), style="bold")
        text.append(f"  {one_line(item.message, LINE_WIDTH)}")
    if tally.done > len(done):
        text.append(f"\n  … and {tally.done - len(done):,} more")
    for reason, count in tally.by_reason("done"):
        text.append(f"\n  {count:,} of them {one_line(reason, LINE_WIDTH)}", style="dim")
    sections = (
        ("skipped", "will be skipped (the action does not apply; they stay marked):", "yellow"),
        ("failed", "would fail (they stay marked):", "red"),
    )
    for outcome, heading, style in sections:
        count = tally.counts[outcome]
        if count:
            text.append(f"\n{count:,} {heading}", style="bold")
            items = [item for item in tally.items if item.outcome == outcome]
            _reason_lines(text, plan, outcome, items, style)
    return text


class BulkDialog(ReportsFailures, ModalScreen[BulkRequest | None]):
    """The preview of ``action`` on the sessions of ``selection`` (the marks when it opened).
    ``run_key``: the run's key, new or kept from a run of the same action that did not finish
    cleanly (``retrying``). Subclasses bind the keys that answer it."""

    # The app's q does not quit under a dialog waiting for its answer.
    AWAITS_ANSWER = True
    # The key that confirms.
    CONFIRM_KEY = "y"

    def __init__(
        self,
        *,
        ctx: ConsoleContext,
        action: str,
        selection: Selection,
        run_key: str,
        retrying: bool = False,
    ) -> None:
        super().__init__(classes="dialog-screen")
        self.ctx = ctx
        self.action = action
        self.selection = selection
        self.run_key = run_key
        self.retrying = retrying
        self.plan: BulkPlan | None = None
        self.read_failed = False

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog bulk-dialog", id=f"bulk-{self.action}-dialog"):
            yield Static(
                Text(f"{self.action.capitalize()} the marked sessions?"), classes="dialog-title"
            )
            # Scrolls when the terminal is short; the answer's field and hints stay put.
            with VerticalScroll(id="bulk-body"):
                yield from self.compose_details()
                reading = Text("Reading the marked sessions…", style="italic")
                yield Static(reading, id="bulk-plan", classes="dialog-body")
                effect, caveat = BULK_EFFECTS[self.action]
                # Terminate's caveat is a warning of its own: on a line of its own, in bold.
                warning = self.action == "terminate"
                explained = Text(effect.rstrip() + "\n" if warning else effect)
                explained.append(caveat, style="bold" if warning else "dim")
                if self.retrying:
                    explained.append(
                        f"\nRetrying the last {self.action} under its run key: a session it "
                        "already did is replayed, never done twice.",
                        style="italic",
                    )
                yield Static(explained, classes="dialog-body")
            yield from self.compose_answer()
            yield Static("", id="dialog-error", classes="dialog-error")
            yield Static(Text(self.hint()), id="bulk-hint", classes="dialog-hint")

    def compose_details(self) -> ComposeResult:
        """What the action shows before the plan (terminate: the claims)."""
        return iter(())

    def compose_answer(self) -> ComposeResult:
        """What the operator fills in before confirming (terminate: the impact text)."""
        return iter(())

    def hint(self) -> str:
        raise NotImplementedError

    # Everything but the scrolling body takes about this many rows.
    CHROME_ROWS = 12

    def on_resize(self) -> None:
        self.query_one("#bulk-body").styles.max_height = max(self.size.height - self.CHROME_ROWS, 3)

    def on_mount(self) -> None:
        self.read_plan()

    def read_plan(self) -> None:
        self.read_failed = False
        impact = PREVIEW_IMPACT if self.action == "terminate" else None
        self.run_in_thread(
            partial(
                self.ctx.source.plan_bulk_action,
                self.action,
                self.selection,
                run_key=self.run_key,
                impact_details=impact,
            ),
            what="read the marked sessions",
            group="bulk-plan",
            done=self.plan_read,
            failed=self.plan_failed,
        )

    def plan_read(self, plan: BulkPlan) -> None:
        self.plan = plan
        self.query_one("#bulk-plan", Static).update(plan_text(plan))
        self.query_one("#bulk-hint", Static).update(Text(self.hint()))
        self.show_error(Text(""))

    def plan_failed(self, failure: Failure) -> None:
        """Said in the plan's place; confirming reads it again."""
        self.read_failed = True
        shown = Text(failure.sentence, style="red")
        shown.append(f"\nPress {self.CONFIRM_KEY} to read them again.", style="dim")
        self.query_one("#bulk-plan", Static).update(shown)

    @property
    def applies_to(self) -> int | None:
        return None if self.plan is None else self.plan.tally.done

    def confirm(self, impact_details: str | None = None) -> None:
        """Close with the request, once the preview says the action applies to any session."""
        if self.plan is None:
            if self.read_failed:
                self.query_one("#bulk-plan", Static).update(
                    Text("Reading the marked sessions again…", style="italic")
                )
                self.read_plan()
            else:
                self.show_error(Text("Still reading the marked sessions; a moment."))
            return
        if not self.plan.tally.done:
            self.show_error(Text(f"It applies to none of them: there is nothing to {self.action}."))
            return
        request = BulkRequest(
            action=self.action,
            selection=self.selection,
            run_key=self.run_key,
            impact_details=impact_details,
            total=self.plan.tally.total,
        )
        self.dismiss(request)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def show_error(self, text: Text) -> None:
        self.query_one("#dialog-error", Static).update(text)


class BulkConfirmDialog(BulkDialog):
    """``y`` confirms, ``n`` or ``escape`` cancels."""

    BINDINGS = [
        Binding("y", "confirm", "Yes"),
        Binding("n", "cancel", "No"),
        Binding("escape", "cancel", "Cancel", show=False),
        Binding("q", "answer_first", show=False),
    ]

    def hint(self) -> str:
        count = self.applies_to
        what = "yes" if count is None else f"{self.action} {_plural(count, 'session')}"
        return f"y {what} · n no · escape cancel"

    def action_confirm(self) -> None:
        self.confirm()

    def action_answer_first(self) -> None:
        self.notify("Answer first: y yes, n no (escape cancels); then q quits.", markup=False)


class BulkTerminateDialog(BulkDialog):
    """``ctrl+s`` terminates with the typed impact; ``escape`` cancels."""

    BINDINGS = [
        Binding("ctrl+s", "submit", "Terminate", priority=True),
        Binding("escape", "cancel", "Cancel", priority=True),
    ]
    CHROME_ROWS = 19
    CONFIRM_KEY = "ctrl+s"

    def compose_details(self) -> ComposeResult:
        reading = Text("Reading the agents' claims…", style="italic")
        yield Static(reading, id="bulk-claims", classes="dialog-body")

    def compose_answer(self) -> ComposeResult:
        yield Label(Text("Impact details"), id="impact-label")
        yield impact_area(self.ctx)

    def on_mount(self) -> None:
        self.query_one("#impact", TextArea).focus()
        super().on_mount()

    def hint(self) -> str:
        count = self.applies_to
        what = "terminate" if count is None else f"terminate {_plural(count, 'session')}"
        return f"ctrl+s {what} · escape cancel"

    def plan_read(self, plan: BulkPlan) -> None:
        super().plan_read(plan)
        claims = Text()
        for agent_id, held in sorted(plan.claims.items()):
            if claims:
                claims.append("\n")
            claims.append_text(agent_claims_text(agent_id, held))
        if not claims:
            claims = Text("None of their agents holds an active claim.", style="green")
        self.query_one("#bulk-claims", Static).update(claims)
        label = "Impact details (optional)"
        if plan.requires_impact_details:
            label = "Impact details (required: their agents hold claims)"
        self.query_one("#impact-label", Label).update(Text(label))

    def action_submit(self) -> None:
        details = self.query_one("#impact", TextArea).text.strip()
        if self.plan is not None and self.plan.requires_impact_details and not details:
            self.show_error(Text(blank_refusal("Their agents hold"), style="bold"))
            self.query_one("#impact", TextArea).focus()
            return
        self.confirm(details or None)
