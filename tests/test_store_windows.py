"""The reads behind the console's list window: batch claim counts, sorted keyset pages in both
directions, and the cheap resumable predicate. Every test runs on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import event, insert

from roundtable_console.store.clock import format_ts, parse_ts
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.models import AgentSession, Claim
from roundtable_console.store.db.session_rows import SESSIONS
from roundtable_console.store.errors import InvalidCursor, InvalidLimit
from roundtable_console.store.reads.claims import active_claims, claim_counts
from roundtable_console.store.reads.listing import (
    SORT_COLUMNS,
    SessionFilter,
    SessionOrder,
    session_cursor,
)
from roundtable_console.store.reads.paging import encode_cursor
from roundtable_console.store.reads.sessions import list_sessions, list_sessions_before
from roundtable_console.store.records import ClaimCount
from roundtable_console.store.resume.adapters import AdapterConfig
from roundtable_console.store.resume.plan import resume_blocker, resume_plan
from tests.helpers import register_session

NOW = datetime(2026, 9, 17, 17, 26, 35, tzinfo=UTC)
CLAIMS = Claim.__table__  # type: ignore[attr-defined]


# --- claim counts ------------------------------------------------------------------------------


def add_claim(store: Store, claim_id: str, agent_id: str, expires_at: str, **values: Any) -> None:
    row = {
        "id": claim_id,
        "resource_id": f"res/{claim_id}",
        "agent_id": agent_id,
        "task_id": "task-1",
        "claim_type": "write",
        "status": "active",
        "expires_at": expires_at,
    }
    row.update(values)
    with store.write() as db:
        db.execute(insert(CLAIMS).values(**row))


def test_claim_counts_live_and_expired_per_agent_across_timestamp_forms(store: Store) -> None:
    add_claim(store, "c1", "ada", "2026-09-17T18:00:00Z")  # live
    add_claim(store, "c2", "ada", "2026-09-17 17:00:00")  # expired, CURRENT_TIMESTAMP form
    add_claim(store, "c3", "ada", "2026-09-17T19:26:34+02:00")  # 17:26:34 UTC: expired
    add_claim(store, "c4", "ada", "2026-09-17T17:26:35.000000001Z")  # the same instant: expired
    add_claim(store, "c5", "ada", "2026-09-17T17:26:36.5Z")  # live
    add_claim(store, "c6", "ada", "2026-09-17T10:00:00Z", status="released")  # not counted
    add_claim(store, "c7", "grace", "2026-09-17T10:00:00.123456789Z")  # expired
    add_claim(store, "c8", "linus", "whenever")  # unreadable: not expired, as active_claims says
    add_claim(store, "c9", "nobody-asked", "2026-09-18T00:00:00Z")
    with store.read() as db:
        counts = claim_counts(db=db, agent_ids=["ada", "grace", "linus", "ada", "knuth"], now=NOW)
        singles = {
            agent: active_claims(db=db, agent_id=agent, now=NOW)
            for agent in ("ada", "grace", "linus")
        }
    assert counts == {
        "ada": ClaimCount(live=2, expired=3),
        "grace": ClaimCount(live=0, expired=1),
        "linus": ClaimCount(live=1, expired=0),
    }
    assert counts["ada"].total == 5
    # The batch count agrees with the per-agent read terminate and the briefing use.
    for agent, claims in singles.items():
        expired = sum(claim.expired for claim in claims)
        assert counts[agent] == (len(claims) - expired, expired, 0), agent


def test_claim_counts_of_no_agents_reads_nothing(store: Store) -> None:
    add_claim(store, "c1", "ada", "2026-09-17T18:00:00Z")
    statements: list[str] = []

    def capture(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        statements.append(statement)

    event.listen(store.engine, "before_cursor_execute", capture)
    try:
        with store.read() as db:
            assert claim_counts(db=db, agent_ids=[], now=NOW) == {}
            assert claim_counts(db=db, agent_ids=["someone-else"], now=NOW) == {}
    finally:
        event.remove(store.engine, "before_cursor_execute", capture)
    assert len([s for s in statements if "claims" in s]) == 1


# --- sorted keyset pages, both directions ---------------------------------------------------

# id, agent, status, started_at, last_seen_at: every form the reference writes, ties at the same
# instant written differently, never-seen and unreadable last-seen times, ids against time.
ROWS: list[tuple[str, str, str, str, str | None]] = [
    ("k", "b", "active", "2026-09-17 17:00:00", "2026-09-17 18:00:00"),
    ("j", "a", "ended", "2026-09-17T17:00:00Z", None),
    ("i", "b", "paused", "2026-09-17T19:00:00+02:00", "2026-09-17T17:30:00.500000000Z"),
    ("h", "c", "active", "2026-09-17T16:59:59.998000001Z", "not a time"),
    ("g", "a", "active", "2026-09-17T17:26:35.000000Z", "2026-09-17T17:30:00.5Z"),
    ("f", "c", "ended", "2026-09-17 17:30:00", "2026-09-17 17:45:00"),
    ("e", "b", "active", "2026-09-17T18:00:00Z", None),
    ("d", "a", "paused", "2026-09-17T17:59:59.999Z", "2026-09-17T16:00:00Z"),
    ("c", "c", "running", "2026-09-17 09:00:00", "2026-09-17T10:00:00+00:00"),
    ("b", "a", "active", "2026-09-17T17:00:00.000000Z", "2026-09-17 18:00:00"),
    ("a", "b", "ended", "2026-09-17T18:00:00.000000001Z", "2026-09-17T18:00:00Z"),
]


def seed_rows(store: Store) -> None:
    with store.write() as db:
        for session_id, agent, status, started, seen in ROWS:
            db.execute(
                insert(SESSIONS).values(
                    id=session_id,
                    agent_id=agent,
                    run_id="run-1",
                    adapter="codex",
                    working_directory="/w",
                    status=status,
                    started_at=started,
                    last_seen_at=seen,
                )
            )


def model_key(order: SessionOrder) -> Callable[[tuple[str, str, str, str, str | None]], Any]:
    """The order as the product promises it, computed in Python from parsed times."""

    def key(row: tuple[str, str, str, str, str | None]) -> Any:
        session_id, agent, status, started, seen = row
        start = parse_ts(started)
        if order.column == "started":
            return (start, session_id)
        if order.column == "status":
            return (status, start, session_id)
        if order.column == "agent":
            return (agent, start, session_id)
        if order.column == "attention":  # no row waits, none has an unknown status
            when = parse_ts(seen) or start or datetime.min.replace(tzinfo=UTC)
            if status == "paused":
                return (3, when, session_id)
            if status == "ended":
                return (5, when, session_id)
            if when < STALE_BEFORE:
                return (2, when, session_id)
            return (4, start, session_id)  # fresh live sessions by start (issue 19 point 3)
        moment = parse_ts(seen)
        return (
            (0, datetime.min.replace(tzinfo=UTC), session_id)
            if moment is None
            else (1, moment, session_id)
        )

    return key


def expected(order: SessionOrder, keep: Callable[[Any], bool] = lambda row: True) -> list[str]:
    ordered = sorted((row for row in ROWS if keep(row)), key=model_key(order))
    ids = [row[0] for row in ordered]
    return ids[::-1] if order.descending else ids


# Live sessions last seen before this are stale in the attention order.
STALE_BEFORE = datetime(2026, 9, 17, 17, 30, tzinfo=UTC)
ALL_ORDERS = [
    SessionOrder(column, descending).at(STALE_BEFORE)
    for column in SORT_COLUMNS
    for descending in (False, True)
]


def forward(store: Store, order: SessionOrder, size: int, **extra: Any) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor: str | None = None
    for _ in range(50):
        with store.read() as db:
            page = list_sessions(db=db, order=order, limit=size, cursor=cursor, **extra)
        pages.append([s.id for s in page.items])
        cursor = page.next_cursor
        if cursor is None:
            return pages
    raise AssertionError("paging never ended")


def backward(store: Store, order: SessionOrder, size: int, **extra: Any) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor: str | None = None
    for _ in range(50):
        with store.read() as db:
            page = list_sessions_before(db=db, order=order, limit=size, cursor=cursor, **extra)
        pages.append([s.id for s in page.items])
        cursor = page.next_cursor
        if cursor is None:
            return pages
    raise AssertionError("paging never ended")


def test_the_model_is_not_the_id_order() -> None:
    for order in ALL_ORDERS:
        assert expected(order) != sorted(expected(order)), order


def test_every_order_pages_forward_and_backward_across_timestamp_forms(store: Store) -> None:
    seed_rows(store)
    for order in ALL_ORDERS:
        want = expected(order)
        for size in (1, 2, 3, 11, 50):
            pages = forward(store, order, size)
            assert [i for page in pages for i in page] == want, (order, size)
            assert all(len(page) == size for page in pages[:-1]), (order, size)
            back = backward(store, order, size)
            # Each backward page is in list order and ends where the previous one began.
            assert [i for page in reversed(back) for i in page] == want, (order, size)
            assert all(len(page) == size for page in back[:-1]), (order, size)
            assert back[0] == want[-size:], (order, size)


def test_the_reference_order_is_the_default_and_keeps_its_cursor_form(store: Store) -> None:
    seed_rows(store)
    with store.read() as db:
        default = list_sessions(db=db, limit=3)
        explicit = list_sessions(db=db, limit=3, order=SessionOrder())
        last = list_sessions_before(db=db, limit=2)
    assert [s.id for s in default.items] == expected(SessionOrder())[:3]
    assert default == explicit
    third = default.items[-1]
    assert default.next_cursor == encode_cursor("sessions", third.started_at, third.id)
    assert [s.id for s in last.items] == expected(SessionOrder())[-2:]
    assert last.next_cursor == encode_cursor("sessions", last.items[0].started_at, last.items[0].id)


def test_a_cursor_is_a_position_read_either_way(store: Store) -> None:
    seed_rows(store)
    for order in ALL_ORDERS:
        want = expected(order)
        with store.read() as db:
            rows = {s.id: s for s in list_sessions(db=db, order=order, limit=50).items}
            for index, session_id in enumerate(want):
                cursor = session_cursor(rows[session_id], order)
                after = list_sessions(db=db, order=order, cursor=cursor, limit=50)
                before = list_sessions_before(db=db, order=order, cursor=cursor, limit=50)
                assert [s.id for s in after.items] == want[index + 1 :], (order, session_id)
                assert [s.id for s in before.items] == want[:index], (order, session_id)
                assert after.next_cursor is None and before.next_cursor is None
                # The same position read in the other direction: the reversed list.
                flipped = list_sessions(db=db, order=order.flipped(), cursor=cursor, limit=50)
                assert [s.id for s in flipped.items] == want[:index][::-1], (order, session_id)


def test_backward_pages_keep_filters(store: Store) -> None:
    seed_rows(store)
    filters = SessionFilter(statuses=("active", "paused"))
    keep = lambda row: row[2] in ("active", "paused")  # noqa: E731
    for order in ALL_ORDERS:
        want = expected(order, keep)
        assert [i for page in forward(store, order, 2, filters=filters) for i in page] == want
        back = backward(store, order, 2, filters=filters)
        assert [i for page in reversed(back) for i in page] == want, order
    with store.read() as db:
        nothing = list_sessions_before(db=db, filters=SessionFilter(agent_id="nobody"))
    assert nothing.items == [] and nothing.next_cursor is None


def test_rows_written_after_a_cursor_are_met_once(store: Store) -> None:
    seed_rows(store)
    order = SessionOrder("status")
    with store.read() as db:
        first = list_sessions(db=db, order=order, limit=4)
    with store.write() as db:
        register_session(db, "new", agent_id="z", status="zzz-last", clock=lambda: NOW)
    seen = [s.id for s in first.items]
    cursor = first.next_cursor
    while cursor is not None:
        with store.read() as db:
            page = list_sessions(db=db, order=order, limit=4, cursor=cursor)
        seen.extend(s.id for s in page.items)
        cursor = page.next_cursor
    assert seen == [*expected(order), "new"]


def test_never_seen_sessions_sit_at_the_old_end_of_last_seen(store: Store) -> None:
    seed_rows(store)
    ascending = expected(SessionOrder("last_seen"))
    # Never seen and unreadable first (by id), then oldest to newest; ties by id.
    assert ascending == ["e", "h", "j", "c", "d", "g", "i", "f", "a", "b", "k"]
    with store.read() as db:
        page = list_sessions(db=db, order=SessionOrder("last_seen", descending=True), limit=8)
        rest = list_sessions(
            db=db, order=SessionOrder("last_seen", descending=True), cursor=page.next_cursor
        )
    assert [s.id for s in page.items] + [s.id for s in rest.items] == ascending[::-1]


def test_status_and_agent_orders_break_ties_by_start_then_id(store: Store) -> None:
    seed_rows(store)
    assert expected(SessionOrder("status")) == [
        "h",
        "b",
        "k",
        "g",
        "e",
        "j",
        "f",
        "a",
        "i",
        "d",
        "c",
    ]
    assert expected(SessionOrder("agent")) == [
        "b",
        "j",
        "g",
        "d",
        "i",
        "k",
        "a",
        "e",
        "c",
        "h",
        "f",
    ]
    with store.read() as db:
        by_status = list_sessions(db=db, order=SessionOrder("status"))
        by_agent = list_sessions(db=db, order=SessionOrder("agent", descending=True))
    assert [s.id for s in by_status.items] == expected(SessionOrder("status"))
    assert [s.id for s in by_agent.items] == expected(SessionOrder("agent"))[::-1]


def test_cursors_are_checked_against_their_order(store: Store) -> None:
    seed_rows(store)
    with store.read() as db:
        status_page = list_sessions(db=db, order=SessionOrder("status"), limit=2)
        started_page = list_sessions(db=db, limit=2)
    bad: list[tuple[SessionOrder, str]] = [
        (SessionOrder("status"), started_page.next_cursor or ""),
        (SessionOrder(), status_page.next_cursor or ""),
        (SessionOrder("agent"), status_page.next_cursor or ""),
        (SessionOrder("status"), encode_cursor("sessions.status", "active", None, "x")),
        (SessionOrder("status"), encode_cursor("sessions.status", "active", "x")),
        (SessionOrder("last_seen"), encode_cursor("sessions.last_seen", "2026-01-01", None)),
        (SessionOrder("last_seen"), encode_cursor("sessions.last_seen", 5, "x")),
        (SessionOrder("started"), encode_cursor("sessions", None, "x")),
        (SessionOrder("started"), "garbage!!"),
    ]
    for order, cursor in bad:
        for read in (list_sessions, list_sessions_before):
            with pytest.raises(InvalidCursor) as raised, store.read() as db:
                read(db=db, order=order, cursor=cursor)
            assert raised.value.code == "invalid_cursor", (order, cursor)
    # A never-seen row's position is a valid last-seen cursor.
    with store.read() as db:
        after_e = list_sessions(
            db=db,
            order=SessionOrder("last_seen"),
            cursor=encode_cursor("sessions.last_seen", None, "e"),
        )
    assert [s.id for s in after_e.items] == expected(SessionOrder("last_seen"))[1:]


def test_bad_sort_column_and_limit_are_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="cannot be sorted by 'adapter'"):
        SessionOrder("adapter")
    for bad in (0, 201, "5"):
        with pytest.raises(InvalidLimit), store.read() as db:
            list_sessions_before(db=db, limit=bad)  # type: ignore[arg-type]


def _statements(store: Store, read: Callable[..., Any], **arguments: Any) -> list[tuple[str, Any]]:
    captured: list[tuple[str, Any]] = []

    def capture(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_rest: Any) -> None:
        if "FROM agent_sessions" in statement:
            captured.append((statement, parameters))

    event.listen(store.engine, "before_cursor_execute", capture)
    try:
        with store.read() as db:
            read(db=db, **arguments)
    finally:
        event.remove(store.engine, "before_cursor_execute", capture)
    return captured


def _plan(store: Store, statement: str, parameters: Any) -> str:
    with store.read() as db:
        if store.dialect == "sqlite":
            rows = db.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
            return " | ".join(str(r[-1]) for r in rows)
        db.exec_driver_sql("SET LOCAL enable_seqscan = off")
        db.exec_driver_sql("SET LOCAL enable_sort = off")
        return " | ".join(r[0] for r in db.exec_driver_sql(f"EXPLAIN {statement}", parameters))


INDEXED_ORDERS = [
    (SessionOrder("started"), "ix_agent_sessions_started"),
    (SessionOrder("status"), "ix_agent_sessions_status"),
    (SessionOrder("agent"), "ix_agent_sessions_agent"),
]


def test_sorted_pages_either_way_are_index_ranges_cut_by_limit(store: Store) -> None:
    """Each statement of a page follows an index in order, with no sort of the table, for every
    direction, first page or later: a page costs the page."""
    seed_rows(store)
    for order, index in INDEXED_ORDERS:
        for direction in (order, order.flipped()):
            with store.read() as db:
                middle = list_sessions(db=db, order=direction, limit=5).items[-1]
            cursor = session_cursor(middle, direction)
            for read in (list_sessions, list_sessions_before):
                for arguments in ({"limit": 2}, {"limit": 2, "cursor": cursor}):
                    statements = _statements(store, read, order=direction, **arguments)
                    assert 1 <= len(statements) <= 2, (direction, arguments)
                    for statement, parameters in statements:
                        assert "LIMIT" in statement.upper()
                        plan = _plan(store, statement, parameters)
                        assert index in plan, (direction, plan)
                        assert "TEMP B-TREE" not in plan and "Sort" not in plan, (direction, plan)


def test_a_status_page_deep_in_one_status_reads_only_the_page(store: Store) -> None:
    """Two ranges (the cursor's status from its start time on, then later statuses), not a walk
    over every row of the cursor's status before it."""
    seed_rows(store)
    order = SessionOrder("status")
    with store.read() as db:
        rows = {s.id: s for s in list_sessions(db=db, order=order, limit=50).items}
    statements = _statements(
        store, list_sessions, order=order, limit=1, cursor=session_cursor(rows["k"], order)
    )
    assert len(statements) == 1  # g and e of "active" remain after k: one range is enough
    statements = _statements(
        store, list_sessions, order=order, limit=4, cursor=session_cursor(rows["k"], order)
    )
    assert len(statements) == 2
    first_sql = statements[0][0]
    assert "status =" in first_sql.replace('"', "")


def test_last_seen_pages_use_its_index(store: Store) -> None:
    seed_rows(store)
    order = SessionOrder("last_seen", descending=True)
    with store.read() as db:
        page = list_sessions(db=db, order=order, limit=3)
    statements = _statements(store, list_sessions, order=order, limit=8, cursor=page.next_cursor)
    assert len(statements) == 2  # the rest of the seen ones, then the never-seen ones
    statement, parameters = statements[0]
    assert "IS NOT NULL" in statement.upper()
    assert "ix_agent_sessions_last_seen" in _plan(store, statement, parameters)


# --- resumable -------------------------------------------------------------------------------

CODEX = AdapterConfig(name="codex", resume_pattern="codex resume {{external_session_id}}")


def session(**values: Any) -> AgentSession:
    row: dict[str, Any] = {
        "id": "s1",
        "agent_id": "ada",
        "run_id": "run-1",
        "adapter": "codex",
        "working_directory": "/w",
        "status": "active",
        "started_at": format_ts(NOW),
        "external_session_id": "abc-123",
    }
    row.update(values)
    return AgentSession(**row)


BLOCKERS: list[tuple[dict[str, Any], dict[str, AdapterConfig] | None, str | None]] = [
    ({}, {"codex": CODEX}, None),
    ({"external_session_id": None}, {"codex": CODEX}, "no external session id"),
    ({"external_session_id": "   "}, {"codex": CODEX}, "no external session id"),
    ({}, None, "is not configured"),
    ({}, {}, "is not configured"),
    ({"adapter": "claude"}, {"codex": CODEX}, "is not configured"),
    ({}, {"codex": AdapterConfig(name="codex")}, "has no resume_pattern"),
    ({}, {"codex": AdapterConfig(name="codex", resume_pattern="  ")}, "has no resume_pattern"),
    ({"external_session_id": "a b; rm -rf /"}, {"codex": CODEX}, "does not match"),
    ({"external_session_id": "x" * 129}, {"codex": CODEX}, "does not match"),
    (
        {"external_session_id": "a b"},
        {
            "codex": AdapterConfig(
                name="codex",
                resume_pattern="c {{external_session_id}}",
                external_session_id_pattern=r"[a-z ]+",
            )
        },
        None,
    ),
    ({}, {"codex": AdapterConfig(name="codex", resume_pattern="c 'open")}, "cannot be split"),
    (
        {},
        {
            "codex": AdapterConfig(
                name="codex", resume_pattern="c {{external_session_id}}", explicit=False
            )
        },
        "is not configured",
    ),
]


def test_resume_blocker_says_why_or_none() -> None:
    for values, adapters, fragment in BLOCKERS:
        blocker = resume_blocker(session=session(**values), adapters=adapters)
        if fragment is None:
            assert blocker is None, values
        else:
            assert blocker is not None and fragment in blocker, (values, blocker)
            assert "abc-123" not in blocker  # the external id is sensitive


def test_resume_blocker_agrees_with_the_resume_plan() -> None:
    for values, adapters, _ in BLOCKERS:
        target = session(**values)
        plan = resume_plan(session=target, briefing_markdown="# B", adapters=adapters)
        blocker = resume_blocker(session=target, adapters=adapters)
        assert plan.resumable == (blocker is None), values
        assert plan.reason == blocker, values
        if plan.resumable:
            assert plan.argv[-1] == "# B"


def test_resume_plan_builds_argv_per_word() -> None:
    plan = resume_plan(session=session(), briefing_markdown="brief", adapters={"codex": CODEX})
    assert plan.argv == ["codex", "resume", "abc-123", "brief"]
    assert plan.reason is None


def test_the_list_window_reads_are_plain_functions_of_the_store() -> None:
    # Kept keyword-only like every store function.
    for function in (claim_counts, list_sessions, list_sessions_before, resume_blocker):
        with pytest.raises(TypeError):
            function(None)  # type: ignore[call-arg,misc]
