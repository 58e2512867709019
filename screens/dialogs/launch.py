"""Resume and launch (``R``): the exact argv, the working directory and where the agent will
run, then ``y`` resumes the session (the lifecycle resume, with this dialog's idempotency key)
and starts the agent: in a new tmux window inside tmux, else in this terminal with the console
suspended. A session of another machine whose host the store knows is started there, by that
host, in tmux (``store.hosts.launches``). Whatever cannot be launched is refused here, before
anything is changed."""

from __future__ import annotations

import os
from contextlib import suppress
from functools import partial

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static

from roundtable_console.screens.context import ConsoleContext
from roundtable_console.screens.dialogs.action import ActionDialog
from roundtable_console.screens.failures import Failure
from roundtable_console.screens.outcomes import LaunchResult, why_not
from roundtable_console.screens.session.launcher import (
    Place,
    run_in_terminal,
    start_in_tmux,
    tmux_server,
)
from roundtable_console.screens.session.masking import quoted_argv, secret_forms
from roundtable_console.screens.text import MASK
from roundtable_console.store.errors import StoreError
from roundtable_console.store.hosts.launches import HostLaunch
from roundtable_console.store.records import SessionFields
from roundtable_console.store.resume.launch import LaunchPlan, tmux_command, tmux_refusal
from roundtable_console.store.rules import is_allowed
from roundtable_console.store.safety.display import one_line, printable
from roundtable_console.store.writes.lifecycle_outcomes import ActionOutcome


def argv_text(argv: tuple[str, ...], forms: list[str]) -> Text:
    """The argv as a shell would quote it (it is never run through one), the briefing (its
    last argument) abbreviated, every form in ``forms`` (the external id) masked."""
    text = Text(quoted_argv(argv[:-1], forms), style="bold")
    lines = argv[-1].count("\n") + 1
    text.append(f" <the briefing: {len(argv[-1])} characters, {lines} lines>", style="dim")
    return text


class LaunchDialog(ActionDialog):
    """Closes with a ``LaunchResult`` once the agent has started (tmux) or ended (this
    terminal), with the refusal when the row changed, or None when cancelled."""

    RETRY_HINT = "Press y to retry with the same key (a resume done is not done twice), or n."

    BINDINGS = [
        Binding("y", "confirm", "Yes"),
        Binding("n", "cancel", "No"),
        Binding("escape", "cancel", "Cancel", show=False),
        Binding("v", "reveal", "Reveal"),
        Binding("q", "answer_first", show=False),
    ]

    def __init__(self, *, ctx: ConsoleContext, session: SessionFields, place: Place) -> None:
        super().__init__(ctx=ctx, action="resume", session=session)
        self.place = place
        self.launch: LaunchPlan | None = None
        # Or, for a session of another machine, what its host is asked to start.
        self.on_host: HostLaunch | None = None
        self.revealed = False
        # Set by the worker that started the tmux window: what to tell the operator.
        self.tmux_report = ""

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="launch-dialog"):
            title = Text("Resume and launch ")
            title.append(one_line(self.session.id, 60), style="bold")
            title.append("?")
            yield Static(title, classes="dialog-title")
            yield Static(Text("Reading the resume plan…", style="italic"), id="launch-body")
            yield Static("", id="dialog-error", classes="dialog-error")
            yield Static(
                Text("y resume and launch · n no · v reveal"),
                id="launch-hint",
                classes="dialog-hint",
            )

    def on_mount(self) -> None:
        self.run_in_thread(
            partial(self.ctx.source.read_launch_anywhere, self.session.id),
            what=f"read the resume plan of {one_line(self.session.id, 40)}",
            group="launch-plan",
            done=self._planned,
            failed=self._not_planned,
        )

    @property
    def blocked(self) -> str | None:
        """Why ``y`` cannot go ahead, in words, or None (the plan read and launchable)."""
        planned = self.launch or self.on_host
        if planned is not None and not is_allowed("resume", planned.session.status):
            return f"{why_not('resume', planned.session)} Nothing was changed."
        if self.on_host is not None:  # the host's machine is where it runs: nothing here matters
            return None
        if self.place.problem is not None:
            return f"{self.place.problem} Nothing was changed."
        if self.launch is not None and self.place.tmux is not None:
            command = tmux_command(self.launch, tmux=self.place.tmux, path=os.environ.get("PATH"))
            too_long = tmux_refusal(command)
            if too_long is not None:
                return f"{too_long} Nothing was changed."
        return None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "confirm":
            return (self.launch or self.on_host) is not None and self.blocked is None
        if action == "reveal":
            return self.launch is not None and bool(self.launch.session.external_session_id)
        return True

    def _planned(self, plan: LaunchPlan | HostLaunch) -> None:
        if isinstance(plan, HostLaunch):
            self.on_host = plan
            self._show_host(plan)
        else:
            self.launch = plan
            self._show()
        blocked = self.blocked
        if blocked is not None:
            self.show_error(Text(blocked))
            self.query_one("#launch-hint", Static).update(Text("n or escape closes"))
        self.refresh_bindings()

    def _not_planned(self, failure: Failure) -> None:
        """Not resumable, no such directory, no such program: said, and nothing is done."""
        self.query_one("#launch-body", Static).update(Text("Nothing was changed.", style="italic"))
        self.show_error(Text(failure.text))
        self.query_one("#launch-hint", Static).update(Text("n or escape closes"))
        self.notify(failure.text, title="Launch refused", severity="error", markup=False)
        self.refresh_bindings()

    def _show(self) -> None:
        launch = self.launch
        if launch is None:
            return
        forms = [] if self.revealed else secret_forms(launch.session.external_session_id)
        body = Text()
        body.append(f"Now {one_line(launch.session.status, 30)}. ")
        body.append("y resumes it (status resuming; the agent must exist and be enabled, a ")
        body.append("saved branch must match), then starts its agent, never through a shell.\n\n")
        for label, value in (
            ("argv       ", argv_text(launch.argv, forms)),
            ("program    ", Text(printable(launch.program))),
            ("directory  ", Text(printable(launch.cwd))),
            ("runs in    ", Text(self.place.describe(launch.session.id))),
        ):
            body.append(label, style="dim")
            body.append_text(value)
            body.append("\n")
        if forms:
            body.append(f"external session id {MASK}", style="dim")
        self.query_one("#launch-body", Static).update(body)

    def _show_host(self, plan: HostLaunch) -> None:
        body = Text()
        body.append(f"Now {one_line(plan.session.status, 30)}. ")
        body.append("y resumes it (status resuming), then asks its host to start its agent ")
        body.append("there, with the briefing as its prompt, never through a shell.\n\n")
        for label, value in (
            ("host       ", printable(plan.host)),
            ("directory  ", printable(plan.session.working_directory or "(none recorded)")),
            ("briefing   ", f"{len(plan.prompt)} characters"),
            ("runs in    ", f"tmux session {plan.tmux_session!r} on {printable(plan.host)}"),
        ):
            body.append(label, style="dim")
            body.append(value)
            body.append("\n")
        self.query_one("#launch-body", Static).update(body)
        self.query_one("#launch-hint", Static).update(Text("y resume and launch there · n no"))

    def action_reveal(self) -> None:
        self.revealed = not self.revealed
        self._show()

    def action_answer_first(self) -> None:
        self.notify("Answer first: y yes, n no (escape cancels); then q quits.", markup=False)

    def action_confirm(self) -> None:
        if self.busy or self.blocked is not None:
            return
        if self.on_host is not None:
            self.perform_in_thread(
                partial(self.ctx.source.launch_on_host, self.on_host, self.idempotency_key)
            )
        elif self.launch is not None:
            self.perform_in_thread(partial(self._resume_and_start, self.launch))

    def _resume_and_start(self, launch: LaunchPlan) -> ActionOutcome:
        """In a thread: the resume with this dialog's key, and into tmux when inside it."""
        outcome = self.ctx.source.resume_for_launch(launch, self.idempotency_key)
        if self.place.tmux is not None:
            report, pane = start_in_tmux(launch, self.place.tmux, os.environ.get("PATH"))
            self.tmux_report = report
            if pane is not None:  # where the console shows what the agent does
                with suppress(StoreError):
                    self.ctx.source.record_launch(launch.session.id, pane, *tmux_server())
        return outcome

    def performed(self, outcome: ActionOutcome) -> None:
        if self.on_host is not None:
            plan = self.on_host
            report = (
                f"Started on {printable(plan.host)} in tmux session {plan.tmux_session!r}: on "
                f"that machine, {plan.attach} shows it."
            )
            self.dismiss(self.launch_result(outcome, report, None))
            return
        launch = self.launch
        assert launch is not None
        if self.place.kind == "tmux":
            self.dismiss(self.launch_result(outcome, self.tmux_report, None))
            return
        try:
            status, report = run_in_terminal(self.app, launch)
        except StoreError as error:
            self.refused(Failure(f"start the agent of {one_line(self.session.id, 40)}", error))
            return
        self.dismiss(self.launch_result(outcome, report, status))

    def launch_result(
        self, outcome: ActionOutcome, report: str, status: int | None
    ) -> LaunchResult:
        return LaunchResult(
            self.action, self.session, outcome=outcome, report=report, exit_status=status
        )
