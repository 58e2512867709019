"""The list's questions and answers as JSON (``store.window.wire``), for a console reading through
a server: what the console asks comes back as the same question on the server, the server's
answer as the same answer in the console (groups of no workspace, claims, counts, times
included), and what is malformed is refused in words, never taken half."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from roundtable_console.store.errors import DatabaseUnavailable
from roundtable_console.store.reads.claims import ActiveClaim
from roundtable_console.store.reads.listing import (
    FilterSelection,
    Selection,
    SessionFilter,
    SessionOrder,
)
from roundtable_console.store.records import SESSION_COLUMNS, ClaimCount, SessionRecord
from roundtable_console.store.window import wire
from roundtable_console.store.window.layout import Groups
from roundtable_console.store.window.questions import (
    ClockMoved,
    GroupedRows,
    Read,
    ReadResult,
    RowsAsked,
)
from roundtable_console.store.writes import bulk_wire
from roundtable_console.store.writes.bulk import BulkItem, Tally
from roundtable_console.store.writes.bulk_plan import BulkPlan
from roundtable_console.store.writes.bulk_run import BulkOutcome

NOW = datetime(2026, 12, 7, 10, 0, tzinfo=UTC)


def session(session_id: str, workspace: str | None = "ws-a") -> SessionRecord:
    values: dict[str, Any] = dict.fromkeys(SESSION_COLUMNS)
    values.update(id=session_id, agent_id="agent-1", run_id="run-1", adapter="codex",
                  status="active", started_at="2026-12-07T09:00:00.000000Z", version=3,
                  workspace_id=workspace, waiting_reason="review it", metadata_json='{"k": [1, 2]}',
                  waiting_since="2026-12-07T09:30:00.000000Z")  # fmt: skip
    return SessionRecord(values)


def through(value: Any) -> Any:
    """What the other side reads: the JSON as text and back."""
    return json.loads(json.dumps(value))


def test_a_question_comes_back_the_same() -> None:
    asked = RowsAsked(
        read=Read("before", 40, 25, generation=3, serial=9, edge=session("s-9"), refresh=True),
        filters=SessionFilter(
            statuses=("active", "paused"),
            agent_id="agent-1",
            text="fix",
            stale_before=NOW,
            waiting=True,
            host="laptop",
        ),  # fmt: skip
        order=SessionOrder("attention", descending=True).at(NOW),
        now=NOW,
        known_total=120,
        unless_token="(1, 42)",
        live_claims=("agent-1",),
        grouping="workspace",
        folded=frozenset({None, "ws-b"}),
        groups=Groups((None, "ws-a"), (2, 5), {None: {"active": 2}, "ws-a": {"paused": 5}}),
    )
    back = wire.asked_from(through(wire.asked_json(asked)))
    assert back.read.edge is not None and back.read.edge == asked.read.edge
    assert back.filters == asked.filters and back.order == asked.order
    assert back.order.stale_before == NOW and back.now == NOW
    assert (back.known_total, back.unless_token, back.live_claims, back.grouping, back.folded) == (
        120, "(1, 42)", ("agent-1",), "workspace", frozenset({None, "ws-b"}))  # fmt: skip
    assert back.groups is not None and back.groups.keys == (None, "ws-a")
    assert back.groups.sizes == (2, 5) and back.groups.of(None) == {"active": 2}


def test_an_answer_comes_back_the_same() -> None:
    read = Read("at", 0, 50, generation=1, serial=1)
    answer = ReadResult(
        read=read, rows=[session("s-1"), session("s-2", workspace=None)], total=2,
        claims={"agent-1": ClaimCount(2, 1, 3)}, counts={"active": 2}, token=(7, 8),
        attention=1, moves_at=NOW,
        grouped=GroupedRows((("ws-a"), None), True, edge_key=None, header_first=True, stream=0,
                            counts={None: {"active": 1}}),
    )  # fmt: skip
    back = wire.answer_from(through(wire.answer_json(answer)), read)
    assert isinstance(back, ReadResult) and back.read is read  # the console's own read, kept
    assert back.rows == answer.rows and back.rows[0].waiting is not None
    assert back.rows[0].metadata_dict == {"k": [1, 2]}
    assert back.claims == {"agent-1": ClaimCount(2, 1, 3)} and back.counts == {"active": 2}
    assert back.token == wire.token_text((7, 8)) and back.moves_at == NOW
    assert back.grouped is not None and back.grouped.keys == ("ws-a", None)
    assert back.grouped.counts == {None: {"active": 1}}
    moved = wire.answer_from(through(wire.answer_json(ClockMoved(read, {}))), read)
    assert moved == ClockMoved(read, {})


def test_a_selection_comes_back_the_same() -> None:
    chosen = Selection(
        ids=frozenset({"s-1", "s-2"}),
        by_filter=(FilterSelection(SessionFilter(agent_id="agent-1"), frozenset({"s-3"})),),
    )
    assert wire.selection_from(through(wire.selection_json(chosen))) == chosen


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda q: q.update(read={**q["read"], "kind": "around"}), "kind is one of"),
        (lambda q: q.update(read={**q["read"], "limit": 10**6}), "limit is a whole number"),
        (lambda q: q.update(read={**q["read"], "offset": -1}), "offset is a whole number"),
        (lambda q: q.update(read={**q["read"], "kind": "after"}), "names that row"),
        (lambda q: q.update(now="yesterday"), "now is a UTC time"),
        (lambda q: q.update(filters={"agent_id": "a\x00b"}), "agent_id is text"),
        (lambda q: q.update(filters={"statuses": "active"}), "statuses is a list"),
        (lambda q: q.update(order={"column": "salary"}), "cannot be sorted"),
        (lambda q: q.update(grouping="team"), "grouping is"),
        (lambda q: q.update(filters=[]), "filters is an object"),
    ],
)
def test_a_malformed_question_is_refused_in_words(change: Any, said: str) -> None:
    asked = RowsAsked(Read("at", 0, 10, 1, 1), SessionFilter(), SessionOrder(), NOW)
    question = through(wire.asked_json(asked))
    change(question)
    with pytest.raises(wire.WireError, match=said):
        wire.asked_from(question)


def test_a_bulk_preview_and_outcome_come_back_the_same() -> None:
    tally = Tally(keep=2)
    for item in (BulkItem("s1", "done", None, "paused"),
                 BulkItem("s2", "skipped", "illegal_session_transition", "already paused"),
                 BulkItem("s3", "done", "replayed", "replayed")):  # fmt: skip
        tally.add(item)
    claim = ActiveClaim("c1", "src/app.py", "task-1", "edit", "2099-01-01T00:00:00Z", False)
    plan = BulkPlan("terminate", tally, {"agent-1": (claim,)})
    back = bulk_wire.plan_from(through(bulk_wire.plan_json(plan)))
    assert back.claims == plan.claims and back.requires_impact_details
    assert back.tally.items == tally.items and back.tally.counts == tally.counts
    assert back.tally.by_reason("skipped") == [("already paused", 1)]
    stopped = BulkOutcome("pause", "run-1", 9, tally, error=DatabaseUnavailable("gone."))
    outcome = bulk_wire.outcome_from(through(bulk_wire.outcome_json(stopped)), "run-1")
    assert (outcome.total, outcome.tally.total, outcome.complete) == (9, 3, False)
    assert isinstance(outcome.error, DatabaseUnavailable) and outcome.error.message == "gone."


def test_a_change_token_is_its_processs_own() -> None:
    """Equal tokens give equal text within a process; another process (a server restarted, a
    second server, a fork with its parent's memory) gives other text for the same value, so a
    console that comes back to it reads again rather than trusting an old token."""
    import multiprocessing

    token = (object(), 1)
    assert wire.token_text(token) == wire.token_text(token)
    forked = multiprocessing.get_context("fork")
    answers = forked.SimpleQueue()
    child = forked.Process(target=lambda: answers.put(wire.token_text(token)))
    child.start()
    child.join(30)
    assert answers.get() != wire.token_text(token)
