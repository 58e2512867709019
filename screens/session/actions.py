"""Lifecycle actions on the selected session, shared by the list and the detail screen.

Which screen shows a session's detail, log or briefing is the app's to decide (``OpenView``):
the detail screen is one of these screens, so this module does not import it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Literal

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.timer import Timer

from roundtable_console.screens.context import ConsoleContext
from roundtable_console.screens.failures import Failure, ReportsFailures
from roundtable_console.screens.outcomes import (
    ActionResult,
    AgentStopResult,
    LaunchResult,
    describe_conflict,
    describe_error,
    describe_outcome,
    why_not,
)
from roundtable_console.store.errors import StoreError
from roundtable_console.store.records import SessionFields
from roundtable_console.store.rules import LIFECYCLE_ACTIONS, is_allowed
from roundtable_console.store.safety.display import one_line

if TYPE_CHECKING:
    from roundtable_console.screens.dialogs.action import ActionDialog
    from roundtable_console.screens.dialogs.reply import ReplyWay
    from roundtable_console.store.replies.sending import SentReply

# A command palette entry a screen offers: its name, what it does, and a help text (read as
# markup by the palette, so never store data).
ScreenCommand = tuple[str, Callable[[], object], str]

ACTION_BINDINGS: list[BindingType] = [
    # A pending permission request of the session: shown in full, then allowed or denied (the
    # detail screen keeps n for its next page: its y shows the request, which n there denies).
    Binding("y", "answer_request(False)", "Allow", show=False),
    Binding("n", "answer_request(True)", "Deny", show=False),
    # A reply to an agent that waits for a prompt (screens.dialogs.reply): said why not, where
    # nothing can carry one.
    Binding("m", "reply", "Reply", show=False),
    Binding("h", "heartbeat", "Heartbeat", tooltip="Record a heartbeat as the operator"),
    Binding("p", "pause", "Pause"),
    Binding("s", "stop", "Stop", tooltip="Stop the session (asks first)"),
    Binding(
        "r", "resume", "Resume", tooltip="Resume a paused, stopped or ended session (asks first)"
    ),
    Binding("t", "terminate", "Terminate", tooltip="Terminate, after reading the impact"),
    # When an action does not apply, its key explains why instead of doing nothing.
    *(
        Binding(key, f"explain('{name}')", show=False)
        for key, name in zip("hpsrt", LIFECYCLE_ACTIONS, strict=True)
    ),
]


# R: resume, then start the agent (screens.dialogs.launch); the briefing screen shows it.
# X: stop the agent's process where it runs (screens.dialogs.stop_agent).
LAUNCH_BINDINGS: list[BindingType] = [
    Binding("R", "launch", "Launch", show=False, tooltip="Resume, then start the agent (asks)"),
    Binding("R", "explain('resume')", show=False),
    Binding("X", "stop_agent", "Stop agent", show=False, tooltip="Stop the agent's process (asks)"),
    Binding("F", "finish", "Finish", show=False, tooltip="Remove its worktree, keep its branch"),
]


def launch_allowed(session: SessionFields | None) -> bool | None:
    """``R``'s state for ``check_action``: hidden without a session, dimmed when the session
    cannot be resumed (the key then says why)."""
    if session is None:
        return False
    return True if is_allowed("resume", session.status) else None


def open_launch(
    screen: Screen[object],
    ctx: ConsoleContext,
    finished: Callable[[ActionResult], object],
    session: SessionFields,
) -> None:
    """The launch dialog for ``session``; ``finished`` gets how it ended (cancelled too)."""
    from roundtable_console.screens.dialogs.launch import LaunchDialog
    from roundtable_console.screens.session.launcher import place_for

    dialog = LaunchDialog(ctx=ctx, session=session, place=place_for(screen.app))
    screen.app.push_screen(
        dialog, lambda result: finished(result or ActionResult("resume", session))
    )


def tell(screen: Screen[object], result: ActionResult) -> None:
    """Every outcome is said out loud; every refusal says why (a launch's report too)."""
    if result.cancelled:
        screen.notify(
            f"{result.action.capitalize()} cancelled: nothing was done to "
            f"{one_line(result.session.id, 40)}.",
            markup=False,
        )
        return
    if result.outcome is not None:
        screen.notify(
            describe_outcome(result.outcome, result.session),
            title=result.action.capitalize(),
            markup=False,
        )
    elif result.error is not None:
        title = f"{result.action.capitalize()} refused"
        error = result.error
        if error.code == "session_transition_conflict":
            message = describe_conflict(result.session, error)
            screen.notify(message, title=title, severity="warning", markup=False, timeout=12)
        else:
            message = describe_error(error)
            screen.notify(message, title=title, severity="error", markup=False, timeout=10)
    if isinstance(result, AgentStopResult):
        screen.notify(result.report, title="Stop agent", markup=False, timeout=10)
    if isinstance(result, LaunchResult) and result.report:
        failed = result.exit_status not in (None, 0)
        severity: SeverityLevel = "warning" if failed else "information"
        screen.notify(result.report, title="Launch", severity=severity, markup=False, timeout=15)


class SessionActionScreen(ReportsFailures, Screen[None]):
    """A screen with a selected session that the lifecycle keys act on."""

    BINDINGS = [
        *ACTION_BINDINGS,
        Binding("l", "log", "Log"),
        Binding("b", "briefing", "Briefing"),
        Binding("ctrl+r", "reload", "Refresh", show=False),
        # Not in the list's and detail's footer, which is full at 120 columns: help lists it.
        *LAUNCH_BINDINGS,
    ]

    @dataclass
    class OpenView(Message):
        """Asks the app to show a session's detail, log or briefing screen."""

        view: Literal["detail", "log", "briefing"]
        session_id: str

    def __init__(self, ctx: ConsoleContext, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.ctx = ctx
        # What the operator asked for before the store was open; done once it is.
        self.waiting: Callable[[], None] | None = None
        # The screen's clock refresh: it stands still while another screen is on top.
        self.refresh_timer: Timer | None = None

    def on_screen_suspend(self) -> None:
        if self.refresh_timer is not None:
            self.refresh_timer.pause()

    def on_screen_resume(self) -> None:
        if self.refresh_timer is not None:
            self.refresh_timer.resume()

    # Implemented by each screen.
    def selected_session(self) -> SessionFields | None:
        raise NotImplementedError

    def reload(self) -> None:
        raise NotImplementedError

    def action_reload(self) -> None:
        self.reload()

    def session_updated(self, session: SessionFields) -> None:
        """Show a row the store just returned, before the next reload arrives."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in (*LIFECYCLE_ACTIONS, "launch", "stop_agent", "finish") and self.ctx.read_only:
            return False  # not offered at all; the key says why (the explain bindings)
        if action == "finish":  # a session N started in a worktree (no dialog's import here:
            session = self.selected_session()  # this is asked before the first paint)
            if session is None or not session.host:
                return False
            return isinstance((session.metadata_dict or {}).get("worktree"), dict)
        if action in ("log", "briefing", "stop_agent"):
            return self.selected_session() is not None
        if action == "launch":
            return launch_allowed(self.selected_session())
        if action in LIFECYCLE_ACTIONS:
            session = self.selected_session()
            if session is None:
                return False
            # Dimmed, not hidden: the footer keeps its keys in place from row to row, and the
            # key of an action that does not apply says why (the explain bindings).
            return True if is_allowed(action, session.status) else None
        return True

    def allowed_actions(self) -> list[str]:
        session = self.selected_session()
        if session is None or self.ctx.read_only:
            return []
        return [name for name in LIFECYCLE_ACTIONS if is_allowed(name, session.status)]

    def screen_commands(self) -> list[ScreenCommand]:
        """Palette entries of the screen's own, beside the selected session's actions."""
        return []

    def known_sessions(self) -> list[SessionFields]:
        """Sessions this screen has on show (the palette offers to open them)."""
        session = self.selected_session()
        return [session] if session is not None else []

    # -- before the store is open ------------------------------------------------------------

    def store_is_open(self, then: Callable[[], None], what: str) -> bool:
        """True when the store is open. Otherwise ``then`` waits until it is (a later request
        replaces it), and the operator is told: the console may show its first rows before
        the store has finished opening."""
        if self.ctx.source.ready:
            return True
        self.waiting = then
        self.notify(f"Opening the store… {what} as soon as it is open.", markup=False)
        return False

    def store_opened(self) -> None:
        """The store is open: read again, and do what was asked for meanwhile."""
        waiting, self.waiting = self.waiting, None
        self.reload()
        if waiting is not None:
            waiting()

    def store_failed(self) -> None:
        """The store could not be opened: what was asked for meanwhile is not done."""
        if self.waiting is not None:
            self.waiting = None
            self.notify(
                "The store could not be opened, so what you asked for was not done.",
                severity="warning",
                markup=False,
            )

    # -- other screens ---------------------------------------------------------------------

    def open_detail(self, session_id: str) -> None:
        if not self.store_is_open(lambda: self.open_detail(session_id), "the session opens"):
            return
        self.post_message(self.OpenView("detail", session_id))

    def action_log(self) -> None:
        session = self.selected_session()
        if session is None or not self.store_is_open(self.action_log, "its log opens"):
            return
        self.post_message(self.OpenView("log", session.id))

    def action_briefing(self) -> None:
        session = self.selected_session()
        if session is None or not self.store_is_open(self.action_briefing, "its briefing opens"):
            return
        self.post_message(self.OpenView("briefing", session.id))

    def do_lifecycle_action(self, action: str) -> None:
        """Run a lifecycle action by name (the command palette's entry point)."""
        if self.check_action(action, ()):
            getattr(self, f"action_{action}")()
        else:
            self.action_explain(action)

    def action_explain(self, action: str) -> None:
        if self.ctx.read_only:
            self.notify(
                f"The console is read-only: it does not {action} sessions. Open it without "
                "--read-only (and read_only = false, ROUNDTABLE_READ_ONLY unset) to act.",
                severity="warning",
                markup=False,
            )
            return
        self.notify(why_not(action, self.selected_session()), severity="warning", markup=False)

    def action_heartbeat(self) -> None:
        self._act("heartbeat", partial(self._run_direct, "heartbeat"))

    def action_pause(self) -> None:
        self._act("pause", partial(self._run_direct, "pause"))

    def action_stop(self) -> None:
        self._act(
            "stop",
            partial(
                self._confirm,
                "stop",
                "Its status becomes stopped and its end time is set to now. ",
                "No process is stopped: tell the agent yourself.",
            ),
        )

    def action_resume(self) -> None:
        self._act(
            "resume",
            partial(
                self._confirm,
                "resume",
                "Its status becomes resuming and its end time is cleared. ",
                "The agent must exist and be enabled, and a saved branch must match. "
                "Nothing is started: R resumes and starts the agent.",
            ),
        )

    def action_terminate(self) -> None:
        self._act("terminate", self._terminate)

    def action_launch(self) -> None:
        self._act("launch", partial(open_launch, self, self.ctx, self.announce))

    def action_stop_agent(self) -> None:
        self._act("stop agent", self._stop_agent)

    def _stop_agent(self, session: SessionFields) -> None:
        from roundtable_console.screens.dialogs.stop_agent import ACTION, StopAgentDialog

        self.app.push_screen(
            StopAgentDialog(ctx=self.ctx, session=session),
            lambda result: self.announce(result or ActionResult(ACTION, session)),
        )

    def action_finish(self) -> None:
        from roundtable_console.screens.dialogs.finish import ACTION, FinishDialog

        self._act(ACTION, lambda session: self.app.push_screen(
            FinishDialog(ctx=self.ctx, session=session),
            lambda result: self.announce(result or ActionResult(ACTION, session)),
        ))  # fmt: skip

    def action_answer_request(self, deny_first: bool) -> None:
        """The selected session's oldest pending permission request, read in a thread, then
        shown to be allowed or denied."""
        session = self.selected_session()
        if session is None:
            return
        self.run_in_thread(
            partial(self.ctx.source.pending_requests, session.id),
            what=f"read the requests of {one_line(session.id, 40)}",
            group="session-requests",
            done=partial(self._request_read, session, deny_first),
            failed=self.announce_failure,
        )

    def action_reply(self) -> None:
        """What can carry a reply to the selected session, read in a thread; the dialog when
        something can, else why nothing can."""
        from roundtable_console.screens.dialogs.reply import read_route

        session = self.selected_session()
        if session is None:
            return
        if self.ctx.read_only:
            self.notify(
                "The console is read-only: it sends no reply. Open it without --read-only to "
                "reply to an agent.",
                severity="warning",
                markup=False,
            )
            return
        self.run_in_thread(
            partial(read_route, self.ctx, session.id),
            what=f"see what can carry a reply to {one_line(session.id, 40)}",
            group="session-reply",
            done=self._reply_way_read,
            failed=self.announce_failure,
        )

    def _reply_way_read(self, way: ReplyWay) -> None:
        from roundtable_console.screens.dialogs.reply import ReplyDialog, said

        if way.route.via is None:
            self.notify(way.route.words, title="No way to reply", severity="warning", markup=False)
            return

        def replied(sent: SentReply | None) -> None:
            if sent is not None:
                self.notify(said(sent), title="Reply", markup=False)
            self.reload()

        self.app.push_screen(ReplyDialog(ctx=self.ctx, way=way), replied)

    def _request_read(self, session: SessionFields, deny_first: bool, records: list) -> None:  # noqa: ANN001
        from roundtable_console.screens.dialogs.request import RequestDialog, said

        if not records:
            self.notify(
                f"{one_line(session.id, 40)} has no pending permission request.", markup=False
            )
            return

        def answered(record: object) -> None:
            if record is not None:
                self.notify(said(record), title="Permission request", markup=False)  # type: ignore[arg-type]
            self.reload()

        dialog = RequestDialog(ctx=self.ctx, record=records[0], deny_first=deny_first)
        self.app.push_screen(dialog, answered)

    def _act(self, action: str, act: Callable[[SessionFields], object]) -> None:
        """``act`` on the selected session: now, or once the store is open."""
        session = self.selected_session()
        if session is None:
            return
        then = partial(act, session)
        if self.store_is_open(then, f"{action} {one_line(session.id, 40)} follows"):
            then()

    def _confirm(self, action: str, effect: str, caveat: str, session: SessionFields) -> None:
        """Ask y/n before ``action``, naming the session and what the action will do."""
        from roundtable_console.screens.dialogs.confirm import ConfirmActionDialog

        body = Text(f"{action.capitalize()} ")
        body.append(one_line(session.id, 60), style="bold")
        body.append(f" (now {one_line(session.status, 30)})? ")
        body.append(effect)
        body.append(caveat, style="dim")
        title = f"{action.capitalize()} session?"
        self._open_dialog(
            ConfirmActionDialog(
                ctx=self.ctx, action=action, session=session, title=title, body=body
            )
        )

    def _terminate(self, session: SessionFields) -> None:
        from roundtable_console.screens.dialogs.terminate import TerminateDialog

        self._open_dialog(TerminateDialog(ctx=self.ctx, session=session))

    def _open_dialog(self, dialog: ActionDialog) -> None:
        session, action = dialog.session, dialog.action

        def finished(result: ActionResult | None) -> None:
            self.announce(result or ActionResult(action, session))

        self.app.push_screen(dialog, finished)

    def _run_direct(self, action: str, session: SessionFields) -> None:
        """An action that needs no answer first: at once, in a thread."""
        self.run_in_thread(
            partial(self._perform_direct, action, session),
            what=f"{action} {one_line(session.id, 40)}",
            group="session-action",
            exclusive=False,
            done=self.announce,
            failed=self.announce_failure,
        )

    def _perform_direct(self, action: str, session: SessionFields) -> ActionResult:
        try:
            outcome = self.ctx.source.perform_action(action, session)
        except StoreError as error:
            return ActionResult(action, session, error=error)
        return ActionResult(action, session, outcome=outcome)

    def announce_failure(self, failure: Failure) -> None:
        """An action ended in an unexpected error: said, and the row read again (a store
        transaction that ends in an error commits nothing, but the row may have moved)."""
        self.notify(failure.text, severity="error", markup=False, timeout=15)
        self.reload()

    def announce(self, result: ActionResult) -> None:
        """Every outcome is said out loud; every refusal says why."""
        tell(self, result)
        if result.cancelled:
            return
        if result.outcome is not None:
            self.session_updated(result.outcome.session)
        self.reload()
