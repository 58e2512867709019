"""Issue 28 point 5, against a real ``roundtable serve`` on each engine: the server-sent
events stream, the reference's WebSocket and the web console's live stream end within seconds
of the token being revoked (or the sign-in ending), and a caller cannot hold more than its share
of streams, nor the server more than its most."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest
import websockets

from roundtable_console.store.access.tokens import revoke_token
from tests import http_calls
from tests.api_support import assert_problem
from tests.security_support import (
    WS_B,
    Browser,
    bearer,
    make_token,
    open_stream,
    seed_two_workspaces,
    websocket,
    with_store,
)
from tests.serve_support import EventReader, serving

CHANGES = f"/api/v1/workspaces/{WS_B}/sessions/changes"
EVENTS = f"/api/v1/workspaces/{WS_B}/events/ws"
# The streams' check comes every 2 s (api.streams.slots.CHECK_SECONDS); a read and the hop.
ENDED_WITHIN = 4.0


def _revoke(url: str, name: str) -> float:
    with_store(url, lambda store: revoke_token(store=store, name=name))
    return time.monotonic()


def _signed_out_within(reader: EventReader, revoked: float) -> dict[str, object]:
    while True:
        event = reader.next(timeout=ENDED_WITHIN + 1)
        if event.get("event") == "signed-out":
            assert time.monotonic() - revoked < ENDED_WITHIN
            return event


def test_the_event_stream_ends_when_its_token_is_revoked(store_url: str, tmp_path: Path) -> None:
    seed_two_workspaces(store_url)
    viewer = make_token(store_url, "vic", "viewer")
    with serving(store_url, tmp_path) as served:
        reader = EventReader(served.url + CHANGES, headers=bearer(viewer)).start()
        assert reader.next()["event"] == "ready"
        ended = _signed_out_within(reader, _revoke(store_url, "vic"))
        assert ended["data"] == {"code": "invalid_token"}
        reader.close()
        assert_problem(
            http_calls.get(served.url + CHANGES, headers=bearer(viewer)), 401, "invalid_token"
        )


def test_the_websocket_closes_when_its_token_is_revoked(store_url: str, tmp_path: Path) -> None:
    seed_two_workspaces(store_url)
    viewer = make_token(store_url, "vic", "viewer")
    with serving(store_url, tmp_path) as served:
        with websocket(served, EVENTS, headers=bearer(viewer)) as socket:
            assert json.loads(socket.recv(timeout=5))["kind"] == "hello"
            revoked = _revoke(store_url, "vic")
            with pytest.raises(websockets.ConnectionClosed) as closed:
                socket.recv(timeout=ENDED_WITHIN + 1)
            assert time.monotonic() - revoked < ENDED_WITHIN
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
            assert closed.value.rcvd.reason == "invalid_token"


def test_the_live_page_ends_when_its_token_is_revoked_or_it_signs_out(
    store_url: str, tmp_path: Path
) -> None:
    seed_two_workspaces(store_url)
    make_token(store_url, "vic", "viewer")
    with serving(store_url, tmp_path) as served:
        for ending in ("revoke", "sign-out"):
            token = make_token(store_url, f"vic-{ending}", "viewer")
            browser = Browser(served, token)
            cookie = "; ".join(f"{k}={v}" for k, v in browser.client.cookies.items())
            reader = EventReader(served.url + "/live", headers={"Cookie": cookie}).start()
            assert reader.next()["event"] == "ready"
            if ending == "revoke":
                began = _revoke(store_url, f"vic-{ending}")
            else:
                signed_out = browser.client.post("/sign-out", data={"csrf": browser.csrf()})
                assert signed_out.status_code == 303
                began = time.monotonic()
            _signed_out_within(reader, began)
            reader.close()
            browser.close()


def test_a_token_holds_a_bounded_number_of_streams(store_url: str, tmp_path: Path) -> None:
    seed_two_workspaces(store_url)
    viewer = make_token(store_url, "vic", "viewer")
    other = make_token(store_url, "ann", "viewer")
    with serving(store_url, tmp_path) as served:
        readers = [
            EventReader(served.url + CHANGES, headers=bearer(viewer)).start() for _ in range(32)
        ]
        try:
            for reader in readers:
                assert reader.next()["event"] == "ready"
            refused = http_calls.get(served.url + CHANGES, headers=bearer(viewer))
            body = assert_problem(refused, 429, "too_many_requests")
            assert "32 streams" in body["detail"] and refused.headers["retry-after"]
            with pytest.raises(websockets.InvalidStatus) as socket_refused:
                websocket(served, EVENTS, headers=bearer(viewer))
            assert socket_refused.value.response.status_code == 429
            # Another token is not held back by this one's, and the server answers on.
            ann = EventReader(served.url + CHANGES, headers=bearer(other)).start()
            assert ann.next()["event"] == "ready"
            ann.close()
            assert (
                http_calls.get(
                    f"{served.url}/api/v1/workspaces/{WS_B}/sessions", headers=bearer(viewer)
                ).status_code
                == 200
            )
        finally:
            for reader in readers:
                reader.close()


def test_the_server_holds_a_bounded_number_of_streams(store_url: str, tmp_path: Path) -> None:
    seed_two_workspaces(store_url)
    tokens = [make_token(store_url, f"v{index}", "viewer") for index in range(4)]
    with serving(store_url, tmp_path, "--max-streams", "3") as served:
        streams = [open_stream(served, CHANGES, bearer(token)) for token in tokens[:3]]
        try:
            refused = http_calls.get(served.url + CHANGES, headers=bearer(tokens[3]))
            body = assert_problem(refused, 503, "server_busy")
            assert "3 streams" in body["detail"] and refused.headers["retry-after"]
            streams.pop(0).close()
            deadline = time.monotonic() + 10
            while True:  # its slot comes back once the server sees the client gone
                if (
                    http_calls.get(
                        served.url + CHANGES, headers=bearer(tokens[3]), timeout=0.5
                    ).status_code
                    != 503
                ):
                    break
                assert time.monotonic() < deadline, "a closed stream's slot never came back"
                time.sleep(0.2)
        except httpx.ReadTimeout:
            pass  # answered 200 and streaming: the slot came back
        finally:
            for stream in streams:
                stream.close()
