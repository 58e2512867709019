"""The heartbeat route answered ahead of the framework's router (``api.answering.HotRoutes``): it
must answer every request exactly as the routed endpoint does, and must actually be taken."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.types import Receive, Scope, Send

from roundtable_console.api.answering import HotRoutes
from roundtable_console.api.app import create_app
from roundtable_console.api.context import ServerContext
from roundtable_console.api.edge.exposure import Exposure
from roundtable_console.api.edge.middleware import Guard
from roundtable_console.store.db.database import Store
from tests.api_support import AGENT, BASE, HUMAN, seed_agent, seed_workspace

ORIGIN = "http://127.0.0.1:8080"


@pytest.fixture
def router_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths of the HTTP requests the framework's app is called for."""
    calls: list[str] = []
    framework = FastAPI.__call__

    async def counted(app: FastAPI, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            calls.append(scope["path"])
        await framework(app, scope, receive, send)

    monkeypatch.setattr(FastAPI, "__call__", counted)
    return calls


def _clients(store: Store) -> tuple[TestClient, TestClient]:
    """The server as served (hot route first), and the same routes with the router alone."""
    served = create_app(ServerContext(store=store))
    assert isinstance(served.app, HotRoutes)
    routed_only = Guard(
        create_app(ServerContext(store=store)).app.app, read_only=False, exposure=Exposure()
    )
    return TestClient(served, base_url=ORIGIN), TestClient(routed_only, base_url=ORIGIN)


def _register(client: TestClient, session_id: str) -> None:
    body = {"agent_id": AGENT, "run_id": "run-1", "adapter": "codex", "working_directory": "/w"}
    assert client.put(f"{BASE}/{session_id}", json=body).status_code == 201


def _shape(response: Any) -> tuple[Any, ...]:
    """What must match: status, media type, the header names, the problem's code or the
    session's fields (its own values differ: another session, another instant)."""
    body = response.json()
    names = sorted(name for name in response.headers if name != "content-length")
    if response.status_code >= 400:
        detail: Any = (body["code"], body["detail"].replace("hot", "routed"))
    else:
        detail = sorted(body)
    return response.status_code, response.headers["content-type"], names, detail


REQUESTS: list[tuple[str, str, dict[str, Any]]] = [
    ("beat", "/{sid}/heartbeat", {}),
    ("beat with a body", "/{sid}/heartbeat", {"json": {"waiting": True}}),
    ("unknown field", "/{sid}/heartbeat", {"json": {"nope": 1}}),
    ("broken JSON", "/{sid}/heartbeat", {"content": b"{", "headers": {"content-type": "x"}}),
    ("unknown session", "/missing/heartbeat", {}),
    ("control character", "/bad%01id/heartbeat", {}),
    ("new status", "/{sid}/heartbeat", {"params": {"status": "waiting_for_review"}}),
    ("bad status", "/{sid}/heartbeat", {"params": {"status": "dancing"}}),
    ("foreign origin", "/{sid}/heartbeat", {"headers": {"Origin": "https://evil.example"}}),
]


@pytest.mark.parametrize(("what", "suffix", "options"), REQUESTS, ids=[r[0] for r in REQUESTS])
def test_the_hot_heartbeat_answers_as_the_routed_one(
    store: Store, router_calls: list[str], what: str, suffix: str, options: dict[str, Any]
) -> None:
    seed_workspace(store)
    seed_agent(store)
    served, routed_only = _clients(store)
    with served, routed_only:
        _register(served, "hot")
        _register(served, "routed")
        calls = len(router_calls)
        hot = served.post(BASE + suffix.format(sid="hot"), **options)
        assert len(router_calls) == calls, f"{what}: the router answered, not the hot route"
        routed = routed_only.post(BASE + suffix.format(sid="routed"), **options)
    assert _shape(hot) == _shape(routed), what
    assert hot.headers["x-request-id"] != routed.headers["x-request-id"]


def test_what_the_hot_route_does_not_take_goes_to_the_router(
    store: Store, router_calls: list[str]
) -> None:
    seed_workspace(store)
    seed_agent(store)
    served, _routed_only = _clients(store)
    with served:
        _register(served, "s1")
        calls = len(router_calls)
        wrong_method = served.get(f"{BASE}/s1/heartbeat")
        assert wrong_method.status_code == 405
        assert wrong_method.headers["allow"] == "POST"
        assert served.post(f"{BASE}/s1/pause", headers=HUMAN).status_code == 200
        assert served.post(f"{BASE}/s1/heartbeat/extra").status_code == 404
        assert router_calls[calls:] == [
            f"{BASE}/s1/heartbeat",
            f"{BASE}/s1/pause",
            f"{BASE}/s1/heartbeat/extra",
        ]


def test_a_streamed_body_over_the_limit_is_refused_by_both_alike(
    store: Store, router_calls: list[str]
) -> None:
    """No Content-Length to refuse it up front: the body is counted as it is read."""
    seed_workspace(store)
    seed_agent(store)
    served, routed_only = _clients(store)

    def over_the_limit() -> Iterator[bytes]:
        yield b" " * (1 << 20)
        yield b" "

    with served, routed_only:
        _register(served, "hot")
        _register(served, "routed")
        before = [served.get(f"{BASE}/{session_id}").json() for session_id in ("hot", "routed")]
        hot = served.post(f"{BASE}/hot/heartbeat", content=over_the_limit())
        assert router_calls[-1] != f"{BASE}/hot/heartbeat"
        routed = routed_only.post(f"{BASE}/routed/heartbeat", content=over_the_limit())
        assert _shape(hot) == _shape(routed)
        assert hot.json()["code"] == "request_too_large"
        after = [served.get(f"{BASE}/{session_id}").json() for session_id in ("hot", "routed")]
        assert after == before  # nothing beat
