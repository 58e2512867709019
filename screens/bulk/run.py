"""Lifecycle actions on every marked session, for the session list (``BulkActions``, a mixin).

With marks, ``h p s r t`` act on every marked session instead of the selected one (without
marks they act on the selected session as always):

1. a preview dialog (screens.bulk.dialog) reads what the action would do and asks first;
2. confirmed, the run goes on in a thread worker (``store.writes.bulk_run.run_bulk``, batched
   transactions, each session under its own key derived from the run's), while the list stays
   usable: a panel above the list says what runs, with a progress bar from
   ``PROGRESS_FROM`` sessions; ``escape`` cancels it between two sessions (what was committed
   stays, and is said);
3. the outcome is said: n done, n skipped, n failed, with their reasons counted. Done sessions
   are unmarked (``Marks.unmark_ids``: a filter mark excludes them); skipped and failed ones
   stay marked, so the marks show what the action did not change, to look at or act on again;
   sessions a cancelled or stopped run never reached stay marked too.

The run key: one per preview dialog. A run that does not end cleanly (a session failed, it
was cancelled or stopped by an error) keeps its key; the next preview of the same action, with
the marks as that run left them, reuses it, so a session the run did (even one whose commit it
could not confirm) is replayed, never applied twice. Any other action, or any change of the
marks, gets a new key.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any
from uuid import uuid4

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.widgets import ProgressBar, Static
from textual.worker import get_current_worker

from roundtable_console.screens.failures import Failure
from roundtable_console.screens.footer import NARROW_WORDS
from roundtable_console.screens.list.marks import Marks
from roundtable_console.screens.outcomes import describe_error
from roundtable_console.store.rules import LIFECYCLE_ACTIONS
from roundtable_console.store.safety.display import one_line

if TYPE_CHECKING:
    from roundtable_console.screens.bulk.dialog import BulkRequest
    from roundtable_console.screens.session.actions import ScreenCommand, SessionActionScreen
    from roundtable_console.store.writes.bulk import BulkItem
    from roundtable_console.store.writes.bulk_run import BulkOutcome

    ScreenBase = SessionActionScreen
else:
    ScreenBase = object

# A run of this many sessions or more shows a progress bar; a smaller one says it is running.
PROGRESS_FROM = 50
# Reasons said in an outcome under each of skipped and failed; the rest are counted.
REASONS_SAID = 5
# The key of each action, to say how to retry it.
KEYS = dict(zip(LIFECYCLE_ACTIONS, "hpsrt", strict=True))
ING = {
    "heartbeat": "Recording heartbeats for",
    "pause": "Pausing",
    "stop": "Stopping",
    "resume": "Resuming",
    "terminate": "Terminating",
}


def _sessions(count: int) -> str:
    return f"{count:,} session{'' if count == 1 else 's'}"


def short_count(count: int | None) -> str:
    """A count in few cells, for the footer: 7, 312, 1.2k, 45k, 1.3M; … while unknown."""
    if count is None:
        return "…"
    if count < 1000:
        return str(count)
    if count < 10_000:
        return f"{count / 1000:.1f}k"
    if count < 1_000_000:
        return f"{count // 1000}k"
    return f"{count / 1_000_000:.1f}M"


class BulkRunPanel(Horizontal):
    """A run in progress, above the list: what runs, how far (a bar from PROGRESS_FROM
    sessions), and that escape cancels it."""

    class Progress(Message):
        """Posted from the run's thread after each transaction."""

        def __init__(self, done: int, total: int) -> None:
            super().__init__()
            self.done = done
            self.total = total

    def __init__(self, action: str, total: int) -> None:
        super().__init__(id="bulk-run")
        self.action = action
        self.total = total
        self.done = 0
        self.cancelling = False

    def compose(self) -> ComposeResult:
        yield Static(self.words(), id="bulk-run-label")
        bar = ProgressBar(total=max(self.total, 1), show_eta=False, id="bulk-run-bar")
        bar.display = self.total >= PROGRESS_FROM
        yield bar

    def words(self) -> Text:
        text = Text(f"{ING[self.action]} {_sessions(self.total)}: {self.done:,} done", "bold")
        if self.cancelling:
            text.append(" · cancelling after the session in hand…", style="italic")
        else:
            text.append(" · escape cancels", style="dim")
        return text

    def on_bulk_run_panel_progress(self, message: Progress) -> None:
        self.done, self.total = message.done, max(message.total, 1)
        self.query_one(ProgressBar).update(total=self.total, progress=message.done)
        self.query_one("#bulk-run-label", Static).update(self.words())

    def cancel(self) -> None:
        self.cancelling = True
        self.query_one("#bulk-run-label", Static).update(self.words())


@dataclass
class BulkRun:
    """A run going on: what was confirmed, its panel, how to stop it, the sessions done so far
    (added to by the run's thread as each transaction commits)."""

    request: BulkRequest
    panel: BulkRunPanel
    stop: threading.Event = field(default_factory=threading.Event)
    done_ids: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class KeptKey:
    """The key of a run that did not end cleanly, for a retry of the same action on the marks
    as that run left them (``Marks.revision``)."""

    action: str
    run_key: str
    revision: int


def describe_bulk_outcome(outcome: BulkOutcome, *, retry_key: str | None) -> str:
    """n done, n skipped, n failed; each reason with its count; what happened to the marks.
    ``retry_key``: the key that retries under the same run key (None: the run ended cleanly)."""
    tally = outcome.tally
    counts = f"{tally.done:,} done, {tally.skipped:,} skipped, {tally.failed:,} failed"
    if outcome.cancelled:
        lines = [f"Cancelled after {tally.total:,} of {_sessions(outcome.total)}: {counts}."]
    elif outcome.error is not None:
        lines = [
            f"Stopped after {tally.total:,} of {_sessions(outcome.total)}: "
            f"{describe_error(outcome.error)}",
            f"{counts}.",
        ]
    else:
        lines = [f"{counts}."]
    for kind in ("done", "skipped", "failed"):
        reasons = tally.by_reason(kind)
        for reason, count in reasons[:REASONS_SAID]:
            lines.append(f"{count:,} {kind}: {one_line(reason, 120)}")
        if len(reasons) > REASONS_SAID:
            lines.append(f"… and {len(reasons) - REASONS_SAID:,} other reasons")
    left = tally.skipped + tally.failed + max(outcome.total - tally.total, 0)
    marks = "Done ones are unmarked"
    if left:
        marks += "; the others stay marked"
    lines.append(marks + ".")
    if retry_key is not None:
        lines.append(
            f"{retry_key} again retries them under the same run key: what this run did is "
            "never done twice."
        )
    return "\n".join(lines)


def _outcome_title(request: BulkRequest) -> str:
    plural = "" if request.total == 1 else "s"
    return f"{request.action.capitalize()} of {request.total:,} marked session{plural}"


def outcome_severity(outcome: BulkOutcome) -> SeverityLevel:
    if outcome.tally.failed or outcome.error is not None:
        return "error"
    return "warning" if outcome.cancelled else "information"


class BulkActions(ScreenBase):
    """Mixin for the session list (a ``SessionActionScreen`` with ``marks``), put before it
    among the bases: with marks, the lifecycle keys preview and run their action on every
    marked session. The screen calls ``bulk_cancel`` from its escape key."""

    marks: Marks

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bulk_run: BulkRun | None = None
        self.bulk_kept: KeptKey | None = None

    # Implemented by the list screen's marks (screens.list.marking, before this mixin among its
    # bases): the header, the footer and the store's answers follow a change of the marks.
    def _marks_changed(self) -> None:
        raise NotImplementedError

    # -- what the keys say and do -------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in LIFECYCLE_ACTIONS and self.marks:
            return True  # each marked session is judged by the preview
        return super().check_action(action, parameters)

    def allowed_actions(self) -> list[str]:
        """The selected session's actions (the palette's), none while the keys act on marks."""
        return [] if self.marks else super().allowed_actions()

    def footer_label(self, action: str, description: str) -> str | None:
        """With marks, a lifecycle key says it acts on them ("Pause ●12"); the selected
        session's log and briefing keys leave the footer to them (they still work, and help
        lists them). None: not shown."""
        if not self.marks:
            return description
        if action in LIFECYCLE_ACTIONS:
            word = NARROW_WORDS.get(description, description)
            return f"{word} ●{short_count(self.marks.count())}"
        if action in ("log", "briefing"):
            return None
        return description

    def bulk_commands(self) -> list[ScreenCommand]:
        """The command palette's entries for the marked sessions (help texts are read as
        markup: fixed words only)."""
        if not self.marks:
            return []
        count = self.marks.count()
        marked = "the marked sessions"
        if count is not None:
            marked = f"the {count:,} marked session{'' if count == 1 else 's'}"
        return [
            (
                f"{action.capitalize()} {marked}",
                partial(self.do_lifecycle_action, action),
                "Preview the action on every marked session, then run it",
            )
            for action in LIFECYCLE_ACTIONS
        ]

    def _act(self, action: str, act: Any) -> None:
        if self.marks:
            self.bulk_preview(action)
        else:
            super()._act(action, act)

    # -- the preview --------------------------------------------------------------------------

    def bulk_preview(self, action: str) -> None:
        """The preview of ``action`` on the marked sessions, under the kept key when it is a
        retry of the run that kept it."""
        waiting = partial(self.bulk_preview, action)
        if not self.store_is_open(waiting, f"{action} of the marked sessions follows"):
            return
        if self.bulk_run is not None:
            running = self.bulk_run.request.action
            self.notify(
                f"A {running} of marked sessions is running: wait for its outcome, or press "
                "escape to cancel it.",
                severity="warning",
                markup=False,
            )
            return
        from roundtable_console.screens.bulk.dialog import (
            BulkConfirmDialog,
            BulkDialog,
            BulkTerminateDialog,
        )

        kept = self.bulk_kept
        retrying = kept is not None and (kept.action, kept.revision) == (
            action,
            self.marks.revision,
        )
        run_key = kept.run_key if retrying and kept is not None else str(uuid4())
        kind: type[BulkDialog] = BulkTerminateDialog if action == "terminate" else BulkConfirmDialog
        dialog = kind(
            ctx=self.ctx,
            action=action,
            selection=self.marks.selection(),
            run_key=run_key,
            retrying=retrying,
        )
        self.app.push_screen(dialog, partial(self.bulk_answered, action))

    def bulk_answered(self, action: str, request: BulkRequest | None) -> None:
        if request is None:
            self.notify(
                f"{action.capitalize()} cancelled: nothing was done to the marked sessions.",
                markup=False,
            )
            return
        self.bulk_start(request)

    # -- the run ------------------------------------------------------------------------------

    def bulk_start(self, request: BulkRequest) -> None:
        panel = BulkRunPanel(request.action, request.total)
        # Above the list's column headers: toasts gather at the bottom right.
        self.mount(panel, before=self.query_one("#columns"))
        run = self.bulk_run = BulkRun(request, panel)
        self.run_in_thread(
            partial(self._bulk_job, run),
            what=f"{request.action} the marked sessions",
            group="bulk-run",
            done=partial(self.bulk_finished, run),
            failed=partial(self.bulk_failed, run),
        )

    def _bulk_job(self, run: BulkRun) -> BulkOutcome:
        """In a thread: the run, reporting its progress to the panel."""
        worker = get_current_worker()
        request = run.request

        def progress(done: int, total: int) -> None:
            run.panel.post_message(BulkRunPanel.Progress(done, total))

        def committed(items: list[BulkItem]) -> None:
            run.done_ids.extend(item.session_id for item in items if item.outcome == "done")

        return self.ctx.source.run_bulk_action(
            request.action,
            request.selection,
            run_key=request.run_key,
            impact_details=request.impact_details,
            progress=progress,
            cancelled=lambda: run.stop.is_set() or worker.is_cancelled,
            on_items=committed,
        )

    def bulk_cancel(self) -> bool:
        """Ask the run going on to stop after the session in hand; False when none runs."""
        run = self.bulk_run
        if run is None:
            return False
        if not run.stop.is_set():
            run.stop.set()
            run.panel.cancel()
        return True

    def _bulk_ended(self, run: BulkRun) -> None:
        """The run's panel goes, and the sessions it did are unmarked."""
        self.bulk_run = None
        run.panel.remove()
        self.marks.unmark_ids(run.done_ids)
        self.query_one("#sessions").refresh()
        self._marks_changed()
        self.reload()

    def bulk_finished(self, run: BulkRun, outcome: BulkOutcome) -> None:
        self._bulk_ended(run)
        request = run.request
        clean = outcome.complete and not outcome.tally.failed
        self.bulk_kept = (
            None if clean else KeptKey(request.action, request.run_key, self.marks.revision)
        )
        self.notify(
            describe_bulk_outcome(outcome, retry_key=None if clean else KEYS[request.action]),
            title=_outcome_title(request),
            severity=outcome_severity(outcome),
            markup=False,
            timeout=20 if clean else 40,
        )

    def bulk_failed(self, run: BulkRun, failure: Failure) -> None:
        """The run could not start or ended in an error of its own: what it did is unmarked,
        and its key is kept for a retry."""
        self._bulk_ended(run)
        request = run.request
        self.bulk_kept = KeptKey(request.action, request.run_key, self.marks.revision)
        done = len(run.done_ids)
        self.notify(
            f"{failure.sentence}\n{done:,} done before it stopped (unmarked); the others stay "
            f"marked. {KEYS[request.action]} again retries them under the same run key: what "
            "was done is never done twice.",
            title=_outcome_title(request),
            severity="error",
            markup=False,
            timeout=40,
        )
