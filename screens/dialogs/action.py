"""What the confirm and terminate dialogs share: one idempotency key for the dialog's life, a
busy state while the store answers, and how a refusal or an unexpected error is shown (in the
dialog, which then answers its keys again: a retry reuses the key, escape gives up)."""

from __future__ import annotations

from collections.abc import Callable
from uuid import uuid4

from rich.text import Text
from textual.screen import ModalScreen
from textual.widgets import Static

from roundtable_console.screens.context import ConsoleContext
from roundtable_console.screens.failures import Failure, ReportsFailures
from roundtable_console.screens.outcomes import STALE_VIEW_CODES, ActionResult
from roundtable_console.store.records import SessionFields
from roundtable_console.store.safety.display import one_line
from roundtable_console.store.writes.lifecycle_outcomes import ActionOutcome


class ActionDialog(ReportsFailures, ModalScreen[ActionResult | None]):
    """A dialog that performs ``action`` on ``session``; it closes with an ``ActionResult``
    (None when cancelled). Subclasses compose a ``#dialog-error`` Static and set RETRY_HINT."""

    # The app's q does not quit under a dialog waiting for its answer.
    AWAITS_ANSWER = True
    # Under a refusal: how this dialog's keys retry or give up.
    RETRY_HINT = ""

    def __init__(self, *, ctx: ConsoleContext, action: str, session: SessionFields) -> None:
        super().__init__(classes="dialog-screen")
        self.ctx = ctx
        self.action = action
        self.session = session
        # One key for the life of this dialog: a retry after an error never applies twice.
        self.idempotency_key = str(uuid4())
        self.busy = False

    def perform_in_thread(self, perform: Callable[[], ActionOutcome]) -> None:
        """``perform`` the action in a thread; the dialog is busy until the store answers."""
        self.busy = True
        self.show_error(Text("Working…", style="italic"))
        self.run_in_thread(
            perform,
            what=f"{self.action} {one_line(self.session.id, 40)}",
            group="dialog-action",
            done=self.performed,
            failed=self.refused,
        )

    def action_cancel(self) -> None:
        if self.busy:
            self.notify(
                "Still waiting for the store's answer; it cannot be taken back now.", markup=False
            )
            return
        self.dismiss(None)

    def performed(self, outcome: ActionOutcome) -> None:
        self.dismiss(ActionResult(self.action, self.session, outcome=outcome))

    def refused(self, failure: Failure) -> None:
        """A refusal or an unexpected error: said here, and the dialog answers keys again."""
        self.busy = False
        if self.closes_on(failure):
            return
        shown = Text(failure.text)
        shown.append("\n" + self.RETRY_HINT, style="dim")
        self.show_error(shown)
        self.notify(failure.text, severity="error", markup=False)

    def closes_on(self, failure: Failure) -> bool:
        """The session the operator saw is out of date: the dialog closes and the screen
        reloads (True). Any other failure leaves it open, so a retry reuses its key."""
        error = failure.store_error
        if error is None or error.code not in STALE_VIEW_CODES:
            return False
        self.dismiss(ActionResult(self.action, self.session, error=error))
        return True

    def show_error(self, text: Text) -> None:
        self.query_one("#dialog-error", Static).update(text)
