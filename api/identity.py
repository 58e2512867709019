"""Who a request is, from its credential (DESIGN §9): a bearer token the store holds; a browser
signed in to the web console with one (its cookie, ``store.access.web_sessions``; a write also
carries its page's CSRF proof); or, while the store holds no token, the reference's header mode
(the caller is whoever ``X-Actor-ID`` says).

With tokens, ``X-Actor-ID`` and ``X-Actor-Role`` are never read: the token decides who acts and
what they may touch (the reference's "human" check trusted the headers, so an agent token with
human headers passed). Failed authentications are counted per client address and refused for a
while past ``FAILURES_ALLOWED`` (429 with ``Retry-After``).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import Connection

from roundtable_console.api.problems import Problem
from roundtable_console.store.access.tokens import Identity, holds_tokens, identify
from roundtable_console.store.access.web_sessions import csrf_holds, identify_browser
from roundtable_console.store.clock import Clock, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import InvalidToken

# The reference's human roles (header mode; case-insensitive).
HUMAN_ROLES = frozenset(
    {"human", "admin", "chair", "view", "operate", "approve", "govern", "administer",
     "force-override"}
)  # fmt: skip
# The web console's cookie: a signed-in browser's secret (store.access.web_sessions).
BROWSER_COOKIE = "roundtable_web"
FAILURES_ALLOWED = 10
FAILURE_WINDOW_SECONDS = 60.0
TRACKED_ADDRESSES = 10_000


@dataclass(frozen=True)
class Caller:
    """A request's identity: its name (the actor recorded for what it does), its role
    (``viewer``, ``operator``, ``agent``), what it reaches, and how it was told."""

    name: str
    role: str
    mode: Literal["bearer", "browser", "header"]
    workspaces: tuple[str, ...] | None = None
    # An agent token's agent; None for every other caller (and for header mode's agents).
    agent_id: str | None = None

    def reaches(self, workspace_id: str) -> bool:
        return self.workspaces is None or workspace_id in self.workspaces

    def require_human(self) -> None:
        """The human authorization: an operator token, or (header mode) a named human role."""
        if self.role != "operator":
            raise Problem("forbidden", "Human authorization required.")

    def require_writer_of(self, agent_id: str | None) -> None:
        """Register, heartbeat and end: an operator, an agent token for this agent, or in header
        mode anyone (the reference's heartbeat is anyone's). A viewer reads only. ``agent_id``
        None: whether the caller may write any session at all."""
        if self.role == "viewer" and self.mode != "header":
            raise Problem("forbidden", f"The token {self.name!r} is a viewer's: it reads only.")
        if agent_id is None:
            return
        if self.role == "agent" and self.agent_id is not None and self.agent_id != agent_id:
            raise Problem(
                "forbidden",
                f"The token {self.name!r} acts for agent {self.agent_id!r}, not {agent_id!r}.",
            )


class FailureCounter:
    """Failed authentications per client address in a sliding window (this process's: each
    server counts what it sees)."""

    def __init__(self, *, allowed: int = FAILURES_ALLOWED, window: float = FAILURE_WINDOW_SECONDS):
        self.allowed = allowed
        self.window = window
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def retry_after(self, address: str) -> int | None:
        """Seconds until ``address`` may try again, when it failed too often; else None."""
        now = time.monotonic()
        with self._lock:
            failures = self._failures.get(address)
            if failures is None:
                return None
            while failures and failures[0] <= now - self.window:
                failures.popleft()
            if len(failures) < self.allowed:
                return None
            return max(1, math.ceil(failures[0] + self.window - now))

    def failed(self, address: str) -> None:
        now = time.monotonic()
        with self._lock:
            if address not in self._failures and len(self._failures) >= TRACKED_ADDRESSES:
                self._failures.pop(next(iter(self._failures)))
            self._failures.setdefault(address, deque()).append(now)


def authenticate(
    store: Store | Connection,
    *,
    authorization: str | None,
    actor_id: str | None,
    actor_role: str | None,
    orchestrator: str | None,
    address: str,
    failures: FailureCounter,
    clock: Clock = system_clock,
    browser: str | None = None,
    csrf_proof: str | None = None,
    writes: bool = False,
) -> Caller:
    """The caller of one request, or the problem that refuses it. ``browser``: the web
    console's cookie, when no Authorization is given; a request that ``writes`` with it also
    carries ``csrf_proof``."""
    wait = failures.retry_after(address)
    if wait is not None:
        raise Problem(
            "too_many_requests",
            f"Too many failed authentications from this address; retry in {wait} s.",
            headers={"Retry-After": str(wait)},
        )
    if authorization is not None and authorization.strip():
        scheme, _space, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            failures.failed(address)
            raise Problem("invalid_token", "Give the token as Authorization: Bearer <token>.")
        try:
            with _reading(store) as db:
                identity = identify(db, token.strip(), clock=clock)
        except InvalidToken as refused:
            failures.failed(address)
            raise Problem("invalid_token", refused.message) from None
        return _bearer(identity)
    if browser:
        try:
            with _reading(store) as db:
                identity = identify_browser(db, browser, clock=clock)
        except InvalidToken as refused:
            raise Problem("invalid_token", refused.message) from None
        if writes and not csrf_holds(browser, csrf_proof):
            raise Problem(
                "csrf_origin_forbidden",
                "A write from a signed-in page carries that page's CSRF proof (X-CSRF-Token).",
            )
        return _bearer(identity, mode="browser")
    with _reading(store) as db:
        bearer_mode = holds_tokens(db)
    if bearer_mode:
        raise Problem(
            "authentication_required", "This server needs a token: Authorization: Bearer <token>."
        )
    return header_caller(actor_id, actor_role, orchestrator)


@contextmanager
def _reading(source: Store | Connection) -> Iterator[Connection]:
    """The caller's own transaction, or a read of its own."""
    if isinstance(source, Connection):
        yield source
        return
    with source.read() as db:
        yield db


def _bearer(identity: Identity, mode: Literal["bearer", "browser"] = "bearer") -> Caller:
    return Caller(
        name=identity.name,
        role=identity.role,
        mode=mode,
        workspaces=identity.workspaces,
        agent_id=identity.agent_id,
    )


def header_caller(actor_id: str | None, actor_role: str | None, orchestrator: str | None) -> Caller:
    """The reference with no token: the caller is whoever the headers say. A named actor with a
    human role is an operator; ``X-Actor-Role: agent`` (or ``X-Roundtable-Orchestrator: true``)
    an agent of any agent; anyone else may read and heartbeat, as the reference allows."""
    name = (actor_id or "").strip()
    role = (actor_role or "").strip().lower()
    if name and role in HUMAN_ROLES:
        return Caller(name=name, role="operator", mode="header")
    if role == "agent" or (orchestrator or "").strip().lower() == "true":
        return Caller(name=name or "agent", role="agent", mode="header")
    return Caller(name=name or "anonymous", role="anyone", mode="header")
