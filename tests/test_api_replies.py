"""Replies over HTTP (issue 30 point 5): what can carry a reply is read by whoever may read the
session; a reply is sent by an operator alone, under an Idempotency-Key, once; a viewer, an agent
token, another workspace's token and header mode are refused, and nothing is written for them.
Both engines."""

from __future__ import annotations

from typing import Any

from roundtable_console.store.replies import listeners
from tests.api_support import AGENT, BASE, Api, assert_problem, seed_workspace
from tests.helpers import seed_listener
from tests.hook_support import history


def _listening(api: Api, url: str, session_id: str = "s1") -> None:
    assert api.register(session_id).status_code in (200, 201)
    seed_listener(url, session_id, listener_id=f"reply-{session_id}")


def _send(api: Api, headers: dict[str, str], key: str, session_id: str = "s1", **body: Any) -> Any:
    return api.client.post(
        f"{BASE}/{session_id}/reply", json=body, headers={**headers, "Idempotency-Key": key}
    )


def _replies(url: str, session_id: str = "s1") -> list[dict[str, Any]]:
    return [payload for kind, payload in history(url, session_id) if kind == "replied"]


def test_an_operator_replies_once_and_everyone_else_is_refused(api: Api, store_url: str) -> None:
    _listening(api, store_url)
    operator = api.token("ops", "operator")
    viewer = api.token("watcher", "viewer")
    agent = api.token("bot", "agent", agent_id=AGENT)
    seed_workspace(api.store, "ws-other")
    stranger = api.token("elsewhere", "operator", workspaces=["ws-other"])

    shown = api.client.get(f"{BASE}/s1/reply", headers=viewer)
    assert shown.status_code == 200, shown.text
    body = shown.json()
    assert (body["session_id"], body["possible"], body["via"]) == ("s1", True, "hook")
    assert body["until"] == "2999-01-01T00:00:00.000000Z" and "Stop hook" in body["words"]
    assert api.client.get(f"{BASE}/s1/reply", headers=agent).status_code == 200
    assert_problem(api.client.get(f"{BASE}/s1/reply", headers=stranger), 404, "workspace_not_found")

    assert_problem(_send(api, viewer, "v1", message="go"), 403, "forbidden")
    assert_problem(_send(api, agent, "a1", message="approve yourself"), 403, "forbidden")
    assert_problem(_send(api, stranger, "x1", message="go"), 404, "workspace_not_found")
    assert_problem(_send(api, operator, "o0", message="  "), 400, "invalid_reply")
    assert_problem(_send(api, operator, "o0", message="a\x1b[2Jb"), 400, "invalid_reply")
    assert_problem(_send(api, operator, "o0", message=7), 400, "invalid_reply")
    assert_problem(_send(api, operator, "o0", message="x" * 4001), 400, "invalid_reply")
    assert_problem(_send(api, operator, "o0", message="go", colour="red"), 400,
                   "invalid_request_body")  # fmt: skip
    assert_problem(_send(api, operator, "o0", message="go", via="shell"), 400, "invalid_reply")
    moved = assert_problem(_send(api, operator, "o0", message="go", via="pane"), 409,
                           "no_reply_path")  # fmt: skip
    assert "changed since it was shown" in moved["detail"]
    missing_key = api.client.post(f"{BASE}/s1/reply", json={"message": "go"}, headers=operator)
    assert_problem(missing_key, 400, "idempotency_key_required")
    assert _replies(store_url) == []
    assert listeners.read_listener(api.store, "reply-s1").state == "listening"

    done = _send(api, operator, "o1", message="Now the tests.\nThen stop.", via="hook")
    assert done.status_code == 200, done.text
    sent = done.json()
    assert (sent["via"], sent["replied_by"], sent["message"]) == (
        "hook",
        "ops",
        "Now the tests.\nThen stop.",
    )
    again = _send(api, operator, "o1", message="Now the tests.\nThen stop.", via="hook")
    assert again.status_code == 200 and again.headers.get("idempotent-replayed") == "true"
    taken = listeners.read_listener(api.store, "reply-s1")
    assert (taken.state, taken.message, taken.replied_by) == (
        "replied",
        "Now the tests.\nThen stop.",
        "ops",
    )
    assert _replies(store_url) == [{"via": "hook", "message": "Now the tests.\nThen stop."}]

    # The hook has its reply: nothing listens now, and a second reply is told so.
    after = api.client.get(f"{BASE}/s1/reply", headers=operator).json()
    assert after["possible"] is False and after["via"] is None
    assert_problem(_send(api, operator, "o2", message="and more"), 409, "no_reply_path")
    assert len(_replies(store_url)) == 1


def test_a_session_that_waits_for_nothing_has_no_reply_and_says_why(api: Api) -> None:
    assert api.register("s1").status_code in (200, 201)
    operator = api.token("ops", "operator")
    shown = api.client.get(f"{BASE}/s1/reply", headers=operator).json()
    assert shown == {
        "session_id": "s1",
        "possible": False,
        "via": None,
        "words": "Its agent is not waiting for a prompt or an answer.",
        "until": None,
    }
    problem = assert_problem(_send(api, operator, "k", message="go"), 409, "no_reply_path")
    assert problem["detail"] == "Its agent is not waiting for a prompt or an answer."
    assert_problem(api.client.get(f"{BASE}/ghost/reply", headers=operator), 404,
                   "session_not_found")  # fmt: skip
    assert_problem(_send(api, operator, "k2", "ghost", message="go"), 404, "session_not_found")


def test_an_agent_token_reads_only_its_own_agents_route(api: Api, store_url: str) -> None:
    _listening(api, store_url)
    other = api.token("other-bot", "agent", agent_id="someone-else")
    assert_problem(api.client.get(f"{BASE}/s1/reply", headers=other), 403, "forbidden")


def test_header_mode_sends_no_reply_whatever_the_headers_say(api: Api, store_url: str) -> None:
    _listening(api, store_url)
    admin = {"X-Actor-ID": "alice", "X-Actor-Role": "ADMIN"}
    assert api.client.get(f"{BASE}/s1/reply", headers=admin).json()["via"] == "hook"
    problem = assert_problem(_send(api, admin, "h1", message="go"), 403, "forbidden")
    assert "operator token" in problem["detail"]
    assert _replies(store_url) == []
    assert listeners.read_listener(api.store, "reply-s1").state == "listening"
