"""What an agent is doing, in view (``docs/agents.md#connect-your-agents``): a turn done is said
and ordered below a question, in the store, the CLI, the API and the web; the agent's transcript in
the API (its wall kept), the web console (as text) and the console's Transcript tab."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from roundtable_console.store.clock import system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.reads.listing import SessionOrder, attention_reason
from roundtable_console.store.reads.sessions import list_sessions
from roundtable_console.store.service import read_session
from roundtable_console.store.writes.agent_writes import heartbeat
from roundtable_console.store.writes.quick_writes import heartbeat as quick_heartbeat
from tests.api_support import BASE, HUMAN, seeded_api
from tests.helpers import Cli
from tests.web_support import HOSTILE, OTHER_WORKSPACE, register, tokens, web

CLAUDE_ID = "3f0c8a52-7c1e-4b8e-9a57-2f1d7c0e9b11"


def _transcript(home: Path, lines: list[dict[str, Any]]) -> Path:
    path = home / ".claude" / "projects" / "-w" / f"{CLAUDE_ID}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _conversation(*texts: str) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for number, words in enumerate(texts):
        role = "user" if number % 2 == 0 else "assistant"
        lines.append({"type": role, "message": {"role": role, "content": words}})
    return lines


# ------------------------------------------------------------------ a turn done


def test_a_turn_done_is_not_a_wait_and_sits_below_a_question(store: Store) -> None:
    register(store, "asks")
    register(store, "done")
    register(store, "works")
    with store.write() as db:
        heartbeat(db=db, session_id="asks", waiting="asks to run Bash: rm -rf build/")
        heartbeat(db=db, session_id="done", status="active", turn_done="Tests pass.")
        heartbeat(db=db, session_id="works", status="running")
    done = read_session(store=store, session_id="done")
    assert done.waiting is None and done.turn_done == "Tests pass."
    assert done.to_json()["turn_done"] == {"message": "Tests pass.", "at": done.last_seen_at}
    with store.read() as db:
        order = SessionOrder("attention").at(system_clock() - timedelta(seconds=300))
        page = list_sessions(db=db, order=order, limit=10)
    assert [s.id for s in page.items][0] == "asks"
    now = system_clock()
    reason = attention_reason(done, None, now, timedelta(seconds=300))
    assert reason.startswith("turn done ") and reason.endswith(": Tests pass.")
    # The next beat that is not a turn's end clears it; a wait wins over it.
    with store.write() as db:
        heartbeat(db=db, session_id="done", status="running")
        both = heartbeat(db=db, session_id="works", waiting="asks: which?", turn_done="x")
    assert read_session(store=store, session_id="done").turn_done is None
    assert both.waiting is not None and both.turn_done is None


def test_the_quick_and_the_full_heartbeat_agree_on_a_turn_done(store: Store, store_url: str):
    register(store, "q")
    register(store, "f")
    quick = quick_heartbeat(store_url, session_id="q", status="active", turn_done="Done.")
    with store.write() as db:
        full = heartbeat(db=db, session_id="f", status="active", turn_done="Done.")
    assert quick is not None
    assert (quick.waiting_reason, quick.waiting_since) == (full.waiting_reason, full.waiting_since)
    with store.read() as db:
        from sqlalchemy import text

        payloads = db.execute(text(
            "SELECT session_id, payload_json FROM agent_session_events "
            "WHERE event_type = 'heartbeat' ORDER BY session_id"
        )).all()  # fmt: skip
    shapes = {sid: sorted(json.loads(raw)) for sid, raw in payloads}
    assert shapes["q"] == shapes["f"] == ["last_seen_at", "status", "turn_done"]


def test_the_cli_says_a_turn_done(rt: Cli) -> None:
    rt.register("s1")
    done = rt("sessions", "heartbeat", "--session", "s1", "--turn-done", "Shipped.", "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["turn_done"]["message"] == "Shipped."
    shown = rt("sessions", "show", "--session", "s1")
    assert "turn_done" in shown.stdout and "Shipped." in shown.stdout
    refused = rt("sessions", "heartbeat", "--session", "s1", "--session", "s2", "--turn-done", "x")
    assert refused.exit_code == 2


def test_the_api_takes_and_tells_a_turn_done(store: Store) -> None:
    with seeded_api(store) as api:
        assert api.register("s1", headers=HUMAN).status_code == 201
        beat = api.client.post(
            f"{BASE}/s1/heartbeat", json={"turn_done": "All green."}, headers=HUMAN
        )
        assert beat.status_code == 200, beat.text
        assert beat.json()["turn_done"]["message"] == "All green."
        assert "waiting" not in beat.json()
        bad = api.client.post(f"{BASE}/s1/heartbeat", json={"turn_done": "x\x00"}, headers=HUMAN)
        assert bad.status_code == 400


def test_the_web_flags_a_turn_done(store: Store) -> None:
    register(store, "s1")
    with store.write() as db:
        heartbeat(db=db, session_id="s1", status="active", turn_done="Ready for review.")
    with web(store) as site:
        site.sign_in(tokens(store)["viewer"])
        page = site.client.get("/sessions")
        assert "✓ turn done" in page.text and "Ready for review." in page.text


# ------------------------------------------------------------------ the transcript


def test_the_api_reads_the_transcript_to_those_who_may_read_the_session(
    store: Store, tmp_path: Path
) -> None:
    path = _transcript(tmp_path, _conversation("fix the build", "Fixed: api_key=sk-9 gone"))
    metadata = {"transcript_path": str(path)}
    with seeded_api(store) as api:
        made = api.register(
            "s1", headers=HUMAN, adapter="claude", external_session_id=CLAUDE_ID, metadata=metadata
        )
        assert made.status_code == 201, made.text
        api.register(
            "s2",
            headers=HUMAN,
            adapter="claude",
            external_session_id=CLAUDE_ID,
            metadata={"transcript_path": "/etc/passwd"},
        )
        viewer = api.token("vic", "viewer")
        got = api.client.get(f"{BASE}/s1/transcript", headers=viewer)
        assert got.status_code == 200, got.text
        body = got.json()
        assert body["available"] is True and body["next_before"] is None
        assert [(i["kind"], i["text"]) for i in body["items"]] == [
            ("prompt", "fix the build"),
            ("agent", "Fixed: api_key=[REDACTED] gone"),
        ]
        paged = api.client.get(f"{BASE}/s1/transcript?limit=1", headers=viewer).json()
        assert len(paged["items"]) == 1 and paged["next_before"] is not None
        older = api.client.get(
            f"{BASE}/s1/transcript?limit=1&before={paged['next_before']}", headers=viewer
        ).json()
        assert older["items"][0]["text"] == "fix the build"
        bad = api.client.get(f"{BASE}/s1/transcript?before=-1", headers=viewer)
        assert bad.status_code == 400
        # An agent token reads its own agent's transcripts only.
        theirs = api.token("bot-other", "agent", agent_id="someone-else")
        refused = api.client.get(f"{BASE}/s1/transcript", headers=theirs)
        assert refused.status_code == 403 and "fix the build" not in refused.text
        from tests.api_support import AGENT

        own = api.token("bot-own", "agent", agent_id=AGENT)
        assert api.client.get(f"{BASE}/s1/transcript", headers=own).json()["available"] is True
        other = api.token("bound", "viewer", workspaces=("ws-elsewhere",))
        hidden = api.client.get(f"{BASE}/s1/transcript", headers=other)
        assert hidden.status_code in (403, 404)
        assert "fix the build" not in hidden.text
        refused = api.client.get(f"{BASE}/s2/transcript", headers=viewer).json()
        assert refused["available"] is False and refused["items"] == []
        assert "not where its agent keeps" in refused["reason"]


def test_the_web_transcript_page_shows_text_never_markup(store: Store, tmp_path: Path) -> None:
    path = _transcript(tmp_path, _conversation(*HOSTILE, "line one\nline two"))
    register(
        store,
        "s1",
        adapter="claude",
        external_session_id=CLAUDE_ID,
        metadata={"transcript_path": str(path)},
    )
    register(
        store,
        "s2",
        workspace=OTHER_WORKSPACE,
        adapter="claude",
        external_session_id=CLAUDE_ID,
        metadata={"transcript_path": str(path)},
    )
    with web(store) as site:
        made = tokens(store)
        site.sign_in(made["viewer"])
        page = site.client.get("/sessions/s1/transcript")
        assert page.status_code == 200
        assert "<script>window.__pwned" not in page.text and "onerror=" not in page.text.replace(
            "onerror=&#34;", ""
        )
        assert "&lt;script&gt;" in page.text
        assert "\x1b" not in page.text and "\u202e" not in page.text
        assert "line one\nline two" in page.text  # a line break kept, in a <pre>
        assert 'data-follow="/fragments/sessions/s1/transcript"' in page.text
        assert 'href="/sessions/s1/transcript"' in site.client.get("/sessions/s1").text
        fragment = site.client.get("/fragments/sessions/s1/transcript").json()
        assert fragment["size"] == path.stat().st_size and "&lt;script&gt;" in fragment["html"]
        site.sign_in(made["bound"])
        assert site.client.get("/sessions/s1/transcript").status_code == 404
        assert site.client.get("/fragments/sessions/s1/transcript").status_code == 404
