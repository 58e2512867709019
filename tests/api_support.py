"""Helpers for the server's tests: the app in-process (Starlette's TestClient, an httpx client
over the ASGI app) on a store of either engine, seeded as the reference's own tests seed theirs,
and tokens made through the store."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import text

from roundtable_console.api.app import create_app
from roundtable_console.api.context import ServerContext
from roundtable_console.store.access.tokens import create_token
from roundtable_console.store.clock import Clock, system_clock
from roundtable_console.store.db.database import Store

WORKSPACE = "ws-session"
AGENT = "agent-session"
HUMAN = {"X-Actor-ID": "human-1", "X-Actor-Role": "human"}
BASE = f"/api/v1/workspaces/{WORKSPACE}/sessions"


def seed_workspace(
    store: Store, workspace_id: str = WORKSPACE, *, root: str = "/srv/ws", branch: str = "main"
) -> None:
    with store.write() as db:
        db.execute(
            text(
                "INSERT INTO workspaces (id, name, root_path, created_at, updated_at,"
                " default_branch) VALUES (:id, :id, :root, '2026-09-17T00:00:00Z',"
                " '2026-09-17T00:00:00Z', :branch) ON CONFLICT DO NOTHING"
            ),
            {"id": workspace_id, "root": f"{root}/{workspace_id}", "branch": branch},
        )


def seed_agent(store: Store, agent_id: str = AGENT, *, enabled: bool = True) -> None:
    with store.write() as db:
        db.execute(
            text(
                "INSERT INTO agents (id, role, name, adapter, is_enabled)"
                " VALUES (:id, 'coder', :id, 'codex', :enabled) ON CONFLICT DO NOTHING"
            ),
            {"id": agent_id, "enabled": int(enabled)},
        )


@dataclass
class Api:
    """The server in-process over one store."""

    store: Store
    client: TestClient
    clock: Clock = system_clock
    tokens: dict[str, str] = field(default_factory=dict)
    context: ServerContext | None = None

    def token(self, name: str, role: str, **options: Any) -> dict[str, str]:
        """A new token's Authorization header."""
        made = create_token(store=self.store, name=name, role=role, clock=self.clock, **options)
        self.tokens[name] = made.token
        return {"Authorization": f"Bearer {made.token}"}

    def create(self, key: str = "create-1", **body: Any) -> Any:
        payload = {"agent_id": AGENT, "run_id": "run-1", "adapter": "codex", **body}
        return self.client.post(BASE, json=payload, headers={**HUMAN, "Idempotency-Key": key})

    def register(self, session_id: str, headers: dict[str, str] | None = None, **body: Any) -> Any:
        payload = {
            "agent_id": AGENT,
            "run_id": "run-1",
            "adapter": "codex",
            "working_directory": "/srv/ws",
            **body,
        }
        return self.client.put(f"{BASE}/{session_id}", json=payload, headers=headers or {})


def make_api(store: Store, *, clock: Clock = system_clock, read_only: bool = False) -> Api:
    context = ServerContext(store=store, clock=clock)
    app = create_app(context, read_only=read_only)
    client = TestClient(app, base_url="http://127.0.0.1:8080")
    return Api(store=store, client=client, clock=clock, context=context)


@contextmanager
def seeded_api(store: Store, **options: Any) -> Iterator[Api]:
    """The server on ``store``, with the reference's workspace and agent (the ``api`` fixture
    of tests/conftest.py, on each engine)."""
    seed_workspace(store)
    seed_agent(store)
    made = make_api(store, **options)
    with made.client:
        yield made


def assert_problem(response: Any, status: int, code: str) -> dict[str, Any]:
    """A refusal in the reference's form: RFC 7807 with its request id and code."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json; charset=utf-8"
    body = response.json()
    assert body["code"] == code and body["status"] == status
    assert body["type"] == f"https://roundtable.dev/problems/{code}"
    assert body["title"] and body["request_id"] == response.headers["x-request-id"]
    return body  # type: ignore[no-any-return]
