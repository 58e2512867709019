"""``F``: done with a session a host started in a worktree (``store.hosts.finishing``), asked
y/n first. Its host removes the worktree and keeps the branch; the session ends. When the
worktree holds what is not committed, the dialog names it and removes nothing; ``y`` again then
discards it. The commands that would merge or push the branch are said, for you to run."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from roundtable_console.screens.context import ConsoleContext
from roundtable_console.screens.dialogs.confirm import ConfirmActionDialog
from roundtable_console.screens.failures import Failure
from roundtable_console.screens.outcomes import AgentStopResult
from roundtable_console.store.records import SessionFields
from roundtable_console.store.safety.display import one_line

ACTION = "finish"


def finished_words(done: dict[str, Any]) -> str:
    words = f"Finished {one_line(str(done['session_id']), 40)}: removed {done['removed']}."
    if done.get("branch"):
        words += f" The branch {done['branch']} is kept; to merge or push it: "
        words += " · ".join(done.get("commands") or [])
    return words


class FinishDialog(ConfirmActionDialog):
    """Closes with what was finished (``report``), or None (cancelled)."""

    RETRY_HINT = "Press y to try again, or n to give up."

    def __init__(self, *, ctx: ConsoleContext, session: SessionFields) -> None:
        body = Text(
            f"Its host {one_line(session.host or '', 40)} removes its worktree and keeps its "
            "branch; the session ends. Nothing is pushed, merged or deleted. Its agent must not "
            "run (X stops it)."
        )
        super().__init__(ctx=ctx, action=ACTION, session=session,
                         title=f"Finish {one_line(session.id, 60)}?", body=body)  # fmt: skip
        self.discard = False

    def _perform(self) -> dict[str, Any]:  # type: ignore[override]
        return self.ctx.source.finish(self.session.id, self.discard)

    def performed(self, outcome: dict[str, Any]) -> None:  # type: ignore[override]
        self.dismiss(AgentStopResult(ACTION, self.session, report=finished_words(outcome)))

    def refused(self, failure: Failure) -> None:
        if failure.code == "worktree_not_clean" and not self.discard:
            self.busy = False
            self.discard = True
            shown = Text(failure.text)
            shown.append("\ny discards them and removes the worktree · n keeps everything",
                         style="bold")  # fmt: skip
            self.show_error(shown)
            return
        super().refused(failure)
