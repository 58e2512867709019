"""Lifecycle actions on the selected session, shared by the list and the detail screen."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen

from screens.confirm_dialog import ConfirmActionDialog
from screens.context import ConsoleContext
from screens.data import perform_action
from screens.outcomes import (
    LIFECYCLE_ACTIONS,
    ActionResult,
    describe_conflict,
    describe_error,
    describe_outcome,
    why_not,
)
from screens.terminate_dialog import TerminateDialog
from store.display import one_line
from store.errors import StoreError
from store.lifecycle import is_allowed
from store.models import AgentSession

ACTION_BINDINGS: list[BindingType] = [
    Binding("h", "heartbeat", "Heartbeat", tooltip="Record a heartbeat as the operator"),
    Binding("p", "pause", "Pause"),
    Binding("s", "stop", "Stop", tooltip="Stop the session (asks first)"),
    Binding("r", "resume", "Resume", tooltip="Resume a paused or stopped session (asks first)"),
    Binding("t", "terminate", "Terminate", tooltip="Terminate, after reading the impact"),
    # When an action does not apply, its key explains why instead of doing nothing.
    *(
        Binding(key, f"explain('{name}')", show=False)
        for key, name in zip("hpsrt", LIFECYCLE_ACTIONS, strict=True)
    ),
]


class SessionActionScreen(Screen[None]):
    """A screen with a selected session that the lifecycle keys act on."""

    BINDINGS = [
        *ACTION_BINDINGS,
        Binding("l", "log", "Log"),
        Binding("b", "briefing", "Briefing"),
        Binding("ctrl+r", "reload", "Refresh", show=False),
    ]

    class ActionFinished(Message):
        def __init__(self, result: ActionResult) -> None:
            super().__init__()
            self.result = result

    def __init__(self, ctx: ConsoleContext, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.ctx = ctx

    # Implemented by each screen.
    def selected_session(self) -> AgentSession | None:
        raise NotImplementedError

    def reload(self) -> None:
        raise NotImplementedError

    def action_reload(self) -> None:
        self.reload()

    def session_updated(self, session: AgentSession) -> None:
        """Show a row the store just returned, before the next reload arrives."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("log", "briefing"):
            return self.selected_session() is not None
        if action in LIFECYCLE_ACTIONS:
            session = self.selected_session()
            return session is not None and is_allowed(action, session.status)
        return True

    def allowed_actions(self) -> list[str]:
        session = self.selected_session()
        if session is None:
            return []
        return [name for name in LIFECYCLE_ACTIONS if is_allowed(name, session.status)]

    def known_sessions(self) -> list[AgentSession]:
        """Sessions this screen has on show (the palette offers to open them)."""
        session = self.selected_session()
        return [session] if session is not None else []

    def open_detail(self, session_id: str) -> None:
        from screens.session_detail import SessionDetailScreen

        self.app.push_screen(SessionDetailScreen(self.ctx, session_id))

    def action_log(self) -> None:
        from screens.session_log import SessionLogScreen

        session = self.selected_session()
        if session is not None:
            self.app.push_screen(SessionLogScreen(self.ctx, session.id))

    def action_briefing(self) -> None:
        from screens.briefing_screen import BriefingScreen

        session = self.selected_session()
        if session is not None:
            self.app.push_screen(BriefingScreen(self.ctx, session.id))

    def do_lifecycle_action(self, action: str) -> None:
        """Run a lifecycle action by name (the command palette's entry point)."""
        if self.check_action(action, ()):
            getattr(self, f"action_{action}")()
        else:
            self.action_explain(action)

    def action_explain(self, action: str) -> None:
        self.notify(why_not(action, self.selected_session()), severity="warning", markup=False)

    def action_heartbeat(self) -> None:
        self._start_direct("heartbeat")

    def action_pause(self) -> None:
        self._start_direct("pause")

    def action_stop(self) -> None:
        self._confirm(
            "stop",
            "Its status becomes stopped and its end time is set to now. ",
            "No process is stopped: tell the agent yourself.",
        )

    def action_resume(self) -> None:
        self._confirm(
            "resume",
            "Its status becomes resuming and its end time is cleared. ",
            "The agent must exist and be enabled, and a saved branch must match. "
            "Nothing is started: use the briefing (b) to resume the work.",
        )

    def _confirm(self, action: str, effect: str, caveat: str) -> None:
        """Ask y/n before ``action``, naming the session and what the action will do."""
        session = self.selected_session()
        if session is None:
            return
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

    def action_terminate(self) -> None:
        session = self.selected_session()
        if session is not None:
            self._open_dialog(TerminateDialog(ctx=self.ctx, session=session))

    def _open_dialog(self, dialog: ConfirmActionDialog | TerminateDialog) -> None:
        session, action = dialog.session, dialog.action

        def finished(result: ActionResult | None) -> None:
            self.announce(result or ActionResult(action, session))

        self.app.push_screen(dialog, finished)

    def _start_direct(self, action: str) -> None:
        session = self.selected_session()
        if session is not None:
            self._run_direct(action, session)

    @work(thread=True, group="session-action", exit_on_error=False)
    def _run_direct(self, action: str, session: AgentSession) -> None:
        try:
            outcome = perform_action(self.ctx, action, session)
        except StoreError as error:
            self.post_message(self.ActionFinished(ActionResult(action, session, error=error)))
            return
        self.post_message(self.ActionFinished(ActionResult(action, session, outcome=outcome)))

    def on_session_action_screen_action_finished(self, message: ActionFinished) -> None:
        self.announce(message.result)

    def announce(self, result: ActionResult) -> None:
        """Every outcome is said out loud; every refusal says why."""
        if result.cancelled:
            self.notify(
                f"{result.action.capitalize()} cancelled: nothing was done to "
                f"{one_line(result.session.id, 40)}.",
                markup=False,
            )
            return
        if result.outcome is not None:
            self.session_updated(result.outcome.session)
            self.notify(
                describe_outcome(result.outcome, result.session),
                title=result.action.capitalize(),
                markup=False,
            )
        elif result.error is not None:
            self._announce_refusal(result.action, result.session, result.error)
        self.reload()

    def _announce_refusal(self, action: str, session: AgentSession, error: StoreError) -> None:
        title = f"{action.capitalize()} refused"
        if error.code == "session_transition_conflict":
            message = describe_conflict(session, error)
            self.notify(message, title=title, severity="warning", markup=False, timeout=12)
            return
        self.notify(describe_error(error), title=title, severity="error", markup=False, timeout=10)
