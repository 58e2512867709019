"""Permission requests over HTTP (issue 30 point 3): a session's requests read by whoever may read
the session, a decision by an operator alone under an Idempotency-Key; a viewer, an agent token
(its own agent's request least of all) and another workspace's token are refused. Both engines."""

from __future__ import annotations

from roundtable_console.store.requests import asking
from tests.api_support import AGENT, BASE, Api, assert_problem, seed_workspace


def _ask(api: Api, session_id: str = "s1", command: str = "make deploy") -> str:
    assert api.register(session_id).status_code in (200, 201)
    record = asking.open_request(
        api.store, session_id=session_id, agent="claude-code", tool_name="Bash",
        tool_input={"command": command}, suggestions=[{"type": "setMode", "mode": "acceptEdits"}],
        reason=f"asks to run Bash: {command}", wait_seconds=600,
    )  # fmt: skip
    return record.id


def _decide(api: Api, headers: dict[str, str], rid: str, key: str, **body: object):  # noqa: ANN202
    return api.client.post(
        f"{BASE}/s1/requests/{rid}/decision",
        json=body,
        headers={**headers, "Idempotency-Key": key},
    )


def test_an_operator_decides_once_and_everyone_else_is_refused(api: Api) -> None:
    rid = _ask(api)
    operator = api.token("ops", "operator")
    viewer = api.token("watcher", "viewer")
    agent = api.token("bot", "agent", agent_id=AGENT)
    seed_workspace(api.store, "ws-other")
    stranger = api.token("elsewhere", "operator", workspaces=["ws-other"])

    listed = api.client.get(f"{BASE}/s1/requests", headers=viewer)
    assert listed.status_code == 200, listed.text
    [item] = listed.json()["items"]
    assert item["id"] == rid and item["state"] == "pending"
    assert item["tool_input"] == {"command": "make deploy"} and item["answers"] == ["allow", "deny"]
    assert api.client.get(f"{BASE}/s1/requests", headers=agent).status_code == 200
    assert_problem(
        api.client.get(f"{BASE}/s1/requests", headers=stranger), 404, "workspace_not_found"
    )

    assert_problem(_decide(api, viewer, rid, "v1", decision="allow"), 403, "forbidden")
    assert_problem(_decide(api, agent, rid, "a1", decision="allow"), 403, "forbidden")
    assert_problem(_decide(api, stranger, rid, "x1", decision="allow"), 404, "workspace_not_found")
    assert asking.read_request(api.store, rid).state == "pending"

    assert_problem(_decide(api, operator, rid, "o0", decision="maybe"), 400, "invalid_decision")
    assert_problem(
        _decide(api, operator, rid, "o0", decision="allow", message="sure"), 400, "invalid_decision"
    )
    assert_problem(
        _decide(api, operator, rid, "o0", decision="allow", suggestion=3), 400, "invalid_decision"
    )
    assert_problem(
        _decide(api, operator, rid, "o0", decision="deny", colour="red"),
        400,
        "invalid_request_body",
    )
    missing_key = api.client.post(
        f"{BASE}/s1/requests/{rid}/decision", json={"decision": "deny"}, headers=operator
    )
    assert_problem(missing_key, 400, "idempotency_key_required")

    done = _decide(api, operator, rid, "o1", decision="deny", message="Use build/ instead.")
    assert done.status_code == 200, done.text
    body = done.json()
    assert (body["state"], body["decided_by"], body["message"]) == (
        "denied",
        "ops",
        "Use build/ instead.",
    )
    again = _decide(api, operator, rid, "o1", decision="deny", message="Use build/ instead.")
    assert again.status_code == 200 and again.headers.get("idempotent-replayed") == "true"
    second = _decide(api, operator, rid, "o2", decision="allow")
    problem = assert_problem(second, 409, "request_already_settled")
    assert "denied by ops" in problem["detail"]
    everything = api.client.get(f"{BASE}/s1/requests?all=true", headers=operator).json()["items"]
    assert [(i["id"], i["state"]) for i in everything] == [(rid, "denied")]
    assert api.client.get(f"{BASE}/s1/requests", headers=operator).json()["items"] == []


def test_a_request_is_found_only_under_its_own_session(api: Api) -> None:
    rid = _ask(api)
    assert api.register("s2").status_code in (200, 201)
    operator = api.token("ops", "operator")
    wrong = api.client.post(
        f"{BASE}/s2/requests/{rid}/decision",
        json={"decision": "allow"},
        headers={**operator, "Idempotency-Key": "k"},
    )
    assert_problem(wrong, 404, "request_not_found")
    nothing = api.client.post(
        f"{BASE}/s1/requests/req-none/decision",
        json={"decision": "allow"},
        headers={**operator, "Idempotency-Key": "k2"},
    )
    assert_problem(nothing, 404, "request_not_found")
    assert_problem(
        api.client.get(f"{BASE}/ghost/requests", headers=operator), 404, "session_not_found"
    )


def test_an_agent_token_reads_only_its_own_agents_requests(api: Api) -> None:
    _ask(api)
    other = api.token("other-bot", "agent", agent_id="someone-else")
    assert_problem(api.client.get(f"{BASE}/s1/requests", headers=other), 403, "forbidden")
