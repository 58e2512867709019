"""``GET /api/v1/audit`` (issue 42 point 4): the operators' actions as ``roundtable audit
--json`` prints them, newest first, a keyset page at a time, with the same filters; for callers
bound to no workspace. Through the app in-process, on both engines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from roundtable_console.store import service
from roundtable_console.store.access.tokens import create_token
from roundtable_console.store.db.database import Store
from tests.api_support import seed_agent
from tests.serve_support import ROOT, serve_env
from tests.web_support import register, tokens, web

AUDIT = "/api/v1/audit"


def acted(store: Store) -> None:
    """Three sessions; olivia pauses two and resumes one, ops terminates one."""
    seed_agent(store, "agent-1")
    for session_id in ("a", "b", "c"):
        register(store, session_id)
    for action, session_id, actor in (
        ("pause", "a", "olivia"),
        ("pause", "b", "olivia"),
        ("resume", "a", "olivia"),
        ("terminate", "c", "ops"),
    ):
        impact = {"impact_details": "handed back"} if action == "terminate" else {}
        service.perform_action(
            store=store, action=action, session_id=session_id, actor=actor,
            idempotency_key=f"{action}-{session_id}", **impact,
        )  # fmt: skip


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_the_audit_trail_is_the_command_lines_newest_first_a_page_at_a_time(
    store: Store, store_url: str, tmp_path: Path
) -> None:
    acted(store)
    made = tokens(store)
    with web(store) as site:
        whole = site.client.get(AUDIT, headers=bearer(made["viewer"]))
        first = site.client.get(f"{AUDIT}?limit=3", headers=bearer(made["operator"])).json()
        rest = site.client.get(
            f"{AUDIT}?limit=3&cursor={first['next_cursor']}", headers=bearer(made["operator"])
        ).json()
        by_olivia = site.client.get(
            f"{AUDIT}?actor=olivia&action=pause", headers=bearer(made["agent"])
        )
        of_c = site.client.get(f"{AUDIT}?session=c&since=1h", headers=bearer(made["viewer"]))
    assert whole.status_code == 200, whole.text
    items = whole.json()["items"]
    assert [(i["action"], i["session_id"], i["actor"]) for i in items] == [
        ("terminate", "c", "ops"), ("resume", "a", "olivia"), ("pause", "b", "olivia"),
        ("pause", "a", "olivia"),
    ]  # fmt: skip
    assert items[0]["impact_details"] == "handed back" and items[0]["status"] == "terminated"
    assert whole.json()["next_cursor"] is None
    assert first["items"] + rest["items"] == items and rest["next_cursor"] is None
    assert [i["session_id"] for i in by_olivia.json()["items"]] == ["b", "a"]
    assert [i["action"] for i in of_c.json()["items"]] == ["terminate"]
    # The same rows, the same shape, as the command line prints them.
    printed = subprocess.run(
        [sys.executable, "-m", "roundtable_console", "audit", "--json", "--db", store_url],
        capture_output=True, text=True, cwd=ROOT, env=serve_env(tmp_path), timeout=60,
    )  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    assert json.loads(printed.stdout)["items"] == items


def test_a_bound_token_a_stranger_and_bad_input_are_refused(store: Store) -> None:
    acted(store)
    made = tokens(store)
    host = create_token(store=store, name="laptop", role="host").token
    with web(store) as site:
        bound = site.client.get(AUDIT, headers=bearer(made["bound"]))
        as_host = site.client.get(AUDIT, headers=bearer(host))
        stranger = site.client.get(AUDIT)
        since = site.client.get(f"{AUDIT}?since=someday", headers=bearer(made["viewer"]))
        action = site.client.get(f"{AUDIT}?action=dance", headers=bearer(made["viewer"]))
        cursor = site.client.get(f"{AUDIT}?cursor=bm90LW91cnM", headers=bearer(made["viewer"]))
        limit = site.client.get(f"{AUDIT}?limit=0", headers=bearer(made["viewer"]))
        no_limit = site.client.get(f"{AUDIT}?limit=", headers=bearer(made["viewer"]))
        nul = site.client.get(f"{AUDIT}?actor=ol%00ivia", headers=bearer(made["viewer"]))
    assert (bound.status_code, bound.json()["code"]) == (403, "forbidden")
    assert "spans every workspace" in bound.json()["detail"]
    assert stranger.status_code == 401
    assert as_host.status_code == 403  # a host token does nothing but connect its host
    assert (since.status_code, since.json()["code"]) == (400, "invalid_session")
    assert "since is neither a date" in since.json()["detail"]
    assert (action.status_code, action.json()["code"]) == (400, "invalid_session")
    assert (cursor.status_code, cursor.json()["code"]) == (400, "invalid_cursor")
    assert (limit.status_code, limit.json()["code"]) == (400, "invalid_limit")
    assert (no_limit.status_code, no_limit.json()["code"]) == (400, "invalid_limit")
    assert (nul.status_code, nul.json()["code"]) == (400, "invalid_request")
