"""Lifecycle actions by a human operator (``docs/reference/roundtable.md#statuses-and-lifecycle``):
the actions table, actor, idempotency keys, compare-and-swap, the resume branch check, the terminate
impact rule, history in one transaction, and the error codes. Every store test runs on SQLite and on
PostgreSQL.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, select, text

from roundtable_console.store import errors
from roundtable_console.store.clock import format_ts
from roundtable_console.store.db.database import Store, open_store
from roundtable_console.store.db.models import Agent, Claim, Proposal, Task, Workspace
from roundtable_console.store.errors import (
    AgentNotFound,
    AgentUnavailable,
    IdempotencyKeyRequired,
    IdempotencyKeyReuse,
    IllegalSessionTransition,
    InvalidSessionStatus,
    SessionBranchConflict,
    SessionNotFound,
    SessionTransitionConflict,
    StoreError,
    TerminationImpactRequired,
)
from roundtable_console.store.rules import ACTIVE_STATES
from roundtable_console.store.writes import agent_writes, lifecycle, lifecycle_outcomes
from roundtable_console.store.writes.lifecycle_outcomes import NOT_DONE_BY_TERMINATE, ActionOutcome
from tests.conftest import FakeClock
from tests.helpers import DESIGN_ERROR_CODES, history, session_row

ACTOR = "operator-ann"
TERMINAL_STATES = ("stopped", "ended", "terminated", "failed", "Active", "PAUSED", "idle")
EVENT_OF = {
    "heartbeat": "heartbeat",
    "pause": "paused",
    "stop": "stopped",
    "resume": "resuming",
    "terminate": "terminated",
}
ACTIONS = ("heartbeat", "pause", "stop", "resume", "terminate")
ALLOWED_FROM = {
    "heartbeat": set(ACTIVE_STATES),
    "pause": set(ACTIVE_STATES) - {"paused"},
    "stop": set(ACTIVE_STATES),
    "resume": {"paused", "stopped", "ended"},  # ours: an agent that exited is resumed too
    "terminate": set(ACTIVE_STATES),
}
RESULT_STATUS = {
    "pause": "paused",
    "stop": "stopped",
    "resume": "resuming",
    "terminate": "terminated",
}


# --- helpers ----------------------------------------------------------------------------------


def startable(action: str) -> str:
    """A status each action is allowed from."""
    return "paused" if action == "resume" else "active"


def seed(
    store: Store,
    clock: FakeClock,
    session_id: str = "s1",
    *,
    status: str = "active",
    agent_id: str = "agent-1",
    metadata: dict[str, Any] | None = None,
    working_directory: str = "/w",
    with_agent: bool = True,
    enabled: bool = True,
) -> None:
    with store.write() as db:
        agent_writes.register(
            db=db,
            session_id=session_id,
            agent_id=agent_id,
            run_id="run-1",
            adapter="codex",
            working_directory=working_directory,
            status=status,
            metadata=metadata,
            clock=clock,
        )
        exists = db.execute(select(_table(Agent).c.id).where(_table(Agent).c.id == agent_id))
        if with_agent and exists.first() is None:
            db.execute(
                insert(_table(Agent)).values(
                    id=agent_id,
                    role="coder",
                    name=agent_id,
                    adapter="codex",
                    is_enabled=int(enabled),
                )
            )


def _table(model: Any) -> Any:
    return model.__table__


def add_claim(
    store: Store,
    claim_id: str,
    *,
    agent_id: str = "agent-1",
    status: str = "active",
    expires_at: str = "2030-01-01T00:00:00Z",
) -> None:
    with store.write() as db:
        db.execute(
            insert(_table(Claim)).values(
                id=claim_id,
                resource_id=f"file:{claim_id}.py",
                agent_id=agent_id,
                task_id="task-1",
                claim_type="edit",
                status=status,
                expires_at=expires_at,
            )
        )


def lifecycle_events(store: Store) -> list[tuple[str, str, str, dict[str, Any]]]:
    with store.read() as db:
        rows = db.execute(
            text("SELECT run_id, type, actor_id, payload_json FROM events ORDER BY id")
        ).all()
    return [(run, kind, actor, json.loads(payload)) for run, kind, actor, payload in rows]


def key_count(store: Store) -> int:
    with store.read() as db:
        return int(db.execute(text("SELECT COUNT(*) FROM idempotency_keys")).scalar_one())


def act(
    store: Store,
    clock: FakeClock,
    action: str,
    session_id: str = "s1",
    *,
    key: str | None = "use-default",
    **extra: Any,
) -> ActionOutcome:
    """Run one action in its own write transaction, with a fresh key where one is needed."""
    if key == "use-default":
        key = uuid.uuid4().hex if action in ("resume", "terminate") else None
    function: Callable[..., ActionOutcome] = {
        "heartbeat": lifecycle.operator_heartbeat,
        "pause": lifecycle.pause,
        "stop": lifecycle.stop,
        "resume": lifecycle.resume,
        "terminate": lifecycle.terminate,
    }[action]
    with store.write() as db:
        return function(
            db=db, session_id=session_id, actor=ACTOR, idempotency_key=key, clock=clock, **extra
        )


def snapshot(store: Store) -> tuple[Any, ...]:
    """Everything an action may touch, to prove a refusal wrote nothing."""
    with store.read() as db:
        tables = ("agent_sessions", "agent_session_events", "events", "idempotency_keys", "claims")
        return tuple(
            tuple(tuple(r) for r in db.execute(text(f"SELECT * FROM {name} ORDER BY 1")).all())
            for name in tables
        )


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        env={"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo), "PATH": "/usr/bin:/bin"},
    )


def make_repo(path: Path, branch: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", branch)
    return path


def add_workspace(store: Store, workspace_id: str, root: Path | str) -> None:
    with store.write() as db:
        db.execute(
            insert(_table(Workspace)).values(
                id=workspace_id,
                name=workspace_id,
                root_path=str(root),
                created_at="2026-01-01T00:00:00Z",
                updated_at="2026-01-01T00:00:00Z",
            )
        )


# --- the actions table ------------------------------------------------------------------------


def test_each_action_from_each_state(store: Store, clock: FakeClock):
    """Every action from every source state: allowed ones apply the table's result, the others
    are refused and write nothing."""
    states = (*ACTIVE_STATES, *TERMINAL_STATES)
    for action in ACTIONS:
        for status in states:
            seed(store, clock, f"{action}-{status}", status=status)
    clock.advance(seconds=90)
    now = format_ts(clock())
    for action in ACTIONS:
        for status in states:
            check_transition(store, clock, action, status, now)
    # Exactly one session.<event> row per success, for the session's run, by the actor.
    runs = lifecycle_events(store)
    expected = [
        (f"session.{EVENT_OF[action]}", f"{action}-{status}", status)
        for action in ACTIONS
        for status in states
        if status in ALLOWED_FROM[action]
    ]
    assert [(kind, p["session_id"], p["previous_status"]) for _, kind, _, p in runs] == expected
    assert {run for run, _, _, _ in runs} == {"run-1"}
    assert {actor for _, _, actor, _ in runs} == {ACTOR}


def check_transition(store: Store, clock: FakeClock, action: str, status: str, now: str) -> None:
    session_id = f"{action}-{status}"
    before = session_row(store, session_id)
    if status not in ALLOWED_FROM[action]:
        with pytest.raises(IllegalSessionTransition) as raised:
            act(store, clock, action, session_id)
        assert raised.value.code == "illegal_session_transition"
        assert repr(status) in raised.value.message and action in raised.value.message
        assert session_row(store, session_id) == before, session_id
        assert [e for e, _ in history(store, session_id)] == ["registered"]
        return
    outcome = act(store, clock, action, session_id)
    after = session_row(store, session_id)
    expected_status = RESULT_STATUS.get(action, status)
    assert after["status"] == expected_status == outcome.session.status, session_id
    # Pause changes only the status; every other action refreshes last_seen_at.
    assert after["last_seen_at"] == (before["last_seen_at"] if action == "pause" else now)
    assert after["version"] == before["version"] + 1
    assert after["started_at"] == before["started_at"]
    if action in ("stop", "terminate"):
        assert after["ended_at"] == now
    else:
        assert after["ended_at"] == before["ended_at"]
    event, payload = history(store, session_id)[-1]
    assert event == EVENT_OF[action]
    assert payload["status"] == expected_status
    assert payload["previous_status"] == status
    assert payload["actor"] == ACTOR


def test_stop_sets_end_and_last_seen_to_now(store: Store, clock: FakeClock):
    seed(store, clock, status="running")
    clock.advance(seconds=5)
    outcome = act(store, clock, "stop")
    now = format_ts(clock())
    stored = session_row(store)
    assert (stored["status"], stored["ended_at"], stored["last_seen_at"]) == ("stopped", now, now)
    assert outcome.session.ended_at == now
    _, payload = history(store)[-1]
    assert payload["ended_at"] == now and payload["last_seen_at"] == now


def test_resume_clears_ended_at(store: Store, clock: FakeClock):
    seed(store, clock)
    act(store, clock, "stop")
    assert session_row(store)["ended_at"] is not None
    clock.advance(seconds=5)
    outcome = act(store, clock, "resume")
    stored = session_row(store)
    assert stored["status"] == "resuming" and stored["ended_at"] is None
    assert stored["last_seen_at"] == format_ts(clock())
    assert outcome.session.ended_at is None
    assert history(store)[-1][1]["ended_at"] is None


def test_operator_heartbeat_may_set_an_active_status(store: Store, clock: FakeClock):
    seed(store, clock, status="starting")
    clock.advance(seconds=1)
    with store.write() as db:
        outcome = lifecycle.operator_heartbeat(
            db=db, session_id="s1", actor=ACTOR, status=" running ", clock=clock
        )
    assert outcome.session.status == "running" == session_row(store)["status"]
    assert history(store)[-1][1]["previous_status"] == "starting"


def test_operator_heartbeat_refuses_a_status_outside_the_active_states(
    store: Store, clock: FakeClock
):
    seed(store, clock)
    before = snapshot(store)
    for bad in ("ended", "stopped", "Active", "x" * 65, "bad\x1b"):
        with pytest.raises(InvalidSessionStatus) as raised, store.write() as db:
            lifecycle.operator_heartbeat(
                db=db, session_id="s1", actor=ACTOR, status=bad, clock=clock
            )
        assert raised.value.code == "invalid_session_status", bad
    assert snapshot(store) == before


def test_an_unknown_session_is_not_found(store: Store, clock: FakeClock):
    seed(store, clock)
    before = snapshot(store)
    for action in ACTIONS:
        with pytest.raises(SessionNotFound) as raised:
            act(store, clock, action, "ghost")
        assert raised.value.code == "session_not_found"
        assert "ghost" in raised.value.message
    assert snapshot(store) == before


# --- resume's agent rule ----------------------------------------------------------------------


def test_resume_needs_the_agent_in_the_store(store: Store, clock: FakeClock):
    seed(store, clock, status="paused", with_agent=False)
    before = snapshot(store)
    with pytest.raises(AgentNotFound) as raised:
        act(store, clock, "resume")
    assert raised.value.code == "agent_not_found"
    assert "agent-1" in raised.value.message
    assert snapshot(store) == before


def test_an_agent_that_exited_is_resumed_by_its_hooks_session_without_an_agents_row(
    store: Store, clock: FakeClock
):
    """Ours: a session its agent's own hooks registered (Claude Code that exited: ``ended``)
    resumes with no row in the reference's agents table; its agent disabled there still
    refuses; terminated stays final."""
    seed(store, clock, "hooked", status="ended", with_agent=False,
         metadata={"hooks": "claude-code"})  # fmt: skip
    resumed = act(store, clock, "resume", "hooked")
    assert resumed.session.status == "resuming" and resumed.session.ended_at is None
    seed(store, clock, "hooked-off", status="ended", agent_id="off", enabled=False,
         metadata={"hooks": "claude-code"})  # fmt: skip
    with pytest.raises(AgentUnavailable):
        act(store, clock, "resume", "hooked-off")
    seed(store, clock, "hooked-final", status="terminated", with_agent=False,
         metadata={"hooks": "claude-code"})  # fmt: skip
    with pytest.raises(IllegalSessionTransition):
        act(store, clock, "resume", "hooked-final")
    # A session registered otherwise still needs its agent in the store.
    seed(store, clock, "plain", status="ended", agent_id="nobody", with_agent=False)
    with pytest.raises(AgentNotFound):
        act(store, clock, "resume", "plain")


def test_resume_needs_an_enabled_agent(store: Store, clock: FakeClock):
    seed(store, clock, status="stopped", enabled=False)
    before = snapshot(store)
    with pytest.raises(AgentUnavailable) as raised:
        act(store, clock, "resume")
    assert raised.value.code == "agent_unavailable"
    assert "disabled" in raised.value.message
    assert snapshot(store) == before
    with store.write() as db:
        db.execute(text("UPDATE agents SET is_enabled = 1"))
    assert act(store, clock, "resume").session.status == "resuming"


# --- actor ------------------------------------------------------------------------------------


def test_the_actor_is_recorded_on_every_action(store: Store, clock: FakeClock):
    for action in ACTIONS:
        seed(store, clock, action, status=startable(action))
        outcome = act(store, clock, action, action)
        assert outcome.action == action
        event, payload = history(store, action)[-1]
        assert event == EVENT_OF[action] and payload["actor"] == ACTOR
        run, kind, actor, run_payload = lifecycle_events(store)[-1]
        assert (run, kind, actor) == ("run-1", f"session.{EVENT_OF[action]}", ACTOR)
        assert run_payload["session_id"] == action and run_payload["actor"] == ACTOR
    assert len(lifecycle_events(store)) == len(ACTIONS)


def test_agent_operations_write_no_lifecycle_event(store: Store, clock: FakeClock):
    seed(store, clock)
    with store.write() as db:
        agent_writes.heartbeat(db=db, session_id="s1", clock=clock)
        agent_writes.end(db=db, session_id="s1", clock=clock)
    assert lifecycle_events(store) == []


# --- idempotency keys -------------------------------------------------------------------------


def test_resume_and_terminate_need_an_idempotency_key(store: Store, clock: FakeClock):
    seed(store, clock, status="paused")
    before = snapshot(store)
    for action, missing in itertools.product(("resume", "terminate"), (None, "", "   ")):
        with pytest.raises(IdempotencyKeyRequired) as raised:
            act(store, clock, action, key=missing)
        assert raised.value.code == "idempotency_key_required"
        assert "idempotency key" in raised.value.message
    assert snapshot(store) == before


def test_the_same_key_returns_the_first_outcome_without_applying_again(
    store: Store, clock: FakeClock
):
    for action in ACTIONS:
        seed(store, clock, action, status=startable(action))
        first = act(store, clock, action, action, key=f"key-{action}")
        assert not first.replayed
        # Move the session on, so applying again would be visible (or refused).
        clock.advance(seconds=30)
        with store.write() as db:
            agent_writes.heartbeat(db=db, session_id=action, status="running", clock=clock)
        before = snapshot(store)
        again = act(store, clock, action, action, key=f" key-{action} ")
        assert again.replayed, action
        assert again.action == action
        assert again.session.to_json() == first.session.to_json()
        assert again.notes == first.notes and again.claims == first.claims
        assert snapshot(store) == before
        assert session_row(store, action)["status"] == "running"


def test_a_key_survives_reopening_the_store(store: Store, store_url: str, clock: FakeClock):
    seed(store, clock, status="paused")
    first = act(store, clock, "resume", key="durable")
    store.dispose()
    reopened = open_store(store_url)
    try:
        with reopened.write() as db:
            again = lifecycle.resume(
                db=db, session_id="s1", actor="someone", idempotency_key="durable", clock=clock
            )
    finally:
        reopened.dispose()
    assert again.replayed and again.session.to_json() == first.session.to_json()
    assert key_count(store) == 1


def test_a_key_used_for_another_action_or_session_is_refused(store: Store, clock: FakeClock):
    seed(store, clock, "s1", status="paused")
    seed(store, clock, "s2", status="paused")
    act(store, clock, "resume", "s1", key="k")
    before = snapshot(store)
    for action, session_id in (("terminate", "s1"), ("resume", "s2"), ("pause", "s1")):
        with pytest.raises(IdempotencyKeyReuse) as raised:
            act(store, clock, action, session_id, key="k")
        assert raised.value.code == "idempotency_key_reuse"
        assert "resume" in raised.value.message and "'s1'" in raised.value.message
    assert snapshot(store) == before


def test_a_refused_action_does_not_consume_its_key(store: Store, clock: FakeClock):
    seed(store, clock)
    add_claim(store, "c1")
    with pytest.raises(TerminationImpactRequired):
        act(store, clock, "terminate", key="k", impact_details="  ")
    assert key_count(store) == 0
    outcome = act(store, clock, "terminate", key="k", impact_details="I accept.")
    assert not outcome.replayed and session_row(store)["status"] == "terminated"
    assert key_count(store) == 1


def test_a_replay_of_a_terminate_keeps_its_claims_and_notes(store: Store, clock: FakeClock):
    seed(store, clock)
    add_claim(store, "c1")
    first = act(store, clock, "terminate", key="t", impact_details="fine")
    again = act(store, clock, "terminate", key="t")  # no details needed for a replay
    assert again.replayed
    assert again.claims == first.claims and [c["id"] for c in again.claims] == ["c1"]
    assert NOT_DONE_BY_TERMINATE in again.notes


# --- no lost updates --------------------------------------------------------------------------


def test_a_stale_expected_version_is_a_conflict_and_writes_nothing(store: Store, clock: FakeClock):
    for action in ACTIONS:
        seed(store, clock, action, status=startable(action))
        seen = session_row(store, action)["version"]
        with store.write() as db:  # an agent writes in between
            agent_writes.heartbeat(db=db, session_id=action, clock=clock)
        before = snapshot(store)
        with pytest.raises(SessionTransitionConflict) as raised:
            act(store, clock, action, action, expected_version=seen)
        assert raised.value.code == "session_transition_conflict"
        current = raised.value.details["current"]
        assert current["version"] == seen + 1
        assert current["status"] == session_row(store, action)["status"]
        assert "changed since it was read" in raised.value.message
        assert snapshot(store) == before
        outcome = act(store, clock, action, action, expected_version=seen + 1)
        assert outcome.session.version == seen + 2


def test_the_update_itself_is_a_compare_and_swap(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
):
    """A write that lands between the read and the update is not overwritten."""
    seed(store, clock)
    real_get = lifecycle.get_session

    def read_then_someone_writes(*, db: Any, session_id: str) -> Any:
        seen = real_get(db=db, session_id=session_id)
        db.execute(
            text(
                "UPDATE agent_sessions SET status = 'running', version = version + 1 WHERE id = :i"
            ),
            {"i": session_id},
        )
        monkeypatch.setattr(lifecycle, "get_session", real_get)
        return seen

    monkeypatch.setattr(lifecycle, "get_session", read_then_someone_writes)
    with pytest.raises(SessionTransitionConflict) as raised, store.write() as db:
        lifecycle.pause(db=db, session_id="s1", actor=ACTOR, clock=clock)
    assert raised.value.details["current"]["status"] == "running"
    assert [e for e, _ in history(store)] == ["registered"]
    assert lifecycle_events(store) == []


def test_an_illegal_transition_is_checked_after_the_version(store: Store, clock: FakeClock):
    seed(store, clock, status="ended")
    with pytest.raises(SessionTransitionConflict):
        act(store, clock, "pause", expected_version=7)
    with pytest.raises(IllegalSessionTransition):
        act(store, clock, "pause", expected_version=0)


# --- the branch check -------------------------------------------------------------------------


def seed_on_branch(
    store: Store, clock: FakeClock, root: Path | str, *, branch: str = "main", column: bool = False
) -> None:
    add_workspace(store, "ws-1", root)
    metadata: dict[str, Any] = {"branch": branch}
    if not column:
        metadata["workspace_id"] = "ws-1"
    seed(store, clock, status="paused", metadata=metadata)
    if column:
        with store.write() as db:
            db.execute(text("UPDATE agent_sessions SET workspace_id = 'ws-1'"))


@pytest.mark.parametrize("column", [False, True])
def test_resume_on_the_saved_branch(store: Store, clock: FakeClock, tmp_path: Path, column: bool):
    repo = make_repo(tmp_path / "repo", "main")
    seed_on_branch(store, clock, repo, column=column)
    outcome = act(store, clock, "resume")
    assert outcome.session.status == "resuming" and outcome.notes == ()
    payload = history(store)[-1][1]
    assert payload["branch_checked"] is True and payload["branch"] == "main"


def test_resume_on_another_branch_is_refused(store: Store, clock: FakeClock, tmp_path: Path):
    repo = make_repo(tmp_path / "repo", "feature/x")
    seed_on_branch(store, clock, repo)
    before = snapshot(store)
    with pytest.raises(SessionBranchConflict) as raised:
        act(store, clock, "resume")
    assert raised.value.code == "session_branch_conflict"
    assert "'feature/x'" in raised.value.message and "'main'" in raised.value.message
    assert snapshot(store) == before
    git(repo, "checkout", "-q", "-b", "main")
    assert act(store, clock, "resume").session.status == "resuming"


def test_resume_uses_the_working_directory_without_a_workspace_row(
    store: Store, clock: FakeClock, tmp_path: Path
):
    repo = make_repo(tmp_path / "repo", "other")
    seed(store, clock, status="paused", metadata={"branch": "main"}, working_directory=str(repo))
    with pytest.raises(SessionBranchConflict):
        act(store, clock, "resume")


def test_resume_where_the_root_is_not_a_repository_is_noted(
    store: Store, clock: FakeClock, tmp_path: Path
):
    plain = tmp_path / "plain"
    plain.mkdir()
    seed_on_branch(store, clock, plain)
    outcome = act(store, clock, "resume")
    assert outcome.session.status == "resuming"
    [note] = outcome.notes
    assert "'main'" in note and "not checked" in note and "not a git repository" in note
    payload = history(store)[-1][1]
    assert payload["branch_checked"] is False


def test_resume_where_the_root_does_not_exist_is_noted(
    store: Store, clock: FakeClock, tmp_path: Path
):
    seed_on_branch(store, clock, tmp_path / "gone")
    outcome = act(store, clock, "resume")
    assert outcome.session.status == "resuming"
    assert "not a directory" in outcome.notes[0]


@pytest.mark.parametrize("breakage", ["empty-git-dir", "dangling-gitdir-file", "garbage-head"])
def test_resume_in_a_broken_repository_is_refused(
    store: Store, clock: FakeClock, tmp_path: Path, breakage: str
):
    repo = tmp_path / "broken"
    if breakage == "empty-git-dir":
        (repo / ".git").mkdir(parents=True)
    elif breakage == "dangling-gitdir-file":
        repo.mkdir()
        (repo / ".git").write_text(f"gitdir: {tmp_path / 'nowhere'}\n")
    else:
        make_repo(repo, "main")
        (repo / ".git" / "HEAD").write_text("not a ref at all\n")
    seed_on_branch(store, clock, repo)
    before = snapshot(store)
    with pytest.raises(SessionBranchConflict) as raised:
        act(store, clock, "resume")
    assert "could not be inspected" in raised.value.message
    assert "'main'" in raised.value.message
    assert snapshot(store) == before


def test_resume_with_a_detached_head_is_refused(store: Store, clock: FakeClock, tmp_path: Path):
    repo = make_repo(tmp_path / "repo", "main")
    git(
        repo,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "x",
    )
    git(repo, "checkout", "-q", "--detach")
    seed_on_branch(store, clock, repo)
    with pytest.raises(SessionBranchConflict):
        act(store, clock, "resume")


def test_resume_without_a_saved_branch_does_not_look(
    store: Store, clock: FakeClock, tmp_path: Path
):
    repo = make_repo(tmp_path / "repo", "other")
    add_workspace(store, "ws-1", repo)
    seed(store, clock, status="paused", metadata={"workspace_id": "ws-1"})
    outcome = act(store, clock, "resume")
    assert outcome.notes == ()
    assert "branch_checked" not in history(store)[-1][1]


def test_the_branch_check_comes_after_the_agent_check(
    store: Store, clock: FakeClock, tmp_path: Path
):
    repo = make_repo(tmp_path / "repo", "other")
    add_workspace(store, "ws-1", repo)
    seed(
        store,
        clock,
        status="paused",
        metadata={"workspace_id": "ws-1", "branch": "main"},
        with_agent=False,
    )
    with pytest.raises(AgentNotFound):
        act(store, clock, "resume")


# --- terminate's impact rule ------------------------------------------------------------------


def seed_other_rows(store: Store) -> None:
    with store.write() as db:
        db.execute(
            insert(_table(Task)).values(
                id="task-1",
                title="T",
                body_md="B",
                status="in_progress",
                assigned_agent_id="agent-1",
            )
        )
        db.execute(
            insert(_table(Proposal)).values(
                id="prop-1",
                task_id="task-1",
                agent_id="agent-1",
                title="P",
                summary_md="S",
                patch_path="/p.diff",
            )
        )


def table_rows(store: Store, table: str) -> list[tuple[Any, ...]]:
    with store.read() as db:
        return [tuple(r) for r in db.execute(text(f"SELECT * FROM {table} ORDER BY id")).all()]


def test_terminate_with_claims_refuses_blank_details(store: Store, clock: FakeClock):
    seed(store, clock)
    add_claim(store, "c2")
    add_claim(store, "c1")
    before = snapshot(store)
    for blank in (None, "", "  \n\t "):
        with pytest.raises(TerminationImpactRequired) as raised:
            act(store, clock, "terminate", impact_details=blank)
        assert raised.value.code == "termination_impact_required"
        message = raised.value.message
        assert "2 active claim" in message and "file:c1.py" in message and "file:c2.py" in message
    assert snapshot(store) == before


def test_terminate_with_claims_keeps_the_details_and_releases_nothing(
    store: Store, clock: FakeClock
):
    seed(store, clock, status="running")
    add_claim(store, "c1")
    add_claim(store, "c0", expires_at="2020-01-01 00:00:00")  # expired, still held
    add_claim(store, "released", status="released")
    add_claim(store, "theirs", agent_id="agent-2")
    seed_other_rows(store)
    claims_before = table_rows(store, "claims")
    tasks_before, proposals_before = table_rows(store, "tasks"), table_rows(store, "proposals")
    clock.advance(seconds=3)
    outcome = act(store, clock, "terminate", impact_details="  Reassign c1 to agent-2.  ")
    now = format_ts(clock())
    stored = session_row(store)
    assert (stored["status"], stored["ended_at"], stored["last_seen_at"]) == (
        "terminated",
        now,
        now,
    )
    event, payload = history(store)[-1]
    assert event == "terminated"
    assert payload["impact_details"] == "Reassign c1 to agent-2."
    assert payload["active_claims"] == ["c0", "c1"]
    [(_, kind, _, run_payload)] = lifecycle_events(store)
    assert kind == "session.terminated"
    assert run_payload["impact_details"] == "Reassign c1 to agent-2."
    assert [(c["id"], c["expired"]) for c in outcome.claims] == [("c0", True), ("c1", False)]
    assert NOT_DONE_BY_TERMINATE in outcome.notes
    assert "releases no claim" in NOT_DONE_BY_TERMINATE
    assert table_rows(store, "claims") == claims_before
    assert table_rows(store, "tasks") == tasks_before
    assert table_rows(store, "proposals") == proposals_before


def test_terminate_without_active_claims_needs_no_details(store: Store, clock: FakeClock):
    seed(store, clock)
    add_claim(store, "done", status="released")
    add_claim(store, "theirs", agent_id="agent-2")
    outcome = act(store, clock, "terminate", impact_details="   ")
    assert outcome.session.status == "terminated"
    payload = history(store)[-1][1]
    assert payload["impact_details"] is None and payload["active_claims"] == []
    assert outcome.claims == ()


def test_expired_active_claims_still_need_details(store: Store, clock: FakeClock):
    seed(store, clock)
    add_claim(store, "old", expires_at="2026-09-17T17:00:00Z")
    with pytest.raises(TerminationImpactRequired):
        act(store, clock, "terminate")


def test_termination_impact_lists_live_and_expired_claims(store: Store, clock: FakeClock):
    seed(store, clock)
    add_claim(store, "b-live")
    add_claim(store, "a-expired", expires_at="2026-09-17 17:00:00")
    add_claim(store, "released", status="released")
    with store.read() as db:
        impact = lifecycle_outcomes.termination_impact(db=db, session_id="s1", clock=clock)
    assert [c.id for c in impact.claims] == ["a-expired", "b-live"]
    assert [c.id for c in impact.live_claims] == ["b-live"]
    assert [c.id for c in impact.expired_claims] == ["a-expired"]
    assert impact.requires_details
    with store.read() as db, pytest.raises(SessionNotFound):
        lifecycle_outcomes.termination_impact(db=db, session_id="ghost", clock=clock)


# --- history in the same transaction ----------------------------------------------------------


def _fail(*_args: Any, **_kwargs: Any) -> None:
    raise RuntimeError("history write failed")


@pytest.mark.parametrize("hook", ["append_run_event", "append_session_event"])
def test_a_failed_history_write_leaves_the_row_unchanged(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, hook: str
):
    for action in ACTIONS:
        seed(store, clock, action, status=startable(action))
    add_claim(store, "c1")
    before = snapshot(store)
    clock.advance(seconds=10)
    monkeypatch.setattr(lifecycle, hook, _fail)
    for action in ACTIONS:
        with pytest.raises(RuntimeError):
            act(store, clock, action, action, key=f"key-{action}", **_details(action))
    assert snapshot(store) == before
    assert key_count(store) == 0
    monkeypatch.undo()
    for action in ACTIONS:  # the same calls succeed once history can be written
        act(store, clock, action, action, key=f"key-{action}", **_details(action))
    assert len(lifecycle_events(store)) == len(ACTIONS)


def _details(action: str) -> dict[str, Any]:
    return {"impact_details": "ok"} if action == "terminate" else {}


# --- error codes ------------------------------------------------------------------------------


def test_every_design_error_code_has_a_typed_error():
    defined = {
        value.code: value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, StoreError) and value is not StoreError
    }
    assert set(defined) == DESIGN_ERROR_CODES
    for code, error_type in defined.items():
        assert re.fullmatch(r"[a-z_]+", code)
        assert error_type.__doc__
        error = error_type("A sentence to act on.", details={"k": 1})
        assert error.to_json() == {
            "error": {"code": code, "message": "A sentence to act on.", "details": {"k": 1}}
        }
        assert str(error) == "A sentence to act on."
    assert errors.InvalidLimit("x").is_bad_input
    assert not errors.SessionNotFound("x").is_bad_input
    assert errors.SessionNotFound("x").to_json() == {
        "error": {"code": "session_not_found", "message": "x"}
    }


def test_no_action_starts_or_kills_a_process(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
):
    def forbidden(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("a lifecycle action touched a process")

    for action in ACTIONS:
        seed(store, clock, action, status=startable(action))
    monkeypatch.setattr(subprocess, "Popen", forbidden)
    monkeypatch.setattr(os, "kill", forbidden)
    monkeypatch.setattr(os, "killpg", forbidden)
    for action in ACTIONS:
        outcome = act(store, clock, action, action, **_details(action))
        assert outcome.session.status == RESULT_STATUS.get(action, "active")


def test_a_write_that_knows_nothing_of_version_still_moves_it(store: Store, clock: FakeClock):
    """Another writer (the reference system, a hand-made fix) updates without touching version:
    the row's version still moves, so an operator holding the old one is refused."""
    seed(store, clock)
    seen = session_row(store)["version"]
    with store.write() as db:
        db.execute(text("UPDATE agent_sessions SET status = 'running' WHERE id = 's1'"))
    assert session_row(store)["version"] == seen + 1
    with store.write() as db:  # a write that changes nothing is not a change
        db.execute(text("UPDATE agent_sessions SET status = 'running' WHERE id = 's1'"))
    assert session_row(store)["version"] == seen + 1
    with pytest.raises(SessionTransitionConflict) as raised:
        act(store, clock, "pause", expected_version=seen)
    assert raised.value.details["current"]["status"] == "running"
    # Our own writes move it by exactly one.
    assert act(store, clock, "pause", expected_version=seen + 1).session.version == seen + 2
    assert session_row(store)["version"] == seen + 2
