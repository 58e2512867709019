"""What every route needs, once per server: the store, the clock, the failure counter, and the
steps each request takes (who it is, what it reaches, its idempotency key, its write).

A request becomes a ``Call`` (its method, path, headers, query, body, client address, request
id) and an ``Answer`` (status and JSON body). Routes run their call in a worker thread, so no
store I/O runs on the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from sqlalchemy import Connection

from roundtable_console.api.edge.exposure import Exposure
from roundtable_console.api.edge.identity import (
    BROWSER_COOKIE,
    Caller,
    FailureCounter,
    HeaderMode,
    authenticate,
)
from roundtable_console.api.edge.middleware import UNSAFE_METHODS
from roundtable_console.api.hosts.links import HostLinks
from roundtable_console.api.hosts.relay import Relay
from roundtable_console.api.notify.notifier import Notifier, NotifySettings
from roundtable_console.api.problems import Problem
from roundtable_console.api.streams.awaited import Awaited
from roundtable_console.api.streams.change_hub import ChangeHub
from roundtable_console.api.streams.slots import Opening, StreamSlots
from roundtable_console.store.budgets.limits import Budget
from roundtable_console.store.clock import Clock, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.models import AgentSession
from roundtable_console.store.errors import SessionNotFound, WorkspaceNotFound
from roundtable_console.store.reads.sessions import get_session
from roundtable_console.store.reads.workspaces import WorkspaceRow, get_workspace
from roundtable_console.store.resume.adapters import AdapterConfig
from roundtable_console.store.writes.request_keys import (
    RecordedMeanwhile,
    RequestKey,
    record,
    request_key,
    stored_answer,
)
from roundtable_console.store.writes.usage_values import SHIPPED, Prices

T = TypeVar("T")


def not_found(session_id: str) -> SessionNotFound:
    """The one answer for a session that does not exist and one the caller may not reach."""
    return SessionNotFound(f"No session has the id {session_id!r} in this workspace.")


WORKER_THREADS = 8
_KEY_CHARACTERS = range(0x21, 0x7F)


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    headers: Mapping[str, str]
    query: Mapping[str, list[str]]
    body: bytes
    address: str
    request_id: str

    def arg(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[-1] if values else None

    def cookie(self, name: str) -> str | None:
        """A cookie the request carries (the last of that name)."""
        raw = self.headers.get("cookie")
        if not raw or name not in raw:
            return None
        found = None
        for part in raw.split(";"):
            key, _equals, value = part.strip().partition("=")
            if key == name:
                found = value.strip().strip('"') or None
        return found


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class ServerContext:
    store: Store
    clock: Clock = system_clock
    stale_after_seconds: float = 300.0
    failures: FailureCounter = field(default_factory=FailureCounter)
    # Decided at start (api.server): whether a caller with no credential is whoever its headers
    # say; and how the server is reached (its names, other origins, a proxy, stream limits).
    header_mode: HeaderMode = field(default_factory=HeaderMode)
    exposure: Exposure = field(default_factory=Exposure)
    # The configured adapters: whether a session can be resumed, and its plan (the web console).
    adapters: Mapping[str, AdapterConfig] = field(default_factory=dict)
    # What models' tokens cost, for the usage hooks report (the configuration's [prices]).
    prices: Prices = SHIPPED
    # Limits on what agents spend (the configuration's [[budgets]]): watched, shown, told.
    budgets: tuple[Budget, ...] = ()
    # Wakes the open streams when the store changes (api.streams.events).
    # What the server tells operators, and how (serve --notify, --push-service, …).
    notify: NotifySettings = field(default_factory=NotifySettings)
    hub: ChangeHub = field(init=False)
    # Tells operators' devices and webhooks (api.notify.notifier); started by the server.
    notifier: Notifier = field(init=False)
    # The open streams: how many each caller holds, and which must end (api.streams.slots).
    streams: StreamSlots = field(init=False)
    # The long waits of hooks asking or listening through the server (api.streams.awaited).
    awaited: Awaited = field(init=False)
    # The hosts connected to this server (api.hosts.links).
    hosts: HostLinks = field(init=False)
    # The threads a request's store work runs in: a few. SQLite takes one writer at a time
    # and every thread shares one interpreter lock, so more threads only queue longer.
    workers: ThreadPoolExecutor = field(init=False)

    def __post_init__(self) -> None:
        self.hub = ChangeHub(self.store)
        self.notifier = Notifier(
            self.store,
            self.hub,
            self.notify,
            clock=self.clock,
            stale_after_seconds=self.stale_after_seconds,
            budgets=self.budgets,
        )
        self.streams = StreamSlots(
            per_holder=self.exposure.streams_per_token,
            in_all=self.exposure.streams_in_all,
            recheck=self.recheck,
            closing=self.hub.closing,
        )
        self.workers = ThreadPoolExecutor(WORKER_THREADS, thread_name_prefix="roundtable-api")
        self.awaited = Awaited(self.store, self.hub, self.in_worker)
        self.hosts = HostLinks(
            self.store,
            self.in_worker,
            self.recheck,
            self.hub.closing,
            in_all=self.exposure.hosts_in_all,
        )
        self.hosts.relay = Relay(self.hosts, self.hub)

    async def in_worker(self, work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``work`` in a worker thread, awaited: no store I/O on the event loop."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.workers, partial(work, *args, **kwargs))

    def caller(self, call: Call, db: Connection | None = None, *, host: bool = False) -> Caller:
        """Who ``call`` is; read in ``db``'s transaction when given (one transaction for the
        whole request), else in one of its own. A host's token is refused everywhere but where
        a host connects (``host``): stolen, it reads and writes nothing."""
        caller = authenticate(
            db or self.store,
            headers=call.headers,
            address=call.address,
            header_mode=self.header_mode,
            failures=self.failures,
            clock=self.clock,
            browser=call.cookie(BROWSER_COOKIE),
            writes=call.method in UNSAFE_METHODS,
        )
        if (caller.role == "host") != host and caller.mode != "header":
            raise Problem(
                "forbidden",
                f"The token {caller.name!r} is a host's: it connects its machine (roundtable "
                "host run) and does nothing else."
                if caller.role == "host"
                else "Only a host's token connects a host: roundtable tokens create --role host "
                "--name NAME.",
            )
        return caller

    async def recheck(self, calls: list[Opening]) -> list[str | None]:
        """The credentials of open streams' requests checked again, in one read: for each,
        None while it holds, else the code of the problem that refuses it now (a refusal is not
        counted as a failed authentication)."""

        def check() -> list[str | None]:
            codes: list[str | None] = []
            with self.store.read() as db:
                for call in calls:
                    try:
                        authenticate(
                            db,
                            headers=call.headers,
                            address=call.address,
                            header_mode=self.header_mode,
                            failures=None,
                            clock=self.clock,
                            browser=call.cookie(BROWSER_COOKIE),
                        )
                        codes.append(None)
                    except Problem as problem:
                        codes.append(problem.code)
            return codes

        return await self.in_worker(check)

    # -- what a caller reaches -------------------------------------------------------------

    @staticmethod
    def workspace(db: Connection, caller: Caller, workspace_id: str) -> WorkspaceRow:
        """The workspace, when it exists and the caller may reach it: one it may not reach
        answers as one that does not exist."""
        if not caller.reaches(workspace_id):
            raise WorkspaceNotFound(f"No workspace has the id {workspace_id!r}.")
        return get_workspace(db=db, workspace_id=workspace_id)

    @classmethod
    def session_in(
        cls, db: Connection, caller: Caller, workspace_id: str, session_id: str
    ) -> AgentSession:
        """The session, when it belongs to the workspace (its column, else its metadata's). One
        of another workspace, or of none, answers exactly as one that does not exist."""
        cls.workspace(db, caller, workspace_id)
        try:
            session = get_session(db=db, session_id=session_id)
        except SessionNotFound:
            session = None
        if session is None or session.effective_workspace_id != workspace_id:
            raise not_found(session_id)
        return session

    # -- idempotency keys ------------------------------------------------------------------

    def request_key(self, call: Call, caller: Caller, *, required: bool) -> RequestKey | None:
        raw = call.headers.get("idempotency-key")
        if raw is None or raw == "":
            if required:
                raise Problem(
                    "idempotency_key_required",
                    "This request needs an Idempotency-Key header, so a retry never applies twice.",
                )
            return None
        if len(raw) > 128 or any(ord(char) not in _KEY_CHARACTERS for char in raw):
            raise Problem(
                "idempotency_key_required",
                "An Idempotency-Key is 1 to 128 printable characters without spaces.",
            )
        return request_key(
            caller=caller.name, method=call.method, path=call.path, client_key=raw, body=call.body
        )

    def replayed(self, call: Call, key: RequestKey | None) -> Answer | None:
        """The first answer to this request, when there was one (a problem again under this
        request's id)."""
        if key is None:
            return None
        with self.store.read() as db:
            stored = stored_answer(db, key)
        if stored is None:
            return None
        body = stored.body
        if isinstance(body, dict) and "request_id" in body:
            body = {**body, "request_id": call.request_id}
        return Answer(stored.status, body, {"Idempotent-Replayed": "true"})

    def write_once(
        self,
        call: Call,
        key: RequestKey | None,
        *,
        write: Callable[[Callable[[Connection, T], None] | None], T],
        answer: Callable[[T], Answer],
        session_of: Callable[[T], str],
    ) -> Answer:
        """``write`` once under ``key``: the same request again gets the first answer, recorded
        in the write's own transaction (``within``, handed to ``write``). A refusal writes
        nothing, not even under the key (the reference kept its 4xx answers): a retry is asked
        again, and nothing it could do twice was done."""
        replay = self.replayed(call, key)
        if replay is not None:
            return replay

        def within(db: Connection, result: T) -> None:
            if key is not None:
                done = answer(result)
                record(
                    db,
                    key,
                    session_id=session_of(result),
                    status=done.status,
                    body=done.body,
                    clock=self.clock,
                )

        try:
            result = write(within if key is not None else None)
        except RecordedMeanwhile:
            replay = self.replayed(call, key)
            assert replay is not None  # recorded by the transaction that won
            return replay
        return answer(result)
