"""Actions on a selection of many sessions from the web console (issue 21 point 2), in-process on
both engines: the console's bulk preview (how many, which are skipped and why, which would fail,
the claims to terminate), the run under the page's key (a retry replays, never applies twice),
a filter's selection less the unticked, what a token bound to a workspace reaches, the roles,
and the refusals of a bad request, each of which changes nothing."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pytest
from sqlalchemy import text

from roundtable_console.api.web import bulk
from roundtable_console.store.db.database import Store
from tests.web_support import OTHER_WORKSPACE, WORKSPACE, hold_claim, register, tokens, web


def statuses(store: Store) -> dict[str, str]:
    with store.read() as db:
        rows = db.execute(text("SELECT id, status FROM agent_sessions")).all()
    return {row.id: row.status for row in rows}


def events(store: Store, event_type: str) -> list[Any]:
    with store.read() as db:
        return list(
            db.execute(
                text(
                    "SELECT session_id, actor FROM agent_session_events WHERE event_type = :kind "
                    "ORDER BY session_id"
                ),
                {"kind": event_type},
            ).all()
        )


def words(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html))).replace(" :", ":")


def test_the_preview_says_how_many_which_are_skipped_and_why_and_writes_nothing(
    store: Store,
) -> None:
    for session_id in ("s1", "s2", "s3"):
        register(store, session_id)
    with store.write() as db:
        db.execute(text("UPDATE agent_sessions SET status = 'paused' WHERE id = 's2'"))
    before = statuses(store)
    with web(store) as site:
        site.sign_in(tokens(store)["operator"])
        answer = site.bulk("pause", {"ids": ["s1", "s2", "s3", "nope"]}, preview=True)
        assert answer.status_code == 200, answer.text
        found = answer.json()
        said = words(found["preview"])
        assert found["applies"] == 2 and found["total"] == 4
        assert "Pause applies to 2 of the 4 selected sessions" in said
        assert "s1 would pause" in said and "s3 would pause" in said
        assert "1 will be skipped" in said and "already paused: s2" in said
        assert "1 would fail" in said and "nope" in said
        assert "No process is paused: tell the agents." in said
        assert found["requires_details"] is False
    assert statuses(store) == before


def test_a_run_acts_as_the_operator_and_a_retry_under_its_key_replays(store: Store) -> None:
    for session_id in ("s1", "s2", "s3"):
        register(store, session_id)
    with store.write() as db:
        db.execute(text("UPDATE agent_sessions SET status = 'paused' WHERE id = 's2'"))
    with web(store) as site:
        site.sign_in(tokens(store)["operator"])
        done = site.bulk("pause", {"ids": ["s1", "s2", "s3"]}, key="run-a").json()
        assert (done["done"], done["skipped"], done["failed"]) == (2, 1, 0)
        assert sorted(done["applied"]) == ["s1", "s3"] and done["error"] is None
        assert "Pause: 2 of 3 done" in words(done["summary"])
        assert "1 skipped (the action did not apply): 1 already paused (s2)" in words(
            done["summary"]
        )
        again = site.bulk("pause", {"ids": ["s1", "s2", "s3"]}, key="run-a").json()
        assert (again["done"], again["skipped"]) == (2, 1)
        assert "2 already done under this run's key" in words(again["summary"])
        preview = site.bulk("pause", {"ids": ["s1"]}, key="run-a", preview=True).json()
        assert "already done under this run's key" in words(preview["preview"])
        fresh = site.bulk("pause", {"ids": ["s1", "s3"]}, key="run-b").json()
        assert (fresh["done"], fresh["skipped"]) == (0, 2)  # a new key: they are paused now
    assert statuses(store) == {"s1": "paused", "s2": "paused", "s3": "paused"}
    assert events(store, "paused") == [("s1", "olivia"), ("s3", "olivia")]


def test_terminating_many_lists_the_claims_and_needs_the_impact(store: Store) -> None:
    register(store, "held", agent="agent-1")
    register(store, "free", agent="agent-2")
    hold_claim(store, "agent-1")
    with web(store) as site:
        site.sign_in(tokens(store)["operator"])
        preview = site.bulk("terminate", {"ids": ["held", "free"]}, preview=True).json()
        said = words(preview["preview"])
        assert preview["requires_details"] is True and preview["applies"] == 2
        assert "Agent agent-1: 1 claim" in said and "src/app.py" in said
        assert "Impact (required)" in said and "releases no claim" in said
        assert "\\n" not in preview["preview"]  # no layout character shown as an escape
        blank = site.bulk("terminate", {"ids": ["held", "free"]}, key="t-1").json()
        assert (blank["done"], blank["failed"]) == (1, 1)
        assert blank["applied"] == ["free"]
        assert "impact details are required (held)" in words(blank["summary"])
        assert statuses(store)["held"] == "active"
        given = {"ids": ["held"], "impact_details": "claims handed to agent-2"}
        assert site.bulk("terminate", given, key="t-2").json()["done"] == 1
    assert statuses(store) == {"held": "terminated", "free": "terminated"}
    with store.read() as db:
        payload = db.execute(
            text(
                "SELECT payload_json FROM agent_session_events WHERE session_id = 'held' "
                "AND event_type = 'terminated'"
            )
        ).scalar()
    assert "claims handed to agent-2" in payload


def test_a_filters_selection_less_the_unticked_and_its_bound(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    for number in range(6):
        register(store, f"s{number}", agent=f"agent-{number % 2}")
    with web(store) as site:
        site.sign_in(tokens(store)["operator"])
        chosen = {"matching": "agent=agent-0", "except": ["s2"]}
        preview = site.bulk("stop", chosen, preview=True).json()
        assert (preview["applies"], preview["total"]) == (2, 2)
        done = site.bulk("stop", chosen, key="stop-1").json()
        assert done["done"] == 2 and done["applied"] == []  # a filter's: nothing to untick
        monkeypatch.setattr(bulk, "MAX_SELECTED", 2)
        too_many = site.bulk("pause", {"matching": ""}, key="p-1")
        assert too_many.status_code == 400
        assert "a page acts on at most 2 at once" in too_many.json()["detail"]
    assert statuses(store) == {
        "s0": "stopped", "s1": "active", "s2": "active", "s3": "active", "s4": "stopped",
        "s5": "active",
    }  # fmt: skip


def test_a_token_bound_to_a_workspace_acts_only_on_what_it_reaches(store: Store) -> None:
    register(store, "mine", workspace=OTHER_WORKSPACE)
    register(store, "theirs", workspace=WORKSPACE)
    with web(store) as site:
        site.sign_in(tokens(store)["bound"])
        preview = site.bulk("pause", {"ids": ["mine", "theirs"]}, preview=True).json()
        assert preview["applies"] == 1
        assert "No session has that id" in words(preview["preview"])
        done = site.bulk("pause", {"ids": ["mine", "theirs"]}).json()
        assert (done["done"], done["failed"], done["applied"]) == (1, 1, ["mine"])
        only_theirs = site.bulk("pause", {"ids": ["theirs"]}, key="run-4").json()
        assert (only_theirs["done"], only_theirs["failed"]) == (0, 1)  # nothing else reached
        everyone = site.bulk("pause", {"matching": ""}, key="run-2").json()
        assert everyone["done"] + everyone["skipped"] + everyone["failed"] == 1  # its own only
        other = site.bulk("pause", {"matching": f"workspace={WORKSPACE}"}, key="run-3")
        assert other.status_code == 404
    assert statuses(store) == {"mine": "paused", "theirs": "active"}


def test_a_viewer_is_offered_no_selection_and_refused_one(store: Store) -> None:
    register(store, "s1")
    made = tokens(store)
    with web(store) as site:
        site.sign_in(made["viewer"])
        page = site.client.get("/sessions").text
        assert 'class="mark"' not in page and "bulk-bar" not in page
        for preview in (True, False):
            refused = site.bulk("pause", {"ids": ["s1"]}, preview=preview)
            assert refused.status_code == 403 and refused.json()["code"] == "forbidden"
    with web(store) as site:
        site.sign_in(made["operator"])
        page = site.client.get("/sessions").text
        assert 'aria-label="Select s1"' in page and 'id="bulk-bar"' in page
    assert statuses(store) == {"s1": "active"}


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"ids": "s1"}, "invalid_request_body"),
        ({"ids": [1, 2]}, "invalid_request_body"),
        ({"ids": ["s1\x1b[2J"]}, "invalid_request_body"),
        ({"ids": ["s1"], "matching": ""}, "invalid_request_body"),
        ({}, "invalid_request_body"),
        ({"ids": ["s1"], "everything": True}, "invalid_request_body"),
        ({"ids": ["s1"], "impact_details": 7}, "invalid_request_body"),
        ({"matching": "status=" + "x" * 300}, "invalid_request"),
        ({"matching": "group=colour"}, "invalid_request"),
        ([["s1"]], "invalid_request_body"),
    ],
)
def test_a_bad_selection_is_refused_and_changes_nothing(store: Store, body: Any, code: str) -> None:
    register(store, "s1")
    with web(store) as site:
        site.sign_in(tokens(store)["operator"])
        for preview in (True, False):
            refused = site.bulk("pause", body, preview=preview)
            assert refused.status_code == 400, refused.text
            assert refused.json()["code"] == code
    assert statuses(store) == {"s1": "active"}


def test_a_run_without_the_pages_proof_or_a_key_or_a_known_action_is_refused(
    store: Store,
) -> None:
    register(store, "s1")
    with web(store) as site:
        site.sign_in(tokens(store)["operator"])
        keyless = site.bulk("pause", {"ids": ["s1"]}, key=None)
        assert keyless.json()["code"] == "idempotency_key_required"
        spaced = site.bulk("pause", {"ids": ["s1"]}, key="a key")
        assert spaced.json()["code"] == "idempotency_key_required"
        assert site.bulk("pause", {"ids": ["s1"]}, csrf="").status_code == 403
        assert site.bulk("dance", {"ids": ["s1"]}).status_code == 404
        assert site.bulk("dance", {"ids": ["s1"]}, preview=True).status_code == 404
        site.client.post("/sign-out", data={"csrf": site.csrf()})
        signed_out = site.bulk("pause", {"ids": ["s1"]}, csrf="x")
        assert signed_out.status_code in (401, 403)
    assert statuses(store) == {"s1": "active"}
