"""What follows a notice (issue 44): it is closed when answered, and told again when ignored.

- **Answered.** Each change of a session the notifier reads (heartbeats too) looks for news of
  it still open (``store.push.told``). News the session no longer holds — its request decided,
  its reply sent, its wait or turn over, from any surface, by anyone — is closed on every
  receiver in one statement; the server that closed it sends each device an "answered" push
  (its service worker closes the notice of that tag and shows none) and each webhook a
  follow-up saying by whom and how.
- **Told again.** A wait still open after ``NotifySettings.again`` is told once more to the
  devices and webhooks told of it, and to the escalation webhooks (``--escalate``) for the first
  time; never more than that per wait.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from datetime import timedelta
from typing import Protocol

from sqlalchemy import Connection

from roundtable_console.api.notify.webhook_words import chat_text
from roundtable_console.store.clock import Clock, format_ts
from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import SessionNotFound
from roundtable_console.store.push import told as told_news
from roundtable_console.store.push.subscriptions import NEEDS_YOU, takes_silent_pushes
from roundtable_console.store.push.telling import (
    Notice,
    Recipient,
    answered_payload,
    notice_of,
    recipients,
)
from roundtable_console.store.reads.sessions import get_session
from roundtable_console.store.records import Change, SessionFields
from roundtable_console.store.safety.display import one_line

log = logging.getLogger("roundtable.serve")


class Sender(Protocol):
    def send(self, devices: list[Recipient], notice: Notice) -> None: ...

    def send_text(self, devices: list[Recipient], payload: str, urgency: str) -> None: ...


class Telling(Protocol):
    """What of the notifier (``api.notify.notifier.Notifier``) follows up."""

    store: Store
    clock: Clock
    settings: NotifySettingsLike
    sender: Sender

    def post_to(self, urls: list[str], body: bytes) -> None: ...

    def webhook_id(self, url: str) -> str: ...

    def webhook_urls(self) -> dict[str, str]: ...

    def webhook_body(self, notice: Notice) -> bytes: ...


class NotifySettingsLike(Protocol):
    @property
    def again(self) -> float: ...

    @property
    def escalate(self) -> tuple[str, ...]: ...


class FollowUp:
    """The notifier's answers and second words (its feed's thread calls them)."""

    def __init__(self, notifier: Telling) -> None:
        self.notifier = notifier

    def answer(self, changes: Iterable[Change]) -> None:
        """Close what the sessions of ``changes`` no longer hold (a wait that stopped is over,
        even when another began before this read)."""
        store, clock = self.notifier.store, self.notifier.clock
        changes = list(changes)
        ids = [change.session_id for change in changes]
        # When each session's wait last stopped in this read: a wait told after it is another.
        stopped: dict[str, str] = {}
        for change in changes:
            if change.change == "waiting_stopped":
                stopped[change.session_id] = max(change.at, stopped.get(change.session_id, ""))
        if not ids:
            return
        with store.read() as db:
            open_news = told_news.open_news(db, ids)
            if not open_news:
                return
            sessions = {told.session_id: _session(db, told.session_id) for told in open_news}
        for told in open_news:
            session = sessions[told.session_id]
            over = told.kind == NEEDS_YOU and stopped.get(told.session_id, "") >= told.told_at
            if not over and told_news.still_holds(session, told):
                continue
            with store.write() as db:
                by, how = told_news.answered_how(db, told)
                words = how if by is None else f"{how} by {by}"
                receivers = told_news.take_answered(db, told, how=words, clock=clock)
            if not receivers:
                continue  # another server closed it
            devices = []
            if told_news.DEVICES in receivers and session is not None:
                devices = [
                    device
                    for device in self._devices(session, told.kind, in_view=True)
                    if takes_silent_pushes(device.endpoint)
                ]
            at = format_ts(clock())
            if devices:
                self.notifier.sender.send_text(
                    devices, answered_payload(told.session_id, told.kind, words, at), "normal"
                )
            agent = session.agent_id if session is not None else None
            body = follow_up_body(told, agent, by, how, at)
            self.notifier.post_to(self._webhooks_among(receivers), body)

    def tell_again(self) -> None:
        """Tell once more each wait still open past the notify-again period."""
        settings, store, clock = self.notifier.settings, self.notifier.store, self.notifier.clock
        if settings.again <= 0:
            return
        with store.read() as db:
            due = told_news.due_again(db, after=timedelta(seconds=settings.again), clock=clock)
        for told in due:
            self._again(told)

    def _again(self, told: told_news.Open) -> None:
        notifier = self.notifier
        store, clock = notifier.store, notifier.clock
        escalations = {told_news.WEBHOOK + notifier.webhook_id(url): url
                       for url in notifier.settings.escalate}  # fmt: skip
        with store.write() as db:
            session = _session(db, told.session_id)
            notice = None
            if session is not None and told_news.still_holds(session, told):
                notice = notice_of(session, told.kind, format_ts(clock()), again=True)
            receivers = told_news.take_again(db, told, clock=clock)
            if notice is None or not receivers or session is None:
                return  # answered meanwhile (the next change closes it), or another server's
            fresh = [receiver for receiver in escalations if receiver not in receivers]
            told_news.record_told(
                db, receivers=fresh, session_id=told.session_id, kind=told.kind,
                about=told.about, title=notice.title, body=notice.body, url=notice.url,
                again=True, clock=clock,
            )  # fmt: skip
        if told_news.DEVICES in receivers:
            devices = self._devices(session, told.kind, in_view=False)
            if devices:
                notifier.sender.send(devices, notice)
        notifier.post_to(
            [*self._webhooks_among(receivers), *(escalations[r] for r in fresh)],
            notifier.webhook_body(notice),
        )

    def _devices(self, session: SessionFields, kind: str, *, in_view: bool) -> list[Recipient]:
        """The devices to push to, read apart from the writer (a heartbeat waits for the
        writer, never for a thousand devices)."""
        with self.notifier.store.read() as db:
            return recipients(db, session, kind, in_view=in_view, clock=self.notifier.clock)

    def _webhooks_among(self, receivers: Iterable[str]) -> list[str]:
        known = self.notifier.webhook_urls()
        return [known[receiver] for receiver in receivers if receiver in known]


def _session(db: Connection, session_id: str) -> SessionFields | None:
    try:
        return get_session(db=db, session_id=session_id)
    except SessionNotFound:
        return None


def follow_up_body(
    told: told_news.Open, agent: str | None, by: str | None, how: str, at: str
) -> bytes:
    """A webhook's follow-up: which news was answered, by whom, how (``text`` for chats)."""
    who = one_line(agent or "an agent", 40)
    words = how if by is None else f"{how} by {by}"
    message = f"{one_line(told.session_id, 40)} · {words}"
    body = {
        "kind": "answered",
        "event": "roundtable.answered",
        "answered": told.kind,
        "session_id": told.session_id,
        "agent_id": agent,
        "by": by,
        "how": how,
        "title": f"{who}: answered",
        "message": message,
        "text": chat_text(f"{who}: answered: {message}"),
        "at": at,
    }
    return json.dumps(body, ensure_ascii=True).encode("ascii")
