"""Calls to ``roundtable serve`` with a person's token, and its refusals as the store's: each
problem (RFC 7807) becomes a ``StoreError`` with the server's code and sentence, and each bad day
(nothing answers, too slow, a proxy's page instead of an answer) one sentence of ours. The token
is sent in the Authorization header only: never in a URL, a message or a log."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from roundtable_console.store.errors import StoreError

# How long one call waits for the server (connecting, then each read).
TIMEOUT_SECONDS = 15.0
# The most of a problem's sentence kept (a server's text is printed; a page is not).
MAX_DETAIL = 500


class ServerRefused(StoreError):
    """A refusal of the server's, with its own code (``session_transition_conflict``, …)."""

    def __init__(self, code: str, message: str, *, status: int) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


class ServerUnavailable(StoreError):
    code = "server_unavailable"


class ServerCalls:
    """One server, one token, one connection pool for the command's life."""

    def __init__(self, server: str, token: str, *, timeout: float = TIMEOUT_SECONDS) -> None:
        self.server = server.rstrip("/")
        self._client = httpx.Client(
            base_url=self.server,
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            timeout=timeout,
            follow_redirects=False,
        )

    def close(self) -> None:
        self._client.close()

    def get(self, path: str, params: Any = None) -> Any:
        return self._answer(self._send("GET", path, params=params)).json()

    def post(
        self, path: str, *, body: Mapping[str, Any] | None = None, headers: Mapping[str, str]
    ) -> httpx.Response:
        return self._answer(self._send("POST", path, json=body, headers=dict(headers)))

    def _send(self, method: str, path: str, **options: Any) -> httpx.Response:
        try:
            return self._client.request(method, path, **options)
        except httpx.TimeoutException:
            raise ServerUnavailable(
                f"roundtable serve at {self.server} did not answer within "
                f"{self._client.timeout.read:.0f} s: nothing was changed by this command if it "
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
            f"roundtable serve at {server} did not accept your token: it is wrong, revoked or "
            "expired. Ask an admin for a new one (roundtable tokens create).",
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
