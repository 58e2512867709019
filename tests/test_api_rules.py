"""Every session route's rules and refusals over HTTP (issue 20 points 1, 3, 4 and 7), on SQLite
and PostgreSQL: the headers of every answer, problems for bad input that change nothing, the
roles of the tokens, workspaces a token reaches, header mode, read-only, the body limit."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import text

from roundtable_console.store.access.tokens import revoke_token
from roundtable_console.store.db.database import Store
from roundtable_console.store.reads.audit import AuditFilter, audit_page
from roundtable_console.store.writes import agent_writes
from tests.api_support import (
    AGENT,
    BASE,
    HUMAN,
    WORKSPACE,
    Api,
    assert_problem,
    seed_agent,
    seed_workspace,
    seeded_api,
)


def history(store: Store) -> list[tuple[str, str, str | None]]:
    with store.read() as db:
        rows = db.execute(
            text("SELECT session_id, event_type, actor FROM agent_session_events ORDER BY id")
        ).all()
    return [tuple(row) for row in rows]


def snapshot(store: Store) -> tuple[object, ...]:
    with store.read() as db:
        return tuple(
            tuple(db.execute(text(f"SELECT * FROM {table} ORDER BY 1")).all())
            for table in ("agent_sessions", "agent_session_events", "events", "idempotency_keys")
        )


def a_session(api: Api, session_id: str = "s1", **values: object) -> None:
    with api.store.write() as db:
        agent_writes.register(
            db=db, session_id=session_id, agent_id=values.pop("agent_id", AGENT), run_id="run-1",
            adapter="codex", working_directory="/w", metadata={"workspace_id": WORKSPACE},
            **values,
        )  # fmt: skip


# ------------------------------------------------------------------------------ every answer


def test_every_answer_carries_the_reference_headers_and_an_echoed_or_made_request_id(
    api: Api,
) -> None:
    for response in (
        api.client.get(BASE),
        api.client.get(f"{BASE}/none"),
        api.client.get("/nowhere"),
        api.client.delete(BASE),
        api.client.get("/api/v1/openapi.json"),
    ):
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["cache-control"] == "no-store"
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["x-request-id"].startswith("req-")
        assert len(response.headers["x-request-id"]) == 36
    assert_problem(api.client.get("/nowhere"), 404, "not_found")
    assert_problem(api.client.delete(BASE), 405, "method_not_allowed")
    echoed = api.client.get(BASE, headers={"X-Request-ID": "trace-42"})
    assert echoed.headers["x-request-id"] == "trace-42"
    for unfit in ("x" * 129, "has space", "tab\there"):
        made = api.client.get(BASE, headers={"X-Request-ID": unfit})
        assert made.headers["x-request-id"].startswith("req-")


def test_capabilities_say_how_the_server_authenticates(api: Api) -> None:
    header_mode = api.client.get("/api/v1/security/capabilities").json()
    assert header_mode["authentication"] == "local-header-development"
    assert header_mode["default_bind"] == "127.0.0.1" and header_mode["roles"] == [
        "viewer", "operator", "agent", "host",
    ]  # fmt: skip
    assert header_mode["allowed_origins"] == []  # not the reference's development origins
    api.token("ops", "operator")
    assert api.client.get("/api/v1/security/capabilities").json()["authentication"] == (
        "bearer-token"
    )


# ------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", "invalid_request_body"),
        (b"[1, 2]", "invalid_session"),
        (b'"text"', "invalid_session"),
        (b'{"agent_id": "a", "run_id": "r", "adapter": "codex", "extra": 1}', "invalid_session"),
        (b'{"agent_id": 7, "run_id": "r", "adapter": "codex"}', "invalid_session"),
        (b'{"agent_id": "  ", "run_id": "r", "adapter": "codex"}', "invalid_session"),
        (b'{"run_id": "r", "adapter": "codex"}', "invalid_session"),
        (b"\xff\xfe", "invalid_request_body"),
        (b"[" * 100_000 + b"]" * 100_000, "invalid_request_body"),
        (b"", "invalid_session"),
    ],
    ids=["broken", "array", "string", "unknown-field", "number", "blank", "missing", "not-utf8",
         "deep", "empty"],
)  # fmt: skip
def test_a_create_body_that_is_not_the_one_object_it_takes_changes_nothing(
    api: Api, body: bytes, code: str
) -> None:
    before = snapshot(api.store)
    refused = api.client.post(
        BASE,
        content=body,
        headers={**HUMAN, "Idempotency-Key": "k", "Content-Type": "application/json"},
    )
    assert_problem(refused, 400, code)
    assert snapshot(api.store) == before


def test_an_unknown_agent_and_a_missing_workspace_are_not_found(api: Api) -> None:
    assert_problem(api.create(agent_id="agent-nobody"), 404, "agent_not_found")
    refused = api.client.post(
        "/api/v1/workspaces/ws-none/sessions",
        json={"agent_id": AGENT, "run_id": "r", "adapter": "codex"},
        headers={**HUMAN, "Idempotency-Key": "k2"},
    )
    assert_problem(refused, 404, "workspace_not_found")


def test_a_body_over_one_mebibyte_is_refused_before_it_is_read(api: Api) -> None:
    a_session(api)
    before = snapshot(api.store)
    big = b'{"impact_details": "' + b"x" * (1024 * 1024) + b'"}'
    refused = api.client.post(
        f"{BASE}/s1/terminate", content=big, headers={**HUMAN, "Idempotency-Key": "t1"}
    )
    assert_problem(refused, 413, "request_too_large")
    chunked = api.client.post(
        f"{BASE}/s1/terminate",
        content=iter([big[: 512 * 1024], big[512 * 1024 :]]),
        headers={**HUMAN, "Idempotency-Key": "t2"},
    )
    assert_problem(chunked, 413, "request_too_large")
    assert snapshot(api.store) == before


@pytest.mark.parametrize(
    "session_id", ["bad%00id", "..%2F..%2Fetc", "bell%07", "x" * 300, "%0D%0Aset-cookie:%20a"]
)
def test_hostile_ids_in_the_path_are_not_found_and_change_nothing(
    api: Api, session_id: str
) -> None:
    a_session(api)
    before = snapshot(api.store)
    for method, suffix in (
        ("GET", ""),
        ("POST", "/pause"),
        ("POST", "/heartbeat"),
        ("GET", "/logs"),
    ):
        response = api.client.request(method, f"{BASE}/{session_id}{suffix}", headers=HUMAN)
        assert response.status_code in (404, 400), response.text
        assert response.headers["content-type"].startswith("application/problem+json")
    put = api.client.put(f"{BASE}/{session_id}", json={}, headers=HUMAN)
    assert put.status_code in (400, 404)
    assert snapshot(api.store) == before


def test_huge_limits_and_forged_cursors_are_problems(api: Api) -> None:
    a_session(api)
    for limit in ("99999999999999999999999", "１０", "5 ", "0x10"):
        assert_problem(api.client.get(BASE, params={"limit": limit}), 400, "invalid_limit")
    for cursor in ("eyJ4IjoxfQ", "W10", "WyJzZXNzaW9ucyJd", "A" * 5000):
        assert_problem(api.client.get(BASE, params={"cursor": cursor}), 400, "invalid_cursor")
    logs = api.client.get(f"{BASE}/s1/logs", params={"cursor": "WyJsb2dzIiwiczkiLDFd"})
    assert_problem(logs, 400, "invalid_cursor")  # another session's logs cursor


# ------------------------------------------------------------------------------ identities


def test_a_viewer_reads_and_is_refused_every_write(api: Api) -> None:
    a_session(api)
    viewer = api.token("watcher", "viewer")
    assert api.client.get(BASE, headers=viewer).status_code == 200
    before = snapshot(api.store)
    for suffix in ("/pause", "/stop", "/heartbeat", "/end"):
        refused = api.client.post(f"{BASE}/s1{suffix}", headers=viewer)
        assert_problem(refused, 403, "forbidden")
    assert_problem(api.register("s2", viewer), 403, "forbidden")
    assert snapshot(api.store) == before


def test_an_operator_is_the_human_and_the_actor_is_its_name_whatever_the_headers_say(
    api: Api,
) -> None:
    a_session(api)
    operator = api.token("olivia", "operator")
    forged = {**operator, "X-Actor-ID": "mallory", "X-Actor-Role": "admin"}
    paused = api.client.post(f"{BASE}/s1/pause", headers=forged)
    assert paused.status_code == 200, paused.text
    assert history(api.store)[-1] == ("s1", "paused", "olivia")
    with api.store.read() as db:
        audit = audit_page(db=db, filters=AuditFilter(), limit=10)
    assert [(entry.actor, entry.action) for entry in audit.items] == [("olivia", "pause")]


def test_an_agent_token_writes_only_its_agents_sessions_even_with_human_headers(api: Api) -> None:
    seed_agent(api.store, "agent-other")
    a_session(api, "mine")
    a_session(api, "theirs", agent_id="agent-other")
    agent = api.token("bot", "agent", agent_id=AGENT)
    human_headers = {**agent, "X-Actor-ID": "human-1", "X-Actor-Role": "human"}
    assert_problem(api.client.post(f"{BASE}/mine/pause", headers=human_headers), 403, "forbidden")
    assert api.client.post(f"{BASE}/mine/heartbeat", headers=agent).status_code == 200
    assert_problem(api.client.post(f"{BASE}/theirs/heartbeat", headers=agent), 403, "forbidden")
    assert_problem(api.client.post(f"{BASE}/theirs/end", headers=agent), 403, "forbidden")
    assert_problem(api.register("theirs", agent), 403, "forbidden")  # not a takeover
    assert_problem(api.register("new", agent, agent_id="agent-other"), 403, "forbidden")
    assert api.register("new", agent).status_code == 201
    assert api.client.get(f"{BASE}/theirs", headers=agent).status_code == 200  # reads


def test_a_token_of_another_workspace_finds_nothing_here(api: Api) -> None:
    a_session(api)
    seed_workspace(api.store, "ws-other")
    elsewhere = api.token("away", "operator", workspaces=("ws-other",))
    for method, path in (
        ("GET", BASE),
        ("GET", f"{BASE}/s1"),
        ("POST", f"{BASE}/s1/pause"),
        ("GET", f"{BASE}/s1/logs"),
    ):
        refused = api.client.request(method, path, headers=elsewhere)
        assert_problem(refused, 404, "workspace_not_found")
    assert api.client.get("/api/v1/workspaces/ws-other/sessions", headers=elsewhere).json() == {
        "items": [],
        "next_cursor": None,
    }


def test_a_revoked_or_expired_token_is_refused_at_once(api: Api) -> None:
    header = api.token("short", "operator", expires_in=timedelta(seconds=1))
    assert api.client.get(BASE, headers=header).status_code == 200
    revoke_token(store=api.store, name="short")
    assert_problem(api.client.get(BASE, headers=header), 401, "invalid_token")
    # A second server on the same store refuses it too: nothing is cached.
    with seeded_api(api.store.__class__(api.store.engine)) as other:
        assert_problem(other.client.get(BASE, headers=header), 401, "invalid_token")


def test_failed_authentications_are_refused_for_a_while_with_retry_after(api: Api) -> None:
    api.token("ops", "operator")
    for _ in range(10):
        assert_problem(
            api.client.get(BASE, headers={"Authorization": "Bearer guess"}), 401, "invalid_token"
        )
    limited = api.client.get(BASE, headers={"Authorization": "Bearer guess"})
    assert_problem(limited, 429, "too_many_requests")
    assert 1 <= int(limited.headers["retry-after"]) <= 60
    # Only failures are refused: a valid token from the same address is not.
    good = {"Authorization": f"Bearer {api.tokens['ops']}"}
    assert api.client.get(BASE, headers=good).status_code == 200


def test_header_mode_trusts_the_headers_as_the_reference_does(api: Api) -> None:
    a_session(api)
    assert_problem(api.client.post(f"{BASE}/s1/pause"), 403, "forbidden")
    agent_role = {"X-Actor-ID": "bot", "X-Actor-Role": "agent"}
    assert_problem(api.client.post(f"{BASE}/s1/pause", headers=agent_role), 403, "forbidden")
    assert api.client.post(f"{BASE}/s1/heartbeat").status_code == 200  # anyone may beat
    admin = {"X-Actor-ID": "alice", "X-Actor-Role": "ADMIN"}
    assert api.client.post(f"{BASE}/s1/pause", headers=admin).status_code == 200
    assert history(api.store)[-1] == ("s1", "paused", "alice")


# ------------------------------------------------------------------------------ the server


def test_a_read_only_server_refuses_every_write_before_reading_the_body(store: Store) -> None:
    with seeded_api(store, read_only=True) as api:
        a_session(api)
        before = snapshot(store)
        for method, path in (
            ("POST", BASE),
            ("PUT", f"{BASE}/s2"),
            ("POST", f"{BASE}/s1/pause"),
            ("POST", f"{BASE}/s1/heartbeat"),
        ):
            refused = api.client.request(
                method, path, content=b"x" * (2 * 1024 * 1024), headers=HUMAN
            )
            assert_problem(refused, 403, "read_only")
        assert api.client.get(BASE).status_code == 200
        assert snapshot(store) == before


def test_the_servers_own_origin_may_write_another_may_not(api: Api) -> None:
    a_session(api)
    own = api.client.post(f"{BASE}/s1/pause", headers={**HUMAN, "Origin": "http://127.0.0.1:8080"})
    assert own.status_code == 200
    for origin in ("https://evil.example", "http://127.0.0.1:8081", "null"):
        refused = api.client.post(f"{BASE}/s1/stop", headers={**HUMAN, "Origin": origin})
        assert_problem(refused, 403, "csrf_origin_forbidden")
    # The reference's development origins are not trusted (a page on port 3000 is not ours).
    for origin in ("http://localhost:3000", "http://127.0.0.1:3000"):
        refused = api.client.post(f"{BASE}/s1/stop", headers={**HUMAN, "Origin": origin})
        assert_problem(refused, 403, "csrf_origin_forbidden")


def test_if_match_refuses_a_session_changed_since_it_was_read(api: Api) -> None:
    a_session(api)
    version = api.client.get(f"{BASE}/s1").json()["version"]
    api.client.post(f"{BASE}/s1/heartbeat")
    stale = api.client.post(f"{BASE}/s1/pause", headers={**HUMAN, "If-Match": f'"{version}"'})
    body = assert_problem(stale, 409, "session_transition_conflict")
    assert body["metadata"]["current"]["id"] == "s1"
    fresh = api.client.get(f"{BASE}/s1").json()["version"]
    done = api.client.post(f"{BASE}/s1/pause", headers={**HUMAN, "If-Match": str(fresh)})
    assert done.status_code == 200
    assert_problem(
        api.client.post(f"{BASE}/s1/stop", headers={**HUMAN, "If-Match": "v2"}),
        400, "invalid_request",
    )  # fmt: skip


def test_a_create_that_meets_an_existing_id_is_a_create_conflict(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two creates in the same microsecond drawing the same digits: the second is refused in
    words, and nothing of it is written."""
    from roundtable_console.store.writes import session_create
    from tests.conftest import FakeClock

    monkeypatch.setattr(session_create.secrets, "randbelow", lambda _limit: 7)
    with seeded_api(store, clock=FakeClock()) as api:
        assert api.create(key="one").status_code == 201
        before = snapshot(store)
        second = api.create(key="two")
        assert_problem(second, 409, "session_create_conflict")
        assert snapshot(store) == before
