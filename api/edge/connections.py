"""The HTTP connection itself, bounded before a request reaches the app: uvicorn's httptools
protocol (``--http httptools``, the one it chooses by itself here), composed with a second
parser that only watches the bytes go by.

- A request's head (request line and headers) is at most ``max_head_bytes`` and holds at most
  ``max_headers`` headers; else 431, before the rest is read.
- A head arrives whole within ``head_seconds`` of its first byte, or of the first byte that
  follows the last request (blank lines included), or of the connection, for its first: else
  408. A connection that sends nothing, a header line a second, or a blank line a second, is
  closed in time. Its body arrives within ``body_seconds`` of its head: else 408. Between
  requests, an idle connection is closed by uvicorn's keep-alive timeout.
- At most ``max_connections`` connections are open at once, WebSockets included; past it, a new
  connection's request is answered 503 with ``Retry-After``, and the connections already open
  are served as before. An upgrade that carries a body is refused (400); one uvicorn does not
  take (``h2c``) leaves the connection an HTTP one, watched as before.

Each refusal is an RFC 7807 problem with ``Connection: close``; the server then stops reading
from that client and closes the connection once the client has read it (or after
``LINGER_SECONDS``). Nothing of the refused request reaches the app.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from typing import Any, ClassVar

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from roundtable_console.api.edge.exposure import ConnectionLimits
from roundtable_console.api.problems import problem_body

LINGER_SECONDS = 2.0
_REASONS = {400: b"Bad Request", 408: b"Request Timeout",
            431: b"Request Header Fields Too Large", 503: b"Service Unavailable"}  # fmt: skip


def bounded_http(limits: ConnectionLimits) -> type[asyncio.Protocol]:
    """The protocol class for ``uvicorn.Config(http=...)``: uvicorn's, within ``limits``; its
    count of open connections is this server's own."""

    class Bounded(_BoundedHttp):
        pass

    Bounded.limits = limits
    Bounded.open = set()
    Bounded.upgraded = set()
    return Bounded


class _BoundedHttp(asyncio.Protocol):
    limits: ClassVar[ConnectionLimits]
    # The transports of the HTTP connections admitted and still open.
    open: ClassVar[set[asyncio.BaseTransport]]
    # Those that became WebSockets (uvicorn's protocol took them over: their end is not told
    # here, so they are counted while not closing).
    upgraded: ClassVar[set[asyncio.BaseTransport]]

    def __init__(self, **uvicorn_arguments: Any) -> None:
        self.inner = HttpToolsProtocol(**uvicorn_arguments)
        self.loop = uvicorn_arguments.get("_loop") or asyncio.get_running_loop()
        self.watcher: httptools.HttpRequestParser | None = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.in_head = False
        self.in_body = False
        self.head_bytes = 0  # the current head's, as the parser counted its parts
        self.raw_head_bytes = 0  # the bytes of reads that held nothing but the current head
        self.headers = 0
        self.has_body = False  # the current head declares one (Content-Length, chunked)
        self.completed = False  # a message ended in the read being watched
        self.refusal: tuple[int, str, str, dict[str, str]] | None = None
        self.refused = False
        self.over_capacity = False

    @classmethod
    def counted(cls) -> int:
        cls.upgraded = {one for one in cls.upgraded if not one.is_closing()}
        return len(cls.open) + len(cls.upgraded)

    # -- asyncio.Protocol: each to uvicorn's, watched ---------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream transport (uvloop's too)
        if self.counted() >= self.limits.max_connections:
            self.over_capacity = True
        else:
            self.open.add(transport)
        self._arm(self.limits.head_seconds)
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.refused or self.watcher is None:
            return  # read and dropped until the connection closes
        if self.timer is None and not self.in_body:
            self._arm(self.limits.head_seconds)  # a byte after a request: a head's, on time
        self.completed = False
        upgrade = False
        try:
            self.watcher.feed_data(data)
        except httptools.HttpParserUpgrade:
            upgrade = True
        except httptools.HttpParserError:
            if self.refusal is None:
                self.refusal = (400, "invalid_request", "That is not an HTTP/1.1 request.", {})
        if self.in_head and not self.completed and self.refusal is None:
            self.raw_head_bytes += len(data)
            self._check(self.raw_head_bytes, 0)
        if self.refusal is not None:
            self._refuse(*self.refusal)
            return
        self.inner.data_received(data)
        if upgrade:
            self._upgraded()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.open.discard(self.transport)  # type: ignore[arg-type]
        self.watcher = None  # it holds this protocol: no cycle outlives the connection
        self.inner.connection_lost(exc)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def _upgraded(self) -> None:
        """After an upgrade's head: a WebSocket now (uvicorn's protocol took the transport
        over), counted until it closes; else still HTTP, watched by a parser anew."""
        transport = self.transport
        assert transport is not None
        self._disarm()
        if transport.get_protocol() is not self:
            self.open.discard(transport)
            if not transport.is_closing():
                self.upgraded.add(transport)
            self.watcher = None
            return
        self.in_head = self.in_body = False
        self.watcher = httptools.HttpRequestParser(self)

    # -- the watching parser's callbacks ----------------------------------------------------

    def on_message_begin(self) -> None:
        self.in_head = True
        self.head_bytes = self.raw_head_bytes = self.headers = 0
        self.has_body = False
        if self.timer is None:
            self._arm(self.limits.head_seconds)

    def on_url(self, url: bytes) -> None:
        self.head_bytes += len(url)
        self._check(self.head_bytes, self.headers)

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers += 1
        self.head_bytes += len(name) + len(value) + 4
        lowered = name.lower()
        if lowered == b"transfer-encoding" or (
            lowered == b"content-length" and value.strip() not in (b"", b"0")
        ):
            self.has_body = True
        self._check(self.head_bytes, self.headers)

    def on_headers_complete(self) -> None:
        self.in_head = False
        self.in_body = True
        self._arm(self.limits.body_seconds)
        if self.refusal is not None:
            return
        if self.over_capacity:
            self.refusal = (
                503,
                "server_busy",
                f"The server has {self.limits.max_connections} connections open, its most; "
                "retry in a moment.",
                {"retry-after": "1"},
            )
        elif self.has_body and self.watcher is not None and self.watcher.should_upgrade():
            # uvicorn's WebSocket would take it over and never answer: refused here.
            self.refusal = (400, "invalid_request", "An upgrade request carries no body.", {})

    def on_message_complete(self) -> None:
        self.completed = True
        self.in_body = False
        self._disarm()

    # -- refusing ---------------------------------------------------------------------------

    def _check(self, size: int, headers: int) -> None:
        if self.refusal is not None:
            return
        if size > self.limits.max_head_bytes or headers > self.limits.max_headers:
            self.refusal = (
                431,
                "request_header_fields_too_large",
                f"A request's line and headers are at most {self.limits.max_head_bytes} bytes "
                f"and {self.limits.max_headers} headers.",
                {},
            )

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self.timer = self.loop.call_later(seconds, self._too_slow)

    def _disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _too_slow(self) -> None:
        self.timer = None
        if self.refused or self.transport is None:
            return
        if self.in_body:
            detail = f"A request's body arrives within {self.limits.body_seconds:g} s."
        else:
            detail = f"A request's line and headers arrive within {self.limits.head_seconds:g} s."
        self._refuse(408, "request_timeout", detail, {})

    def _refuse(self, status: int, code: str, detail: str, headers: dict[str, str]) -> None:
        """Answer the problem, stop reading the client, close once it has had the answer."""
        transport = self.transport
        assert transport is not None
        self.refused = True
        self._disarm()
        self.open.discard(transport)
        if transport.is_closing():
            return
        request_id = f"req-{secrets.token_hex(16)}"
        body = json.dumps(problem_body(code, detail, instance=None, request_id=request_id))
        payload = body.encode()
        head = [
            b"HTTP/1.1 %d %s" % (status, _REASONS[status]),
            b"content-type: application/problem+json; charset=utf-8",
            b"content-length: %d" % len(payload),
            b"connection: close",
            b"x-request-id: " + request_id.encode(),
            b"x-content-type-options: nosniff",
            b"cache-control: no-store",
            *(name.encode() + b": " + value.encode() for name, value in headers.items()),
        ]
        transport.write(b"\r\n".join(head) + b"\r\n\r\n" + payload)
        # Closing while the client still sends would reset the connection, and the answer
        # with it: the write side is shut, what comes is dropped, and the close follows.
        if transport.can_write_eof():
            transport.write_eof()
            self.loop.call_later(LINGER_SECONDS, transport.close)
        else:
            transport.close()
