"""A reply to an agent that waits for a prompt (``agents.replying``): the console's ``m`` reads what
can carry one (in a thread: a tmux pane is looked at), says why when nothing can, else opens this
dialog, which names the route and sends the text typed (Enter) in a thread. Its refusals (the hook
stopped listening meanwhile, the pane went away) are said in the dialog, which stays open."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from roundtable_console.screens.context import ConsoleContext
from roundtable_console.screens.failures import Failure, ReportsFailures
from roundtable_console.store.records import SessionFields
from roundtable_console.store.replies.sending import MAX_REPLY_CHARACTERS, ReplyRoute, SentReply
from roundtable_console.store.safety.display import one_line


@dataclass(frozen=True)
class ReplyWay:
    """What ``m`` read: the session as it is now and what can carry a reply to it."""

    session: SessionFields
    route: ReplyRoute


def read_route(ctx: ConsoleContext, session_id: str) -> ReplyWay:
    """Runs in a thread."""
    return ReplyWay(*ctx.source.reply_route(session_id))


def said(sent: SentReply) -> str:
    how = "through its hook" if sent.via == "hook" else "typed into its tmux pane"
    hidden = " Parts that looked like secrets were hidden." if sent.hidden else ""
    return f"Replied to {one_line(sent.session_id, 40)} {how}.{hidden}"


class ReplyDialog(ReportsFailures, ModalScreen[SentReply | None]):
    """Closes with the reply sent, or None when nothing was sent."""

    AWAITS_ANSWER = True
    BINDINGS = [Binding("escape", "cancel", "Send nothing")]

    def __init__(self, *, ctx: ConsoleContext, way: ReplyWay) -> None:
        super().__init__(classes="dialog-screen")
        self.ctx = ctx
        self.way = way
        self.busy = False

    def compose(self) -> ComposeResult:
        session = self.way.session
        body = Text()
        body.append(one_line(session.id, 80), style="bold")
        body.append(f" · {one_line(session.agent_id, 40)}\n")
        waits_on = session.waiting.reason if session.waiting is not None else session.turn_done
        if waits_on:
            body.append(f"{one_line(waits_on, 200)}\n")
        body.append(f"\nThe reply goes {self.way.route.words}.")
        with Vertical(classes="dialog", id="reply-dialog"):
            yield Static(Text("Reply to the agent"), classes="dialog-title")
            yield Static(body, classes="dialog-body")
            yield Input(
                placeholder="What the agent goes on with",
                max_length=MAX_REPLY_CHARACTERS,
                id="reply-message",
            )
            yield Static("", id="dialog-error", classes="dialog-error")
            yield Static(Text("Enter send · escape send nothing"), classes="dialog-hint")

    def on_mount(self) -> None:
        self.query_one("#reply-message", Input).focus()

    @on(Input.Submitted, "#reply-message")
    def submitted(self, event: Input.Submitted) -> None:
        message = event.value
        if not message.strip():
            self.query_one("#dialog-error", Static).update(Text("Type the reply first."))
            return
        if self.busy:
            return
        self.busy = True
        self.query_one("#dialog-error", Static).update(Text("Sending…", style="italic"))
        session_id = self.way.session.id
        self.run_in_thread(
            lambda: self.ctx.source.send_reply(session_id, message, self.way.route.via),
            what=f"reply to {one_line(session_id, 40)}",
            group="reply",
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
