"""Helpers for the web console's tests: the server in-process over a store of either engine,
signed in as a token of a role, the page's CSRF proof read off a page, sessions seeded with a
hostile corpus, and an agent holding claims."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import text

from roundtable_console.api.app import create_app
from roundtable_console.api.context import ServerContext
from roundtable_console.store.access.tokens import create_token
from roundtable_console.store.db.database import Store
from roundtable_console.store.writes import agent_writes
from tests.api_support import seed_agent, seed_workspace

ORIGIN = "http://127.0.0.1:8080"
WORKSPACE = "ws-web"
OTHER_WORKSPACE = "ws-other"
# What a store may hold that a page must show as text: markup, an attribute break-out, Rich
# markup, terminal control sequences, a right-to-left override, a script URL.
HOSTILE = (
    "<script>window.__pwned = 1</script>",
    '"><img src=x onerror="window.__pwned = 2">',
    "[bold red]x[/] [link=http://evil]y[/link]",
    "\x1b[2J\x1b]52;c;aGk=\x07",
    "\u202etxt.exe",
    "javascript:window.__pwned = 3",
)
_CSRF = re.compile(r'<meta name="csrf-token" content="([^"]*)">')


def register(
    store: Store,
    session_id: str,
    *,
    agent: str = "agent-1",
    workspace: str = WORKSPACE,
    **fields: Any,
) -> None:
    with store.write() as db:
        agent_writes.register(
            db=db, session_id=session_id, agent_id=agent, run_id=fields.pop("run_id", "run-1"),
            adapter=fields.pop("adapter", "codex"), working_directory="/srv/web",
            workspace_id=workspace, **fields,
        )  # fmt: skip


def hold_claim(store: Store, agent: str, claim_id: str = "claim-1") -> None:
    """An active claim of ``agent`` that expires in a day."""
    with store.write() as db:
        db.execute(
            text(
                "INSERT INTO claims (id, resource_id, agent_id, task_id, claim_type, status,"
                " expires_at, renewable, resume_policy) VALUES (:id, 'src/app.py', :agent,"
                " 'task-1', 'edit', 'active', '2099-01-01T00:00:00Z', 1, 'hold')"
            ),
            {"id": claim_id, "agent": agent},
        )


@dataclass
class Web:
    store: Store
    client: TestClient

    def sign_in(self, token: str, next_path: str = "/sessions") -> Any:
        return self.client.post(
            "/sign-in", data={"token": token, "next": next_path}, follow_redirects=False
        )

    def csrf(self, path: str = "/sessions") -> str:
        found = _CSRF.search(self.client.get(path).text)
        assert found is not None and found.group(1), "no CSRF proof on the page"
        return found.group(1)

    def act(
        self,
        session_id: str,
        action: str,
        *,
        key: str = "k-1",
        csrf: str | None = None,
        version: int | None = None,
        body: Any = None,
    ) -> Any:
        headers = {
            "Idempotency-Key": key,
            "X-CSRF-Token": csrf if csrf is not None else self.csrf(),
        }
        if version is not None:
            headers["If-Match"] = str(version)
        return self.client.post(f"/actions/sessions/{session_id}/{action}", headers=headers,
                                json=body)  # fmt: skip

    def bulk(
        self,
        action: str,
        body: Any,
        *,
        preview: bool = False,
        key: str | None = "run-1",
        csrf: str | None = None,
    ) -> Any:
        """An action on a selection (``preview``: what it would do), as a page sends it."""
        headers = {"X-CSRF-Token": csrf if csrf is not None else self.csrf()}
        if key is not None:
            headers["Idempotency-Key"] = key
        where = "fragments" if preview else "actions"
        return self.client.post(f"/{where}/bulk/{action}", headers=headers, json=body)


def tokens(store: Store) -> dict[str, str]:
    """One token of each role (and one bound to the other workspace), by role."""
    made = {
        "operator": create_token(store=store, name="olivia", role="operator").token,
        "viewer": create_token(store=store, name="vic", role="viewer").token,
        "agent": create_token(store=store, name="bot", role="agent", agent_id="agent-1").token,
        "bound": create_token(
            store=store, name="bea", role="operator", workspaces=(OTHER_WORKSPACE,)
        ).token,
    }
    return made


@contextmanager
def web(store: Store, *, read_only: bool = False) -> Iterator[Web]:
    seed_workspace(store, WORKSPACE)
    seed_workspace(store, OTHER_WORKSPACE)
    seed_agent(store, "agent-1")
    app = create_app(ServerContext(store=store), read_only=read_only)
    with TestClient(app, base_url=ORIGIN) as client:
        yield Web(store=store, client=client)
