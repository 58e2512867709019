"""What the web console shows of a reply to an agent (``agents.replying``) on the session's page:
while the session's agent waits for a prompt or an answer, what can carry a reply now (its hook,
its tmux pane) and, for an operator, the form that sends one; where nothing can, why, and no
form. A session that waits for nothing shows nothing of it."""

from __future__ import annotations

from dataclasses import dataclass

from roundtable_console.agents.replying import reply_route
from roundtable_console.api.context import ServerContext
from roundtable_console.api.edge.identity import Caller
from roundtable_console.api.hosts.panes import panes_of
from roundtable_console.store.records import SessionFields
from roundtable_console.store.replies.sending import MAX_REPLY_CHARACTERS


@dataclass(frozen=True)
class ReplyView:
    session_id: str
    via: str | None  # "hook", "pane", or None: nothing can carry one
    words: str
    # Which route this is (its listening hook, its pane): the page tells a new one from the one
    # shown, so that a reply being typed is not wiped by a refresh that changed nothing.
    key: str
    max_characters: int = MAX_REPLY_CHARACTERS


def reply_view(ctx: ServerContext, caller: Caller, session: SessionFields) -> ReplyView | None:
    """Runs in a worker (a tmux pane may be looked at)."""
    if session.waiting is None and session.turn_done is None:
        return None
    route = reply_route(
        ctx.store, session.id, wall=caller.wall, clock=ctx.clock, panes=panes_of(ctx)
    )
    if route.via is None and not session.is_active:
        return None
    mark = route.listener.id if route.listener is not None else ""
    return ReplyView(session.id, route.via, route.words, f"reply:{route.via or 'none'}:{mark}")
