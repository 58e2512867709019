"""``X``: stop the selected session's agent process (``agents.stopping``), asked y/n first as
stop is. Where ``R`` or a host started it; an agent started by hand is said to be out of reach,
and the dialog stays open so that ``y`` may try again."""

from __future__ import annotations

from rich.text import Text

from roundtable_console.agents.panes import GRACE_SECONDS
from roundtable_console.agents.stopping import AgentStopped
from roundtable_console.screens.context import ConsoleContext
from roundtable_console.screens.dialogs.confirm import ConfirmActionDialog
from roundtable_console.screens.outcomes import AgentStopResult
from roundtable_console.store.records import SessionFields
from roundtable_console.store.safety.display import one_line

ACTION = "stop agent"


class StopAgentDialog(ConfirmActionDialog):
    """Closes with an ``AgentStopResult`` once the agent was signalled, or None (cancelled)."""

    def __init__(self, *, ctx: ConsoleContext, session: SessionFields) -> None:
        body = Text(
            f"Its agent's process gets SIGINT, then SIGTERM if it has not exited after "
            f"{GRACE_SECONDS:.0f} s, in the tmux pane where R or its host started it. The "
            "session's status is its hooks' to change; nothing else is done."
        )
        super().__init__(
            ctx=ctx,
            action=ACTION,
            session=session,
            title=f"Stop the agent of {one_line(session.id, 60)}?",
            body=body,
        )

    def _perform(self) -> AgentStopped:  # type: ignore[override]
        """In a thread: the stop, where the agent runs, recorded with the operator."""
        return self.ctx.source.stop_agent(self.session.id)

    def performed(self, outcome: AgentStopped) -> None:  # type: ignore[override]
        self.dismiss(AgentStopResult(ACTION, self.session, report=outcome.words(self.session.id)))
