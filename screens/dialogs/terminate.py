"""The terminate dialog: the agent's claims, what terminating does and does not do, the impact."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Checkbox, Label, Static, TextArea

from roundtable_console.screens.context import ConsoleContext
from roundtable_console.screens.dialogs.action import ActionDialog
from roundtable_console.screens.failures import Failure
from roundtable_console.screens.outcomes import AgentStopResult
from roundtable_console.screens.text import exact, heading
from roundtable_console.store.errors import StoreError
from roundtable_console.store.reads.claims import ActiveClaim
from roundtable_console.store.records import SessionFields
from roundtable_console.store.safety.display import one_line
from roundtable_console.store.writes.lifecycle_outcomes import (
    WHAT_TERMINATE_DOES_NOT,
    ActionOutcome,
    TerminationImpact,
)

WHAT_IT_DOES = (
    "Terminating sets the session's status to terminated and its end and last-seen times to now, "
    "and records your name and the impact text below in the session's history."
)


def blank_refusal(holders: str) -> str:
    """Why a blank impact text is refused, ``holders`` being who holds the claims."""
    return (
        f"{holders} active claims: describe the impact of terminating before you confirm "
        "(who picks up the claimed work, what is left half done)."
    )


BLANK_REFUSAL = blank_refusal("The agent holds")


def impact_area(ctx: ConsoleContext) -> TextArea:
    """The impact text field (``#impact``): focused when its dialog opens, ctrl+s submits."""
    area = TextArea(id="impact", soft_wrap=True, show_line_numbers=False)
    area.cursor_blink = ctx.cursor_blink
    return area


def claim_line(claim: ActiveClaim) -> Text:
    line = Text("  • ")
    line.append(one_line(claim.resource_id, 50), style="bold")
    line.append(f"  task {one_line(claim.task_id, 30)} · {one_line(claim.claim_type, 20)}")
    line.append(f" · expires {exact(claim.expires_at)}", style="dim")
    return line


def claims_text(impact: TerminationImpact) -> Text:
    if not impact.claims:
        return Text("The agent holds no active claims.", style="green")
    return agent_claims_text(impact.session.agent_id, impact.claims)


def agent_claims_text(agent_id: str, claims: Sequence[ActiveClaim]) -> Text:
    """Live claims first; expired ones apart (they still count: nobody has released them)."""
    text = Text()
    live = [claim for claim in claims if not claim.expired]
    expired = [claim for claim in claims if claim.expired]
    text.append(f"Claims held by {one_line(agent_id, 40)}: ", style="bold")
    text.append(f"{len(live)} live, {len(expired)} expired but not released")
    for claim in live:
        text.append("\n")
        text.append_text(claim_line(claim))
    if expired:
        text.append("\nExpired, still held until someone releases them:", style="yellow")
        for claim in expired:
            text.append("\n")
            text.append_text(claim_line(claim))
    return text


class TerminateDialog(ActionDialog):
    """``ctrl+s`` terminates with the typed impact; ``escape`` cancels."""

    RETRY_HINT = "ctrl+s retries with the same key; escape gives up."

    BINDINGS = [
        Binding("ctrl+s", "submit", "Terminate", priority=True),
        Binding("escape", "cancel", "Cancel", priority=True),
    ]

    def __init__(self, *, ctx: ConsoleContext, session: SessionFields) -> None:
        super().__init__(ctx=ctx, action="terminate", session=session)
        self.impact: TerminationImpact | None = None
        self.load_failed = False
        self.agent_report = ""  # set by a terminate that stopped the agent too

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="terminate-dialog"):
            yield Static(
                heading("Terminate session ", self.session.id, "?", width=60),
                classes="dialog-title",
            )
            # Scrolls when the terminal is short; the impact field and its messages stay put.
            with VerticalScroll(id="terminate-body"):
                yield Static(self._summary(), id="terminate-summary")
                yield Static(
                    Text("Loading the agent's claims…", style="italic"), id="terminate-claims"
                )
                explained = Text(WHAT_IT_DOES + "\n")
                explained.append(WHAT_TERMINATE_DOES_NOT, style="bold")
                yield Static(explained, classes="dialog-body")
                # Shown once the impact says Roundtable started the agent (it may still run).
                yield Static("", id="terminate-agent", classes="dialog-body")
            yield Label(Text("Impact details"), id="impact-label")
            yield Static("", id="dialog-error", classes="dialog-error")
            yield impact_area(self.ctx)
            # Next after the impact field: tab reaches it, space ticks it.
            yield Checkbox("Also stop its agent (SIGINT, then SIGTERM)", id="stop-agent")
            yield Static(Text("ctrl+s terminate · escape cancel"), id="terminate-hint",
                         classes="dialog-hint")  # fmt: skip

    def on_resize(self) -> None:
        # Everything but the scrolling body takes about this many rows (3 more with the box).
        reserved = 22 if self.query_one("#stop-agent").display else 19
        self.query_one("#terminate-body").styles.max_height = max(self.size.height - reserved, 3)

    def _summary(self) -> Text:
        session = self.session
        text = Text(f"agent {one_line(session.agent_id, 40)} · run {one_line(session.run_id, 40)}")
        text.append(f" · status {one_line(session.status, 30)}")
        return text

    def on_mount(self) -> None:
        self.query_one("#terminate-agent").display = False
        self.query_one("#stop-agent").display = False
        self.query_one("#impact", TextArea).focus()
        self._load_impact()

    def _load_impact(self) -> None:
        self.run_in_thread(
            self._read_impact,
            what=f"read the claims of {one_line(self.session.agent_id, 40)}",
            group="terminate-impact",
            done=self._impact_loaded,
            failed=self._impact_failed,
        )

    def _read_impact(self) -> TerminationImpact:
        """In a thread: the agent's claims, and whether the impact text is required."""
        return self.ctx.source.termination_impact(self.session.id)

    def _impact_loaded(self, impact: TerminationImpact) -> None:
        self.impact = impact
        self.query_one("#terminate-claims", Static).update(claims_text(impact))
        label = "Impact details (required: the agent holds claims)"
        if not impact.requires_details:
            label = "Impact details (optional)"
        self.query_one("#impact-label", Label).update(Text(label))
        note = impact.agent_note
        if note is not None:
            shown = self.query_one("#terminate-agent", Static)
            shown.update(Text(note, style="yellow"))
            shown.display = True
            self.query_one("#stop-agent").display = True
            self.on_resize()
            self.query_one("#terminate-hint", Static).update(
                Text("ctrl+s terminate · tab, space: also stop its agent · escape cancel")
            )

    @property
    def stops_agent(self) -> bool:
        box = self.query_one("#stop-agent", Checkbox)
        return box.display and box.value

    @property
    def impact_text(self) -> str:
        return self.query_one("#impact", TextArea).text

    def action_submit(self) -> None:
        if self.busy:
            return
        if self.impact is None:
            if self.load_failed:
                self.load_failed = False
                self._load_impact()
            self.show_error(Text("Still loading the agent's claims; try again in a moment."))
            return
        if self.impact.requires_details and not self.impact_text.strip():
            self.show_error(Text(BLANK_REFUSAL, style="bold"))
            self.query_one("#impact", TextArea).focus()
            return
        self.agent_report = ""
        self.perform_in_thread(partial(self._perform, self.impact_text.strip(), self.stops_agent))

    def _perform(self, details: str, stop_agent: bool) -> ActionOutcome:
        """In a thread: terminate, with this dialog's idempotency key and the impact text; then,
        when asked, stop its agent (``agent_report`` says how that went)."""
        outcome = self.ctx.source.perform_action(
            "terminate",
            self.session,
            idempotency_key=self.idempotency_key,
            impact_details=details or None,
        )
        if stop_agent:
            try:
                stopped = self.ctx.source.stop_agent(self.session.id)
            except StoreError as error:
                self.agent_report = f"Its agent was not stopped. {error.message}"
            else:
                self.agent_report = stopped.words(self.session.id)
        return outcome

    def performed(self, outcome: ActionOutcome) -> None:
        if not self.agent_report:
            super().performed(outcome)
            return
        self.dismiss(
            AgentStopResult(self.action, self.session, outcome=outcome, report=self.agent_report)
        )

    def _impact_failed(self, failure: Failure) -> None:
        """The claims could not be read: said in their place; ctrl+s reads them again."""
        if self.closes_on(failure):
            return
        self.load_failed = True
        self.query_one("#terminate-claims", Static).update(Text(failure.sentence, style="red"))

    def refused(self, failure: Failure) -> None:
        if failure.code == "termination_impact_required":
            # Claims appeared since the dialog opened: show them and ask for the impact.
            self._load_impact()
        super().refused(failure)
