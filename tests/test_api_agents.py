"""Agents over HTTP (issue 20 point 2): register (PUT), heartbeat with a body, end; the CLI's
rules, history rows, redaction and errors, on SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import text

from roundtable_console.store.db.database import Store
from tests.api_support import AGENT, BASE, HUMAN, WORKSPACE, Api, assert_problem


def events(store: Store, session_id: str) -> list[tuple[str, dict[str, object], str | None]]:
    with store.read() as db:
        rows = db.execute(
            text(
                "SELECT event_type, payload_json, actor FROM agent_session_events"
                " WHERE session_id = :id ORDER BY id"
            ),
            {"id": session_id},
        ).all()
    return [(row[0], json.loads(row[1]), row[2]) for row in rows]


def row(store: Store, session_id: str) -> dict[str, object]:
    with store.read() as db:
        found = db.execute(
            text("SELECT * FROM agent_sessions WHERE id = :id"), {"id": session_id}
        ).one()
    return dict(found._mapping)


def test_register_creates_then_replaces_in_the_paths_workspace(api: Api) -> None:
    first = api.register(
        "s1", external_session_id="ext-1", metadata={"branch": "main"}, model="gpt", status=None
    )
    assert first.status_code == 201, first.text
    body = first.json()
    assert (body["status"], body["workspace_id"], body["model"]) == ("active", WORKSPACE, "gpt")
    stored = row(api.store, "s1")
    assert stored["workspace_id"] == WORKSPACE and stored["working_directory"] == "/srv/ws"
    again = api.register("s1", run_id="run-2", status="running")
    assert again.status_code == 200
    replaced = row(api.store, "s1")
    assert (replaced["run_id"], replaced["status"], replaced["model"]) == ("run-2", "running", None)
    assert replaced["external_session_id"] is None  # omitted optional values are cleared (ref)
    assert [kind for kind, _payload, _actor in events(api.store, "s1")] == [
        "registered",
        "registered",
    ]
    assert events(api.store, "s1")[0][1] == {"status": "active", "adapter": "codex"}


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"run_id": "r", "adapter": "codex", "working_directory": "/w"}, "invalid_session"),
        ({"agent_id": AGENT, "run_id": "r", "adapter": "codex", "working_directory": " "},
         "invalid_session"),
        ({"agent_id": AGENT, "run_id": "r", "adapter": "codex", "working_directory": "/w",
          "metadata": "[1]"}, "invalid_session"),
        ({"agent_id": AGENT, "run_id": "r", "adapter": "codex", "working_directory": "/w",
          "status": "bad\u0007"}, "invalid_session_status"),
        ({"agent_id": AGENT, "run_id": "r", "adapter": "codex", "working_directory": "/w",
          "colour": "red"}, "invalid_session"),
        ({"agent_id": AGENT, "run_id": "r", "adapter": "codex", "working_directory": "/w",
          "metadata": 5}, "invalid_session"),
    ],
    ids=["no-agent", "blank-cwd", "metadata-not-object", "control-status", "unknown", "number"],
)  # fmt: skip
def test_a_register_the_cli_would_refuse_is_refused_with_its_code(
    api: Api, body: dict[str, object], code: str
) -> None:
    refused = api.client.put(f"{BASE}/s1", json=body)
    assert_problem(refused, 400, code)
    with api.store.read() as db:
        assert db.execute(text("SELECT count(*) FROM agent_sessions")).scalar() == 0


def test_a_register_of_another_workspaces_session_is_refused(api: Api) -> None:
    api.register("s1")
    from tests.api_support import seed_workspace

    seed_workspace(api.store, "ws-other")
    moved = api.client.put(
        "/api/v1/workspaces/ws-other/sessions/s1",
        json={"agent_id": AGENT, "run_id": "r", "adapter": "codex", "working_directory": "/w"},
    )
    assert_problem(moved, 404, "session_not_found")
    assert row(api.store, "s1")["workspace_id"] == WORKSPACE


def test_a_heartbeat_body_sets_the_wait_and_the_external_id_and_the_next_ends_the_wait(
    api: Api,
) -> None:
    api.register("s1")
    waiting = api.client.post(
        f"{BASE}/s1/heartbeat",
        json={"waiting": "approve token=abc123 deletion", "external_session_id": "ext-9"},
    )
    assert waiting.status_code == 200, waiting.text
    body = waiting.json()
    assert body["external_session_id"] == "ext-9"
    assert body["waiting"]["reason"] == "approve token=[REDACTED] deletion"
    assert "abc123" not in json.dumps(row(api.store, "s1"), default=str)  # redacted when stored
    plain = api.client.post(f"{BASE}/s1/heartbeat").json()
    assert "waiting" not in plain
    kinds = [(kind, payload.get("waiting")) for kind, payload, _ in events(api.store, "s1")]
    assert kinds[-2:] == [("heartbeat", "approve token=[REDACTED] deletion"), ("heartbeat", None)]


def test_a_heartbeat_keeps_the_reference_rules(api: Api) -> None:
    api.register("s1")
    assert_problem(
        api.client.post(f"{BASE}/s1/heartbeat", params={"status": "ended"}),
        400,
        "invalid_session_status",
    )
    assert (
        api.client.post(f"{BASE}/s1/heartbeat", params={"status": "running"}).json()["status"]
        == "running"
    )
    api.client.post(f"{BASE}/s1/end")
    assert_problem(api.client.post(f"{BASE}/s1/heartbeat"), 409, "illegal_session_transition")
    assert_problem(api.client.post(f"{BASE}/nope/heartbeat"), 404, "session_not_found")
    too_long = api.client.post(f"{BASE}/s1/heartbeat", json={"waiting": "x" * 501})
    assert too_long.status_code in (400, 409)
    assert_problem(
        api.client.post(f"{BASE}/s1/heartbeat", json={"wait": "typo"}),
        400,
        "invalid_request_body",
    )


def test_an_operators_heartbeat_is_the_lifecycle_action_with_its_name(api: Api) -> None:
    api.register("s1")
    operator = api.token("olivia", "operator")
    assert api.client.post(f"{BASE}/s1/heartbeat", headers=operator).status_code == 200
    kind, payload, actor = events(api.store, "s1")[-1]
    assert (kind, actor, payload["actor"], payload["previous_status"]) == (
        "heartbeat",
        "olivia",
        "olivia",
        "active",
    )
    with api.store.read() as db:
        run_events = db.execute(text("SELECT type, actor_id FROM events")).all()
    assert [tuple(event) for event in run_events] == [("session.heartbeat", "olivia")]


def test_end_takes_an_optional_status_and_repeats_replace_the_end_time(api: Api) -> None:
    api.register("s1")
    ended = api.client.post(f"{BASE}/s1/end", json={"status": "completed"})
    assert ended.status_code == 200 and ended.json()["status"] == "completed"
    first_end = ended.json()["ended_at"]
    again = api.client.post(f"{BASE}/s1/end").json()
    assert again["status"] == "ended" and again["ended_at"] >= first_end
    assert [kind for kind, _payload, _actor in events(api.store, "s1")][-2:] == ["ended", "ended"]
    assert_problem(
        api.client.post(f"{BASE}/s1/end", json={"status": ["x"]}), 400, "invalid_request_body"
    )


def test_an_idempotency_key_on_a_register_replays_it(api: Api) -> None:
    headers = {"Idempotency-Key": "reg-1"}
    first = api.register("s1", headers)
    second = api.register("s1", headers)
    assert (first.status_code, second.status_code) == (201, 201)
    assert second.headers["idempotent-replayed"] == "true"
    assert len(events(api.store, "s1")) == 1  # applied once
    assert_problem(api.register("s1", headers, model="m"), 409, "idempotency_key_reuse")


def test_terminate_needs_the_impact_when_the_agent_holds_claims(api: Api) -> None:
    api.register("s1")
    with api.store.write() as db:
        db.execute(
            text(
                "INSERT INTO claims (id, resource_id, agent_id, task_id, claim_type, status,"
                " expires_at, renewable, resume_policy) VALUES ('c1', 'src/a.py', :agent,"
                " 't1', 'edit', 'active', '2099-01-01T00:00:00Z', 1, 'hold')"
            ),
            {"agent": AGENT},
        )
    key = {**HUMAN, "Idempotency-Key": "term-1"}
    refused = api.client.post(f"{BASE}/s1/terminate", headers=key)
    assert_problem(refused, 409, "termination_impact_required")
    claims = api.client.get(f"{BASE}/s1/claims").json()["items"]
    assert claims[0]["ResourceID"] == "src/a.py" and claims[0]["Renewable"] is True
    assert set(claims[0]) == {
        "ID", "ResourceID", "AgentID", "TaskID", "ClaimType", "BaseHash", "Status", "ExpiresAt",
        "HeartbeatAt", "Renewable", "ResumePolicy", "RationaleMD", "CreatedAt",
    }  # fmt: skip
    done = api.client.post(
        f"{BASE}/s1/terminate",
        json={"impact_details": "src/a.py stays claimed; ok"},
        headers={**HUMAN, "Idempotency-Key": "term-2"},
    )
    assert done.status_code == 200 and done.json()["status"] == "terminated"
    kind, payload, actor = events(api.store, "s1")[-1]
    assert (kind, payload["impact_details"], actor) == (
        "terminated",
        "src/a.py stays claimed; ok",
        "human-1",
    )
