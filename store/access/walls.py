"""What a caller bound to workspaces may reach: the rule, decided once, that every read and write
of ``roundtable serve`` follows (its routes, the web console's pages, counts, texts and streams).

A token may be bound to workspaces (``roundtable tokens create --workspace W``). Its caller then
reaches:

- a session whose workspace (its column, else its metadata's) is one of them; a session with no
  workspace is out of its reach, read and write alike, and answers as one that does not exist;
- of the rows around such a session, only those of the session's own workspace: its agent's
  claims and proposals by their ``workspace_id``, its run's events by the run's workspace
  (``store.reads.events``), the tasks and decisions its briefing names through those claims and
  proposals. An agent or a run shared with another workspace shows nothing of that workspace.

An unbound caller (``OPEN``: the console, the CLI, a token bound to no workspace) reaches every
session and every row around it, as the reference does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from roundtable_console.store.errors import SessionNotFound
from roundtable_console.store.records import SessionFields

S = TypeVar("S", bound=SessionFields)


@dataclass(frozen=True)
class Wall:
    """The workspaces a caller reaches; ``workspaces`` None: every one."""

    workspaces: frozenset[str] | None = None

    @classmethod
    def of(cls, workspaces: Iterable[str] | None) -> Wall:
        return OPEN if workspaces is None else cls(frozenset(workspaces))

    @property
    def bound(self) -> bool:
        return self.workspaces is not None

    def reaches(self, workspace_id: str | None) -> bool:
        """Whether a workspace (None: a session's lack of one) is within reach."""
        if self.workspaces is None:
            return True
        return workspace_id is not None and workspace_id in self.workspaces

    def admits(self, session: SessionFields) -> bool:
        return self.reaches(session.effective_workspace_id)

    def checked(self, session: S) -> S:
        """``session`` when within reach; else it answers as a session that does not exist."""
        if not self.admits(session):
            raise SessionNotFound(f"No session has the id {session.id!r}.")
        return session

    def around(self, session: SessionFields) -> str | None:
        """The workspace the rows around ``session`` must belong to for this caller; None: any
        (an unbound caller). A session out of reach answers as one that does not exist."""
        if self.workspaces is None:
            return None
        return self.checked(session).effective_workspace_id


OPEN = Wall()
