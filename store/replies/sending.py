"""A human's reply to an agent that waits for a prompt: carried by the finished turn's hook that
listens for it (Claude Code's ``Stop`` hook, ``listeners``), else typed into the tmux pane the
session was started in (``agents.replying`` types it). Which can carry it is the ``ReplyRoute``;
where neither can, there is no reply to send.

One durable transaction: the access check (``before``), the route judged again, the listening
row's compare-and-set (or the keys typed, by ``type_keys``), the history row ``replied`` with
its actor (the audit trail), the session's wait answered, and the caller's idempotency record
(``within``). What the agent receives is the reply as stored: redacted, so a secret typed into a
reply never travels through Roundtable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import Connection, text, update

from roundtable_console.store.access.walls import OPEN, Wall
from roundtable_console.store.clock import Clock, format_ts, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.session_rows import SESSIONS
from roundtable_console.store.errors import InvalidReply, NoReplyPath
from roundtable_console.store.reads.launches import last_launch
from roundtable_console.store.reads.sessions import get_session
from roundtable_console.store.records import SessionFields
from roundtable_console.store.replies.listeners import ReplyListenerRecord, listening_for
from roundtable_console.store.requests.records import REPLY_EVENT
from roundtable_console.store.safety.credentials import redact_output_text
from roundtable_console.store.safety.display import one_line
from roundtable_console.store.validation import has_control_characters
from roundtable_console.store.writes.history import append_session_event

HOOK = "hook"
PANE = "pane"
MAX_REPLY_CHARACTERS = 4000

_REPLY = text(
    "UPDATE reply_listeners SET state = 'replied', message = :message, replied_by = :actor,"
    " replied_at = :now WHERE id = :id AND state = 'listening' AND expires_at > :now"
)
_OPEN_REQUESTS = text(
    "SELECT 1 FROM permission_requests WHERE session_id = :session_id AND state = 'pending'"
    " AND expires_at > :now LIMIT 1"
)
_HOOK_WORDS = {"claude-code": "Claude Code's Stop hook"}


@dataclass(frozen=True)
class ReplyRoute:
    """What can carry a reply to a session now (``via``: HOOK, PANE, or None) and, in words,
    which, or why nothing can."""

    via: str | None
    words: str
    listener: ReplyListenerRecord | None = None
    launch: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "possible": self.via is not None,
            "via": self.via,
            "words": self.words,
            "until": self.listener.expires_at if self.listener is not None else None,
        }


class Replies(Protocol):
    """A reply's two steps, whichever way the sessions are reached: the store itself
    (``agents.replying.StoreReplies``) or a server (``client.server_source.ServerSource``)."""

    def route_to(self, session_id: str) -> ReplyRoute:
        """What can carry a reply to the session now, or why nothing can."""

    def send_to(self, session_id: str, message: str) -> SentReply:
        """``message`` sent by whichever route can carry it now."""


@dataclass(frozen=True)
class SentReply:
    session_id: str
    via: str
    message: str  # as sent: redacted
    hidden: bool  # redaction hid part of what was typed
    replied_by: str
    replied_at: str

    def to_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "via": self.via,
            "message": self.message,
            "hidden": self.hidden,
            "replied_by": self.replied_by,
            "replied_at": self.replied_at,
        }


def checked_reply(message: str | None) -> str:
    """The reply as an operator means it: stripped, 1…4000 printable characters (lines kept)."""
    cleaned = (message or "").strip()
    if not cleaned:
        raise InvalidReply("A reply needs some text.")
    if len(cleaned) > MAX_REPLY_CHARACTERS or has_control_characters(
        cleaned.replace("\n", " ").replace("\t", " ")
    ):
        raise InvalidReply(f"A reply is at most {MAX_REPLY_CHARACTERS} printable characters.")
    return cleaned


# What an agent's prompt runs rather than reads at a line's start: a shell command (!), a slash
# command (/), a memory note (#). A reply typed into a pane never begins with one.
_PROMPT_COMMANDS = ("!", "/", "#")


def pane_line(message: str) -> str:
    """``message`` as it is typed into a pane: one line (its line breaks and tabs as spaces,
    which the prompt would take as Enter and completion), never a command of the prompt's."""
    line = " ".join(message.replace("\t", " ").split("\n")).strip()
    if line.startswith(_PROMPT_COMMANDS):
        raise InvalidReply(
            "A reply typed into the agent's pane cannot begin with !, / or #: its prompt would "
            "run it as a command. Nothing was sent."
        )
    return line


def route_in_store(
    db: Connection, session: SessionFields, now: str
) -> tuple[ReplyRoute | None, Mapping[str, Any] | None]:
    """What the store alone says: a route refused (why), or the listening hook's route, or
    (None, the session's tmux launch) for the caller to look at that pane."""
    if not session.is_active:
        ended = f"The session is {session.status}: nothing waits for a reply."
        return ReplyRoute(None, ended), None
    if db.execute(_OPEN_REQUESTS, {"session_id": session.id, "now": now}).first() is not None:
        return ReplyRoute(
            None, "It asks a permission: allow or deny that (y/n) before replying."
        ), None
    if session.waiting is None and session.turn_done is None:
        return ReplyRoute(None, "Its agent is not waiting for a prompt or an answer."), None
    listener = listening_for(db, session.id, now)
    if listener is not None:
        hook = _HOOK_WORDS.get(listener.agent, f"{listener.agent}'s hook")
        words = f"through {hook}, which listens until {listener.expires_at}"
        return ReplyRoute(HOOK, words, listener=listener), None
    launch = last_launch(db, session.id)
    if not (launch and launch.get("tmux_pane")):
        return ReplyRoute(None, NOTHING_LISTENS), None
    if session.waiting is not None:
        # What it asks in its terminal (a permission, a choice) would take typed keys as its
        # answer, the Enter as its default: only a prompt is typed into.
        asks = one_line(session.waiting.reason, 120)
        return ReplyRoute(None, f"It asks in its own terminal ({asks}): answer it there."), None
    return None, launch


NOTHING_LISTENS = (
    "Nothing here can carry a reply: no hook of its agent listens (install them with "
    "--reply-wait) and it was not started in a tmux pane from here. Answer in its own terminal."
)


def send_reply(
    *,
    store: Store,
    session_id: str,
    message: str,
    actor: str,
    pane_route: Callable[[Mapping[str, Any]], ReplyRoute],
    type_keys: Callable[[Mapping[str, Any], str], None],
    wall: Wall = OPEN,
    clock: Clock = system_clock,
    before: Callable[[Connection], object] | None = None,
    within: Callable[[Connection, SentReply], None] | None = None,
    expected_via: str | None = None,
) -> SentReply:
    """Send ``message`` to ``session_id``'s agent as ``actor``. ``pane_route`` judges a tmux
    launch (is that very pane there?); ``type_keys`` types into it (raising ``NoReplyPath``
    when it cannot). ``expected_via``: the route the operator was shown (a reply is never
    carried by another one than they saw). Refusals: ``SessionNotFound`` (missing or out of
    reach), ``InvalidReply``, ``NoReplyPath`` (why, in words).

    A pane's keys are typed after the session row is claimed on its version (a second reply
    waits for this transaction, then finds the row moved: typed once), and before the commit (a
    pane that does not take them rolls the reply back)."""
    cleaned = checked_reply(message)
    sent = redacted = redact_output_text(cleaned)
    with store.write(durable=True) as db:
        if before is not None:
            before(db)
        now = format_ts(clock())
        session = wall.checked(get_session(db=db, session_id=session_id))
        route, launch = route_in_store(db, session, now)
        if route is None and launch is not None:
            route = pane_route(launch)
        assert route is not None
        if route.via is None:
            raise NoReplyPath(route.words)
        if expected_via is not None and route.via != expected_via:
            raise NoReplyPath(
                f"What carries a reply changed since it was shown: it now goes {route.words}. "
                "Nothing was sent; look again."
            )
        if route.via == HOOK:
            assert route.listener is not None
            values = {"id": route.listener.id, "message": sent, "actor": actor, "now": now}
            if db.execute(_REPLY, values).rowcount == 0:
                raise NoReplyPath("Its hook stopped listening just now: nothing was sent.")
            _answer_wait(db, session, claimed_version=False)
        else:
            assert route.launch is not None
            sent = pane_line(sent)
            if not _answer_wait(db, session, claimed_version=True):
                raise NoReplyPath("Another reply or change came first: nothing was sent.")
            type_keys(route.launch, sent)
        append_session_event(
            db,
            session_id=session.id,
            event_type=REPLY_EVENT,
            payload={"via": route.via, "message": sent},
            now=now,
            actor=actor,
        )
        hidden = redacted != cleaned
        outcome = SentReply(session.id, route.via, sent, hidden, actor, now)
        if within is not None:
            within(db, outcome)
        return outcome


def _answer_wait(db: Connection, session: SessionFields, *, claimed_version: bool) -> bool:
    """The session's wait answered: on the version read when ``claimed_version`` (False: the
    row moved meanwhile, and nothing changed), else whatever its version."""
    rows = SESSIONS.c
    where = [rows.id == session.id]
    if claimed_version:
        where.append(rows.version == session.version)
    else:
        where.append(rows.waiting_reason.is_not(None))
    changed = db.execute(
        update(SESSIONS)
        .where(*where)
        .values(waiting_reason=None, waiting_since=None, version=rows.version + 1)
    )
    return changed.rowcount == 1
