"""Who a request is, from its credential (``docs/teams.md#serving-sessions-over-http``): a bearer
token the store holds; a browser signed in to the web console with one (its cookie,
``store.access.web_sessions``; a write also carries its page's CSRF proof); or, on a lone loopback
server whose store holds no token, the reference's header mode (the caller is whoever
``X-Actor-ID`` says; ``HeaderMode``).

With tokens, ``X-Actor-ID`` and ``X-Actor-Role`` are never read: the token decides who acts and
what they may touch (the reference's "human" check trusted the headers, so an agent token with
human headers passed). Failed authentications are counted per client address (``limits``' moving
window): past ``FAILURES_ALLOWED`` in a window, a further failure is answered 429 with
``Retry-After``. Only failures are refused: a valid credential is never refused for failures
others made from the same address (a host's agents share it; behind a proxy the address is the
nearest hop the proxy names, ``roundtable serve --behind-proxy``).
"""

from __future__ import annotations

import ipaddress
import math
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from limits import RateLimitItemPerSecond
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter
from sqlalchemy import Connection

from roundtable_console.api.problems import Problem
from roundtable_console.store.access.tokens import Identity, holds_tokens, identify
from roundtable_console.store.access.walls import Wall
from roundtable_console.store.access.web_sessions import csrf_holds_now, identify_browser
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
FAILURE_WINDOW_SECONDS = 60
# Headers a proxy adds: a request carrying one came through a proxy, and never gets header mode.
# (A proxy that adds none of them cannot be told from a local caller: header mode is never for
# a server behind one, which --behind-proxy says at start.)
FORWARDING_HEADERS = (
    "forwarded", "forwarded-for", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto",
    "x-forwarded-port", "x-forwarded-prefix", "x-forwarded-server", "x-forwarded-ssl",
    "x-forwarded-scheme", "x-original-forwarded-for", "x-real-ip", "x-client-ip",
    "x-cluster-client-ip", "true-client-ip", "cf-connecting-ip", "fastly-client-ip",
    "front-end-https", "via",
)  # fmt: skip


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

    @property
    def wall(self) -> Wall:
        """What it reaches of sessions and the rows around them (``store.access.walls``)."""
        return Wall.of(self.workspaces)

    def require_every_workspace(self, what: str) -> None:
        """What spans every workspace (``what``, in words) is not for a token bound to some."""
        if self.workspaces is not None:
            raise Problem(
                "forbidden", f"The token {self.name!r} reaches some workspaces only; {what}."
            )

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


def client_of(address: str) -> str:
    """Whose failures an address's are: an IPv6 address's /64 (a host is given a /64 to pick
    its addresses from), else the address."""
    if ":" not in address:
        return address
    try:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    except ValueError:
        return address


class HeaderMode:
    """Whether a caller with no credential is whoever its headers say (the reference with no
    token). Granted at start, to a lone loopback server whose store holds no token: never to one
    behind a proxy or open to other hosts (``api.server.check_exposure``). Lost for good the
    first time the store is seen to hold a token: a server never falls back to it, even once
    every token is deleted."""

    def __init__(self, granted: bool = True) -> None:
        self._on = granted

    @property
    def on(self) -> bool:
        """As last seen (no read): False once lost."""
        return self._on

    def still_on(self, db: Connection) -> bool:
        if self._on and holds_tokens(db):
            self._on = False
        return self._on


class FailureCounter:
    """Failed authentications per client address in a moving window (this process's: each
    server counts what it sees), kept by ``limits``."""

    def __init__(self, *, allowed: int = FAILURES_ALLOWED, window: int = FAILURE_WINDOW_SECONDS):
        self.item = RateLimitItemPerSecond(allowed, window)
        self.limiter = MovingWindowRateLimiter(MemoryStorage())

    def retry_after(self, address: str) -> int | None:
        """Seconds until a failure from ``address`` is answered 401 again rather than 429,
        when it failed too often; else None."""
        client = client_of(address)
        if self.limiter.test(self.item, client):
            return None
        reset = self.limiter.get_window_stats(self.item, client).reset_time
        return max(1, math.ceil(reset - time.time()))

    def failed(self, address: str) -> Problem | None:
        """Count a failure; the 429 to answer instead of the failure's own problem, when the
        address failed too often."""
        wait = self.retry_after(address)
        if wait is not None:
            return Problem(
                "too_many_requests",
                f"Too many failed authentications from this address; retry in {wait} s.",
                headers={"Retry-After": str(wait)},
            )
        self.limiter.hit(self.item, client_of(address))
        return None

    def refuse(self, address: str, problem: Problem) -> Problem:
        """The problem to raise for a failed authentication: its own, or 429."""
        return self.failed(address) or problem


def authenticate(
    store: Store | Connection,
    *,
    headers: Mapping[str, str],
    address: str,
    header_mode: HeaderMode,
    failures: FailureCounter | None,
    clock: Clock = system_clock,
    browser: str | None = None,
    writes: bool = False,
) -> Caller:
    """The caller of one request (its lowercased ``headers``), or the problem that refuses it.
    ``browser``: the web console's cookie, when no Authorization is given; a request that
    ``writes`` with it also carries its page's CSRF proof. ``failures``: where a failure is
    counted (None: not counted, for a check made again of a credential already taken)."""
    authorization = headers.get("authorization")
    if authorization is not None and authorization.strip():
        scheme, _space, token = authorization.strip().partition(" ")
        try:
            if scheme.lower() != "bearer" or not token.strip():
                raise Problem("invalid_token", "Give the token as Authorization: Bearer <token>.")
            try:
                with _reading(store) as db:
                    identity = identify(db, token.strip(), clock=clock)
            except InvalidToken as refused:
                raise Problem("invalid_token", refused.message) from None
        except Problem as problem:
            raise (failures.refuse(address, problem) if failures else problem) from None
        return _bearer(identity)
    if browser:
        try:
            with _reading(store) as db:
                identity = identify_browser(db, browser, clock=clock)
                proof = headers.get("x-csrf-token")
                proven = not writes or csrf_holds_now(db, browser, proof, clock=clock)
        except InvalidToken as refused:
            raise Problem("invalid_token", refused.message) from None
        if not proven:
            raise Problem(
                "csrf_origin_forbidden",
                "A write from a signed-in page carries that page's CSRF proof (X-CSRF-Token).",
            )
        return _bearer(identity, mode="browser")
    if header_mode.on:
        with _reading(store) as db:
            header_mode.still_on(db)
    if not header_mode.on:
        raise Problem(
            "authentication_required", "This server needs a token: Authorization: Bearer <token>."
        )
    if any(name in headers for name in FORWARDING_HEADERS):
        raise Problem(
            "authentication_required",
            "This server takes callers at their headers' word (its store holds no token), so it "
            "answers no request that came through a proxy. Make a token first: roundtable "
            "tokens create --name NAME --role operator.",
        )
    return header_caller(
        headers.get("x-actor-id"),
        headers.get("x-actor-role"),
        headers.get("x-roundtable-orchestrator"),
    )


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
