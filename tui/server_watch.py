"""A thread that follows ``roundtable serve``'s stream of every workspace's changes
(``GET /api/v1/changes``, server-sent events) for a console that reads through the server, as
``tui.change_watch`` follows a store's change signal: each change wakes the screen on show
(``notify``, at most once in ``gap``), and what changed, heartbeats aside, is news
(``on_changes``). A dropped stream is said (``on_link``) and followed again from the last event
it gave (``Last-Event-ID``), so no change is lost; a token the server no longer takes ends it.
No Textual here."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence

import httpx

from roundtable_console.client.calls import new_client, refusal
from roundtable_console.client.sse import capped_lines, events_of
from roundtable_console.store.records import Change
from roundtable_console.store.safety.display import printable

# A stream that dropped is asked for again after this long, then twice as long, up to the most.
RETRY_SECONDS = 0.5
MOST_RETRY_SECONDS = 10.0
# A stream quiet for this long is taken as dropped (the server sends a keepalive every 15 s).
READ_TIMEOUT_SECONDS = 40.0
class ServerWatcher:
    def __init__(
        self,
        server: str,
        token: str,
        notify: Callable[[], None],
        *,
        on_changes: Callable[[list[Change]], None],
        on_link: Callable[[str], None],
        gap: float,
        path: str = "/api/v1/changes",
        params: Sequence[tuple[str, str]] = (("heartbeats", "true"),),
        heartbeats_news: bool = False,
    ) -> None:
        self.server = server.rstrip("/")
        # Every workspace's changes; a workspace's own for a token bound to workspaces.
        self.path = path
        # The stream's filters (``roundtable watch``'s); a console asks for heartbeats, which
        # wake its screen but are not news unless ``heartbeats_news``.
        self.params = list(params)
        self._heartbeats_news = heartbeats_news
        self._token = token
        self._headers = {"Accept": "text/event-stream"}
        self._notify = notify
        self._on_changes = on_changes
        self._on_link = on_link
        self._gap = gap
        self._last_id: str | None = None
        self._stopped = threading.Event()
        self._told_at = 0.0
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._thread = threading.Thread(target=self._follow, name="roundtable-server-watch",
                                        daemon=True)  # fmt: skip

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()

    def following(self) -> bool:
        """Whether it still follows the stream (it ends for good when the token is refused)."""
        return self._thread.is_alive()

    def _follow(self) -> None:
        wait = RETRY_SECONDS
        dropped = False
        timeout = httpx.Timeout(10.0, read=READ_TIMEOUT_SECONDS)
        with new_client(self.server, self._token, timeout) as client:
            while not self._stopped.is_set():
                try:
                    ended = self._read(client, dropped)
                except Exception as error:  # noqa: BLE001 - whatever a server sends, it is said
                    ended = None
                    if not dropped:
                        self._on_link(
                            f"The live link to {self.server} dropped ({type(error).__name__}): "
                            "following it again."
                        )
                    dropped = True
                if ended is not None:
                    self._on_link(ended)
                    return
                if self._stopped.wait(wait):
                    return
                wait = min(wait * 2, MOST_RETRY_SECONDS)
                if not dropped:
                    wait = RETRY_SECONDS

    def _read(self, client: httpx.Client, dropped: bool) -> str | None:
        """One stream, read until it drops; a sentence when it ended for good."""
        headers = dict(self._headers)
        if self._last_id is not None:
            headers["Last-Event-ID"] = self._last_id
        with client.stream("GET", self.path, params=self.params, headers=headers) as response:
            if response.status_code in (401, 403):
                return (
                    f"{self.server} no longer takes the token ({response.status_code}): the "
                    "console stops following its changes. Open it again with a valid token."
                )
            if 400 <= response.status_code < 500 and response.status_code not in (408, 429):
                response.read()  # a problem's few lines: its words end the link for good
                said = printable(str(refusal(self.server, response)))
                return f"{self.server} refused the live link: {said}"
            response.raise_for_status()
            for event, data, ident in events_of(capped_lines(response.iter_text())):
                if self._stopped.is_set():
                    return None
                if ident:
                    self._last_id = ident
                if event == "ready":
                    if dropped:
                        self._on_link(f"The live link to {self.server} is back.")
                        dropped = False
                    self._wake()  # whatever changed while it was down is read again
                elif event == "change":
                    self._changed(data)
                elif event == "signed-out":
                    return (
                        f"{self.server} ended the live link: the token is no longer valid. "
                        "Open the console again with a valid token."
                    )
        raise httpx.RemoteProtocolError("the stream ended")

    def _changed(self, data: str) -> None:
        try:
            change = Change.from_json(json.loads(data))
        except (ValueError, RecursionError):  # not a change of ours: skipped, the stream goes on
            return
        if change.change != "heartbeat" or self._heartbeats_news:
            self._on_changes([change])
        self._wake()

    def _wake(self) -> None:
        """``notify`` now, or once the gap since the last is over (changes meanwhile: once)."""
        with self._lock:
            now = time.monotonic()
            due = self._told_at + self._gap
            if now >= due:
                self._told_at = now
            else:
                if self._timer is None:
                    self._timer = threading.Timer(due - now, self._late)
                    self._timer.daemon = True
                    self._timer.start()
                return
        self._notify()

    def _late(self) -> None:
        with self._lock:
            self._timer = None
            self._told_at = time.monotonic()
        if not self._stopped.is_set():
            self._notify()
