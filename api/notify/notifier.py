"""Telling operators where they are (issue 31): Web Push to the devices that asked
(``store.push``), and JSON posts to the webhooks ``serve --notify URL`` names.

One thread per server follows the change feed (woken by the server's change hub, never a
timer). A session that starts waiting on a human, or whose agent's turn is done, is looked at
again after the dwell (``NotifySettings.dwell``): still so, it is told to each receiver that
wants it and has not been told of that session within the cooling period (the claim is the
store's, so of several servers one tells it). Pushes leave from processes of lower priority,
one per core (``api.notify.push_processes``), webhooks from a queue of their own with retries
and backoff: neither holds a request, the feed or each other. A push service's 404 or 410
drops the subscription. No log line holds a webhook's URL, a push endpoint or a key: only their
origins.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from urllib.parse import urlsplit

from roundtable_console.api.notify.budget_watch import LOOK_EVERY, BudgetWatch
from roundtable_console.api.notify.follow_up import FollowUp
from roundtable_console.api.notify.push_processes import PushSender
from roundtable_console.api.notify.webhook_words import webhook_body
from roundtable_console.api.streams.change_hub import ChangeHub
from roundtable_console.store.budgets.limits import Budget
from roundtable_console.store.clock import Clock, format_ts, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import SessionNotFound
from roundtable_console.store.push.keys import VapidKeys, vapid_keys
from roundtable_console.store.push.subscriptions import (
    FAILED,
    NEEDS_YOU,
    TURN_DONE,
    drop_subscription,
)
from roundtable_console.store.push.telling import (
    Notice,
    claim,
    failure_of,
    notice_of,
    recipients,
    signed_out_payload,
)
from roundtable_console.store.push.telling import tidy as tidy_push
from roundtable_console.store.push.told import (
    DEVICES,
    WEBHOOK,
    about_of,
    record_told,
    tidy_told,
)
from roundtable_console.store.reads.changes import ChangeFeed, ChangeFilter
from roundtable_console.store.reads.sessions import get_session
from roundtable_console.store.records import Change

log = logging.getLogger("roundtable.serve")
# How long the feed waits for the hub before it looks at its clock again.
WAIT_SECONDS = 1.0
WEBHOOK_TIMEOUT = 5.0
# How often the notifier looks for waits to tell again (seconds).
AGAIN_EVERY = 1.0
WEBHOOK_TRIES = 6
WEBHOOK_QUEUE = 1000
# How often the notifier tidies (seconds): a device whose sign-in ended is told within it.
TIDY_SECONDS = 60.0
KIND_OF_CHANGE = {"waiting_started": NEEDS_YOU, "turn_done": TURN_DONE, "stale": FAILED}


def kind_of(change: Change) -> str | None:
    """The kind of news a change may be (``tell`` decides whether it is, after the dwell): a
    session that failed, or went stale (``failed`` if its agent holds claims)."""
    if change.change in ("status", "ended") and change.status == "failed":
        return FAILED
    return KIND_OF_CHANGE.get(change.change)


def origin_of(url: str) -> str:
    """What a log line may say of a URL: its scheme and host (its path and query may be its
    secret)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or '?'}"


def receiver_of_webhook(url: str, kind: str) -> str:
    return f"webhook:{Notifier.webhook_id(url)}:{kind}"


@dataclass(frozen=True)
class NotifySettings:
    """``dwell``: seconds a session must stay waiting (or done) before it is told, so what a
    human or the agent settles at once rings nobody. ``cooling``: at most one push per session
    and device in that many seconds. ``webhooks``: ``--notify`` URLs. ``push_services``:
    origins a subscription's endpoint may have besides https push services (``--push-service``).
    ``contact``: the VAPID ``sub`` claim a push service may write to. ``again``: seconds after
    which a wait still unanswered is told once more (0: never); ``escalate``: webhooks told only
    then (``--escalate``)."""

    dwell: float = 2.0
    cooling: float = 300.0
    webhooks: tuple[str, ...] = ()
    again: float = 600.0
    escalate: tuple[str, ...] = ()
    push_services: tuple[str, ...] = ()
    contact: str = "mailto:roundtable@localhost"


@dataclass
class Notifier:
    store: Store
    hub: ChangeHub
    settings: NotifySettings = field(default_factory=NotifySettings)
    clock: Clock = system_clock
    stale_after_seconds: float = 300.0
    # The configuration's budgets, watched here (api.notify.budget_watch).
    budgets: tuple[Budget, ...] = ()

    def __post_init__(self) -> None:
        self.closing = threading.Event()
        self._changed = threading.Event()
        self._thread: threading.Thread | None = None
        self.sender = PushSender(self)
        self.follow_up = FollowUp(self)
        self.budget_watch = BudgetWatch(self, self.budgets)
        self._keys: VapidKeys | None = None
        self._keys_lock = threading.Lock()
        self._webhooks: queue.Queue[tuple[str, bytes]] = queue.Queue(WEBHOOK_QUEUE)
        self._webhook_thread: threading.Thread | None = None

    # -- the life of the thread ---------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="roundtable-notify", daemon=True)
        self._thread.start()
        if self.settings.webhooks or self.settings.escalate:
            self._webhook_thread = threading.Thread(
                target=self._post_webhooks, name="roundtable-webhooks", daemon=True
            )
            self._webhook_thread.start()

    def close(self) -> None:
        self.closing.set()
        self._changed.set()
        self.sender.close()

    def contact(self) -> str:
        return self.settings.contact

    def keys(self) -> VapidKeys:
        """The store's VAPID keys, read (or made) once per server."""
        with self._keys_lock:
            if self._keys is None:
                self._keys = vapid_keys(store=self.store, clock=self.clock)
            return self._keys

    def _run(self) -> None:
        # Heartbeats too: any change of a session may answer what it was told of.
        feed = ChangeFeed(
            filters=ChangeFilter(heartbeats=True),
            stale_after_seconds=self.stale_after_seconds,
            clock=self.clock,
        )
        while not feed.started and not self.closing.is_set():
            try:
                with self.store.read() as db:
                    feed.start(db=db)
            except Exception:  # noqa: BLE001 - the store is unreachable for now: try again
                log.warning("notifications: the store could not be read; retrying")
                self.closing.wait(WAIT_SECONDS)
        self.hub.watch(self._changed)
        due: list[tuple[float, str, str]] = []  # (when, session, kind), soonest first
        tidied = looked_again = budgets_looked = time.monotonic()
        while not self.closing.is_set():
            wait = WAIT_SECONDS if not due else max(min(due[0][0] - time.monotonic(), 1.0), 0)
            self._changed.wait(wait)
            self._changed.clear()
            if self.closing.is_set():
                return
            try:
                with self.store.read() as db:
                    changes = feed.read(db=db)
            except Exception:  # noqa: BLE001 - the store is unreachable for now: read again
                log.warning("notifications: the change feed could not be read; retrying")
                self.closing.wait(WAIT_SECONDS)
                continue
            self._quietly(partial(self.follow_up.answer, changes), "closing what was answered")
            if time.monotonic() - looked_again >= AGAIN_EVERY:
                looked_again = time.monotonic()
                self._quietly(self.follow_up.tell_again, "telling again")
            if self.budgets and time.monotonic() - budgets_looked >= LOOK_EVERY:
                budgets_looked = time.monotonic()
                self._quietly(self.budget_watch.look, "looking at the budgets")
            for change in changes:
                kind = kind_of(change)
                if kind is not None:
                    heapq.heappush(
                        due, (time.monotonic() + self.settings.dwell, change.session_id, kind)
                    )
            while due and due[0][0] <= time.monotonic():
                _when, session_id, kind = heapq.heappop(due)
                try:
                    self.tell(session_id, kind)
                except Exception:  # noqa: BLE001 - one notice lost; the thread goes on
                    log.warning("notifications: a notice could not be told", exc_info=True)
            if time.monotonic() - tidied > TIDY_SECONDS:
                tidied = time.monotonic()
                self._quietly(self.tidy)

    def tidy(self) -> None:
        """Drop what can no longer matter; tell each device whose sign-in ended that it is
        signed out (once: its subscription is gone after)."""
        ended = tidy_push(
            store=self.store, cooling=timedelta(seconds=self.settings.cooling), clock=self.clock
        )
        # Told at once: the subscriptions are gone, and a later step's failure must not lose it.
        self.sender.send_text(ended, signed_out_payload(format_ts(self.clock())), "normal")
        with self.store.write() as db:
            tidy_told(db, clock=self.clock)

    def _quietly(self, work: Callable[[], object], what: str = "tidying up") -> None:
        try:
            work()
        except Exception:  # noqa: BLE001 - a failed step is tried again later
            log.warning("notifications: %s failed; trying again later", what)

    # -- what is told -------------------------------------------------------------------------

    def tell(self, session_id: str, kind: str) -> None:
        """Tell ``session_id``'s ``kind`` of news to whoever should hear it now (the dwell is the
        caller's: the feed's thread, or a test)."""
        cooling = timedelta(seconds=self.settings.cooling)
        try:
            # Who would hear it, read without the store's writer; then the claim, one short
            # write (a heartbeat waits for the writer, never for a thousand devices).
            with self.store.read() as db:
                try:
                    session = get_session(db=db, session_id=session_id)
                except SessionNotFound:
                    return
                failure = None
                if kind == FAILED:
                    stale_after = timedelta(seconds=self.stale_after_seconds)
                    failure = failure_of(db, session, stale_after=stale_after, clock=self.clock)
                notice = notice_of(session, kind, format_ts(self.clock()), failure=failure)
                if notice is None:
                    return
                wanted = recipients(db, session, kind, clock=self.clock)
            about = about_of(session, kind)
            hooks = {receiver_of_webhook(url, kind): url for url in self.settings.webhooks}
            devices_receiver = f"push:{kind}"
            receivers = ([devices_receiver] if wanted else []) + list(hooks)
            if not receivers:
                return
            with self.store.write() as db:
                taken = claim(
                    db,
                    receivers=receivers,
                    session_id=session_id,
                    cooling=cooling,
                    clock=self.clock,
                )
                devices = wanted if devices_receiver in taken else []
                urls = [url for receiver, url in hooks.items() if receiver in taken]
                record_told(
                    db,
                    receivers=[DEVICES] * bool(devices)
                    + [WEBHOOK + self.webhook_id(url) for url in urls],
                    session_id=session_id, kind=kind, about=about or "", title=notice.title,
                    body=notice.body, url=notice.url, clock=self.clock,
                )  # fmt: skip
        except Exception:  # noqa: BLE001 - the store is unreachable: this news is not told
            log.warning("notifications: could not read who to tell of a session; skipped")
            return
        if devices:
            self.sender.send(devices, notice)
        self.post_to(urls, self.webhook_body(notice))

    def webhook_body(self, notice: Notice) -> bytes:
        return json.dumps(webhook_body(notice), ensure_ascii=True).encode("ascii")

    def post_to(self, urls: list[str], body: bytes) -> None:
        """Queue ``body`` for each webhook of ``urls`` (its own thread posts them)."""
        for url in urls:
            try:
                self._webhooks.put_nowait((url, body))
            except queue.Full:
                log.warning("notifications: the webhook queue is full; a notice to %s dropped",
                            origin_of(url))  # fmt: skip

    @staticmethod
    def webhook_id(url: str) -> str:
        return hashlib.sha256(url.encode("utf-8")).hexdigest()[:32]

    def webhook_urls(self) -> dict[str, str]:
        """Each webhook of this server (told first, or only on escalation) by its receiver."""
        every = (*self.settings.webhooks, *self.settings.escalate)
        return {WEBHOOK + self.webhook_id(url): url for url in every}

    def drop(self, subscription_id: str) -> None:
        self._quietly(lambda: drop_subscription(store=self.store, subscription_id=subscription_id))
        log.info("notifications: a device's subscription is gone; dropped")

    # -- webhooks -----------------------------------------------------------------------------

    def _post_webhooks(self) -> None:
        retries: list[tuple[float, int, str, bytes]] = []  # (when, tries so far, url, body)
        while not self.closing.is_set():
            wait = 1.0 if not retries else max(min(retries[0][0] - time.monotonic(), 1.0), 0)
            try:
                url, body = self._webhooks.get(timeout=wait)
                heapq.heappush(retries, (time.monotonic(), 0, url, body))
            except queue.Empty:
                pass
            while retries and retries[0][0] <= time.monotonic() and not self.closing.is_set():
                _when, tries, url, body = heapq.heappop(retries)
                if self._post(url, body):
                    continue
                if tries + 1 < WEBHOOK_TRIES:
                    delay = min(2.0**tries, 60.0)
                    log.warning("notifications: the webhook at %s failed; retry in %.0f s",
                                origin_of(url), delay)  # fmt: skip
                    heapq.heappush(retries, (time.monotonic() + delay, tries + 1, url, body))
                else:
                    log.warning("notifications: the webhook at %s failed %d times; a notice "
                                "dropped", origin_of(url), WEBHOOK_TRIES)  # fmt: skip

    def _post(self, url: str, body: bytes) -> bool:
        import requests

        try:
            answer = requests.post(
                url,
                data=body,
                headers={"Content-Type": "application/json", "User-Agent": "roundtable"},
                timeout=WEBHOOK_TIMEOUT,
                allow_redirects=False,
                stream=True,  # its status is all we read: never its body
            )
        except requests.RequestException:
            return False
        answer.close()
        return 200 <= answer.status_code < 300
