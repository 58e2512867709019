"""Bulk lifecycle actions (store.writes.bulk, bulk_plan and bulk_run,
``docs/operators-guide.md#acting-on-many-sessions-in-the-console``): the plan, the run through the
lifecycle functions, keys derived from the run's key, replays, refusals and their reasons,
transactions, progress and cancelling. Every test runs on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import insert, select, text

from roundtable_console.store.clock import format_ts
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.models import Agent, Claim, IdempotencyKey
from roundtable_console.store.errors import IdempotencyKeyRequired
from roundtable_console.store.reads import keyset, sessions
from roundtable_console.store.reads.listing import FilterSelection, Selection, SessionFilter
from roundtable_console.store.writes import (
    agent_writes,
    bulk,
    bulk_plan,
    bulk_run,
    lifecycle,
    lifecycle_many,
)
from roundtable_console.store.writes.bulk import BulkItem, session_key, skip_reason
from roundtable_console.store.writes.bulk_plan import plan_bulk
from roundtable_console.store.writes.bulk_run import run_bulk
from tests.conftest import FakeClock
from tests.helpers import UnavailableAtCommit, history, session_row

ACTOR = "operator-ann"
ACTIVE_RULE = "an active state (starting, active, running, paused, resuming)"


def seed(
    store: Store,
    clock: FakeClock,
    *ids: str,
    status: str = "active",
    agent_id: str = "agent-1",
    run_id: str = "run-1",
) -> None:
    """Sessions started a second apart (so the list's order is their order), and their agent."""
    with store.write() as db:
        for session_id in ids:
            clock.advance(seconds=1)
            agent_writes.register(
                db=db,
                session_id=session_id,
                agent_id=agent_id,
                run_id=run_id,
                adapter="codex",
                working_directory="/w",
                status=status,
                clock=clock,
            )
        agents = Agent.__table__  # type: ignore[attr-defined]
        if db.execute(select(agents.c.id).where(agents.c.id == agent_id)).first() is None:
            db.execute(
                insert(agents).values(
                    id=agent_id, role="coder", name=agent_id, adapter="codex", is_enabled=1
                )
            )


def add_claim(store: Store, claim_id: str, agent_id: str) -> None:
    with store.write() as db:
        db.execute(
            insert(Claim.__table__).values(  # type: ignore[attr-defined]
                id=claim_id,
                resource_id=f"file:{claim_id}.py",
                agent_id=agent_id,
                task_id="task-1",
                claim_type="edit",
                status="active",
                expires_at="2030-01-01T00:00:00Z",
            )
        )


def snapshot(store: Store) -> tuple[Any, ...]:
    """Everything an action may touch, to prove that nothing was written."""
    tables = ("agent_sessions", "agent_session_events", "events", "idempotency_keys")
    with store.read() as db:
        return tuple(
            tuple(tuple(row) for row in db.execute(text(f"SELECT * FROM {name} ORDER BY 1")))
            for name in tables
        )


def outcomes(items: list[BulkItem]) -> list[tuple[str, str, str | None]]:
    return [(item.session_id, item.outcome, item.code) for item in items]


def chosen(session_ids: list[str]) -> dict[str, Any]:
    """Sessions chosen by id, acted on in the order given (as the CLI's --session)."""
    return {"selection": Selection(ids=frozenset(session_ids)), "order": session_ids}


def matching(filters: SessionFilter) -> dict[str, Any]:
    """Every session a filter lets through (as the CLI's --all-matching)."""
    return {"selection": Selection(by_filter=(FilterSelection(filters),))}


def run(store: Store, clock: FakeClock, action: str, target: dict[str, Any], **extra: Any) -> Any:
    return run_bulk(store=store, action=action, actor=ACTOR, clock=clock, **target, **extra)


def events_of(store: Store, event_type: str) -> list[dict[str, Any]]:
    with store.read() as db:
        rows = db.execute(
            text("SELECT actor_id, payload_json FROM events WHERE type = :t ORDER BY id"),
            {"t": event_type},
        ).all()
    return [{"actor": actor, **json.loads(payload)} for actor, payload in rows]


def stored_keys(store: Store) -> dict[str, tuple[str, str]]:
    keys = IdempotencyKey.__table__  # type: ignore[attr-defined]
    with store.read() as db:
        rows = db.execute(select(keys.c.key, keys.c.action, keys.c.session_id)).all()
    return {row.key: (row.action, row.session_id) for row in rows}


# ------------------------------------------------------------------------------------ selection


def pages_of(store: Store, selection: Selection, **options: Any) -> list[list[tuple[str, bool]]]:
    """``bulk.selected_pages`` as (id, whether a session has it), a page at a time."""
    return [
        [(session_id, row is not None) for session_id, row in page]
        for page in bulk.selected_pages(store.read, selection, **options)
    ]


def test_ids_chosen_alone_go_in_their_order_each_once_else_by_id(
    store: Store, clock: FakeClock
) -> None:
    seed(store, clock, "a", "b", "c")
    alone = Selection(ids=frozenset({"c", "nope", "a"}))
    assert pages_of(store, alone) == [[("a", True), ("c", True), ("nope", False)]]
    assert pages_of(store, alone, order=["nope", "c", "a"], size=2) == [
        [("nope", False), ("c", True)],
        [("a", True)],
    ]
    for wrong in (["a", "c"], ["a", "c", "nope", "b"]):
        with pytest.raises(ValueError):
            plan_bulk(store=store, action="pause", selection=alone, order=wrong)
    by_filter = Selection(ids=frozenset({"a"}), by_filter=(FilterSelection(SessionFilter()),))
    with pytest.raises(ValueError):
        run_bulk(store=store, action="pause", selection=by_filter, order=["a"], actor=ACTOR)
    # Repeats in an order are acted on once (the CLI's --session s1 --session s1).
    plan = plan_bulk(store=store, action="pause", **chosen(["c", "a", "c"]))
    assert outcomes(plan.tally.items) == [("c", "done", None), ("a", "done", None)]


def test_a_selection_with_filters_is_read_by_id_in_keyset_pages(
    store: Store, clock: FakeClock
) -> None:
    """Ids and filters together, each session once, less each filter's exclusions; an id chosen
    by itself that no session has comes last."""
    seed(store, clock, "s5", "s1", "s4", agent_id="agent-1")
    seed(store, clock, "s2", "s3", "s6", agent_id="agent-2")
    seed(store, clock, "s7", agent_id="agent-3")
    selection = Selection(
        ids=frozenset({"s3", "s1", "gone"}),
        by_filter=(FilterSelection(SessionFilter(agent_id="agent-1"), frozenset({"s4"})),),
    )
    assert pages_of(store, selection, size=2) == [
        [("s1", True), ("s3", True)],
        [("s5", True)],
        [("gone", False)],
    ]
    with store.read() as db:
        assert sessions.count_selected(db=db, selection=selection) == 3
    plan = plan_bulk(store=store, action="stop", selection=selection, keep=None)
    assert outcomes(plan.tally.items) == [
        ("s1", "done", None),
        ("s3", "done", None),
        ("s5", "done", None),
        ("gone", "failed", "session_not_found"),
    ]
    outcome = run(store, clock, "stop", {"selection": selection})
    assert outcome.total == 4
    assert outcomes(outcome.tally.items) == outcomes(plan.tally.items)
    assert [session_row(store, s)["status"] for s in ("s2", "s4", "s6", "s7")] == ["active"] * 4


def test_reasons_are_counted_in_words_that_name_no_session(store: Store, clock: FakeClock) -> None:
    seed(store, clock, "a1", "a2")
    seed(store, clock, "p1", "p2", "p3", status="paused")
    seed(store, clock, "e1", status="ended")
    plan = plan_bulk(
        store=store, action="pause", **chosen(["a1", "p1", "x1", "p2", "e1", "p3", "x2", "a2"])
    )
    tally = plan.tally
    assert tally.by_reason("skipped") == [
        ("already paused", 3),
        ("status 'ended': pause is allowed from an active state other than 'paused'", 1),
    ]
    assert tally.by_reason("failed") == [("No session has that id", 2)]
    assert tally.by_reason("done") == []
    run(store, clock, "pause", chosen(["a1"]), run_key="k")
    retry = run(store, clock, "pause", chosen(["a1", "a2"]), run_key="k")
    assert retry.tally.by_reason("done") == [(bulk.REPLAY_REASON, 1)]
    assert bulk.FAILURE_REASONS["termination_impact_required"] == (
        "The agent holds active claims; impact details are required"
    )


def test_each_sessions_key_is_derived_from_the_run_key_and_never_shared() -> None:
    assert session_key("run-1", "s1") == session_key("run-1", "s1")
    keys = {
        session_key(run_key, session_id)
        for run_key, session_id in (("run-1", "s1"), ("run-1", "s2"), ("run-2", "s1"))
    }
    assert len(keys) == 3
    # No way to shift text between the run key and the session id to make another pair's key.
    assert session_key("a:b", "c") != session_key("a", "b:c")
    assert session_key("run-1", "s1") != "run-1"


def test_skip_reasons_use_the_rules_words() -> None:
    assert skip_reason("pause", "paused") == "already paused"
    assert skip_reason("stop", "stopped") == "already stopped"
    assert skip_reason("terminate", "terminated") == "already terminated"
    assert skip_reason("pause", "ended") == (
        "status 'ended': pause is allowed from an active state other than 'paused'"
    )
    assert skip_reason("resume", "active") == (
        "status 'active': resume is allowed only from 'paused', 'stopped' or 'ended'"
    )
    assert (
        skip_reason("heartbeat", "ended")
        == f"status 'ended': heartbeat is allowed from {ACTIVE_RULE}"
    )


# ------------------------------------------------------------------------------------- the plan


def test_the_plan_says_what_each_session_would_do_and_writes_nothing(
    store: Store, clock: FakeClock
) -> None:
    seed(store, clock, "s1", "s2")
    seed(store, clock, "s3", status="paused")
    seed(store, clock, "s4", status="ended")
    before = snapshot(store)
    plan = plan_bulk(
        store=store,
        action="pause",
        **chosen(["s1", "s3", "nope", "s4", "s2"]),
        clock=clock,
    )
    assert [item.to_json() for item in plan.tally.items] == [
        {
            "session_id": "s1",
            "outcome": "done",
            "code": None,
            "message": "would pause (status 'active')",
        },
        {
            "session_id": "s3",
            "outcome": "skipped",
            "code": "illegal_session_transition",
            "message": "already paused",
        },
        {
            "session_id": "nope",
            "outcome": "failed",
            "code": "session_not_found",
            "message": "No session has the id 'nope'.",
        },
        {
            "session_id": "s4",
            "outcome": "skipped",
            "code": "illegal_session_transition",
            "message": "status 'ended': pause is allowed from an active state other than 'paused'",
        },
        {
            "session_id": "s2",
            "outcome": "done",
            "code": None,
            "message": "would pause (status 'active')",
        },
    ]
    assert plan.to_json()["dry_run"] is True
    assert (plan.tally.done, plan.tally.skipped, plan.tally.failed) == (2, 2, 1)
    assert snapshot(store) == before


def test_a_preview_keeps_the_first_items_of_each_outcome_and_counts_them_all(
    store: Store, clock: FakeClock
) -> None:
    seed(store, clock, *(f"a{n}" for n in range(5)))
    seed(store, clock, *(f"p{n}" for n in range(4)), status="paused")
    plan = plan_bulk(
        store=store,
        action="pause",
        **matching(SessionFilter()),
        clock=clock,
        keep=2,
    )
    assert plan.tally.counts == {"done": 5, "skipped": 4, "failed": 0}
    assert [item.session_id for item in plan.tally.items] == ["a0", "a1", "p0", "p1"]
    everything = plan_bulk(store=store, action="pause", **matching(SessionFilter()), keep=None)
    assert len(everything.tally.items) == 9


def test_a_filter_is_read_a_page_at_a_time(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(store, clock, *(f"s{n:03d}" for n in range(450)))
    seed(store, clock, "other", agent_id="agent-2")
    pages: list[int] = []
    read = bulk.selected_pages

    def counting(*arguments: Any, **options: Any) -> Any:
        for page in read(*arguments, **options):
            pages.append(len(page))
            yield page

    monkeypatch.setattr(bulk_plan, "selected_pages", counting)
    plan = plan_bulk(
        store=store,
        action="stop",
        **matching(SessionFilter(agent_id="agent-1")),
        keep=None,
    )
    assert pages == [200, 200, 50]
    assert plan.tally.done == 450
    assert [item.session_id for item in plan.tally.items] == [f"s{n:03d}" for n in range(450)]


def test_the_plan_of_terminate_names_the_claims_of_every_agent_concerned(
    store: Store, clock: FakeClock
) -> None:
    seed(store, clock, "s1", "s2", agent_id="agent-1")
    seed(store, clock, "s3", agent_id="agent-2")
    seed(store, clock, "s4", agent_id="agent-3", status="ended")
    add_claim(store, "c1", "agent-1")
    add_claim(store, "c2", "agent-1")
    add_claim(store, "c3", "agent-3")  # its only session is ended: not concerned
    selection = chosen(["s1", "s2", "s3", "s4"])
    plan = plan_bulk(store=store, action="terminate", **selection, clock=clock)
    assert plan.requires_impact_details
    assert {agent: [c.id for c in claims] for agent, claims in plan.claims.items()} == {
        "agent-1": ["c1", "c2"]
    }
    assert outcomes(plan.tally.items) == [
        ("s1", "failed", "termination_impact_required"),
        ("s2", "failed", "termination_impact_required"),
        ("s3", "done", None),
        ("s4", "skipped", "illegal_session_transition"),
    ]
    assert "file:c1.py, file:c2.py" in plan.tally.items[0].message
    acknowledged = plan_bulk(
        store=store,
        action="terminate",
        **selection,
        impact_details="their edits are abandoned",
        clock=clock,
    )
    assert outcomes(acknowledged.tally.items)[:3] == [
        ("s1", "done", None),
        ("s2", "done", None),
        ("s3", "done", None),
    ]
    assert "agent 'agent-1' holds 2 active claim(s)" in acknowledged.tally.items[0].message


def test_the_plan_of_a_retry_says_what_would_be_replayed(store: Store, clock: FakeClock) -> None:
    seed(store, clock, "s1", "s2")
    run(store, clock, "pause", chosen(["s1"]), run_key="k1")
    plan = plan_bulk(store=store, action="pause", **chosen(["s1", "s2"]), run_key="k1")
    assert outcomes(plan.tally.items) == [("s1", "done", "replayed"), ("s2", "done", None)]
    other = plan_bulk(store=store, action="stop", **chosen(["s1", "s2"]), run_key="k1")
    assert outcomes(other.tally.items) == [
        ("s1", "failed", "idempotency_key_reuse"),
        ("s2", "done", None),
    ]


# -------------------------------------------------------------------------------------- the run


def test_a_run_applies_the_action_to_each_session_with_its_history(
    store: Store, clock: FakeClock
) -> None:
    seed(store, clock, "s1", "s2")
    seed(store, clock, "s3", status="paused")
    seed(store, clock, "s4", status="ended")
    outcome = run(store, clock, "pause", chosen(["s1", "s2", "s3", "s4", "nope"]))
    assert outcome.complete and outcome.total == 5 and outcome.run_key is None
    assert [item.to_json() for item in outcome.tally.items] == [
        {
            "session_id": "s1",
            "outcome": "done",
            "code": None,
            "message": "pause: now 'paused' (version 1)",
        },
        {
            "session_id": "s2",
            "outcome": "done",
            "code": None,
            "message": "pause: now 'paused' (version 1)",
        },
        {
            "session_id": "s3",
            "outcome": "skipped",
            "code": "illegal_session_transition",
            "message": "already paused",
        },
        {
            "session_id": "s4",
            "outcome": "skipped",
            "code": "illegal_session_transition",
            "message": "status 'ended': pause is allowed from an active state other than 'paused'",
        },
        {
            "session_id": "nope",
            "outcome": "failed",
            "code": "session_not_found",
            "message": "No session has the id 'nope'.",
        },
    ]
    assert outcome.to_json() == {
        "items": [item.to_json() for item in outcome.tally.items],
        "done": 2,
        "skipped": 2,
        "failed": 1,
    }
    for session_id in ("s1", "s2"):
        assert session_row(store, session_id)["status"] == "paused"
        assert [event for event, _ in history(store, session_id)] == ["registered", "paused"]
    for session_id in ("s3", "s4"):
        assert session_row(store, session_id)["version"] == 0
        assert [event for event, _ in history(store, session_id)] == ["registered"]
    paused = events_of(store, "session.paused")
    assert [(e["session_id"], e["actor"], e["previous_status"]) for e in paused] == [
        ("s1", ACTOR, "active"),
        ("s2", ACTOR, "active"),
    ]
    assert stored_keys(store) == {}  # no run key, no keys
    with store.read() as db:
        assert keyset.count_by_status(db=db) == {"paused": 3, "ended": 1}


def test_a_bulk_action_answers_sessions_waiting_for_a_human(store: Store, clock: FakeClock) -> None:
    seed(store, clock, "s1", "s2")
    with store.write() as db:
        for session_id in ("s1", "s2"):
            agent_writes.heartbeat(db=db, session_id=session_id, waiting="review", clock=clock)
    selection = matching(SessionFilter(waiting=True))
    assert plan_bulk(store=store, action="heartbeat", **selection).tally.done == 2
    outcome = run(store, clock, "heartbeat", selection, run_key="k")
    assert outcome.tally.done == 2
    for session_id in ("s1", "s2"):
        row = session_row(store, session_id)
        assert (row["waiting_reason"], row["waiting_since"]) == (None, None)
    replay = run(store, clock, "heartbeat", chosen(["s1"]), run_key="k")
    assert replay.tally.items[0].code == "replayed"


def test_a_filter_is_applied_a_page_at_a_time_even_as_its_rows_change(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bulk_run, "BATCH_SESSIONS", 4)
    seed(store, clock, *(f"s{n:02d}" for n in range(11)))
    seed(store, clock, "stopped-1", status="stopped")
    seed(store, clock, "other-agent", agent_id="agent-2")
    # Pausing takes each session out of the filter as it goes: the pages still follow the order.
    selection = matching(SessionFilter(statuses=("active",), agent_id="agent-1"))
    outcome = run(store, clock, "pause", selection)
    assert outcome.total == 11 and outcome.tally.done == 11
    assert [item.session_id for item in outcome.tally.items] == [f"s{n:02d}" for n in range(11)]
    assert session_row(store, "other-agent")["status"] == "active"
    assert session_row(store, "stopped-1")["status"] == "stopped"
    again = run(store, clock, "pause", selection)
    assert (again.total, again.tally.total) == (0, 0)


def test_each_session_gets_its_own_key_and_a_retry_applies_nothing_twice(
    store: Store, clock: FakeClock
) -> None:
    seed(store, clock, "s1", "s2", "s3")
    selection = chosen(["s1", "s2", "s3"])
    first = run(store, clock, "stop", selection, run_key="run-42")
    assert first.run_key == "run-42" and first.tally.done == 3
    assert stored_keys(store) == {
        session_key("run-42", session_id): ("stop", session_id) for session_id in ("s1", "s2", "s3")
    }
    before = snapshot(store)
    clock.advance(minutes=5)
    retry = run(store, clock, "stop", selection, run_key="run-42")
    assert outcomes(retry.tally.items) == [
        ("s1", "done", "replayed"),
        ("s2", "done", "replayed"),
        ("s3", "done", "replayed"),
    ]
    assert retry.tally.items[0].message == (
        "already done under this run's key (replayed, not applied again): 'stopped' (version 1)"
    )
    assert snapshot(store) == before  # no second history row, no second end time
    assert [event for event, _ in history(store, "s1")] == ["registered", "stopped"]


def test_a_retry_of_an_interrupted_run_applies_only_the_rest(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bulk_run, "BATCH_SESSIONS", 2)
    ids = [f"s{n}" for n in range(7)]
    seed(store, clock, *ids)
    asked = iter(range(100))
    cancelled = run(
        store,
        clock,
        "pause",
        chosen(ids),
        run_key="k",
        cancelled=lambda: next(asked) >= 3,
    )
    assert cancelled.cancelled and not cancelled.complete
    assert [item.session_id for item in cancelled.tally.items] == ["s0", "s1", "s2"]
    assert [session_row(store, s)["status"] for s in ids] == ["paused"] * 3 + ["active"] * 4
    retry = run(store, clock, "pause", chosen(ids), run_key="k")
    assert [item.code for item in retry.tally.items] == ["replayed"] * 3 + [None] * 4
    assert all([event for event, _ in history(store, s)] == ["registered", "paused"] for s in ids)


def test_a_run_key_used_for_another_action_fails_each_session_it_covered(
    store: Store, clock: FakeClock
) -> None:
    seed(store, clock, "s1", "s2")
    run(store, clock, "pause", chosen(["s1"]), run_key="k")
    outcome = run(store, clock, "stop", chosen(["s1", "s2"]), run_key="k")
    assert outcomes(outcome.tally.items) == [
        ("s1", "failed", "idempotency_key_reuse"),
        ("s2", "done", None),
    ]
    assert session_row(store, "s1")["status"] == "paused"


def test_a_session_changed_since_the_plan_is_judged_as_it_is_now(
    store: Store, clock: FakeClock
) -> None:
    seed(store, clock, "s1", "s2", "s3")
    selection = chosen(["s1", "s2", "s3"])
    plan = plan_bulk(store=store, action="pause", **selection)
    assert plan.tally.done == 3
    with store.write() as db:
        agent_writes.end(db=db, session_id="s1", clock=clock)  # no longer pausable
        agent_writes.heartbeat(db=db, session_id="s2", clock=clock)  # a new version, still active
        db.execute(text("DELETE FROM agent_sessions WHERE id = 's3'"))
    outcome = run(store, clock, "pause", selection)
    assert outcomes(outcome.tally.items) == [
        ("s1", "skipped", "illegal_session_transition"),
        ("s2", "done", None),
        ("s3", "failed", "session_not_found"),
    ]
    assert outcome.tally.items[0].message.startswith("status 'ended': pause is allowed")
    assert session_row(store, "s2")["status"] == "paused"


def test_resume_and_terminate_need_a_run_key_and_nothing_is_written_without(
    store: Store, clock: FakeClock
) -> None:
    seed(store, clock, "s1", status="paused")
    before = snapshot(store)
    for action in ("resume", "terminate"):
        with pytest.raises(IdempotencyKeyRequired) as raised:
            run(store, clock, action, chosen(["s1"]))
        assert raised.value.code == "idempotency_key_required"
    assert snapshot(store) == before
    resumed = run(store, clock, "resume", chosen(["s1"]), run_key="k")
    assert outcomes(resumed.tally.items) == [("s1", "done", None)]


def test_resume_in_bulk_keeps_each_sessions_own_checks(store: Store, clock: FakeClock) -> None:
    seed(store, clock, "s1", status="paused")
    seed(store, clock, "s2", status="stopped", agent_id="agent-2")
    with store.write() as db:
        db.execute(text("DELETE FROM agents WHERE id = 'agent-2'"))
    outcome = run(store, clock, "resume", chosen(["s1", "s2"]), run_key="k")
    assert outcomes(outcome.tally.items) == [
        ("s1", "done", None),
        ("s2", "failed", "agent_not_found"),
    ]
    assert session_row(store, "s2")["status"] == "stopped"


def test_terminate_in_bulk_needs_impact_details_where_claims_are_held(
    store: Store, clock: FakeClock
) -> None:
    seed(store, clock, "s1", agent_id="agent-1")
    seed(store, clock, "s2", agent_id="agent-2")
    add_claim(store, "c1", "agent-1")
    selection = chosen(["s1", "s2"])
    refused = run(store, clock, "terminate", selection, run_key="k1")
    assert outcomes(refused.tally.items) == [
        ("s1", "failed", "termination_impact_required"),
        ("s2", "done", None),
    ]
    assert session_row(store, "s1")["status"] == "active"
    assert [event for event, _ in history(store, "s1")] == ["registered"]
    done = run(store, clock, "terminate", selection, run_key="k2", impact_details="ok to drop")
    assert outcomes(done.tally.items) == [
        ("s1", "done", None),
        ("s2", "skipped", "illegal_session_transition"),
    ]
    event, payload = history(store, "s1")[-1]
    assert (event, payload["impact_details"], payload["active_claims"]) == (
        "terminated",
        "ok to drop",
        ["c1"],
    )
    with store.read() as db:  # terminating releases no claim
        assert db.execute(text("SELECT status FROM claims")).scalar() == "active"


def test_heartbeat_in_bulk_is_the_operators_heartbeat(store: Store, clock: FakeClock) -> None:
    seed(store, clock, "s1", "s2")
    seed(store, clock, "s3", status="ended")
    clock.advance(minutes=10)
    outcome = run(store, clock, "heartbeat", chosen(["s1", "s2", "s3"]))
    assert outcomes(outcome.tally.items) == [
        ("s1", "done", None),
        ("s2", "done", None),
        ("s3", "skipped", "illegal_session_transition"),
    ]
    assert session_row(store, "s1")["last_seen_at"] == format_ts(clock())
    assert session_row(store, "s1")["status"] == "active"
    beats = events_of(store, "session.heartbeat")
    assert [(e["session_id"], e["actor"]) for e in beats] == [("s1", ACTOR), ("s2", ACTOR)]


def test_progress_items_and_transactions(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bulk_run, "BATCH_SESSIONS", 3)
    ids = [f"s{n}" for n in range(8)]
    seed(store, clock, *ids)
    progress: list[tuple[int, int]] = []
    batches: list[list[str]] = []
    outcome = run(
        store,
        clock,
        "pause",
        chosen([*ids, "nope"]),
        progress=lambda done, total: progress.append((done, total)),
        on_items=lambda items: batches.append([item.session_id for item in items]),
        keep=0,
    )
    assert progress == [(0, 9), (3, 9), (6, 9), (9, 9)]
    assert batches == [["s0", "s1", "s2"], ["s3", "s4", "s5"], ["s6", "s7", "nope"]]
    assert outcome.tally.items == [] and outcome.tally.counts == {
        "done": 8,
        "skipped": 0,
        "failed": 1,
    }


@pytest.mark.parametrize("set_based", [True, False], ids=["set-based", "one-by-one"])
def test_a_refusal_after_a_write_undoes_that_session_alone(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, set_based: bool
) -> None:
    """A key recorded by another transaction between the look-up and the write (simulated: the
    look-up misses it) fails a statement after the session's row and history were written. Only
    that session's writes are undone: the batch runs again, a session at a time, each in a
    savepoint (one by one on SQLite, a savepoint a session from the start)."""
    monkeypatch.setattr(bulk_run, "SET_BASED", set_based)
    # One batch whatever the machine's load: the attempts counted below are the batch's.
    monkeypatch.setattr(bulk_run, "BATCH_SECONDS", 60.0)
    seed(store, clock, "s1", "s2", "s3")
    with store.write() as db:
        db.execute(
            insert(IdempotencyKey.__table__).values(  # type: ignore[attr-defined]
                key=session_key("k", "s2"),
                action="pause",
                session_id="s2",
                outcome="{}",
                created_at="2026-01-01T00:00:00Z",
            )
        )
    look_up, look_up_many = lifecycle.replay, lifecycle_many.find_keys
    monkeypatch.setattr(
        lifecycle,
        "replay",
        lambda db, key, action, session_id: (
            None if session_id == "s2" else look_up(db, key, action, session_id)
        ),
    )
    monkeypatch.setattr(
        lifecycle_many,
        "find_keys",
        lambda db, keys: [row for row in look_up_many(db, keys) if row.session_id != "s2"],
    )
    attempts: list[bool] = []
    write = bulk_run._run_batch

    def watched_write(*arguments: Any, careful: bool) -> Any:
        attempts.append(careful)
        return write(*arguments, careful=careful)

    monkeypatch.setattr(bulk_run, "_run_batch", watched_write)
    outcome = run(store, clock, "pause", chosen(["s1", "s2", "s3"]), run_key="k")
    # The first attempt's transaction failed: it ran again, a savepoint a session.
    again = set_based or store.dialect == "postgresql"
    assert attempts == ([False, True] if again else [False])
    assert outcomes(outcome.tally.items) == [
        ("s1", "done", None),
        ("s2", "failed", "idempotency_key_reuse"),
        ("s3", "done", None),
    ]
    assert session_row(store, "s2")["status"] == "active"
    assert session_row(store, "s2")["version"] == 0
    assert [event for event, _ in history(store, "s2")] == ["registered"]
    assert [e["session_id"] for e in events_of(store, "session.paused")] == ["s1", "s3"]
    assert [session_row(store, s)["status"] for s in ("s1", "s3")] == ["paused", "paused"]


def test_a_transaction_that_cannot_commit_fails_its_sessions_and_stops_the_run(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bulk_run, "BATCH_SESSIONS", 2)
    ids = [f"s{n}" for n in range(6)]
    seed(store, clock, *ids)
    write = Store.write
    opened = iter(range(100))

    def failing_second_write(self: Store, **options: Any) -> Any:
        if next(opened) == 1:
            return UnavailableAtCommit(write(self, **options))
        return write(self, **options)

    monkeypatch.setattr(Store, "write", failing_second_write)
    outcome = run(store, clock, "pause", chosen(ids))
    assert outcome.error is not None and outcome.error.code == "database_unavailable"
    assert not outcome.complete
    assert outcomes(outcome.tally.items) == [
        ("s0", "done", None),
        ("s1", "done", None),
        ("s2", "failed", "database_unavailable"),
        ("s3", "failed", "database_unavailable"),
    ]
    monkeypatch.setattr(Store, "write", write)
    assert [session_row(store, s)["status"] for s in ids] == ["paused"] * 2 + ["active"] * 4


def test_messages_are_redacted(store: Store, clock: FakeClock) -> None:
    seed(store, clock, "s1", status="failed token=abc123")
    outcome = run(store, clock, "pause", chosen(["s1"]))
    (item,) = outcome.tally.items
    assert "abc123" not in item.message and "token=[REDACTED]" in item.message
    plan = plan_bulk(store=store, action="pause", **chosen(["s1"]))
    assert "abc123" not in plan.tally.items[0].message


def test_batches_commit_as_they_go(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a batch did is committed before the next begins: another connection sees it."""
    monkeypatch.setattr(bulk_run, "BATCH_SESSIONS", 2)
    ids = [f"s{n}" for n in range(5)]
    seed(store, clock, *ids)
    seen: list[list[str]] = []

    def look(_done: int, _total: int) -> None:
        with store.read() as db:
            rows = db.execute(text("SELECT id FROM agent_sessions WHERE status = 'paused'"))
            seen.append(sorted(row.id for row in rows))

    run(store, clock, "pause", chosen(ids), progress=look)
    assert seen == [[], ["s0", "s1"], ["s0", "s1", "s2", "s3"], ids]


def test_unknown_actions_are_refused(store: Store) -> None:
    with pytest.raises(ValueError):
        plan_bulk(store=store, action="explode", **chosen(["s1"]))
    with pytest.raises(ValueError):
        run_bulk(store=store, action="explode", **chosen(["s1"]), actor="a")


# ------------------------------------------------------------ the set-based batch, row for row


def everything(store: Store) -> tuple[Any, ...]:
    """Every table a bulk action writes, the counts by status included."""
    with store.read() as db:
        counts = tuple(
            tuple(row) for row in db.execute(text("SELECT * FROM session_status_counts ORDER BY 1"))
        )
    return (*snapshot(store), counts)


def fleet(store: Store, clock: FakeClock, action: str) -> list[str]:
    """Sessions of every kind a bulk action meets, and run key "k" already used: for this
    action on a1 (a replay), for another action on a3 (a reuse). The ids to act on."""
    seed(store, clock, "a1", "a2", "a3", "a4")
    seed(store, clock, "p1", status="paused")
    seed(store, clock, "s1", status="stopped")
    seed(store, clock, "e1", status="ended")
    seed(store, clock, "r1", status="running", agent_id="agent-2", run_id="run-2")
    with store.write() as db:
        agent_writes.heartbeat(db=db, session_id="a2", waiting="a review", clock=clock)
    other = "pause" if action != "pause" else "stop"
    run(store, clock, other, chosen(["a3"]), run_key="k")
    run(store, clock, action, chosen(["a1"]), run_key="k")
    clock.advance(minutes=5)
    return ["a1", "a2", "a3", "a4", "p1", "s1", "e1", "r1", "ghost"]


@pytest.mark.parametrize("run_key", ["k", None])
@pytest.mark.parametrize("action", sorted(lifecycle_many.PLAIN_ACTIONS))
def test_a_set_based_batch_writes_exactly_what_one_session_at_a_time_does(
    store: Store,
    empty_store: Store,
    monkeypatch: pytest.MonkeyPatch,
    action: str,
    run_key: str | None,
) -> None:
    """Twin stores, the same sessions, the same clock: the bulk action applied a batch at a time
    (store.writes.lifecycle_many.apply_many) and a session at a time leave the same rows in every
    table (history, runs' events, keys and counts by status included) and report the same items."""
    seen = []
    for target, set_based in ((store, True), (empty_store, False)):
        monkeypatch.setattr(bulk_run, "SET_BASED", set_based)
        clock = FakeClock()
        ids = fleet(target, clock, action)
        outcome = run(target, clock, action, chosen(ids), run_key=run_key)
        seen.append(([item.to_json() for item in outcome.tally.items], everything(target)))
    assert seen[0] == seen[1]
    items = {item["session_id"]: (item["outcome"], item["code"]) for item in seen[0][0]}
    assert items["ghost"] == ("failed", "session_not_found")
    assert items["e1"] == ("skipped", "illegal_session_transition")
    assert items["a4"] == ("done", None)
    if run_key is not None:
        assert items["a1"] == ("done", "replayed")
        assert items["a3"] == ("failed", "idempotency_key_reuse")


def test_a_row_changed_between_the_batchs_read_and_its_update_is_applied_alone(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer's heartbeat lands between the batch's read of the rows and its update
    (simulated on the batch's own connection): that session's compare-and-swap misses, and it
    is applied alone, judged as it is then; the others are applied with the batch."""
    seed(store, clock, "s1", "s2", "s3")
    held: dict[str, Any] = {}
    find = lifecycle_many.find_keys

    def finding(db: Any, keys: list[str]) -> Any:
        held["db"] = db
        return find(db, keys)

    class MovingClock(FakeClock):
        def __call__(self) -> Any:
            if "db" in held and not held.get("moved"):
                held["moved"] = True
                agent_writes.heartbeat(db=held["db"], session_id="s2", clock=clock)
            return super().__call__()

    monkeypatch.setattr(lifecycle_many, "find_keys", finding)
    outcome = run(store, MovingClock(clock.now), "pause", chosen(["s1", "s2", "s3"]), run_key="k")
    assert held.get("moved")
    assert outcomes(outcome.tally.items) == [
        ("s1", "done", None),
        ("s2", "done", None),
        ("s3", "done", None),
    ]
    assert session_row(store, "s2")["version"] == 2  # the agent's heartbeat, then the pause
    assert [event for event, _ in history(store, "s2")] == ["registered", "heartbeat", "paused"]
    assert [e["session_id"] for e in events_of(store, "session.paused")] == ["s1", "s3", "s2"]
