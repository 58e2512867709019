"""The audit trail (issue 11 points 4 and 5), on SQLite and PostgreSQL: every path of a
lifecycle action records its actor (and on PostgreSQL its role), and ``roundtable audit`` lists
them newest first, filtered and keyset-paged on migration 0009's indexes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import insert, text

from roundtable_console.store.db.database import Store, open_store
from roundtable_console.store.db.models import Agent
from roundtable_console.store.errors import InvalidCursor, InvalidLimit, InvalidSession
from roundtable_console.store.reads.audit import AuditFilter, audit_page
from roundtable_console.store.writes import lifecycle, lifecycle_many
from tests.conftest import FakeClock
from tests.helpers import Cli, register_session

AUDIT_KEYS = {
    "at", "actor", "db_user", "action", "session_id", "previous_status", "status",
    "impact_details", "field",
}  # fmt: skip


def _history(store: Store) -> list[dict[str, Any]]:
    with store.read() as db:
        rows = db.execute(
            text(
                "SELECT session_id, event_type, actor, db_user FROM agent_session_events"
                " ORDER BY id"
            )
        ).all()
    return [dict(row._mapping) for row in rows]


def _role(store: Store) -> str | None:
    if store.dialect != "postgresql":
        return None
    with store.read() as db:
        return str(db.execute(text("SELECT current_user")).scalar_one())


def _act(store: Store, clock: FakeClock) -> None:
    """Agents register and beat; operators act on one session at a time and on a batch."""
    with store.write() as db:
        db.execute(
            insert(Agent.__table__).values(id="a", role="r", name="n", adapter="codex")  # type: ignore[attr-defined]
        )
        for session_id in ("s1", "s2", "s3"):
            register_session(db, session_id, clock=clock)
    with store.write() as db:
        from roundtable_console.store.writes.agent_writes import heartbeat

        heartbeat(db=db, session_id="s1", clock=clock)
    for action, session_id, actor, extra in (
        ("pause", "s1", "alice", {}),
        ("heartbeat", "s2", "bob", {}),
        ("terminate", "s2", "bob", {"idempotency_key": "k1", "impact_details": "token=abc x"}),
        ("resume", "s1", "carol", {"idempotency_key": "k2"}),
    ):
        clock.advance(minutes=1)
        with store.write() as db:
            lifecycle.ACTIONS[action](
                db=db, session_id=session_id, actor=actor, clock=clock, **extra
            )
    clock.advance(minutes=1)
    with store.write() as db:
        lifecycle_many.apply_many(
            db=db, action="stop", requests=[("s1", None), ("s3", "k3")], actor="dave", clock=clock
        )


def test_every_lifecycle_path_records_its_actor_and_role(store: Store, clock: FakeClock) -> None:
    _act(store, clock)
    role = _role(store)
    rows = _history(store)
    agents = [row for row in rows if row["event_type"] in ("registered",)]
    assert {row["actor"] for row in agents} == {None}
    agent_beat = [
        row for row in rows if row["event_type"] == "heartbeat" and row["session_id"] == "s1"
    ]
    assert agent_beat and agent_beat[0]["actor"] is None
    actions = [(row["event_type"], row["session_id"], row["actor"]) for row in rows if row["actor"]]
    assert actions == [
        ("paused", "s1", "alice"),
        ("heartbeat", "s2", "bob"),
        ("terminated", "s2", "bob"),
        ("resuming", "s1", "carol"),
        ("stopped", "s1", "dave"),
        ("stopped", "s3", "dave"),
    ]
    # The role is the database's word for every row, agents' too; SQLite has none.
    assert {row["db_user"] for row in rows} == {role}


def test_the_audit_lists_operators_actions_newest_first(store: Store, clock: FakeClock) -> None:
    _act(store, clock)
    with store.read() as db:
        page = audit_page(db=db)
    got = [(e.action, e.session_id, e.actor, e.previous_status, e.status) for e in page.items]
    assert got == [
        ("stop", "s3", "dave", "active", "stopped"),
        ("stop", "s1", "dave", "resuming", "stopped"),
        ("resume", "s1", "carol", "paused", "resuming"),
        ("terminate", "s2", "bob", "active", "terminated"),
        ("heartbeat", "s2", "bob", "active", "active"),
        ("pause", "s1", "alice", "active", "paused"),
    ]
    assert page.next_cursor is None
    terminate = page.items[3]
    assert terminate.impact_details == "token=[REDACTED] x"
    assert {e.db_user for e in page.items} == {_role(store)}
    assert set(terminate.to_json()) == AUDIT_KEYS


def test_the_audits_filters(store: Store, clock: FakeClock) -> None:
    _act(store, clock)

    def ids(**filters: Any) -> list[tuple[str, str]]:
        with store.read() as db:
            page = audit_page(db=db, filters=AuditFilter(**filters))
        return [(e.action, e.session_id) for e in page.items]

    assert ids(actor="bob") == [("terminate", "s2"), ("heartbeat", "s2")]
    assert ids(action="stop") == [("stop", "s3"), ("stop", "s1")]
    assert ids(action="paused") == [("pause", "s1")]
    assert ids(session_id="s1") == [("stop", "s1"), ("resume", "s1"), ("pause", "s1")]
    assert ids(actor="bob", action="heartbeat") == [("heartbeat", "s2")]
    assert ids(actor="nobody") == []
    with store.read() as db:
        newest = audit_page(db=db, limit=2).items
    assert ids(since=newest[-1].at) == [("stop", "s3"), ("stop", "s1")]
    with pytest.raises(InvalidSession, match="not an operator action"):
        ids(action="registered")


def test_the_audit_pages_by_cursor(store: Store, clock: FakeClock) -> None:
    _act(store, clock)
    seen: list[tuple[str, str]] = []
    cursor = None
    with store.read() as db:
        while True:
            page = audit_page(db=db, limit=4, cursor=cursor)
            seen.extend((e.action, e.session_id) for e in page.items)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        whole = [(e.action, e.session_id) for e in audit_page(db=db).items]
        assert seen == whole and len(seen) == 6
        with pytest.raises(InvalidCursor):
            audit_page(db=db, cursor="Zm9v")
        with pytest.raises(InvalidCursor):
            from roundtable_console.store.reads.paging import encode_cursor

            audit_page(db=db, cursor=encode_cursor("audit", "7"))
        with pytest.raises(InvalidCursor):
            audit_page(db=db, cursor=encode_cursor("logs", 7))
        with pytest.raises(InvalidLimit):
            audit_page(db=db, limit=0)


def test_the_audit_command(store_url: str, clock: FakeClock) -> None:
    cli = Cli(url=store_url, clock=clock)
    cli.register("s1")
    cli.register("s2")
    assert cli("sessions", "pause", "--session", "s1", "--operator", "ann").exit_code == 0
    assert cli("sessions", "stop", "--session", "s1", "--session", "s2",
               "--operator", "ben").exit_code == 0  # fmt: skip
    body = cli.json("audit", "--limit", "2")
    assert [(i["action"], i["session_id"], i["actor"]) for i in body["items"]] == [
        ("stop", "s2", "ben"),
        ("stop", "s1", "ben"),
    ]
    assert set(body["items"][0]) == AUDIT_KEYS
    rest = cli.json("audit", "--limit", "2", "--cursor", body["next_cursor"])
    assert [(i["action"], i["actor"]) for i in rest["items"]] == [("pause", "ann")]
    assert rest["next_cursor"] is None
    assert [i["actor"] for i in cli.json("audit", "--actor", "ann")["items"]] == ["ann"]
    assert len(cli.json("audit", "--action", "stop", "--session", "s2")["items"]) == 1
    assert len(cli.json("audit", "--since", "1h")["items"]) == 3
    assert len(cli.json("audit", "--since", "2026-09-17")["items"]) == 3
    assert cli.json("audit", "--since", "2026-09-18")["items"] == []
    assert len(cli.json("audit", "--since", "2026-09-17T17:00")["items"]) == 3
    clock.advance(hours=2)
    assert cli.json("audit", "--since", "1h")["items"] == []
    human = cli("audit")
    assert human.exit_code == 0
    lines = human.stdout.strip().splitlines()
    assert len(lines) == 3 and "ann" in lines[-1] and "active → paused" in lines[-1]


@pytest.mark.parametrize(
    ("argv", "code", "words"),
    [
        (("audit", "--action", "register"), "invalid_session", "not an operator action"),
        (("audit", "--since", "yesterday-ish"), "invalid_session", "neither a time"),
        (("audit", "--limit", "0"), "invalid_limit", "from 1 to 200"),
        (("audit", "--cursor", "Zm9v"), "invalid_cursor", "not one this store issued"),
    ],
)
def test_the_audit_command_refuses_bad_input(
    rt: Cli, argv: tuple[str, ...], code: str, words: str
) -> None:
    result = rt(*argv, "--json")
    assert result.exit_code == 2
    error = json.loads(result.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == code and words in error["message"]


def test_the_migration_finds_the_actions_written_before_it(
    store_url: str, clock: FakeClock
) -> None:
    """Rows of actions written before migration 0009 carry the actor in their payload alone:
    the migration copies it to the column, and the audit lists them."""
    store = open_store(store_url)
    _act(store, clock)
    with store.write() as db:
        db.execute(text("UPDATE agent_session_events SET actor = NULL"))
        db.execute(
            text(
                "INSERT INTO agent_session_events (session_id, event_type, payload_json,"
                " created_at) VALUES ('s1', 'paused', '{broken', '2026-09-17T18:00:00Z')"
            )
        )
        db.execute(text("UPDATE alembic_version SET version_num = '0008_session_groups'"))
    store.dispose()
    store = open_store(store_url)
    try:
        with store.read() as db:
            page = audit_page(db=db)
        assert [e.actor for e in page.items] == ["dave", "dave", "carol", "bob", "bob", "alice"]
    finally:
        store.dispose()


@pytest.mark.parametrize(
    ("condition", "index"),
    [
        ("", "ix_agent_session_events_audit"),
        (" AND actor = 'bob'", "ix_agent_session_events_audit_actor"),
        (" AND event_type = 'paused'", "ix_agent_session_events_audit_type"),
    ],
)
def test_a_page_reads_an_audit_index(
    store: Store, clock: FakeClock, condition: str, index: str
) -> None:
    _act(store, clock)
    statement = (
        "SELECT id FROM agent_session_events WHERE actor IS NOT NULL"
        f"{condition} ORDER BY id DESC LIMIT 51"
    )
    with store.read() as db:
        if store.dialect == "postgresql":
            # A few rows: the planner would rather scan them; told not to, it shows the index
            # it would use on a big table.
            db.execute(text("SET LOCAL enable_seqscan = off"))
            db.execute(text("SET LOCAL enable_bitmapscan = off"))
            plan = " ".join(row[0] for row in db.execute(text(f"EXPLAIN {statement}")))
            # The planner may walk the id index and filter: an audit index either way.
            assert "ix_agent_session_events_audit" in plan, plan
            assert "Sort" not in plan, plan
        else:
            plan = " ".join(
                str(row[-1]) for row in db.execute(text(f"EXPLAIN QUERY PLAN {statement}"))
            )
            assert f"INDEX {index} " in f"{plan} ", plan
            assert "TEMP B-TREE" not in plan, plan
