"""The web console's pages and actions in-process (issue 21 points 1, 2 and 5): the list in the
attention order with its filters in the URL and keyset pages, a session, its briefing, the
overview and the audit trail; the console's rules for actions (roles, CSRF, idempotency keys,
conflicts, the terminate impact); every store value escaped and printable; on both engines."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from markupsafe import escape
from sqlalchemy import text

from roundtable_console.api.web.reads import FIRST_PAGE_SIZE, PAGE_SIZE
from roundtable_console.store.clock import system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.reads.listing import SessionOrder
from roundtable_console.store.reads.sessions import list_sessions
from roundtable_console.store.safety.display import printable
from roundtable_console.store.writes import agent_writes
from tests.web_support import HOSTILE, OTHER_WORKSPACE, WORKSPACE, hold_claim, register, tokens, web

ROW_IDS = re.compile(r'<tr class="row[^"]*" data-session="([^"]*)"')


def shown_ids(html: str) -> list[str]:
    return ROW_IDS.findall(html)


def fleet(store: Store, count: int = 8) -> None:
    for number in range(count):
        register(store, f"s{number:02d}", agent=f"agent-{number % 3}")
    with store.write() as db:  # some need a human: waiting, paused, an unknown status
        db.execute(
            text(
                "UPDATE agent_sessions SET waiting_reason = 'approve', "
                "waiting_since = started_at WHERE id = 's05'"
            )
        )
        db.execute(text("UPDATE agent_sessions SET status = 'paused' WHERE id = 's03'"))
        db.execute(text("UPDATE agent_sessions SET status = 'exploded' WHERE id = 's06'"))


def test_the_list_is_in_the_attention_order_of_the_store(store: Store) -> None:
    fleet(store)
    with web(store) as site:
        site.sign_in(tokens(store)["viewer"])
        page = site.client.get("/sessions")
    stale_before = system_clock() - timedelta(minutes=5)
    with store.read() as db:
        expected = [
            s.id
            for s in list_sessions(
                db=db, order=SessionOrder("attention").at(stale_before), limit=50
            ).items
        ]
    assert shown_ids(page.text) == expected
    assert shown_ids(page.text)[:2] == ["s05", "s06"]  # waiting, then the unknown status
    assert "⚑ waiting" in page.text  # status in words beside its colour
    assert "need a human" in page.text


def test_filters_live_in_the_url_and_narrow_the_list(store: Store) -> None:
    fleet(store)
    with web(store) as site:
        site.sign_in(tokens(store)["viewer"])
        by_agent = site.client.get("/sessions?agent=agent-1")
        assert set(shown_ids(by_agent.text)) == {"s01", "s04", "s07"}
        assert 'value="agent-1"' in by_agent.text  # the form shows the filter it applied
        assert shown_ids(site.client.get("/sessions?status=paused").text) == ["s03"]
        assert shown_ids(site.client.get("/sessions?waiting=1").text) == ["s05"]
        assert shown_ids(site.client.get("/sessions?q=s07").text) == ["s07"]
        none = site.client.get("/sessions?agent=nobody")
        assert shown_ids(none.text) == [] and "No session matches" in none.text
        bad = site.client.get("/sessions?agent=%01x")
        assert bad.status_code == 400 and "short line of text" in bad.text


def test_the_whole_list_is_reachable_a_keyset_page_at_a_time(store: Store) -> None:
    for number in range(120):
        register(store, f"p{number:03d}")
    with web(store) as site:
        site.sign_in(tokens(store)["viewer"])
        seen: list[str] = []
        sizes: list[int] = []
        url = "/sessions"
        for _ in range(5):
            page = site.client.get(url)
            sizes.append(len(shown_ids(page.text)))
            seen += shown_ids(page.text)
            more = re.search(r'id="more" href="([^"]*)"', page.text)
            if more is None:
                break
            url = more.group(1).replace("&amp;", "&")
        assert len(seen) == 120 and len(set(seen)) == 120
        # The first page a few screens' worth, the next ones fuller (asked for on scrolling).
        left = 120 - FIRST_PAGE_SIZE - 2 * PAGE_SIZE
        assert sizes == [FIRST_PAGE_SIZE, PAGE_SIZE, PAGE_SIZE, left]
        assert "The end of the list." in page.text
        forged = site.client.get("/sessions?cursor=25")
        assert forged.status_code == 400 and "Invalid cursor" in forged.text


def test_a_session_page_shows_its_tool_calls_and_what_it_spent(store: Store) -> None:
    """Issue 46: the hooks' tool calls (with their time) and usage, its cost said for what it
    is; a tool's summary is text, never markup."""
    register(store, "s1")
    with store.write() as db:
        calls = [{"tool": "Bash", "summary": "<b>ls</b> -la", "outcome": "ok", "duration_ms": 35}]
        agent_writes.heartbeat(db=db, session_id="s1", tool_calls=calls,
                               usage={"input_tokens": 40, "model": "unpriced-model"})  # fmt: skip
    with web(store) as site:
        site.sign_in(tokens(store)["viewer"])
        page = site.client.get("/sessions/s1").text
    assert "Tool calls <span class=\"count\">1</span>" in page
    assert "&lt;b&gt;ls&lt;/b&gt; -la" in page and "<b>ls</b>" not in page and "35 ms" in page
    assert "Cost: cost unknown: no price for the model unpriced-model." in page


def test_a_session_page_shows_every_field_with_the_sensitive_ones_masked(store: Store) -> None:
    register(store, "s1", external_session_id="ext-secret-1", mcp_socket="/run/mcp.sock")
    with web(store) as site:
        made = tokens(store)
        site.sign_in(made["viewer"])
        page = site.client.get("/sessions/s1")
        assert page.status_code == 200
        for label in (
            "Agent",
            "Run",
            "Workspace",
            "Working directory",
            "External session id",
            "MCP socket",
            "Last heartbeat",
            "Claims",
            "Proposals",
            "Tool calls",
            "Usage",
            "Environment",
            "History",
            "Heartbeats per hour",
        ):
            assert label in page.text, label
        assert "ext-secret-1" not in page.text and "/run/mcp.sock" not in page.text
        # Revealing is an operator's read, audited: a viewer is offered none and refused one.
        assert "data-reveal" not in page.text
        refused = site.client.get("/fragments/sessions/s1/reveal/external_session_id")
        assert refused.status_code == 403 and "ext-secret-1" not in refused.text
        assert site.client.get("/sessions/nope").status_code == 404
        site.sign_in(made["operator"])
        assert "data-reveal" in site.client.get("/sessions/s1").text
        revealed = site.client.get("/fragments/sessions/s1/reveal/external_session_id")
        assert revealed.json() == {"value": "ext-secret-1"}
        assert site.client.get("/fragments/sessions/s1/reveal/working_directory").status_code == 404


def test_a_viewer_sees_no_action_and_is_refused_one(store: Store) -> None:
    register(store, "s1")
    with web(store) as site:
        site.sign_in(tokens(store)["viewer"])
        assert "data-action=" not in site.client.get("/sessions").text
        assert "data-action=" not in site.client.get("/sessions/s1").text
        refused = site.act("s1", "pause")
        assert refused.status_code == 403 and refused.json()["code"] == "forbidden"
    with store.read() as db:
        assert db.execute(text("SELECT status FROM agent_sessions")).scalar_one() == "active"


def test_an_operators_actions_follow_the_consoles_rules(store: Store) -> None:
    register(store, "s1")
    with web(store) as site:
        site.sign_in(tokens(store)["operator"])
        page = site.client.get("/sessions").text
        for action in ("heartbeat", "pause", "stop", "terminate"):
            assert f'data-action="{action}" data-session="s1"' in page
        assert 'data-action="resume" data-session="s1"' not in page  # not from active
        paused = site.act("s1", "pause", key="k-pause")
        assert paused.status_code == 200 and paused.json()["status"] == "paused"
        replayed = site.act("s1", "pause", key="k-pause")
        assert replayed.json() == paused.json()  # a retry of the same key replays
        refused = site.act("s1", "pause", key="k-pause-2")
        assert refused.status_code == 409 and refused.json()["code"] == "illegal_session_transition"
        resumed = site.act("s1", "resume", key="k-resume")
        assert resumed.json()["status"] == "resuming"
        assert site.act("s1", "dance", key="k-d").status_code == 404
    with store.read() as db:
        actors = (
            db.execute(
                text("SELECT DISTINCT actor FROM agent_session_events WHERE actor IS NOT NULL")
            )
            .scalars()
            .all()
        )
    assert actors == ["olivia"]  # the token's name, whatever the page says


def test_a_write_without_the_pages_proof_or_a_key_is_refused(store: Store) -> None:
    register(store, "s1")
    with web(store) as site:
        site.sign_in(tokens(store)["operator"])
        assert site.act("s1", "pause", csrf="").json()["code"] == "csrf_origin_forbidden"
        assert site.act("s1", "pause", csrf="f" * 64).status_code == 403
        evil = site.client.post(
            "/actions/sessions/s1/pause",
            headers={
                "Origin": "https://evil.example",
                "Idempotency-Key": "k",
                "X-CSRF-Token": site.csrf(),
            },
        )
        assert evil.status_code == 403
        keyless = site.client.post(
            "/actions/sessions/s1/terminate", headers={"X-CSRF-Token": site.csrf()}
        )
        assert keyless.json()["code"] == "idempotency_key_required"
    with store.read() as db:
        assert db.execute(text("SELECT status FROM agent_sessions")).scalar_one() == "active"


def test_a_session_changed_since_the_page_read_it_is_a_conflict(store: Store) -> None:
    register(store, "s1")
    with web(store) as site:
        site.sign_in(tokens(store)["operator"])
        version = int(re.search(r'data-version="(\d+)"', site.client.get("/sessions").text)[1])
        site.act("s1", "heartbeat", key="k-beat", version=version)
        stale = site.act("s1", "pause", key="k-p", version=version)
        assert stale.status_code == 409 and stale.json()["code"] == "session_transition_conflict"
        assert site.act("s1", "pause", key="k-p2", version=version + 1).status_code == 200


def test_terminate_shows_the_claims_and_needs_the_impact_when_there_are_any(store: Store) -> None:
    register(store, "held", agent="agent-1")
    register(store, "free", agent="agent-2")
    hold_claim(store, "agent-1")
    with web(store) as site:
        site.sign_in(tokens(store)["operator"])
        impact = site.client.get("/fragments/sessions/held/terminate").json()
        assert impact["requires_details"] is True and "src/app.py" in impact["impact"]
        assert "Impact (required)" in impact["impact"]
        refused = site.act("held", "terminate", key="t-1")
        assert refused.json()["code"] == "termination_impact_required"
        done = site.act(
            "held", "terminate", key="t-2", body={"impact_details": "claims handed to agent-2"}
        )
        assert done.json()["status"] == "terminated"
        free = site.client.get("/fragments/sessions/free/terminate").json()
        assert free["requires_details"] is False and "holds no active claim" in free["impact"]
        assert site.act("free", "terminate", key="t-3").json()["status"] == "terminated"
    with store.read() as db:
        payload = db.execute(
            text(
                "SELECT payload_json FROM agent_session_events WHERE "
                "session_id = 'held' AND event_type = 'terminated'"
            )
        ).scalar()
    assert "claims handed to agent-2" in payload


def test_terminate_says_an_agent_roundtable_started_may_still_run(store: Store) -> None:
    """The note, and the box to stop it too only where this server reaches the agent: here, not
    by a host another server holds."""
    from roundtable_console.store import service

    for session_id, via in (("here", None), ("there", "laptop"), ("by-hand", "")):
        register(store, session_id)
        if via != "":
            service.record_launch(store=store, session_id=session_id, tmux_pane="%3",
                                  tmux_socket=None, actor="ops", via_host=via)  # fmt: skip
    with web(store) as site:
        site.sign_in(tokens(store)["operator"])
        here, there, by_hand = (
            site.client.get(f"/fragments/sessions/{session_id}/terminate").json()["impact"]
            for session_id in ("here", "there", "by-hand")
        )
    assert "may still run: terminating does not stop it" in here
    assert 'id="impact-stop-agent"' in here
    assert "tmux pane %3 on host laptop) and may still run" in there
    assert 'id="impact-stop-agent"' not in there
    assert "may still run" not in by_hand and 'id="impact-stop-agent"' not in by_hand


def test_a_token_bound_to_a_workspace_reaches_only_it(store: Store) -> None:
    register(store, "mine", workspace=OTHER_WORKSPACE)
    register(store, "theirs", workspace=WORKSPACE)
    with web(store) as site:
        site.sign_in(tokens(store)["bound"])
        assert shown_ids(site.client.get("/sessions").text) == ["mine"]
        assert site.client.get(f"/sessions?workspace={WORKSPACE}").status_code == 404
        assert site.client.get("/sessions/theirs").status_code == 404
        assert site.client.get("/fragments/rows?id=theirs&id=mine").json()["rows"]["theirs"] is None
        assert site.act("theirs", "pause").status_code == 404
        assert site.client.get("/overview").status_code == 403
        assert site.client.get("/audit").status_code == 403


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_store_values_are_text_on_every_page(store: Store, hostile: str) -> None:
    register(
        store,
        "h1",
        agent=hostile,
        run_id=hostile,
        model=hostile,
        provider=hostile,
        external_session_id=None,
    )
    with store.write() as db:
        db.execute(
            text(
                "UPDATE agent_sessions SET waiting_reason = :r, waiting_since = "
                "started_at, status = :r WHERE id = 'h1'"
            ),
            {"r": hostile},
        )
    with web(store) as site:
        site.sign_in(tokens(store)["operator"])
        for url in ("/sessions", "/sessions/h1", "/sessions/h1/briefing", "/overview"):
            page = site.client.get(url).text
            assert "<script>window" not in page and "<img src=x" not in page, url
            assert "\x1b" not in page and "\x07" not in page and "\u202e" not in page, url
            assert 'href="javascript' not in page, url
        row = site.client.get("/fragments/rows?id=h1").json()["rows"]["h1"]
        assert "<script>window" not in row and "<img src=x" not in row
        assert str(escape(printable(hostile))) in row  # shown, as text


def test_the_briefing_renders_its_markdown_without_raw_html_and_downloads(store: Store) -> None:
    register(store, "s1")
    with web(store) as site:
        site.sign_in(tokens(store)["viewer"])
        page = site.client.get("/sessions/s1/briefing")
        assert "<h1>Roundtable Resume Briefing</h1>" in page.text
        assert "Copy Markdown" in page.text and "Not resumable" in page.text
        download = site.client.get("/sessions/s1/briefing.md")
        assert download.headers["content-type"] == "text/markdown; charset=utf-8"
        assert 'attachment; filename="briefing-s1.md"' in download.headers["content-disposition"]
        assert download.text.startswith("# Roundtable Resume Briefing")


def test_overview_and_audit_show_the_fleet_and_the_operators_actions(store: Store) -> None:
    fleet(store)
    with web(store) as site:
        made = tokens(store)
        site.sign_in(made["operator"])
        site.act("s01", "pause", key="a-1")
        overview = site.client.get("/overview").text
        assert "What needs a human" in overview and "Sessions by status" in overview
        audit = site.client.get("/audit").text
        assert "olivia" in audit and "pause" in audit and "s01" in audit
        assert "No operator action matches" in site.client.get("/audit?actor=nobody").text


def test_every_page_is_strict_about_what_it_loads(store: Store) -> None:
    register(store, "s1")
    with web(store) as site:
        site.sign_in(tokens(store)["viewer"])
        page = site.client.get("/sessions")
        policy = page.headers["content-security-policy"]
        assert "default-src 'self'" in policy and "script-src 'self'" in policy
        assert "unsafe-inline" not in policy and "frame-ancestors 'none'" in policy
        assert page.headers["x-frame-options"] == "DENY"
        assert "<script>" not in page.text and " style=" not in page.text
        assert " on" not in re.sub(r"\s(on|one)\b", "", page.text).split("<body")[0]
        assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', page.text)
        assert len(assets) == 5 and all(re.search(r"\.[0-9a-f]{10}\.", a) for a in assets)
        for asset in assets:
            served = site.client.get(asset)
            assert served.status_code == 200 and "immutable" in served.headers["cache-control"]
        assert site.client.get("/static/app.js").status_code == 404
        assert not re.search(r'(?:src|href)="(?:https?:)?//', page.text)
        assert len(page.content) < 200_000


def test_the_host_is_a_column_a_field_and_a_filter(store: Store) -> None:
    register(store, "on-laptop", host="laptop-7")
    register(store, "on-box", host="build-box")
    with web(store) as site:
        site.sign_in(tokens(store)["viewer"])
        page = site.client.get("/sessions")
        assert '<th scope="col">Host</th>' in page.text
        assert '<td data-label="Host">laptop-7</td>' in page.text
        narrowed = site.client.get("/sessions?host=build-box")
        assert shown_ids(narrowed.text) == ["on-box"] and 'value="build-box"' in narrowed.text
        detail = site.client.get("/sessions/on-laptop")
        assert "Host" in detail.text and "laptop-7" in detail.text
        register(store, "on-markup", host="[bold]x[/]<script>")
        hostile = site.client.get("/sessions?host=%5Bbold%5Dx%5B%2F%5D%3Cscript%3E")
        assert shown_ids(hostile.text) == ["on-markup"] and "<script>" not in hostile.text
        assert "[bold]x[/]&lt;script&gt;" in hostile.text
        bad = site.client.get("/sessions?host=%1bx")
        assert bad.status_code == 400
