"""How a route finds its one session, within the caller's reach: by the route's workspace (the
reference's ``/workspaces/{w}/sessions/{id}/…``), or by its id alone (people's clients'
``/api/v1/sessions/{id}/…``, where a session of no workspace is reached too). Either way, one
beyond the caller's reach answers exactly as one that does not exist."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection

from roundtable_console.api.context import ServerContext
from roundtable_console.api.edge.identity import Caller
from roundtable_console.store.db.models import AgentSession
from roundtable_console.store.reads.sessions import get_session

Found = Callable[[Connection, Caller], AgentSession]


def in_workspace(ctx: ServerContext, workspace_id: str, session_id: str) -> Found:
    return lambda db, caller: ctx.session_in(db, caller, workspace_id, session_id)


def by_id(session_id: str) -> Found:
    return lambda db, caller: caller.wall.checked(get_session(db=db, session_id=session_id))


def own_agents_only(caller: Caller, session: AgentSession, what: str) -> None:
    """What an agent did and was told (its transcript, its changes: ``what``) is read by an
    agent token for its own agent's sessions only (people, viewers too, read every session's
    they may read)."""
    from roundtable_console.api.problems import Problem

    if caller.role == "agent" and caller.agent_id not in (None, session.agent_id):
        raise Problem(
            "forbidden",
            f"The token {caller.name!r} acts for agent {caller.agent_id!r}: it reads only that "
            f"agent's {what}.",
        )
