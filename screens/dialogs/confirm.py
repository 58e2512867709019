"""A y/n confirmation that performs one lifecycle action with one idempotency key."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static

from roundtable_console.screens.context import ConsoleContext
from roundtable_console.screens.dialogs.action import ActionDialog
from roundtable_console.store.records import SessionFields
from roundtable_console.store.writes.lifecycle_outcomes import ActionOutcome


class ConfirmActionDialog(ActionDialog):
    """Asks before an action; ``y`` performs it (retries reuse the dialog's key), ``n`` cancels."""

    RETRY_HINT = "Press y to retry with the same key, or n to give up."

    BINDINGS = [
        Binding("y", "confirm", "Yes"),
        Binding("n", "cancel", "No"),
        Binding("escape", "cancel", "Cancel", show=False),
        Binding("q", "answer_first", show=False),
    ]

    def __init__(
        self,
        *,
        ctx: ConsoleContext,
        action: str,
        session: SessionFields,
        title: str,
        body: Text,
    ) -> None:
        super().__init__(ctx=ctx, action=action, session=session)
        self.title_text = title
        self.body = body

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="confirm-dialog"):
            yield Static(Text(self.title_text), classes="dialog-title")
            yield Static(self.body, classes="dialog-body")
            yield Static("", id="dialog-error", classes="dialog-error")
            yield Static(Text("y yes · n no · escape cancel"), classes="dialog-hint")

    def action_confirm(self) -> None:
        if not self.busy:
            self.perform_in_thread(self._perform)

    def action_answer_first(self) -> None:
        self.notify("Answer first: y yes, n no (escape cancels); then q quits.", markup=False)

    def _perform(self) -> ActionOutcome:
        """In a thread: the action, with this dialog's idempotency key."""
        return self.ctx.source.perform_action(
            self.action, self.session, idempotency_key=self.idempotency_key
        )
