"""Hooks that wait through the server (issue 41 point 1), its routes in-process on each engine:
a permission request opened, awaited by a long wait the store's change ends, taken, settled; a
reply listener the same; the agent moving on withdraws both. Who may do each (an agent token for
its own agent only, never a viewer), and every bad input refused in words."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from roundtable_console.store.replies.sending import send_reply
from roundtable_console.store.requests import asking
from roundtable_console.store.requests.deciding import decide_request
from tests.api_support import AGENT, BASE, Api, assert_problem, seed_agent

SID = "s-hook"
ASK = {
    "agent": "claude-code",
    "tool_name": "Bash",
    "tool_input": {"command": "make deploy"},
    "suggestions": [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}],
    "reason": "asks to run Bash: make deploy",
    "wait_seconds": 60,
    "hook_host": "laptop-7",
    "hook_pid": 4242,
}
LISTEN = {"agent": "claude-code", "wait_seconds": 60, "hook_host": "laptop-7", "hook_pid": 4243}


@pytest.fixture
def hooks(api: Api) -> dict[str, str]:
    """The agent token of SID's agent, with SID registered through it."""
    token = api.token("hooks", "agent", agent_id=AGENT)
    assert api.register(SID, headers=token).status_code == 201
    return token


def asked(api: Api, token: dict[str, str], **changes: Any) -> dict[str, Any]:
    opened = api.client.post(f"{BASE}/{SID}/requests", json={**ASK, **changes}, headers=token)
    assert opened.status_code == 201, opened.text
    return opened.json()  # type: ignore[no-any-return]


def in_thread(call: Any) -> tuple[threading.Thread, dict[str, Any]]:
    """``call()`` in a thread; its answer and how long it took, once joined."""
    found: dict[str, Any] = {}

    def run() -> None:
        started = time.monotonic()
        found["answer"] = call()
        found["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, found


def test_a_request_opened_by_the_hook_records_the_hook_that_waits(
    api: Api, hooks: dict[str, str]
) -> None:
    shown = asked(api, hooks)
    assert shown["state"] == "pending" and shown["answers"] == ["allow", "deny"]
    assert shown["tool_input"] == {"command": "make deploy"}
    assert shown["suggestions"] == ASK["suggestions"]
    stored = asking.read_request(api.store, shown["id"])
    assert (stored.hook_host, stored.hook_pid) == ("laptop-7", 4242)
    assert stored.unheard is None  # a hook listens: deciding it tells the agent


def test_a_retried_open_under_its_key_is_one_request(api: Api, hooks: dict[str, str]) -> None:
    keyed = {**hooks, "Idempotency-Key": "ask-once"}
    first = api.client.post(f"{BASE}/{SID}/requests", json=ASK, headers=keyed)
    again = api.client.post(f"{BASE}/{SID}/requests", json=ASK, headers=keyed)
    assert first.status_code == again.status_code == 201
    assert first.json()["id"] == again.json()["id"]
    listed = api.client.get(f"{BASE}/{SID}/requests", headers=hooks).json()["items"]
    assert [item["id"] for item in listed] == [first.json()["id"]]


def test_a_long_wait_ends_when_the_request_is_decided(api: Api, hooks: dict[str, str]) -> None:
    shown = asked(api, hooks)
    url = f"{BASE}/{SID}/requests/{shown['id']}?wait=20"
    thread, found = in_thread(lambda: api.client.get(url, headers=hooks))
    time.sleep(0.3)  # the wait is open (a decision before it would answer at once, too)
    decide_request(store=api.store, request_id=shown["id"], decision="allow", actor="alice",
                   suggestion=0)  # fmt: skip
    thread.join(20)
    answer = found["answer"]
    assert answer.status_code == 200 and answer.json()["state"] == "allowed"
    assert answer.json()["decided_by"] == "alice" and answer.json()["accepted_suggestion"] == 0
    assert found["seconds"] < 5, found  # woken by the change, not by the end of its wait

    taken = api.client.post(f"{BASE}/{SID}/requests/{shown['id']}/delivered", headers=hooks)
    assert taken.status_code == 200 and taken.json()["delivered_at"] is not None
    again = api.client.post(f"{BASE}/{SID}/requests/{shown['id']}/delivered", headers=hooks)
    assert again.json()["delivered_at"] == taken.json()["delivered_at"]  # marked once


def test_a_long_wait_on_nothing_ends_with_its_wait(api: Api, hooks: dict[str, str]) -> None:
    shown = asked(api, hooks)
    started = time.monotonic()
    answer = api.client.get(f"{BASE}/{SID}/requests/{shown['id']}?wait=1", headers=hooks)
    assert answer.status_code == 200 and answer.json()["state"] == "pending"
    assert time.monotonic() - started >= 0.9
    # A request past its own wait: answered at once, as expired, whatever wait is asked.
    short = asked(api, hooks, wait_seconds=0.2)
    time.sleep(0.3)
    started = time.monotonic()
    answer = api.client.get(f"{BASE}/{SID}/requests/{short['id']}?wait=10", headers=hooks)
    assert answer.json()["state"] == "expired" and time.monotonic() - started < 5


def test_a_request_settled_by_its_hook_unless_decided_first(
    api: Api, hooks: dict[str, str]
) -> None:
    shown = asked(api, hooks)
    path = f"{BASE}/{SID}/requests/{shown['id']}/settle"
    settled = api.client.post(path, json={"state": "withdrawn"}, headers=hooks)
    assert settled.status_code == 200 and settled.json()["settled"] is True
    assert settled.json()["request"]["state"] == "withdrawn"

    second = asked(api, hooks)
    decide_request(store=api.store, request_id=second["id"], decision="deny", actor="bob",
                   message="not today")  # fmt: skip
    late = api.client.post(
        f"{BASE}/{SID}/requests/{second['id']}/settle", json={"state": "expired"}, headers=hooks
    )
    assert late.json()["settled"] is False
    assert late.json()["request"]["state"] == "denied"
    assert late.json()["request"]["message"] == "not today"


def test_the_agent_moving_on_withdraws_what_still_waits(api: Api, hooks: dict[str, str]) -> None:
    shown = asked(api, hooks)
    listener = api.client.post(f"{BASE}/{SID}/listeners", json=LISTEN, headers=hooks).json()
    done = api.client.post(f"{BASE}/{SID}/withdraw-waits", headers=hooks)
    assert done.status_code == 200 and done.json() == {"requests": 1, "listeners": 1}
    assert asking.read_request(api.store, shown["id"]).state == "withdrawn"
    read = api.client.get(f"{BASE}/{SID}/listeners/{listener['id']}", headers=hooks)
    assert read.json()["state"] == "withdrawn"


def test_a_reply_reaches_the_listening_hook_once(api: Api, hooks: dict[str, str]) -> None:
    done = api.client.post(f"{BASE}/{SID}/heartbeat", json={"turn_done": "done"}, headers=hooks)
    assert done.status_code == 200, done.text
    listener = api.client.post(f"{BASE}/{SID}/listeners", json=LISTEN, headers=hooks)
    assert listener.status_code == 201 and listener.json()["state"] == "listening"
    shown = listener.json()
    assert "message" not in shown
    url = f"{BASE}/{SID}/listeners/{shown['id']}?wait=20"
    thread, found = in_thread(lambda: api.client.get(url, headers=hooks))
    time.sleep(0.3)
    sent = send_reply(
        store=api.store, session_id=SID, message="run the tests", actor="alice",
        pane_route=lambda launch: None, type_keys=lambda launch, line: None,
    )  # fmt: skip
    assert sent.via == "hook"
    thread.join(20)
    answer = found["answer"].json()
    assert answer["state"] == "replied" and answer["replied_by"] == "alice"
    assert "message" not in answer and found["seconds"] < 5  # the text goes to the hook alone

    path = f"{BASE}/{SID}/listeners/{shown['id']}/delivered"
    taken = api.client.post(path, headers=hooks).json()
    assert taken["state"] == "delivered" and taken["message"] == "run the tests"
    assert api.client.post(path, headers=hooks).json()["message"] == "run the tests"
    ended = api.client.post(
        f"{BASE}/{SID}/listeners/{shown['id']}/end", json={"state": "expired"}, headers=hooks
    )
    assert ended.json()["ended"] is False and ended.json()["listener"]["state"] == "delivered"


def test_a_listener_ended_by_its_hook(api: Api, hooks: dict[str, str]) -> None:
    shown = api.client.post(f"{BASE}/{SID}/listeners", json=LISTEN, headers=hooks).json()
    ended = api.client.post(
        f"{BASE}/{SID}/listeners/{shown['id']}/end", json={"state": "withdrawn"}, headers=hooks
    )
    assert ended.status_code == 200 and ended.json()["ended"] is True
    assert ended.json()["listener"]["state"] == "withdrawn"
    nothing = api.client.post(f"{BASE}/{SID}/listeners/{shown['id']}/delivered", headers=hooks)
    assert nothing.status_code == 200 and "message" not in nothing.json()


def test_only_the_sessions_own_agent_opens_awaits_and_settles(
    api: Api, hooks: dict[str, str]
) -> None:
    shown = asked(api, hooks)
    listener = api.client.post(f"{BASE}/{SID}/listeners", json=LISTEN, headers=hooks).json()
    seed_agent(api.store, "someone")
    other = api.token("other", "agent", agent_id="someone")
    viewer = api.token("watcher", "viewer")
    request_path = f"{BASE}/{SID}/requests/{shown['id']}"
    listener_path = f"{BASE}/{SID}/listeners/{listener['id']}"
    for headers in (other, viewer):
        assert_problem(api.client.post(f"{BASE}/{SID}/requests", json=ASK, headers=headers),
                       403, "forbidden")  # fmt: skip
        assert_problem(api.client.post(f"{BASE}/{SID}/listeners", json=LISTEN, headers=headers),
                       403, "forbidden")  # fmt: skip
        assert_problem(api.client.post(f"{request_path}/delivered", headers=headers),
                       403, "forbidden")  # fmt: skip
        assert_problem(api.client.post(f"{request_path}/settle", json={"state": "withdrawn"},
                                       headers=headers), 403, "forbidden")  # fmt: skip
        assert_problem(api.client.post(f"{listener_path}/delivered", headers=headers),
                       403, "forbidden")  # fmt: skip
        assert_problem(api.client.post(f"{listener_path}/end", json={"state": "withdrawn"},
                                       headers=headers), 403, "forbidden")  # fmt: skip
        assert_problem(api.client.post(f"{BASE}/{SID}/withdraw-waits", headers=headers),
                       403, "forbidden")  # fmt: skip
    # Another agent's token does not even read (or await) this agent's requests.
    assert_problem(api.client.get(f"{request_path}?wait=5", headers=other), 403, "forbidden")
    assert_problem(api.client.get(listener_path, headers=other), 403, "forbidden")
    # A viewer reads the request as it reads the list, and nothing moved.
    assert api.client.get(request_path, headers=viewer).json()["state"] == "pending"
    assert asking.read_request(api.store, shown["id"]).state == "pending"
    # Anonymous: refused before anything is read.
    assert_problem(api.client.get(request_path), 401, "authentication_required")


def test_a_workspace_bound_token_and_other_sessions_paths_reach_nothing(
    api: Api, hooks: dict[str, str]
) -> None:
    shown = asked(api, hooks)
    assert api.register("s-other", headers=hooks).status_code == 201
    # The request through another session's path: not found, as an id that does not exist.
    assert_problem(api.client.get(f"{BASE}/s-other/requests/{shown['id']}", headers=hooks),
                   404, "request_not_found")  # fmt: skip
    assert_problem(api.client.post(f"{BASE}/s-other/requests/{shown['id']}/delivered",
                                   headers=hooks), 404, "request_not_found")  # fmt: skip
    elsewhere = api.token("elsewhere", "operator", workspaces=("ws-other",))
    assert_problem(api.client.get(f"{BASE}/{SID}/requests/{shown['id']}", headers=elsewhere),
                   404, "workspace_not_found")  # fmt: skip
    assert_problem(api.client.get(f"{BASE}/{SID}/requests/req-nothing", headers=hooks),
                   404, "request_not_found")  # fmt: skip
    assert_problem(api.client.get(f"{BASE}/{SID}/listeners/reply-nothing", headers=hooks),
                   404, "listener_not_found")  # fmt: skip
    assert_problem(api.client.get(f"{BASE}/{SID}/requests/bad%01id", headers=hooks),
                   404, "request_not_found")  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"agent": "cursor"}, "invalid_request_body"),
        ({"tool_name": ""}, "invalid_request_body"),
        ({"tool_name": "Bash\x1b[2J"}, "invalid_request_body"),
        ({"tool_name": "x" * 201}, "invalid_request_body"),
        ({"wait_seconds": 0}, "invalid_wait"),
        ({"wait_seconds": 3601}, "invalid_wait"),
        ({"wait_seconds": True}, "invalid_wait"),
        ({"wait_seconds": "60"}, "invalid_wait"),
        ({"hook_pid": -1}, "invalid_request_body"),
        ({"hook_pid": "1"}, "invalid_request_body"),
        ({"hook_host": "a\nb"}, "invalid_request_body"),
        ({"colour": "red"}, "invalid_request_body"),
    ],
    ids=["agent", "empty-tool", "control-tool", "long-tool", "zero-wait", "long-wait",
         "bool-wait", "text-wait", "negative-pid", "text-pid", "newline-host", "unknown"],
)  # fmt: skip
def test_a_bad_request_is_refused_in_words(
    api: Api, hooks: dict[str, str], changes: dict[str, Any], code: str
) -> None:
    refused = api.client.post(f"{BASE}/{SID}/requests", json={**ASK, **changes}, headers=hooks)
    assert_problem(refused, 400, code)
    assert api.client.get(f"{BASE}/{SID}/requests", headers=hooks).json()["items"] == []


@pytest.mark.parametrize("wait", ["abc", "-1", "31", "nan", "inf"])
def test_a_bad_wait_is_refused(api: Api, hooks: dict[str, str], wait: str) -> None:
    shown = asked(api, hooks)
    refused = api.client.get(f"{BASE}/{SID}/requests/{shown['id']}?wait={wait}", headers=hooks)
    assert_problem(refused, 400, "invalid_wait")


def test_a_bad_settle_or_listener_is_refused(api: Api, hooks: dict[str, str]) -> None:
    shown = asked(api, hooks)
    path = f"{BASE}/{SID}/requests/{shown['id']}/settle"
    for body in ({"state": "allowed"}, {"state": None}, {}, {"state": "withdrawn", "x": 1}):
        assert_problem(api.client.post(path, json=body, headers=hooks),
                       400, "invalid_request_body")  # fmt: skip
    assert asking.read_request(api.store, shown["id"]).state == "pending"
    assert_problem(api.client.post(f"{BASE}/{SID}/listeners", json={**LISTEN, "wait_seconds": 0},
                                   headers=hooks), 400, "invalid_wait")  # fmt: skip
    assert_problem(api.client.post(f"{BASE}/{SID}/listeners", content=b"[1]", headers=hooks),
                   400, "invalid_request_body")  # fmt: skip


def test_many_long_waits_are_woken_by_one_read_each_change(api: Api, hooks: dict[str, str]) -> None:
    """Twenty waits on twenty requests: deciding one wakes that one alone."""
    shown = [asked(api, hooks) for _ in range(20)]
    waits = [
        in_thread(lambda one=one: api.client.get(
            f"{BASE}/{SID}/requests/{one['id']}?wait=3", headers=hooks))
        for one in shown
    ]  # fmt: skip
    time.sleep(0.5)
    decide_request(store=api.store, request_id=shown[7]["id"], decision="allow", actor="alice")
    for thread, _found in waits:
        thread.join(20)
    seconds = [found["seconds"] for _thread, found in waits]
    states = [found["answer"].json()["state"] for _thread, found in waits]
    assert states[7] == "allowed" and seconds[7] < 2.5
    assert states.count("pending") == 19 and min(s for i, s in enumerate(seconds) if i != 7) >= 2.9


def test_an_operator_or_a_viewer_is_not_a_hook(api: Api, hooks: dict[str, str]) -> None:
    """Operators decide and reply; only the agent's hook asks, waits, takes or withdraws."""
    shown = asked(api, hooks)
    operator = api.token("ops", "operator")
    viewer = api.token("watcher", "viewer")
    request_path = f"{BASE}/{SID}/requests/{shown['id']}"
    for headers in (operator, viewer):
        for method, path, body in (
            ("POST", f"{BASE}/{SID}/requests", ASK),
            ("POST", f"{BASE}/{SID}/listeners", LISTEN),
            ("POST", f"{request_path}/delivered", None),
            ("POST", f"{request_path}/settle", {"state": "withdrawn"}),
            ("POST", f"{BASE}/{SID}/withdraw-waits", None),
            ("GET", f"{request_path}?wait=5", None),
        ):
            refused = api.client.request(method, path, json=body, headers=headers)
            assert_problem(refused, 403, "forbidden")
        assert api.client.get(request_path, headers=headers).json()["state"] == "pending"
    assert asking.read_request(api.store, shown["id"]).state == "pending"


def test_the_sessions_own_agent_answers_whatever_the_body_says(
    api: Api, hooks: dict[str, str]
) -> None:
    shown = asked(api, hooks, agent="gemini")  # the session is a Codex one (its adapter)
    assert shown["agent"] == "codex" and shown["answers"] == ["allow", "deny"]


@pytest.mark.parametrize(
    "raw",
    [
        b'{"x": NaN}',
        b'{"x": Infinity}',
        b'{"x": -Infinity}',
        b'"\\ud800"',
        b"[" * 900 + b"]" * 900,
    ],
    ids=["nan", "infinity", "minus-infinity", "lone-surrogate", "deep"],
)
def test_an_input_that_could_not_be_shown_again_is_refused(
    api: Api, hooks: dict[str, str], raw: bytes
) -> None:
    body = b'{"agent": "claude-code", "tool_name": "Bash", "wait_seconds": 60, "tool_input": '
    refused = api.client.post(f"{BASE}/{SID}/requests", content=body + raw + b"}", headers=hooks)
    assert_problem(refused, 400, "invalid_request_body")
    assert api.client.get(f"{BASE}/{SID}/requests?all=true", headers=hooks).status_code == 200
    assert api.client.get(f"{BASE}/{SID}/requests", headers=hooks).json()["items"] == []


def test_a_flood_of_requests_is_bounded_per_session_and_per_agent(
    api: Api, hooks: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for _ in range(asking.MAX_PENDING_PER_SESSION):
        asked(api, hooks)
    refused = api.client.post(f"{BASE}/{SID}/requests", json=ASK, headers=hooks)
    assert_problem(refused, 429, "too_many_pending_requests")
    assert "20 permission requests pending" in refused.json()["detail"]
    # The agent's other sessions count too: a flood spread over many sessions is bounded.
    monkeypatch.setattr(asking, "MAX_PENDING_PER_AGENT", 22)
    for number in range(3):
        assert api.register(f"s-more-{number}", headers=hooks).status_code == 201
    for number in range(2):
        opened = api.client.post(f"{BASE}/s-more-{number}/requests", json=ASK, headers=hooks)
        assert opened.status_code == 201, opened.text
    refused = api.client.post(f"{BASE}/s-more-2/requests", json=ASK, headers=hooks)
    assert_problem(refused, 429, "too_many_pending_requests")
    # Answered or expired, they no longer count.
    first = api.client.get(f"{BASE}/{SID}/requests", headers=hooks).json()["items"][0]
    decide_request(store=api.store, request_id=first["id"], decision="deny", actor="alice")
    assert api.client.post(f"{BASE}/s-more-2/requests", json=ASK, headers=hooks).status_code == 201


def test_one_caller_holds_a_bounded_number_of_long_waits(api: Api, hooks: dict[str, str]) -> None:
    assert api.context is not None
    awaited = api.context.awaited
    awaited.per_holder = 2
    shown = [asked(api, hooks) for _ in range(3)]
    waits = [
        in_thread(lambda one=one: api.client.get(
            f"{BASE}/{SID}/requests/{one['id']}?wait=3", headers=hooks))
        for one in shown[:2]
    ]  # fmt: skip
    time.sleep(0.5)
    assert awaited.waiting == 2
    refused = api.client.get(f"{BASE}/{SID}/requests/{shown[2]['id']}?wait=3", headers=hooks)
    assert_problem(refused, 429, "too_many_requests")
    assert refused.headers["retry-after"] == "5"
    # Another caller is not held up by this one's waits.
    seed_agent(api.store, "someone")
    other = api.token("other", "agent", agent_id="someone")
    assert api.register("s-someone", headers=other, agent_id="someone").status_code == 201
    theirs = api.client.post(f"{BASE}/s-someone/requests", json=ASK, headers=other).json()
    answer = api.client.get(f"{BASE}/s-someone/requests/{theirs['id']}?wait=0.2", headers=other)
    assert answer.status_code == 200 and answer.json()["state"] == "pending"
    for thread, _found in waits:
        thread.join(20)
    assert awaited.waiting == 0  # ended, they are given back
    again = api.client.get(f"{BASE}/{SID}/requests/{shown[2]['id']}?wait=0.1", headers=hooks)
    assert again.status_code == 200 and again.json()["state"] == "pending"
