"""A y/n confirmation that performs one lifecycle action with one idempotency key."""

from __future__ import annotations

from uuid import uuid4

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Static

from screens.context import ConsoleContext
from screens.data import perform_action
from screens.outcomes import STALE_VIEW_CODES, ActionResult, describe_error
from store.errors import StoreError
from store.lifecycle import ActionOutcome
from store.records import SessionFields


class ConfirmActionDialog(ModalScreen[ActionResult | None]):
    """Asks before an action; ``y`` performs it (retries reuse the dialog's key), ``n`` cancels."""

    # The app's q does not quit under a dialog waiting for its answer.
    AWAITS_ANSWER = True

    BINDINGS = [
        Binding("y", "confirm", "Yes"),
        Binding("n", "cancel", "No"),
        Binding("escape", "cancel", "Cancel", show=False),
        Binding("q", "answer_first", show=False),
    ]

    class Done(Message):
        def __init__(self, outcome: ActionOutcome) -> None:
            super().__init__()
            self.outcome = outcome

    class Failed(Message):
        def __init__(self, error: StoreError) -> None:
            super().__init__()
            self.error = error

    def __init__(
        self,
        *,
        ctx: ConsoleContext,
        action: str,
        session: SessionFields,
        title: str,
        body: Text,
    ) -> None:
        super().__init__(classes="dialog-screen")
        self.ctx = ctx
        self.action = action
        self.session = session
        self.title_text = title
        self.body = body
        # One key for the life of this dialog: a retry after an error never applies twice.
        self.idempotency_key = str(uuid4())
        self.busy = False

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="confirm-dialog"):
            yield Static(Text(self.title_text), classes="dialog-title")
            yield Static(self.body, classes="dialog-body")
            yield Static("", id="dialog-error", classes="dialog-error")
            yield Static(Text("y yes · n no · escape cancel"), classes="dialog-hint")

    def action_confirm(self) -> None:
        if self.busy:
            return
        self.busy = True
        self._show_error(Text("Working…", style="italic"))
        self._perform()

    def action_cancel(self) -> None:
        if self.busy:
            self.notify(
                "Still waiting for the store's answer; it cannot be taken back now.", markup=False
            )
            return
        self.dismiss(None)

    def action_answer_first(self) -> None:
        self.notify("Answer first: y yes, n no (escape cancels); then q quits.", markup=False)

    @work(thread=True, exclusive=True, group="dialog-action", exit_on_error=False)
    def _perform(self) -> None:
        try:
            outcome = perform_action(
                self.ctx, self.action, self.session, idempotency_key=self.idempotency_key
            )
        except StoreError as error:
            self.post_message(self.Failed(error))
            return
        self.post_message(self.Done(outcome))

    def on_confirm_action_dialog_done(self, message: Done) -> None:
        self.dismiss(ActionResult(self.action, self.session, outcome=message.outcome))

    def on_confirm_action_dialog_failed(self, message: Failed) -> None:
        self.busy = False
        if message.error.code in STALE_VIEW_CODES:
            self.dismiss(ActionResult(self.action, self.session, error=message.error))
            return
        shown = Text(describe_error(message.error))
        shown.append("\nPress y to retry with the same key, or n to give up.", style="dim")
        self._show_error(shown)
        self.notify(describe_error(message.error), severity="error", markup=False)

    def _show_error(self, text: Text) -> None:
        self.query_one("#dialog-error", Static).update(text)
