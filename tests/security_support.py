"""What the security tests (tests/test_security_*.py, issue 28) share: a store of either engine
with two workspaces and what lies around their sessions (claims, proposals, tool calls, tasks,
decisions), tokens made through the store, a real ``roundtable serve`` on it, and requests no
polite client sends (a forged Host, raw bytes, a WebSocket of another site)."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import websockets.sync.client as ws_client
from sqlalchemy import insert, text

from roundtable_console.store.access.tokens import create_token
from roundtable_console.store.db.database import Store, open_store
from roundtable_console.store.db.models import Claim, Decision, Event, Proposal, Task
from roundtable_console.store.writes import agent_writes
from tests.api_support import seed_agent, seed_workspace
from tests.serve_support import Served

WS_A, WS_B = "ws-a", "ws-b"
AGENT_A, AGENT_B = "agent-a", "agent-b"
RUN_A = "run-a"
# What lies around ws-a's work, and must never be seen from ws-b.
SECRET_CLAIM = "claim-of-a"
SECRET_RESOURCE = "src/secret-of-a.py"
SECRET_PROPOSAL = "proposal-of-a"
SECRET_TOOL = "tool.secret_of_a"
SECRET_TASK = "task-of-a"
SECRET_DECISION = "decision-of-a"


def seed_two_workspaces(url: str) -> None:
    """ws-a, with its agent, run and session and what lies around them; ws-b, empty."""
    store = open_store(url)
    try:
        for workspace in (WS_A, WS_B):
            seed_workspace(store, workspace)
        for agent in (AGENT_A, AGENT_B):
            seed_agent(store, agent)
        with store.write() as db:
            now = "2026-12-01T00:00:00Z"
            db.execute(
                text(
                    "INSERT INTO runs (id, goal, status, started_at, workspace_id)"
                    " VALUES (:id, 'a', 'active', :now, :ws)"
                ),
                {"id": RUN_A, "now": now, "ws": WS_A},
            )
            db.execute(
                insert(Task.__table__).values(  # type: ignore[attr-defined]
                    id=SECRET_TASK, title="the secret plan", body_md="", status="in_progress",
                    priority=1, assigned_agent_id=AGENT_A, created_at=now, updated_at=now,
                )
            )  # fmt: skip
            db.execute(
                insert(Claim.__table__).values(  # type: ignore[attr-defined]
                    id=SECRET_CLAIM, resource_id=SECRET_RESOURCE, agent_id=AGENT_A,
                    task_id=SECRET_TASK, claim_type="write", status="active",
                    expires_at="2099-01-01T00:00:00Z", renewable=1, resume_policy="hold",
                    created_at=now, workspace_id=WS_A,
                )
            )  # fmt: skip
            db.execute(
                insert(Proposal.__table__).values(  # type: ignore[attr-defined]
                    id=SECRET_PROPOSAL, task_id=SECRET_TASK, agent_id=AGENT_A,
                    title="secret proposal", summary_md="", patch_path="/p", status="pending",
                    risk="normal", created_at=now, workspace_id=WS_A,
                )
            )  # fmt: skip
            db.execute(
                insert(Decision.__table__).values(  # type: ignore[attr-defined]
                    id=SECRET_DECISION, proposal_id=SECRET_PROPOSAL, task_id=SECRET_TASK,
                    decision="approve", rationale_md="the secret reason", decided_by="x",
                    created_at=now,
                )
            )  # fmt: skip
            db.execute(
                insert(Event.__table__).values(  # type: ignore[attr-defined]
                    run_id=RUN_A, type=SECRET_TOOL, actor_id=AGENT_A,
                    payload_json='{"tool": "secret_of_a"}', created_at=now,
                )
            )  # fmt: skip
            agent_writes.register(
                db=db, session_id="sess-a", agent_id=AGENT_A, run_id=RUN_A, adapter="codex",
                working_directory="/srv/a", metadata={"workspace_id": WS_A},
            )  # fmt: skip
    finally:
        store.dispose()


def make_token(url: str, name: str, role: str, **options: Any) -> str:
    store = open_store(url)
    try:
        return create_token(store=store, name=name, role=role, **options).token
    finally:
        store.dispose()


def with_store(url: str, work: Callable[[Store], Any]) -> Any:
    store = open_store(url)
    try:
        return work(store)
    finally:
        store.dispose()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def address(served: Served) -> tuple[str, int]:
    parts = urlsplit(served.url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


def raw_exchange(served: Served, request: bytes, *, timeout: float = 10.0) -> bytes:
    """``request`` sent as bytes on a connection of its own; all that came back before the
    server closed it (or ``timeout``)."""
    with closing(socket.create_connection(address(served), timeout=timeout)) as raw:
        raw.sendall(request)
        return read_all(raw, timeout)


def read_all(raw: socket.socket, timeout: float) -> bytes:
    """What the server sends until it closes the connection (bounded by ``timeout``)."""
    deadline = time.monotonic() + timeout
    answer = b""
    while time.monotonic() < deadline:
        raw.settimeout(max(deadline - time.monotonic(), 0.01))
        try:
            chunk = raw.recv(65536)
        except TimeoutError:
            break
        except ConnectionResetError:
            break
        if not chunk:
            break
        answer += chunk
    return answer


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def websocket(
    served: Served,
    path: str,
    *,
    host: str | None = None,
    origin: str | None = None,
    headers: dict[str, str] | None = None,
) -> ws_client.ClientConnection:
    """A WebSocket to ``path`` on the server, naming it ``host`` in its handshake (a page of
    another site reaches the server's address under its own name)."""
    hostname, port = address(served)
    name = host or f"{hostname}:{port}"
    raw = socket.create_connection((hostname, port), timeout=10)
    return ws_client.connect(
        f"ws://{name}{path}",
        sock=raw,
        origin=origin,  # type: ignore[arg-type]
        additional_headers=headers or {},
        open_timeout=10,
    )


def home_of(tmp_path: Path, name: str = "home") -> Path:
    return tmp_path / name


_CSRF = re.compile(r'<meta name="csrf-token" content="([^"]*)">')


class Browser:
    """A browser signed in to the web console of a real server with ``token``: its cookie, and
    the CSRF proof its pages carry."""

    def __init__(self, served: Served, token: str) -> None:
        self.client = httpx.Client(base_url=served.url, timeout=10)
        signed_in = self.client.post("/sign-in", data={"token": token, "next": "/sessions"})
        assert signed_in.status_code == 303, signed_in.text

    def csrf(self, path: str = "/sessions") -> str:
        found = _CSRF.search(self.client.get(path).text)
        assert found is not None and found.group(1), "no CSRF proof on the page"
        return found.group(1)

    def get(self, path: str, **options: Any) -> httpx.Response:
        return self.client.get(path, **options)

    def post(self, path: str, *, csrf: bool = True, **options: Any) -> httpx.Response:
        headers = dict(options.pop("headers", {}))
        if csrf:
            headers["X-CSRF-Token"] = self.csrf()
        return self.client.post(path, headers=headers, **options)

    def close(self) -> None:
        self.client.close()


def open_stream(served: Served, path: str, headers: dict[str, str]) -> socket.socket:
    """A server-sent events stream opened on a raw connection, read up to its ``ready`` event;
    closing the socket ends it at once (a client gone)."""
    hostname, port = address(served)
    raw = socket.create_connection((hostname, port), timeout=10)
    lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    raw.sendall(f"GET {path} HTTP/1.1\r\nHost: {hostname}:{port}\r\n{lines}\r\n".encode())
    seen = b""
    while b"event: ready" not in seen:
        chunk = raw.recv(65536)
        if not chunk:
            raise AssertionError(f"the stream closed before it was ready: {seen!r}")
        seen += chunk
    assert status_of(seen) == 200, seen
    return raw


def read_response(raw: socket.socket) -> bytes:
    """One whole response from a keep-alive connection: its head, and its body by its
    ``Content-Length``."""
    seen = b""
    while b"\r\n\r\n" not in seen:
        chunk = raw.recv(65536)
        if not chunk:
            return seen
        seen += chunk
    head, _blank, body = seen.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _colon, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = raw.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body
