"""Calls to ``roundtable serve`` with a person's token, and its refusals as the store's: each
problem (RFC 7807) becomes a ``StoreError`` with the server's code and sentence, and each bad day
(nothing answers, too slow, a proxy's page instead of an answer) one sentence of ours. The token
is sent in the Authorization header only: never in a URL, a message or a log."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from roundtable_console.store.errors import ServerUnavailable, StoreError

if TYPE_CHECKING:  # imported at the first call (the console paints first: client.first_window)
    import httpx

T = TypeVar("T")
# How long one call waits for the server (connecting, then each read).
TIMEOUT_SECONDS = 15.0
# The most of a problem's sentence kept (a server's text is printed; a page is not).
MAX_DETAIL = 500
# The most of an answer read: a list's page of 200 sessions is a few hundred KiB.
MAX_ANSWER_BYTES = 32 * 2**20


class ServerRefused(StoreError):
    """A refusal of the server's, with its own code (``session_transition_conflict``, …)."""

    def __init__(self, code: str, message: str, *, status: int) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


def new_client(server: str, token: str, timeout: httpx.Timeout | float) -> httpx.Client:
    """A client of ``server`` that sends ``token`` there and nowhere else: no proxy nor .netrc
    from the environment (an HTTP_PROXY would otherwise receive the token in clear text), no
    redirect followed; the certificates trusted are the system's, or $SSL_CERT_FILE's (a team
    server's own authority)."""
    import os
    import ssl

    import httpx

    authority = os.environ.get("SSL_CERT_FILE")
    verify: ssl.SSLContext | bool = (
        ssl.create_default_context(cafile=authority) if authority else True
    )
    if server.startswith("http://"):
        # No TLS to check (plain http is taken for a loopback server alone: through_server),
        # so the certificates are not read: 40 ms of the console's first paint.
        verify = False
    return httpx.Client(
        base_url=server,
        headers={"Authorization": f"Bearer {token}"},
        timeout=timeout,
        follow_redirects=False,
        trust_env=False,
        verify=verify,
    )


class ServerCalls:
    """One server, one token, one connection pool for the command's life, made at the first
    call (``connect``): the HTTP client's import is not paid before it is needed."""

    def __init__(self, server: str, token: str, *, timeout: float = TIMEOUT_SECONDS) -> None:
        self.server = server.rstrip("/")
        self._token = token
        self._timeout = timeout
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()
        # How many requests were sent (bench/console_server.py counts a page's round trips).
        self.sent = 0

    @property
    def connected(self) -> bool:
        """Whether the client is made (a call was made, or ``connect``)."""
        return self._client is not None

    def connect(self) -> httpx.Client:
        """The client, made once (blocking: its import takes tens of milliseconds)."""
        with self._lock:
            if self._client is None:
                client = new_client(self.server, self._token, self._timeout)
                client.headers["Accept"] = "application/json"
                self._client = client
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()

    def get(self, path: str, params: Any = None) -> Any:
        with as_expected(self.server):
            return self._answer(self._send("GET", path, params=params)).json()

    def post(
        self,
        path: str,
        *,
        body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str],
        timeout: float | None = None,
    ) -> httpx.Response:
        """``timeout``: how long this call may take, when longer than any other's (a run on
        many sessions)."""
        extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        return self._answer(self._send("POST", path, json=body, headers=dict(headers), **extra))

    @contextmanager
    def events(
        self, path: str, *, body: Mapping[str, Any], headers: Mapping[str, str], timeout: float
    ) -> Iterator[Iterator[tuple[str, str, str | None]]]:
        """A POST answered with server-sent events: (event, data, id) as they come, each line
        bounded (``client.sse``); a refusal as ``post``'s. Leaving the block closes the stream
        (the server then stops what it streams)."""
        import httpx

        from roundtable_console.client.sse import capped_lines, events_of

        self.sent += 1
        client = self.connect()
        asked = {**headers, "Accept": "text/event-stream"}
        try:
            with client.stream("POST", path, json=body, headers=asked, timeout=timeout) as answer:
                if not answer.is_success:
                    answer.read()
                    raise refusal(self.server, answer)
                yield events_of(capped_lines(answer.iter_text()))
        except httpx.TimeoutException:
            raise ServerUnavailable(
                f"roundtable serve at {self.server} did not answer within {timeout:.0f} s: what "
                "it did is kept; run it again to see."
            ) from None
        except httpx.TransportError as error:
            raise ServerUnavailable(
                f"roundtable serve at {self.server} could not be reached "
                f"({type(error).__name__}): what it did is kept; run it again to see."
            ) from None

    def _send(self, method: str, path: str, **options: Any) -> httpx.Response:
        """The answer, read whole up to ``MAX_ANSWER_BYTES`` (a server's word is not taken for
        its size)."""
        import httpx

        self.sent += 1
        client = self.connect()
        try:
            request = client.build_request(method, path, **options)
            streamed = client.send(request, stream=True)
            try:
                body = bytearray()
                for chunk in streamed.iter_bytes():
                    body += chunk
                    if len(body) > MAX_ANSWER_BYTES:
                        raise ServerUnavailable(
                            f"{self.server} answered with more than "
                            f"{MAX_ANSWER_BYTES // 2**20} MiB: that is not roundtable serve's "
                            "answer."
                        )
            finally:
                streamed.close()
            return httpx.Response(
                streamed.status_code, headers=streamed.headers, content=bytes(body),
                request=request,
            )  # fmt: skip
        except httpx.TimeoutException:
            raise ServerUnavailable(
                f"roundtable serve at {self.server} did not answer within "
                f"{client.timeout.read:.0f} s: nothing was changed by this command if it "
                "writes, unless the server finished it after; run it again to see."
            ) from None
        except httpx.TransportError as error:
            raise ServerUnavailable(
                f"roundtable serve at {self.server} could not be reached "
                f"({type(error).__name__}): is it running, and is the address right?"
            ) from None

    def _answer(self, response: httpx.Response) -> httpx.Response:
        if response.is_success and _is_json(response):
            return response
        if response.is_success:
            raise ServerUnavailable(
                f"{self.server} answered with something other than roundtable serve's JSON: is "
                "the address the server's own (not a page in front of it)?"
            )
        raise refusal(self.server, response)


@contextmanager
def as_expected(server: str) -> Iterator[None]:
    """An answer of the wrong shape (a field missing, a list for an object) is said in words,
    as a server that is not roundtable serve's."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        raise ServerUnavailable(
            f"{server} answered with something other than roundtable serve's answer to this: "
            "is the address the server's own, and is it this version's?"
        ) from None


def checked_answers(cls: type[T]) -> type[T]:
    """Each public method of a source of ``calls`` (a ``ServerCalls``) says an answer of the
    wrong shape in words (``as_expected``)."""
    for name, member in list(vars(cls).items()):
        if callable(member) and not name.startswith("_"):
            setattr(cls, name, _checked(member))
    return cls


def _checked(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        with as_expected(self.calls.server):
            return method(self, *args, **kwargs)

    return run


def _is_json(response: httpx.Response) -> bool:
    kind = response.headers.get("content-type", "").split(";")[0].strip()
    return kind == "application/json" or kind.endswith("+json")


def refusal(server: str, response: httpx.Response) -> StoreError:
    """A refused call as one sentence: the server's own problem, else what its status says."""
    status = response.status_code
    problem: dict[str, Any] = {}
    if _is_json(response):
        try:
            decoded = response.json()
        except ValueError:
            decoded = None
        problem = decoded if isinstance(decoded, dict) else {}
    code = problem.get("code") if isinstance(problem.get("code"), str) else None
    detail = problem.get("detail") if isinstance(problem.get("detail"), str) else ""
    detail = detail[:MAX_DETAIL]
    if status == 401:
        return ServerRefused(
            code or "unauthorized",
            f"roundtable serve at {server} did not accept your token, which is wrong, "
            "revoked or expired. Ask an admin for a new one (roundtable tokens create).",
            status=status,
        )
    if status == 429:
        wait = response.headers.get("retry-after", "").strip()
        later = f"try again in {wait} s" if wait.isdigit() else "try again in a moment"
        return ServerRefused(
            code or "too_many_requests",
            f"roundtable serve at {server} is asked too often from here: {detail or later}",
            status=status,
        )
    if code is None:
        return ServerUnavailable(
            f"roundtable serve at {server} answered {status} without saying why: is the address "
            "the server's own (not a proxy's page)?"
        )
    return ServerRefused(code, detail or f"refused ({status})", status=status)
