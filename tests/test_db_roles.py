"""Database roles on the real PostgreSQL server (issue 11 points 3 and 4): roles the tests
create, given exactly what ``roundtable db grants`` prints, then used as the CLI uses them."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from sqlalchemy import create_engine, exc, text
from sqlalchemy.engine import make_url

from tests.conftest import FakeClock, new_pg_database
from tests.helpers import Cli
from tests.pg_server import PostgresServer

_numbers = itertools.count()

READ_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("sessions",),
    ("sessions", "list", "--status", "active"),
    ("sessions", "show", "--session", "s1"),
    ("sessions", "logs", "--session", "s1"),
    ("sessions", "tool-calls", "--session", "s1"),
    ("sessions", "claims", "--session", "s1"),
    ("sessions", "proposals", "--session", "s1"),
    ("sessions", "metrics", "--session", "s1"),
    ("sessions", "environment", "--session", "s1"),
    ("resume", "--session", "s1"),
    ("audit",),
    ("export",),
)


@dataclass
class Roles:
    owner: Cli
    viewer: Cli
    writer: Cli
    viewer_name: str
    writer_name: str
    owner_url: str


def _as_role(url: str, role: str) -> str:
    return make_url(url).set(username=role).render_as_string(hide_password=False)


def _run_grants(owner: Cli, role: str, kind: str) -> list[str]:
    printed = owner("db", "grants", "--role", role, f"--{kind}")
    assert printed.exit_code == 0, printed.stderr
    statements = printed.stdout.strip().splitlines()
    engine = create_engine(owner.url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        for statement in statements:
            conn.execute(text(statement))
    engine.dispose()
    return statements


@pytest.fixture
def roles(pg_server: PostgresServer, clock: FakeClock) -> Iterator[Roles]:
    url = new_pg_database(pg_server)
    number = f"{os.getpid()}_{next(_numbers)}"
    viewer, writer = f"rt_viewer_{number}", f"rt_writer_{number}"
    admin = create_engine(pg_server.url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        for role in (viewer, writer):
            conn.execute(text(f'CREATE ROLE "{role}" LOGIN'))
    owner = Cli(url=url, clock=clock)
    owner.register("s1")
    owner.register("s2", agent="a2")
    _run_grants(owner, viewer, "viewer")
    _run_grants(owner, writer, "writer")
    try:
        yield Roles(
            owner=owner,
            viewer=Cli(url=_as_role(url, viewer), clock=clock),
            writer=Cli(url=_as_role(url, writer), clock=clock),
            viewer_name=viewer,
            writer_name=writer,
            owner_url=url,
        )
    finally:
        database = make_url(url).database
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)"))
            for role in (viewer, writer):
                conn.execute(text(f'DROP ROLE IF EXISTS "{role}"'))
        admin.dispose()


def _error(result: object) -> dict[str, str]:
    stderr = result.stderr  # type: ignore[attr-defined]
    return json.loads(stderr.strip().splitlines()[-1])["error"]  # type: ignore[no-any-return]


def test_grants_print_least_privilege_statements(rt: Cli) -> None:
    viewer = rt("db", "grants", "--role", "ops", "--viewer", db=False)
    assert viewer.exit_code == 0, viewer.stderr
    lines = viewer.stdout.strip().splitlines()
    assert 'GRANT SELECT ON ALL TABLES IN SCHEMA "public" TO "ops";' in lines
    assert 'REVOKE CREATE ON SCHEMA "public" FROM "ops";' in lines
    assert not any("INSERT" in line or "UPDATE" in line or "DELETE" in line for line in lines)
    writer = rt("db", "grants", "--role", "agent", "--writer", "--json", db=False)
    statements = json.loads(writer.stdout)["statements"]
    assert 'GRANT INSERT ON "public"."agent_session_events" TO "agent";' in statements
    assert 'GRANT INSERT, UPDATE ON "public"."agent_sessions" TO "agent";' in statements
    assert not any("DELETE" in line or "TRUNCATE" in line for line in statements)
    assert not any(line.startswith("GRANT CREATE") for line in statements)


def test_grants_refuse_bad_usage(rt: Cli) -> None:
    neither = rt("db", "grants", "--role", "ops", db=False)
    assert neither.exit_code == 2
    assert "--viewer or --writer" in neither.stderr
    blank = rt("db", "grants", "--role", " ", "--viewer", "--json", db=False)
    assert blank.exit_code == 2
    assert _error(blank)["code"] == "usage_error"


def test_a_role_without_grants_cannot_even_read(
    pg_server: PostgresServer, clock: FakeClock
) -> None:
    """The grants are what lets a role read: without them the refusal is in words."""
    url = new_pg_database(pg_server)
    role = f"rt_nobody_{os.getpid()}_{next(_numbers)}"
    admin = create_engine(pg_server.url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE ROLE "{role}" LOGIN'))
    try:
        result = Cli(url=_as_role(url, role), clock=clock)("sessions", "--json")
        assert result.exit_code == 1
        error = _error(result)
        assert error["code"] == "read_only"
        assert "permission denied" in error["message"]
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {make_url(url).database} WITH (FORCE)"))
            conn.execute(text(f'DROP ROLE IF EXISTS "{role}"'))
        admin.dispose()


@pytest.mark.parametrize("argv", READ_COMMANDS, ids=lambda argv: " ".join(argv))
def test_a_viewer_runs_every_read_command(roles: Roles, argv: tuple[str, ...]) -> None:
    result = roles.viewer(*argv)
    assert result.exit_code == 0, result.stderr
    if argv[0] == "sessions" and len(argv) <= 2:
        assert "s1" in result.stdout and "s2" in result.stdout


@pytest.mark.parametrize(
    "argv",
    [
        ("sessions", "pause", "--session", "s1"),
        ("sessions", "heartbeat", "--session", "s1"),
        ("sessions", "end", "--session", "s1"),
        ("sessions", "register", "--id", "s9", "--agent", "a", "--run", "r", "--adapter",
         "codex", "--cwd", "/w"),
        ("sessions", "stop", "--session", "s1", "--session", "s2"),
    ],
    ids=lambda argv: " ".join(argv[:2]),
)  # fmt: skip
def test_a_viewers_write_is_refused_in_words(roles: Roles, argv: tuple[str, ...]) -> None:
    before = roles.owner.dump()
    result = roles.viewer(*argv, "--json")
    assert result.exit_code == 1, result.stdout
    assert "Traceback" not in result.stderr
    if argv[1] == "stop":  # several sessions: each one's refusal is its item
        items = json.loads(result.stdout)["items"]
        assert {item["code"] for item in items} == {"read_only"}
    else:
        error = _error(result)
        assert error["code"] == "read_only"
        assert "permission denied" in error["message"]
        assert "roundtable db grants" in error["message"]
    assert roles.owner.dump() == before


def test_a_writer_acts_and_the_database_names_its_role(roles: Roles) -> None:
    writer = roles.writer
    writer.register("s3")
    assert writer("sessions", "heartbeat", "--session", "s3").exit_code == 0
    paused = writer("sessions", "pause", "--session", "s1", "--operator", "someone-else")
    assert paused.exit_code == 0, paused.stderr
    terminated = writer(
        "sessions", "terminate", "--session", "s2", "--idempotency-key", "k1",
        "--impact-details", "nothing held", "--operator", "someone-else",
    )  # fmt: skip
    assert terminated.exit_code == 0, terminated.stderr
    bulk = writer("sessions", "stop", "--session", "s1", "--session", "s3", "--operator", "bulk")
    assert bulk.exit_code == 0, bulk.stderr
    items = roles.viewer.json("audit")["items"]
    got = [(item["action"], item["session_id"], item["actor"], item["db_user"]) for item in items]
    assert got == [
        ("stop", "s3", "bulk", roles.writer_name),
        ("stop", "s1", "bulk", roles.writer_name),
        ("terminate", "s2", "someone-else", roles.writer_name),
        ("pause", "s1", "someone-else", roles.writer_name),
    ]
    assert items[2]["impact_details"] == "nothing held"
    assert items[3]["previous_status"] == "active" and items[3]["status"] == "paused"


def test_the_owner_is_named_as_the_owner(roles: Roles) -> None:
    assert roles.owner("sessions", "pause", "--session", "s1", "--operator", "boss").exit_code == 0
    (item,) = roles.writer.json("audit")["items"]
    assert (item["actor"], item["db_user"]) == ("boss", "postgres")


def test_a_writer_cannot_forge_the_role_in_the_history(roles: Roles) -> None:
    engine = create_engine(roles.writer.url)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO agent_session_events (session_id, event_type, payload_json,"
                " created_at, actor, db_user) VALUES ('s1', 'paused', '{}',"
                " '2026-09-17T17:26:35Z', 'forger', 'postgres')"
            )
        )
    with engine.begin() as conn, pytest.raises(exc.ProgrammingError, match="permission denied"):
        conn.execute(text("UPDATE agent_session_events SET db_user = 'postgres'"))
    engine.dispose()
    owner = create_engine(roles.owner_url)
    with owner.begin() as conn:
        # Even the owner's update cannot rewrite who wrote a row.
        conn.execute(
            text("UPDATE agent_session_events SET db_user = 'someone' WHERE actor = 'forger'")
        )
        stored = conn.execute(
            text("SELECT db_user FROM agent_session_events WHERE actor = 'forger'")
        ).scalar_one()
    owner.dispose()
    assert stored == roles.writer_name


def test_a_writer_cannot_migrate(roles: Roles) -> None:
    engine = create_engine(roles.writer.url)
    with engine.connect() as conn, pytest.raises(exc.ProgrammingError, match="permission denied"):
        conn.execute(text("CREATE TABLE intruder (id int)"))
    engine.dispose()
    owner = create_engine(roles.owner_url)
    with owner.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0008_session_groups'"))
    owner.dispose()
    upgrade = roles.writer("db", "upgrade", "--json")
    assert upgrade.exit_code == 1
    error = _error(upgrade)
    assert error["code"] == "read_only"
    assert "Only the schema's owner migrates" in error["message"]
    opened = roles.writer("sessions", "pause", "--session", "s1", "--json")
    assert opened.exit_code == 1
    assert "ask its owner to run roundtable db upgrade" in _error(opened)["message"]
    # Read-only, the viewer reads the store that is behind, and never migrates it.
    listed = roles.viewer.json("sessions", "--read-only")
    assert [item["id"] for item in listed["items"]] == ["s1", "s2"]
    assert roles.owner("db", "upgrade").exit_code == 0
    assert roles.viewer("sessions", "--read-only").exit_code == 0


async def test_a_viewer_opens_the_console_and_its_write_is_refused_in_words(roles: Roles) -> None:
    from tests.test_tui_support import (
        console,
        notifications,
        press,
        row_ids,
        screen_text,
        settle,
    )

    app = console(roles.viewer.url)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert row_ids(app) == ["s1", "s2"]
        await press(pilot, "p")
        note = notifications(app)[-1]
        assert "permission denied" in note and "roundtable db grants" in note
        assert "Traceback" not in note
        await press(pilot, "A")
        assert "No operator actions yet" in screen_text(app)
    assert roles.owner.session("s1").status == "active"


async def test_a_read_only_console_on_postgresql_offers_no_action(roles: Roles) -> None:
    from tests.test_tui_support import console, footer_keys, press, row_ids, settle

    app = console(roles.owner.url, read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert row_ids(app) == ["s1", "s2"]
        assert app.ctx.store is not None and app.ctx.store.read_only
        assert not {"heartbeat", "pause", "stop", "resume", "terminate"} & footer_keys(app)
        await press(pilot, "p", "h")
    assert roles.owner.session("s1").status == "active"
