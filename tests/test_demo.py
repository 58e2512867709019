"""The demo store: the cast, every status, stale rows, hostile text, briefing material,
determinism and size — on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

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
from roundtable_console.store.resume.adapters import BUILTIN_ADAPTERS
from roundtable_console.store.rules import ACTIVE_STATES
from roundtable_console.store.writes.demo import has_sessions, seed_demo
from roundtable_console.store.writes.demo_data import HOSTILE_TEXT
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


def seed(store: Store, clock: FakeClock, sessions: int = 24) -> dict[str, int]:
    with store.write() as db:
        return seed_demo(db=db, clock=clock, sessions=sessions)


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


def test_hostile_session_is_present(store: Store, clock: FakeClock) -> None:
    seed(store, clock)
    hostile = [s for s in all_sessions(store) if s.status == HOSTILE_TEXT]
    assert len(hostile) == 1
    metadata = hostile[0].metadata_dict or {}
    assert HOSTILE_TEXT in metadata["title"] and "\x1b" in metadata["title"]
    assert "\x1b" in (hostile[0].provider or "")


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
        assert any(s.status == HOSTILE_TEXT for s in found)


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
