"""A permission request, answered: the tool and its whole input (store text, shown as text), the
agent's own suggestions, and the operator's allow or deny (with an optional message the agent's
model reads). ``y`` allows, ``n`` denies (the message field takes the keys when focused; Enter
there denies), 1…9 take one of the agent's suggestions with the allow, escape leaves it pending.

The decision is written in a thread; the first decision wins, and a second one is told who made
the first (``store.requests.deciding``)."""

from __future__ import annotations

import json
import time

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from roundtable_console.screens.context import ConsoleContext
from roundtable_console.screens.failures import Failure, ReportsFailures
from roundtable_console.store.requests.records import PermissionRequestRecord
from roundtable_console.store.safety.display import one_line, printable

# Allow is not taken in the dialog's first moment: the request is read before it is allowed.
READ_FIRST_SECONDS = 0.4


def request_text(record: PermissionRequestRecord, now: str | None = None) -> Text:
    """What the agent asks, in full, as text (never markup)."""
    text = Text()
    text.append(one_line(record.reason, 200), style="bold")
    text.append(f"\nsession {one_line(record.session_id, 80)} · {record.agent}")
    text.append(f" · asked {record.asked_at} · waits until {record.expires_at}\n\n")
    text.append(printable(record.input_text, keep_newlines=True))
    if record.input_hidden:
        text.append(f"\n⚠ {record.HIDDEN_WARNING}", style="bold")
    if record.input_cut:
        text.append("\n… (the input was cut: it is longer than the store keeps)", style="italic")
    if record.unheard:
        text.append(f"\n\n{record.unheard}", style="italic")
    return text


def suggestion_text(suggestions: list[object], chosen: int | None) -> Text:
    text = Text()
    for index, suggestion in enumerate(suggestions[:9]):
        mark = "[x]" if index == chosen else "[ ]"
        compact = json.dumps(suggestion, ensure_ascii=False, separators=(",", ":"))
        text.append(f"{index + 1} {mark} the agent's own rule, applied as it says: ")
        text.append(f"{one_line(compact)}\n")
    return text


class RequestDialog(ReportsFailures, ModalScreen[PermissionRequestRecord | None]):
    """Closes with the decided request, or None when left pending."""

    AWAITS_ANSWER = True
    BINDINGS = [
        Binding("y", "allow", "Allow"),
        Binding("n", "deny", "Deny"),
        Binding("escape", "cancel", "Leave pending"),
        *(Binding(str(n), f"suggest({n - 1})", show=False) for n in range(1, 10)),
    ]

    def __init__(
        self, *, ctx: ConsoleContext, record: PermissionRequestRecord, deny_first: bool = False
    ) -> None:
        super().__init__(classes="dialog-screen")
        self.ctx = ctx
        self.record = record
        self.deny_first = deny_first
        self.chosen: int | None = None
        self.busy = False
        # A key pressed twice (or held) does not allow what was not yet read.
        self.opened_at = time.monotonic()
        self.hidden_seen = False

    def compose(self) -> ComposeResult:
        record = self.record
        with Vertical(classes="dialog", id="request-dialog"):
            yield Static(Text("Permission request"), classes="dialog-title")
            with VerticalScroll(id="request-input"):
                yield Static(request_text(record), classes="dialog-body")
            if record.suggestions and "allow" in record.answers:
                yield Static(suggestion_text(record.suggestions, None), id="request-suggestions")
            if record.answers:
                yield Input(placeholder="Message with a deny (optional)", id="request-message")
            else:
                yield Static(Text(record.why_not("allow") or ""), classes="dialog-error")
            yield Static("", id="dialog-error", classes="dialog-error")
            yield Static(Text(self._keys_hint()), classes="dialog-hint")

    def _keys_hint(self) -> str:
        if not self.record.answers:
            return "escape close"
        numbers = " · 1-9 don't ask again" if self.record.suggestions else ""
        return f"y allow{numbers} · n deny (message: type it, Enter) · escape leave pending"

    def on_mount(self) -> None:
        if self.deny_first and self.record.answers:
            self.query_one("#request-message", Input).focus()
        else:
            self.query_one("#request-input", VerticalScroll).focus()

    def action_suggest(self, index: int) -> None:
        if index >= len(self.record.suggestions) or "allow" not in self.record.answers:
            return
        self.chosen = None if self.chosen == index else index
        self.query_one("#request-suggestions", Static).update(
            suggestion_text(self.record.suggestions, self.chosen)
        )

    def action_allow(self) -> None:
        if time.monotonic() - self.opened_at < READ_FIRST_SECONDS:
            return
        if self.record.input_hidden and not self.hidden_seen and "allow" in self.record.answers:
            self.hidden_seen = True
            self.query_one("#dialog-error", Static).update(
                Text(f"{self.record.HIDDEN_WARNING} Press y again to allow it anyway.")
            )
            return
        self._send_decision("allow", None, self.chosen)

    def action_deny(self) -> None:
        if not self.record.answers:
            return
        message_field = self.query_one("#request-message", Input)
        if not message_field.has_focus and not message_field.value:
            message_field.focus()  # n first asks for the message; Enter (or n again) denies
            self.query_one("#dialog-error", Static).update(
                Text("Type a message for the agent, or press Enter to deny without one.")
            )
            return
        self._send_decision("deny", message_field.value or None, None)

    @on(Input.Submitted, "#request-message")
    def submitted(self) -> None:
        self._send_decision("deny", self.query_one("#request-message", Input).value or None, None)

    def _send_decision(self, decision: str, message: str | None, suggestion: int | None) -> None:
        why_not = self.record.why_not(decision)
        if why_not is not None:
            self.query_one("#dialog-error", Static).update(Text(why_not))
            return
        if self.busy:
            return
        self.busy = True
        self.query_one("#dialog-error", Static).update(Text("Working…", style="italic"))
        self.run_in_thread(
            lambda: self.ctx.source.decide_request(
                self.record, decision, message, suggestion, self.hidden_seen
            ),
            what=f"{decision} {one_line(self.record.reason, 60)}",
            group="request-decision",
            done=self.dismiss,
            failed=self.refused,
        )

    def refused(self, failure: Failure) -> None:
        self.busy = False
        self.query_one("#dialog-error", Static).update(Text(failure.text))
        self.notify(failure.text, severity="error", markup=False, timeout=10)

    def action_cancel(self) -> None:
        if not self.busy:
            self.dismiss(None)


def said(record: PermissionRequestRecord) -> str:
    """How a decision is announced."""
    extra = f", with the message {one_line(record.message, 80)!r}" if record.message else ""
    if record.accepted_suggestion is not None:
        extra += ", not asking again for the same"
    what = f"{record.state.capitalize()}{extra}: {one_line(record.reason, 100)}."
    return f"{what} {record.unheard}" if record.unheard else what
