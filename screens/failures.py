"""Worker failures are never silent: how a screen runs blocking work and hears how it ended.

Blocking calls (the store, files) run in thread workers started with ``exit_on_error=False``,
so that an error does not end the console. Textual then keeps the exception to the worker,
which just ends in the ERROR state: caught nowhere, a bug or a driver error SQLAlchemy does not
wrap would vanish, and the screen would wait for an answer that never comes. ``ReportsFailures``
listens to ``Worker.StateChanged`` for every worker its screen starts, so an exception nobody
expected is

* logged with its traceback on Python's ``roundtable`` logger and on Textual's log (read it
  with ``textual console``, or in the file named by ``TEXTUAL_LOG``); never printed to the
  terminal;
* said to the operator in words, as plain text (never markup, control characters made
  visible): "Could not pause sess-1: unexpected RuntimeError: boom. Details in the log.";
* handed back to the screen, which undoes its busy state (a dialog's "Working…" cleared, so
  ``y`` retries and ``escape`` closes it).

How a screen adopts it
----------------------
Put the mixin first among the bases and start blocking work with ``run_in_thread``::

    class BriefingScreen(ReportsFailures, Screen[None]):
        def compose(self) -> ComposeResult:
            yield StoreBanner()  # screens.banner: store errors over the content
            ...

        def load(self) -> None:
            self.run_in_thread(
                partial(self.ctx.source.read_briefing, self.session_id),  # in a thread
                what=f"read the briefing of {one_line(self.session_id, 40)}",  # "Could not …"
                group="briefing",  # one at a time per group: a newer call cancels an older one
                done=self.show_briefing,  # on the event loop, with what the call returned
                failed=self.read_failed,  # on the event loop, with a Failure
            )

        def read_failed(self, failure: Failure) -> None:
            self.query_one(StoreBanner).show_failure(failure.text)

* ``done(result)`` runs only when the call returned and its worker was not cancelled: the
  answer of a call that a newer one replaced is dropped, never shown over the newer one.
* ``failed(failure)`` gets a ``Failure`` for a ``StoreError`` (a refusal with a stable code,
  ``failure.code``) and for any other exception (``failure.unexpected``, logged before
  ``failed`` is called). It undoes the busy state and shows ``failure.text`` where it belongs
  (a banner, the dialog, a notification). Without ``failed``, the failure is a notification.
* An exception raised by ``done`` or ``failed`` themselves is reported the same way, so a bug in
  showing an answer is said in words too, instead of ending the console.
* A worker started any other way (``@work``, ``run_worker``) is covered as well: when it ends
  in an exception, the exception is logged and notified, then ``worker_failed(worker, failure)``
  is called; override it to undo the busy state that worker leaves behind. A screen may define
  its own ``on_worker_state_changed`` too: Textual calls both.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from textual.app import App
from textual.widget import Widget
from textual.worker import Worker, WorkerState

from roundtable_console.screens.outcomes import describe_error
from roundtable_console.store.errors import StoreError
from roundtable_console.store.safety.display import one_line

if TYPE_CHECKING:
    from textual.screen import Screen

    ScreenBase = Screen[Any]
else:
    ScreenBase = object

logger = logging.getLogger("roundtable")
# Without a handler of its own, Python would print an unconfigured logger's errors to stderr,
# over the console's screen. A handler the application configures still receives them.
logger.addHandler(logging.NullHandler())

T = TypeVar("T")


@dataclass(frozen=True)
class Failure:
    """Why a piece of work did not end with an answer: ``what`` it was ("pause sess-1", the rest
    of "Could not …") and the exception it ended with."""

    what: str
    error: BaseException

    @property
    def store_error(self) -> StoreError | None:
        return self.error if isinstance(self.error, StoreError) else None

    @property
    def code(self) -> str | None:
        """The store's stable error code; None for an unexpected exception."""
        error = self.store_error
        return error.code if error is not None else None

    @property
    def unexpected(self) -> bool:
        return self.store_error is None

    @property
    def reason(self) -> str:
        error = self.store_error
        if error is not None:
            return describe_error(error)
        detail = one_line(str(self.error), 300).rstrip(".")
        kind = type(self.error).__name__
        return f"unexpected {kind}: {detail}" if detail else f"unexpected {kind}"

    @property
    def sentence(self) -> str:
        """Always names what could not be done: "Could not read the logs of s1: …"."""
        tail = "" if self.store_error is not None else ". Details in the log."
        return f"Could not {self.what}: {self.reason}{tail}"

    @property
    def text(self) -> str:
        """The words for the operator: a refusal as the store put it (its message says what
        was refused), anything else as the sentence naming what could not be done."""
        return self.reason if self.store_error is not None else self.sentence


def log_failure(node: Widget | App[Any], failure: Failure) -> None:
    """The failure and its traceback, on the ``roundtable`` logger and on Textual's log."""
    logger.error("%s", failure.sentence, exc_info=failure.error)
    details = "".join(traceback.format_exception(failure.error))
    node.log.error(f"{failure.sentence}\n{details}")


def report_failure(node: Widget | App[Any], failure: Failure) -> None:
    """Log an unexpected failure, then say it in a notification (plain text, never markup)."""
    if failure.unexpected:
        log_failure(node, failure)
    node.notify(failure.text, severity="error", markup=False, timeout=15)


@dataclass(frozen=True)
class ThreadJob(Generic[T]):
    """What a screen asked ``run_in_thread`` to do with a worker's answer."""

    what: str
    done: Callable[[T], object]
    failed: Callable[[Failure], object] | None


class ReportsFailures(ScreenBase):
    """Mixin for a ``Screen`` (or ``ModalScreen``): no worker of the screen fails silently.
    See the module's docstring for how a screen adopts it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.thread_jobs: dict[Worker[Any], ThreadJob[Any]] = {}

    def run_in_thread(
        self,
        job: Callable[[], T],
        *,
        what: str,
        group: str,
        done: Callable[[T], object],
        failed: Callable[[Failure], object] | None = None,
        exclusive: bool = True,
    ) -> Worker[T]:
        """Call ``job`` in a thread worker; ``done`` gets its result, ``failed`` its failure,
        both on the event loop. ``what`` completes "Could not …" in the words shown."""
        worker: Worker[T] = self.run_worker(
            job,
            thread=True,
            exclusive=exclusive,
            group=group,
            description=what,
            exit_on_error=False,
        )
        # Safe after the start: the worker's state changes are handled on this event loop,
        # after this handler returns.
        self.thread_jobs[worker] = ThreadJob(what, done, failed)
        return worker

    def worker_failed(self, worker: Worker[Any], failure: Failure) -> None:
        """A worker not started by ``run_in_thread`` ended in an exception (already logged and
        notified). Override to undo the busy state it leaves behind."""

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if event.state not in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            return
        job = self.thread_jobs.pop(worker, None)
        if job is None:
            if event.state == WorkerState.ERROR and worker.error is not None:
                what = f"complete the background task {worker.name or worker.group!r}"
                failure = Failure(what, worker.error)
                report_failure(self, failure)
                self.worker_failed(worker, failure)
            return
        if event.state == WorkerState.CANCELLED:
            return  # replaced by a newer call, whose answer is the one to show
        if event.state == WorkerState.SUCCESS:
            try:
                job.done(worker.result)
                return
            except Exception as error:  # noqa: BLE001 - said in words below, never lost
                failure = Failure(job.what, error)
        else:
            failure = Failure(job.what, worker.error or RuntimeError("no error recorded"))
        self.hand_back(job, failure)

    def hand_back(self, job: ThreadJob[Any], failure: Failure) -> None:
        """Log an unexpected failure, then let the screen show it and undo its busy state."""
        if job.failed is None:
            report_failure(self, failure)
            return
        if failure.unexpected:
            log_failure(self, failure)
        try:
            job.failed(failure)
        except Exception as error:  # noqa: BLE001 - the screen could not show it: notify
            report_failure(self, Failure(job.what, error))
