"""What every request passes through before a route, as one ASGI layer (no route sees a request
that fails here, and no response leaves without these headers):

- a request whose ``Host`` does not name this server is refused first (``host_not_allowed``:
  DNS rebinding, ``api.edge.exposure``), a WebSocket's too (with the same problem, as its
  handshake's answer);
- ``X-Request-ID``: the caller's when it is at most 128 printable characters, else a new
  ``req-<32 hex>``; on every response, with ``X-Content-Type-Options: nosniff``,
  ``Cache-Control: no-store`` (unless the response says otherwise), ``X-Frame-Options: DENY``,
  ``Referrer-Policy: same-origin`` (nothing leaves for another site; with ``no-referrer`` a
  browser's form posts would carry ``Origin: null`` and fail the origin check), a strict
  ``Content-Security-Policy``, and over TLS (the server's own, or a trusted proxy's)
  ``Strict-Transport-Security``.
- a read-only server refuses every write (``read_only``) before the body is read;
- a write (or a WebSocket) from a browser page of another origin is refused
  (``csrf_origin_forbidden``): only the server's own origin, and those given with
  ``--allow-origin``, are allowed (none by default: the reference's development origins are not);
- bodies are read up to 1 MiB (``request_too_large``, at once from ``Content-Length``);
- anything a route raises that nobody expected is a 500 ``internal_error`` in words, logged
  with its request id, never a traceback.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from starlette.requests import ClientDisconnect

from roundtable_console.api.edge.exposure import Exposure
from roundtable_console.api.problems import problem_body
from roundtable_console.store.validation import whole_number

log = logging.getLogger("roundtable.serve")

MAX_BODY_BYTES = 1024 * 1024
TOO_LARGE = f"The request body is larger than {MAX_BODY_BYTES} bytes (1 MiB)."
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_REQUEST_ID = re.compile(r"^[\x21-\x7e]{1,128}$")
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"x-content-type-options", b"nosniff"),
    (b"cache-control", b"no-store"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    # The web console's pages: nothing but this server's own files, no inline script or style.
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
        b"form-action 'self'; frame-ancestors 'none'",
    ),
)
# Sent over TLS only: browsers keep to HTTPS for this name for a year.
HSTS = (b"strict-transport-security", b"max-age=31536000")
HOST_REFUSED = (
    "This server does not answer to that name (the Host header). Name it by one of its own: "
    "its address, a loopback name, or a --public-name it was started with."
)

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Headers = tuple[tuple[bytes, bytes], ...]


class BodyTooLarge(Exception):
    pass


def request_id_of(headers: Iterable[tuple[bytes, bytes]]) -> str:
    for name, value in headers:
        if name == b"x-request-id":
            text = value.decode("latin-1")
            if _REQUEST_ID.match(text):
                return text
            break
    return f"req-{secrets.token_hex(16)}"


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


def own_origin(scope: Scope) -> str | None:
    host = header(scope, b"host")
    if not host:
        return None
    scheme = scope.get("scheme", "http")
    scheme = {"ws": "http", "wss": "https"}.get(scheme, scheme)
    return f"{scheme}://{host}".lower()


class Guard:
    """The ASGI layer described in the module's docstring."""

    def __init__(self, app: ASGIApp, *, read_only: bool, exposure: Exposure) -> None:
        self.app = app
        self.read_only = read_only
        self.exposure = exposure

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        request_id = request_id_of(scope.get("headers", ()))
        scope.setdefault("state", {})["request_id"] = request_id
        secure = scope.get("scheme") in ("https", "wss")
        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] in ("http.response.start", "websocket.http.response.start"):
                started = True
                headers = list(message.get("headers", ()))
                present = {name for name, _value in headers}
                headers.append((b"x-request-id", request_id.encode("latin-1")))
                headers.extend(pair for pair in SECURITY_HEADERS if pair[0] not in present)
                if secure:
                    headers.append(HSTS)
                message = {**message, "headers": headers}
            await send(message)

        async def refuse(
            code: str, detail: str, extra: tuple[tuple[bytes, bytes], ...] = ()
        ) -> None:
            if scope["type"] == "websocket":
                await _deny_websocket(send_with_headers, scope, request_id, code, detail)
            else:
                await _send_problem(send_with_headers, scope, request_id, code, detail, extra)

        server = scope.get("server")
        if not self.exposure.answers_to(header(scope, b"host"), server[0] if server else None):
            await refuse("host_not_allowed", HOST_REFUSED)
            return
        if scope["type"] == "websocket":
            if not self._origin_allowed(scope):
                refused = "A WebSocket from a page of another origin was refused."
                await refuse("csrf_origin_forbidden", refused)
                return
            await self.app(scope, receive, send_with_headers)
            return
        method = scope["method"]
        if method in UNSAFE_METHODS:
            if self.read_only and not _reads_by_post(scope):
                await refuse(
                    "read_only",
                    "This server is read-only (roundtable serve --read-only, or read_only in "
                    "the config): nothing was written.",
                )
                return
            if not self._origin_allowed(scope):
                await refuse(
                    "csrf_origin_forbidden",
                    "A write from a page of another origin was refused.",
                )
                return
            length = header(scope, b"content-length")
            size = None if length is None else whole_number(length.strip())
            if length is not None and (size is None or size > MAX_BODY_BYTES):
                await refuse(
                    "request_too_large",
                    TOO_LARGE,
                    ((b"connection", b"close"),),
                )
                return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > MAX_BODY_BYTES:
                    raise BodyTooLarge()
            return message

        try:
            await self.app(scope, limited_receive, send_with_headers)
        except BodyTooLarge:
            if not started:
                await refuse(
                    "request_too_large",
                    TOO_LARGE,
                    ((b"connection", b"close"),),
                )
        except ClientDisconnect:
            return  # the client went away while its body was read: no one to answer
        except Exception:  # noqa: BLE001 - said in words; the log keeps the traceback
            log.exception("request %s failed: %s %s", request_id, method, scope.get("path"))
            if not started:
                await refuse(
                    "internal_error",
                    f"The server failed to answer this request; its log names it {request_id}.",
                )

    def _origin_allowed(self, scope: Scope) -> bool:
        origin = header(scope, b"origin")
        if origin is None:
            return True  # not a browser's cross-site request (a browser always sends it)
        wanted = origin.rstrip("/").lower()
        return wanted in self.exposure.origins or wanted == own_origin(scope)


async def _deny_websocket(
    send: Send, scope: Scope, request_id: str, code: str, detail: str
) -> None:
    """Refuse a WebSocket's handshake with the problem as its HTTP answer (the ASGI denial
    response), or, where the server cannot send one, a close with policy violation."""
    if "websocket.http.response" not in scope.get("extensions", {}):
        await send({"type": "websocket.close", "code": 1008, "reason": code})
        return
    await _send_problem(send, scope, request_id, code, detail, kind="websocket.http.response")


async def _send_problem(
    send: Send,
    scope: Scope,
    request_id: str,
    code: str,
    detail: str,
    extra: Headers = (),
    *,
    kind: str = "http.response",
) -> None:
    """The problem as a whole answer (``kind``: an HTTP one, or a WebSocket's denial)."""
    body = problem_body(code, detail, instance=scope.get("path"), request_id=request_id)
    payload = json.dumps(body).encode()
    await send(
        {
            "type": f"{kind}.start",
            "status": body["status"],
            "headers": [
                (b"content-type", b"application/problem+json; charset=utf-8"),
                (b"content-length", str(len(payload)).encode()),
                *extra,
            ],
        }
    )
    await send({"type": f"{kind}.body", "body": payload})


# The terminal console's reads carry their question in a body, so they are POSTs; they write
# nothing, and a read-only server answers them (the origin check still holds).
READS_BY_POST = "/api/v1/console/"


def _reads_by_post(scope: Scope) -> bool:
    return str(scope.get("path", "")).startswith(READS_BY_POST)
