"""The demo store: the cast, every status, stale rows, the agents' loop (a permission request,
a finished turn, transcripts), no hostile text, briefing material, determinism and size — on
SQLite and PostgreSQL."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from roundtable_console.agents.transcripts import read_page
from roundtable_console.store.clock import format_ts
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.models import (
    Agent,
    AgentSession,
    AgentSessionEvent,
    Claim,
    Decision,
    Event,
    Proposal,
    Task,
    Workspace,
)
from roundtable_console.store.reads.claims import active_claims
from roundtable_console.store.reads.sessions import get_session
from roundtable_console.store.requests.reads import list_requests
from roundtable_console.store.requests.records import NOBODY_LISTENS
from roundtable_console.store.resume.adapters import BUILTIN_ADAPTERS
from roundtable_console.store.rules import ACTIVE_STATES
from roundtable_console.store.writes.demo import has_sessions, seed_demo
from roundtable_console.store.writes.demo_agents import TURN_DONE
from roundtable_console.store.writes.transfer import export_records
from tests.conftest import FakeClock

STALE_AFTER = timedelta(seconds=300)
STATUSES = {
    "starting",
    "active",
    "running",
    "paused",
    "resuming",
    "stopped",
    "ended",
    "terminated",
    "failed",
}
SESSIONS = AgentSession.__table__  # type: ignore[attr-defined]


def seed(
    store: Store, clock: FakeClock, sessions: int = 24, agent_home: Path | None = None
) -> dict[str, int]:
    with store.write() as db:
        return seed_demo(db=db, clock=clock, sessions=sessions, agent_home=agent_home)


def rows(store: Store, model: Any) -> list[Any]:
    table = model.__table__
    with store.read() as db:
        return list(db.execute(select(table).order_by(*table.primary_key.columns)).all())


def all_sessions(store: Store) -> list[AgentSession]:
    return [AgentSession(**row._mapping) for row in rows(store, AgentSession)]


def export_text(store: Store) -> list[str]:
    lines: list[str] = []
    with store.read() as db:
        export_records(db=db, write=lines.append)
    return lines


def test_counts_match_the_rows_written(store: Store, clock: FakeClock) -> None:
    counts = seed(store, clock)
    assert counts["session"] == 24
    assert counts["workspace"] == 3
    models = {
        "workspace": Workspace,
        "agent": Agent,
        "task": Task,
        "claim": Claim,
        "proposal": Proposal,
        "decision": Decision,
        "event": Event,
        "session": AgentSession,
        "session_event": AgentSessionEvent,
    }
    for kind, model in models.items():
        assert len(rows(store, model)) == counts[kind], kind
    workspaces = rows(store, Workspace)
    assert all(w.root_path.startswith("/tmp/roundtable-demo/") for w in workspaces)


def test_agents_cover_every_builtin_adapter_and_one_is_disabled(
    store: Store, clock: FakeClock
) -> None:
    seed(store, clock)
    agents = rows(store, Agent)
    assert 5 <= len(agents) <= 8
    assert {agent.adapter for agent in agents} == set(BUILTIN_ADAPTERS)
    assert [agent.is_enabled for agent in agents].count(0) == 1


def test_every_status_stale_rows_and_session_fields(store: Store, clock: FakeClock) -> None:
    seed(store, clock)
    found = all_sessions(store)
    assert STATUSES <= {s.status for s in found}
    now = clock()
    stale = [s for s in found if s.is_stale(now, STALE_AFTER)]
    fresh = [s for s in found if s.is_active and not s.is_stale(now, STALE_AFTER)]
    assert stale and fresh
    assert all(s.status in ACTIVE_STATES for s in stale)
    assert all(s.provider and s.model for s in found)
    assert any(s.external_session_id for s in found)
    assert any(s.external_resume_command for s in found)
    assert any(s.external_session_id is None for s in found)
    with_usage = [s for s in found if (s.metadata_dict or {}).get("usage")]
    assert with_usage
    for session in with_usage:
        usage = session.metadata_dict["usage"]  # type: ignore[index]
        assert {"input_tokens", "output_tokens", "cost_usd"} <= set(usage)
        assert all(isinstance(v, int | float) for v in usage.values())
        assert session.metadata_dict["branch"]  # type: ignore[index]
    for session in found:
        if session.status in ("stopped", "ended", "terminated", "failed"):
            assert session.ended_at == session.last_seen_at
        if session.is_active:
            assert session.ended_at is None


def test_history_rows_for_every_session(store: Store, clock: FakeClock) -> None:
    seed(store, clock)
    history = rows(store, AgentSessionEvent)
    by_session: dict[str, list[str]] = {}
    for row in history:
        by_session.setdefault(row.session_id, []).append(row.event_type)
    found = all_sessions(store)
    assert set(by_session) == {s.id for s in found}
    assert all(types[0] == "registered" for types in by_session.values())
    assert {"registered", "heartbeat", "paused", "stopped", "ended", "terminated"} <= {
        row.event_type for row in history
    }
    for session in found:
        assert session.version == len(by_session[session.id]) - 1
    lifecycle = [e for e in rows(store, Event) if e.type.startswith("session.")]
    assert {e.type for e in lifecycle} >= {"session.paused", "session.stopped"}


def test_tool_events_carry_tool_action_status(store: Store, clock: FakeClock) -> None:
    seed(store, clock)
    events = rows(store, Event)
    tools = [e for e in events if e.type.startswith("tool.")]
    assert len(tools) >= 10
    complete = [json.loads(e.payload_json) for e in tools]
    assert sum({"tool", "action", "status"} <= set(p) for p in complete) >= 10
    assert any(not e.type.startswith(("tool.", "session.")) for e in events)


# Rich markup, escape codes and bell as they would stand in the demo's JSON export.
HOSTILE = re.compile(r"\[/?(bold|red|link)|\\u001b|\\u0007|\x1b")


def test_no_markup_nor_escape_codes_in_the_demo(store: Store, clock: FakeClock) -> None:
    """Hostile text is the tests' own: the newcomer's first screen shows none."""
    seed(store, clock, sessions=200)
    exported = "\n".join(export_text(store))
    assert "sess-00001" in exported
    assert not HOSTILE.search(exported)
    [request] = list_requests(store=store, clock=clock)
    assert not HOSTILE.search(request.tool_input_json + (request.suggestions_json or ""))


def test_a_claude_code_session_asks_and_nobody_listens(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    seed(store, clock, agent_home=tmp_path / "demo-agents")
    [request] = list_requests(store=store, clock=clock)
    assert request.session_id == "sess-00002" and request.agent == "claude-code"
    assert request.answers == ("allow", "deny") and request.suggestions
    assert request.reason == "asks to run Bash: rm -rf build/"
    assert request.hook_pid is None and request.who_hears == NOBODY_LISTENS
    assert request.is_open(format_ts(clock() + timedelta(hours=12)))
    with store.read() as db:
        asking = get_session(db=db, session_id="sess-00002")
    assert asking.waiting is not None and asking.waiting.reason == request.reason
    assert asking.waiting.since == request.asked_at
    assert (asking.metadata_dict or {})["hooks"] == "claude-code"
    history = [r.event_type for r in rows(store, AgentSessionEvent) if r.session_id == asking.id]
    assert history[-1] == "permission_requested" and asking.version == len(history) - 1
    page = read_page(asking)
    assert [entry.kind for entry in page.entries][:2] == ["prompt", "agent"]
    assert page.entries[-1].kind == "tool"
    assert page.entries[-1].text.startswith("Bash: rm -rf build/")


def test_the_web_says_nobody_listens_only_where_no_hook_asked(
    store: Store, clock: FakeClock
) -> None:
    from roundtable_console.api.web.request_views import request_view
    from roundtable_console.store.clock import fixed_clock
    from roundtable_console.store.requests.asking import open_request

    seed(store, clock)
    [demo] = list_requests(store=store, clock=clock)
    asked = open_request(
        store, session_id="sess-00001", agent="codex", tool_name="Bash",
        tool_input={"command": "ls"}, suggestions=None, reason="asks to run Bash: ls",
        wait_seconds=60, clock=fixed_clock(clock()),
    )  # fmt: skip
    assert asked.hook_pid is not None
    assert request_view(demo, clock()).unheard == NOBODY_LISTENS
    assert request_view(asked, clock()).unheard is None


def test_a_claude_code_session_has_finished_its_turn(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    seed(store, clock, agent_home=tmp_path / "demo-agents")
    done = [s for s in all_sessions(store) if s.turn_done is not None]
    assert [s.id for s in done] == ["sess-00010"]
    assert done[0].turn_done == TURN_DONE and done[0].waiting is None
    assert done[0].external_resume_command == f"claude --resume {done[0].external_session_id}"
    entries = read_page(done[0]).entries
    assert {"prompt", "tool", "result", "agent"} <= {entry.kind for entry in entries}
    assert entries[-1].text == TURN_DONE
    assert any(e.kind == "result" and e.text.startswith("error: --- FAIL") for e in entries)


def test_transcripts_are_written_only_with_a_home_and_the_same_each_time(
    store: Store, empty_store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    seed(store, clock)
    assert not any("transcript_path" in (s.metadata_dict or {}) for s in all_sessions(store))
    seed(store, clock, agent_home=tmp_path / "one")
    seed(empty_store, clock, agent_home=tmp_path / "two")
    one = sorted(p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*.jsonl"))
    two = sorted(p.relative_to(tmp_path / "two") for p in (tmp_path / "two").rglob("*.jsonl"))
    assert one == two and len(one) == 2
    for path in one:
        assert (tmp_path / "one" / path).read_bytes() == (tmp_path / "two" / path).read_bytes()
        assert (tmp_path / "one" / path).stat().st_mode & 0o777 == 0o600


def test_a_home_that_cannot_be_written_leaves_a_demo_without_transcripts(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("a file where the demo's home would go")
    assert seed(store, clock, agent_home=blocked)["session"] == 24
    assert not any("transcript_path" in (s.metadata_dict or {}) for s in all_sessions(store))
    assert list_requests(store=store, clock=clock)  # the loop is there all the same


def test_seeding_again_asks_again(store: Store, clock: FakeClock, tmp_path: Path) -> None:
    from roundtable_console.store.requests.deciding import decide_request

    seed(store, clock)
    [request] = list_requests(store=store, clock=clock)
    decide_request(store=store, request_id=request.id, decision="deny", actor="maria", clock=clock)
    assert list_requests(store=store, clock=clock) == []
    seed(store, clock)
    [again] = list_requests(store=store, clock=clock)
    assert again.id == request.id and again.decided_by is None


def test_briefing_material_for_ada(store: Store, clock: FakeClock) -> None:
    seed(store, clock)
    tasks = [t for t in rows(store, Task) if t.assigned_agent_id == "ada"]
    assert any(t.status == "in_progress" for t in tasks)
    assert {t.status for t in rows(store, Task)} >= {"in_progress", "open", "done"}
    with store.read() as db:
        held = active_claims(db=db, agent_id="ada", now=clock())
        expired = active_claims(db=db, agent_id="grace", now=clock())
    assert held and not any(c.expired for c in held)
    assert any(c.expired for c in expired)
    assert any(c.status == "released" for c in rows(store, Claim))
    proposals = rows(store, Proposal)
    assert any(p.agent_id == "ada" and p.status == "pending" for p in proposals)
    assert {p.status for p in proposals} >= {
        "pending",
        "accepted",
        "rejected",
        "changes_requested",
    }
    assert len(rows(store, Decision)) >= 3
    assert any(s.agent_id == "ada" and s.status == "active" for s in all_sessions(store))


def test_same_clock_same_store_other_clock_other_times(
    store: Store, empty_store: Store, clock: FakeClock
) -> None:
    seed(store, clock)
    seed(empty_store, clock)
    assert export_text(store) == export_text(empty_store)
    moved = FakeClock(clock() + timedelta(days=1))
    with empty_store.write() as db:
        seed_demo(db=db, clock=moved)
    later = {s.id: s for s in all_sessions(empty_store)}
    for session in all_sessions(store):
        assert later[session.id].status == session.status
        assert later[session.id].started_at != session.started_at


def test_seeding_again_replaces_the_demo_rows(store: Store, clock: FakeClock) -> None:
    first = seed(store, clock)
    before = export_text(store)
    seed(store, clock)
    after = export_text(store)
    assert len(after) == len(before) == sum(first.values())
    assert len(rows(store, AgentSession)) == 24


@pytest.mark.parametrize("size", [0, 1, 10, 137])
def test_sessions_n_gives_n_sessions(store: Store, clock: FakeClock, size: int) -> None:
    with store.read() as db:
        assert has_sessions(db=db) is False
    counts = seed(store, clock, sessions=size)
    found = all_sessions(store)
    assert counts["session"] == len(found) == size
    with store.read() as db:
        assert has_sessions(db=db) is (size > 0)
    if size >= 10:
        assert STATUSES <= {s.status for s in found}
        assert any(s.is_stale(clock(), STALE_AFTER) for s in found)
        assert any(s.turn_done for s in found) and any(s.waiting for s in found)


def test_negative_size_is_refused(store: Store, clock: FakeClock) -> None:
    with pytest.raises(ValueError), store.write() as db:
        seed_demo(db=db, clock=clock, sessions=-1)


def test_ten_thousand_sessions(sqlite_store: Store, clock: FakeClock) -> None:
    # Speed is measured by bench/bench.py, not asserted here.
    with sqlite_store.write() as db:
        counts = seed_demo(db=db, clock=clock, sessions=10_000)
    with sqlite_store.read() as db:
        assert db.execute(select(func.count()).select_from(SESSIONS)).scalar_one() == 10_000
    assert counts["session"] == 10_000
