"""The reference's own test scenarios (``docs/reference/roundtable.md#the-http-api``), against our
server, on SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import json

from sqlalchemy import text

from roundtable_console.store.writes import agent_writes
from tests.api_support import AGENT, BASE, HUMAN, WORKSPACE, Api, assert_problem, seed_workspace


def test_lifecycle_and_workspace_boundary(api: Api) -> None:
    created = api.create(external_session_id="ext-1")
    assert created.status_code == 201, created.text
    session = created.json()
    assert session["status"] == "starting"
    assert session["resume_command_template"] == "codex resume ext-1"
    assert session["agent_id"] == AGENT and session["workspace_id"] == WORKSPACE
    assert not {"working_directory", "mcp_socket", "metadata"} & set(session)
    one = f"{BASE}/{session['id']}"
    assert api.client.post(f"{one}/pause", headers=HUMAN).json()["status"] == "paused"
    resumed = api.client.post(f"{one}/resume", headers={**HUMAN, "Idempotency-Key": "resume-1"})
    assert resumed.status_code == 200 and resumed.json()["status"] == "resuming"
    assert api.client.post(f"{one}/stop", headers=HUMAN).json()["status"] == "stopped"
    again = api.client.post(f"{one}/pause", headers=HUMAN)
    assert_problem(again, 409, "illegal_session_transition")
    # The workspace boundary: the session is not another workspace's.
    seed_workspace(api.store, "ws-other")
    other = api.client.get(f"/api/v1/workspaces/ws-other/sessions/{session['id']}")
    body = assert_problem(other, 404, "session_not_found")
    # Another workspace's session answers as one that does not exist, in the same words.
    missing = assert_problem(
        api.client.get("/api/v1/workspaces/ws-other/sessions/nope"), 404, "session_not_found"
    )
    assert body["detail"].replace(session["id"], "nope") == missing["detail"]
    missing = api.client.get("/api/v1/workspaces/ws-nowhere/sessions")
    assert_problem(missing, 404, "workspace_not_found")


def test_observability_never_shows_a_secret(api: Api) -> None:
    metadata = {"workspace_id": "ws-observe", "usage": {"input_tokens": 12, "secret_value": 99}}
    seed_workspace(api.store, "ws-observe")
    with api.store.write() as db:
        agent_writes.register(
            db=db, session_id="s-observe", agent_id=AGENT, run_id="run-observe",
            adapter="codex", working_directory="/w", metadata=metadata,
        )  # fmt: skip
        db.execute(
            text(
                "INSERT INTO agent_session_events (session_id, event_type, payload_json,"
                " created_at) VALUES ('s-observe', 'note', :payload, '2026-09-17T17:30:00Z')"
            ),
            {"payload": json.dumps({"token": "tok-SECRET-1", "note": "saw it"})},
        )
        db.execute(
            text(
                "INSERT INTO events (run_id, type, actor_id, payload_json, created_at) VALUES"
                " ('run-observe', 'tool.mcp_call', 'agent', :payload, '2026-09-17T17:31:00Z')"
            ),
            {"payload": json.dumps({"tool": "repo.read_file", "args": "password=hunter2"})},
        )
    one = "/api/v1/workspaces/ws-observe/sessions/s-observe"
    logs = api.client.get(f"{one}/logs", params={"limit": 1})
    assert logs.status_code == 200 and logs.headers["x-request-id"].startswith("req-")
    assert len(logs.json()["items"]) == 1 and logs.json()["next_cursor"] is not None
    every = api.client.get(f"{one}/logs").text
    assert "tok-SECRET-1" not in every and "[REDACTED]" in every
    tools = api.client.get(f"{one}/tool-calls")
    assert [item["tool"] for item in tools.json()["items"]] == ["repo.read_file"]
    assert "hunter2" not in tools.text
    metrics = api.client.get(f"{one}/metrics").json()
    assert metrics["usage"] == {"input_tokens": 12} and metrics["source"] == "adapter_metadata"
    assert "secret_value" not in json.dumps(metrics)


def test_idempotency_replays_the_first_answer_and_refuses_another_body(api: Api) -> None:
    first = api.create(key="create-1")
    replay = api.create(key="create-1")
    assert replay.status_code == 201 and replay.json() == first.json()
    assert replay.headers["idempotent-replayed"] == "true"
    with api.store.read() as db:
        assert db.execute(text("SELECT count(*) FROM agent_sessions")).scalar() == 1
    reuse = api.create(key="create-1", model="another")
    body = assert_problem(reuse, 409, "idempotency_key_reuse")
    assert "different request payload" in body["detail"]
    assert_problem(
        api.client.post(BASE, json={"agent_id": AGENT, "run_id": "r", "adapter": "codex"},
                        headers=HUMAN),
        400, "idempotency_key_required",
    )  # fmt: skip


def test_tokens_no_bearer_a_human_bearer_a_wrong_bearer_and_a_foreign_origin(api: Api) -> None:
    human = api.token("human-1", "operator")
    no_bearer = api.client.get(BASE)
    assert_problem(no_bearer, 401, "authentication_required")
    assert api.client.get(BASE, headers=human).status_code == 200
    assert_problem(
        api.client.get(BASE, headers={"Authorization": "Bearer nope"}), 401, "invalid_token"
    )
    evil = api.client.post(BASE, headers={**human, "Origin": "https://evil.example"})
    assert_problem(evil, 403, "csrf_origin_forbidden")


def test_a_cursor_round_trips_and_a_raw_offset_is_refused(api: Api) -> None:
    with api.store.write() as db:
        for number in range(60):
            agent_writes.register(
                db=db, session_id=f"s-{number:02d}", agent_id=AGENT, run_id="r",
                adapter="codex", working_directory="/w", metadata={"workspace_id": WORKSPACE},
            )  # fmt: skip
    first = api.client.get(BASE, params={"limit": 25}).json()
    second = api.client.get(BASE, params={"limit": 25, "cursor": first["next_cursor"]}).json()
    third = api.client.get(BASE, params={"limit": 25, "cursor": second["next_cursor"]}).json()
    ids = [item["id"] for page in (first, second, third) for item in page["items"]]
    assert ids == [f"s-{number:02d}" for number in range(60)] and third["next_cursor"] is None
    raw = api.client.get(BASE, params={"cursor": "25"})
    assert assert_problem(raw, 400, "invalid_cursor")["detail"] == "cursor is malformed"
    offset = base64.urlsafe_b64encode(b"25").decode().rstrip("=")  # the reference's own form
    assert_problem(api.client.get(BASE, params={"cursor": offset}), 400, "invalid_cursor")
    bad = api.client.get(BASE, params={"cursor": "not/base64url"})
    detail = assert_problem(bad, 400, "invalid_cursor")["detail"]
    assert detail == "cursor must be an opaque base64url cursor"
    for limit in ("0", "201", "-1", "ten", "1e3"):
        refused = api.client.get(BASE, params={"limit": limit})
        assert assert_problem(refused, 400, "invalid_limit")["detail"] == (
            "limit must be between 1 and 200"
        )
    assert len(api.client.get(f"{BASE}?limit=").json()["items"]) == 50
