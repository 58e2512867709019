"""The console's first rows through ``roundtable serve``, read by a child process while the console
starts (``roundtable tui --server``), as ``store.reads.first_window.prefetch`` reads a PostgreSQL
store's: the HTTP client's import (about a third of Textual's) and the first two round trips run
on another core, and the rows are there when the screen is.

The child asks who the token is (``GET /api/v1/me``: a refusal is the console's one sentence,
before the screen is taken over) and the list's first page (``POST /api/v1/console/rows``, the
question the list itself asks first). The server's URL and the token go to the child in its
environment, which only its user can read, never on its command line."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from roundtable_console.client.calls import ServerCalls, ServerRefused
from roundtable_console.store.clock import format_ts, parse_ts
from roundtable_console.store.errors import ServerUnavailable, StoreError
from roundtable_console.store.reads.first_window import (
    FirstWindow,
    decode_window,
    encode_window,
    reader_child,
)
from roundtable_console.store.reads.listing import SessionOrder

ASKED_VARIABLE = "ROUNDTABLE_SERVER_FIRST_WINDOW"
TOKEN_VARIABLE = "ROUNDTABLE_SERVER_FIRST_TOKEN"
# Each line of the child is waited for this long (its imports, a call of at most its timeout).
PREFETCH_TIMEOUT_SECONDS = 20.0


class ServerPrefetch:
    """The child's two lines, read as they come: who the token is (``identity``, which the
    console waits for before it takes the screen), then the first rows (``window``, which the
    list's first read waits for in its thread)."""

    def __init__(self, server: str, process: subprocess.Popen[str]) -> None:
        self.server = server
        self.process = process
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, name="first-window", daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        with self.process.stdout:
            for line in self.process.stdout:
                self._lines.put(line)
        self.process.wait()
        self._lines.put(None)

    def _line(self, timeout: float) -> Any:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self.process.kill()
            raise ServerUnavailable(
                f"roundtable serve at {self.server} did not answer within {timeout:.0f} s."
            ) from None
        return None if line is None else json.loads(line)

    def identity(self, timeout: float = PREFETCH_TIMEOUT_SECONDS) -> dict[str, Any] | None:
        """Who the server says the token is (``GET /api/v1/me``'s answer); ``StoreError`` when
        it refused the token or was not reached (in its words); None when the child said
        nothing usable (the console then asks itself)."""
        try:
            said = self._line(timeout)
            if said is None:
                return None
            if "error" in said:
                code, message = str(said["error"]["code"]), str(said["error"]["message"])
                raise ServerRefused(code, message, status=0)
            return dict(said["me"])
        except (ValueError, KeyError, TypeError):
            return None

    def window(self, timeout: float = PREFETCH_TIMEOUT_SECONDS) -> FirstWindow | None:
        """The list's first page (None: none read, the list reads it itself)."""
        try:
            said = self._line(timeout)
            return None if said is None else decode_window(said["window"])
        except (StoreError, ValueError, KeyError, TypeError):
            return None


def prefetch(
    server: str, token: str, *, limit: int, now: datetime, order: SessionOrder
) -> ServerPrefetch:
    """Start the child that asks ``server`` who ``token`` is and for the list's first
    ``limit`` rows in ``order`` at ``now``."""
    stale_before = None if order.stale_before is None else format_ts(order.stale_before)
    asked = {"server": server, "limit": limit, "now": format_ts(now),
             "order": [order.column, order.descending, stale_before]}  # fmt: skip
    variables = {ASKED_VARIABLE: json.dumps(asked), TOKEN_VARIABLE: token}
    process = reader_child("roundtable_console.client.first_window", variables)
    return ServerPrefetch(server, process)


def answer_lines(
    server: str, token: str, limit: int, now: datetime, order: SessionOrder
) -> Iterator[Any]:
    """The child's two answers, as JSON: who the token is (or the refusal), then the first
    page."""
    from roundtable_console.store.reads.listing import SessionFilter
    from roundtable_console.store.window import wire
    from roundtable_console.store.window.questions import Read, ReadResult, RowsAsked

    calls = ServerCalls(server, token)
    try:
        try:
            me = calls.get("/api/v1/me")
        except StoreError as error:
            yield {"error": {"code": error.code, "message": error.message}}
            return
        yield {"me": me}
        if me.get("role") not in ("viewer", "operator"):
            return  # the console says what it needs of a token
        read = Read("at", 0, limit, 0, 0, header_first=True)
        asked = RowsAsked(read=read, filters=SessionFilter(), order=order, now=now)
        try:
            body = calls.post("/api/v1/console/rows", body=wire.asked_json(asked), headers={})
            answer = wire.answer_from(body.json(), read)
        except StoreError:
            answer = None
        if not isinstance(answer, ReadResult):
            yield {"window": None}
            return
        rows: list[Any] = list(answer.rows)
        has_more = answer.total is None or answer.total > len(rows)
        window = FirstWindow(sessions=rows, has_more=has_more, claims=dict(answer.claims))
        yield {"window": encode_window(window)}
    finally:
        calls.close()


def main() -> None:
    asked = json.loads(os.environ[ASKED_VARIABLE])
    token = os.environ.pop(TOKEN_VARIABLE)
    column, descending, stale_before = asked["order"]
    order = SessionOrder(column, bool(descending), parse_ts(stale_before))
    now = parse_ts(asked["now"])
    assert now is not None
    for line in answer_lines(asked["server"], token, int(asked["limit"]), now, order):
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
