"""An audit of the documented rules against the code (``docs/reference/roundtable.md``,
``docs/getting-started.md#where-the-data-lives``, ``docs/operators-guide.md#the-command-line``): the
rules the other test files do not pin down yet — timestamps, built-in adapters, register's metadata
and replacement through the CLI, reference CLI compatibility, every error code with its exit code, a
locked database, import and export through files and stdin, and bad locations for every command."""

from __future__ import annotations

import json
import random
import re
import sqlite3
import subprocess
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import Result
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import insert, literal, select, text, union_all

from roundtable_console.store.access.devices import device_key_of
from roundtable_console.store.access.web_sessions import sign_in
from roundtable_console.store.clock import format_ts, parse_ts
from roundtable_console.store.db import database, drivers
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.models import Agent, AgentSessionEvent, Claim
from roundtable_console.store.errors import BAD_INPUT_CODES, StoreError
from roundtable_console.store.push.keys import b64url
from roundtable_console.store.reads.sqlfuncs import ts_key
from roundtable_console.store.resume.adapters import (
    BUILTIN_ADAPTERS,
    AdapterConfig,
    builtin,
    resolve,
)
from roundtable_console.store.rules import ACTIVE_STATES
from roundtable_console.store.writes import agent_writes, lifecycle
from roundtable_console.store.writes.transfer import KINDS, TABLES
from roundtable_console.tui import output
from roundtable_console.tui.cli import cli
from tests.conftest import FakeClock
from tests.helpers import DESIGN_ERROR_CODES, Cli, seed_listener, seed_request
from tests.test_transfer import populate

OUR_TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")


pytestmark = pytest.mark.usefixtures("isolated_env")


def last_error(result: Result) -> dict[str, Any]:
    body = json.loads(result.stderr.strip().splitlines()[-1])
    assert set(body) == {"error"}
    return body["error"]  # type: ignore[no-any-return]


# ------------------------------------------------------------------------- §3 timestamps


aware_datetimes = st.datetimes(
    min_value=datetime(1, 1, 2),
    max_value=datetime(9999, 12, 30),
    timezones=st.sampled_from(
        [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8))]
    ),
)


@settings(max_examples=300, deadline=None)
@given(moment=aware_datetimes)
def test_format_ts_is_utc_rfc3339_and_parse_ts_reads_it_back(moment: datetime) -> None:
    written = format_ts(moment)
    assert OUR_TS.match(written), written
    assert parse_ts(written) == moment
    assert parse_ts(written).tzinfo == UTC  # type: ignore[union-attr]


@settings(max_examples=300, deadline=None)
@given(first=aware_datetimes, second=aware_datetimes)
def test_text_order_of_format_ts_is_chronological_order(first: datetime, second: datetime) -> None:
    a, b = format_ts(first), format_ts(second)
    assert (a < b) == (first < second)
    assert (a == b) == (first == second)


def stamp(moment: datetime, separator: str = "T") -> str:
    """Date and time to the second; the year padded (strftime does not pad years before 1000)."""
    return f"{moment.year:04d}-{moment:%m-%d}{separator}{moment:%H:%M:%S}"


def go_rfc3339_nano(moment: datetime, nanos: int) -> str:
    """Go's RFC3339Nano: trailing zeros of the fraction trimmed, no fraction when zero."""
    fraction = f"{moment.microsecond * 1000 + nanos:09d}".rstrip("0")
    offset = moment.strftime("%z")
    zone = "Z" if offset in ("+0000", "") else f"{offset[:3]}:{offset[3:]}"
    return stamp(moment) + (f".{fraction}" if fraction else "") + zone


@settings(max_examples=300, deadline=None)
@given(moment=aware_datetimes, nanos=st.integers(min_value=0, max_value=999))
def test_parse_ts_reads_every_reference_form(moment: datetime, nanos: int) -> None:
    utc = moment.astimezone(UTC)
    whole = utc.replace(microsecond=0)
    # CURRENT_TIMESTAMP: UTC, a space, no zone, whole seconds.
    assert parse_ts(stamp(utc, " ")) == whole
    # RFC 3339 in UTC and with the writer's offset, whole seconds.
    assert parse_ts(stamp(whole) + "Z") == whole
    local_whole = moment.replace(microsecond=0)
    assert parse_ts(go_rfc3339_nano(local_whole, 0)) == whole
    # RFC 3339 with nanoseconds (read to the microsecond), UTC and offset forms.
    assert parse_ts(go_rfc3339_nano(utc, nanos)) == utc
    assert parse_ts(go_rfc3339_nano(moment, nanos)) == utc


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("2026-09-17 17:26:35", datetime(2026, 9, 17, 17, 26, 35, tzinfo=UTC)),
        ("2026-09-17T17:26:35Z", datetime(2026, 9, 17, 17, 26, 35, tzinfo=UTC)),
        ("2026-09-17T17:26:35.123456789Z", datetime(2026, 9, 17, 17, 26, 35, 123456, tzinfo=UTC)),
        ("2026-09-17T19:26:35.5+02:00", datetime(2026, 9, 17, 17, 26, 35, 500000, tzinfo=UTC)),
        ("2026-09-17T12:26:35-05:00", datetime(2026, 9, 17, 17, 26, 35, tzinfo=UTC)),
        ("2026-09-17T17:26:35.000000Z", datetime(2026, 9, 17, 17, 26, 35, tzinfo=UTC)),
    ],
)
def test_parse_ts_examples(written: str, expected: datetime) -> None:
    assert parse_ts(written) == expected


@pytest.mark.parametrize(
    "unreadable", [None, "", "yesterday", "2026-13-01 00:00:00", "2026-02-30T00:00:00Z", "17:26"]
)
def test_parse_ts_gives_none_for_unreadable_text(unreadable: str | None) -> None:
    assert parse_ts(unreadable) is None


def reference_forms(count: int, seed: int) -> list[str]:
    """Millisecond-distinct instants, each written in one of the reference's forms."""
    rng = random.Random(seed)
    base = datetime(2026, 9, 17, tzinfo=UTC)
    written = []
    for _ in range(count):
        moment = base + timedelta(milliseconds=rng.randrange(0, 3 * 24 * 3600 * 1000))
        if rng.random() < 0.3:
            moment = moment.replace(microsecond=0)
        form = rng.randrange(5)
        if form == 0:
            written.append(moment.replace(microsecond=0).strftime("%Y-%m-%d %H:%M:%S"))
        elif form == 1:
            written.append(go_rfc3339_nano(moment, 0))
        elif form == 2:
            zone = timezone(timedelta(hours=rng.choice([-8, 2, 5])))
            written.append(go_rfc3339_nano(moment.astimezone(zone), 0))
        else:
            written.append(format_ts(moment))
    return written


def test_the_sql_sort_key_orders_reference_forms_chronologically(store: Store) -> None:
    """The lists sort on ts_key in SQL; its order must agree with parse_ts, on both backends
    (for instants at least a millisecond apart: SQLite's julianday keeps milliseconds)."""
    written = reference_forms(150, seed=7)
    rows = union_all(
        *(
            select(literal(index).label("i"), literal(value).label("t"))
            for index, value in enumerate(written)
        )
    ).subquery()
    with store.read() as db:
        by_sql = list(db.execute(select(rows.c.i).order_by(ts_key(rows.c.t), rows.c.i)).scalars())
    parsed = [parse_ts(value) for value in written]
    assert None not in parsed
    by_time = sorted(range(len(written)), key=lambda i: (parsed[i], i))
    assert by_sql == by_time


def test_every_timestamp_we_write_is_utc_rfc3339(sqlite_store: Store) -> None:
    clock = FakeClock(
        datetime(2026, 9, 17, 22, 56, 35, 120000, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    )
    with sqlite_store.write() as db:
        db.execute(
            insert(Agent.__table__).values(  # type: ignore[attr-defined]
                id="a1", role="dev", name="A", adapter="codex", status="idle", is_enabled=1
            )
        )
        agent_writes.register(
            db=db, session_id="s1", agent_id="a1", run_id="r1", adapter="codex",
            working_directory="/w", clock=clock,
        )  # fmt: skip
        agent_writes.heartbeat(db=db, session_id="s1", clock=clock)
        lifecycle.pause(db=db, session_id="s1", actor="op", idempotency_key="k1", clock=clock)
        lifecycle.resume(db=db, session_id="s1", actor="op", idempotency_key="k2", clock=clock)
        lifecycle.stop(db=db, session_id="s1", actor="op", clock=clock)
        agent_writes.end(db=db, session_id="s1", clock=clock)
    with sqlite_store.read() as db:
        stamps = [
            *db.execute(
                text("SELECT started_at, last_seen_at, ended_at FROM agent_sessions")
            ).one(),
            *db.execute(text("SELECT created_at FROM agent_session_events")).scalars(),
            *db.execute(text("SELECT created_at FROM events")).scalars(),
            *db.execute(text("SELECT created_at FROM idempotency_keys")).scalars(),
        ]
    assert len(stamps) == 3 + 6 + 3 + 2
    assert set(stamps) == {"2026-09-17T17:26:35.120000Z"}


# -------------------------------------------------------------------------------- §4 schema


def test_active_states_are_exactly_the_reference_five() -> None:
    assert ACTIVE_STATES == ("starting", "active", "running", "paused", "resuming")


def test_indexes_exist_for_every_order_and_filter(sqlite_store: Store) -> None:
    with sqlite_store.read() as db:
        rows = db.execute(
            text("SELECT tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
        ).all()
    targets = [re.sub(r"\s+", "", sql.split(" ON ", 1)[1]) for _, sql in rows]
    wanted = [
        "agent_sessions((julianday(started_at)),id)",
        "agent_sessions(status,(julianday(started_at)),id)",
        "agent_sessions(agent_id,(julianday(started_at)),id)",
        "agent_sessions(run_id,(julianday(started_at)),id)",
        "agent_session_events(session_id,id)",
        "events(run_id,id)",
        "tasks(assigned_agent_id",
        "claims(agent_id",
        "proposals(agent_id",
    ]
    for prefix in wanted:
        assert any(target.startswith(prefix) for target in targets), prefix
    workspace = [t for t in targets if t.startswith("agent_sessions((COALESCE(workspace_id")]
    assert workspace and workspace[0].endswith("(julianday(started_at)),id)")


def test_our_additions_have_the_designed_shape(sqlite_store: Store) -> None:
    with sqlite_store.read() as db:
        keys = [row[1] for row in db.execute(text("PRAGMA table_info(idempotency_keys)"))]
        session_columns = {
            row[1]: row for row in db.execute(text("PRAGMA table_info(agent_sessions)"))
        }
    assert keys == ["key", "action", "session_id", "outcome", "created_at"]
    version = session_columns["version"]
    assert (version[2].upper(), version[3], version[4]) == ("INTEGER", 1, "0")


# ------------------------------------------------------------------- §5 built-in adapters


def test_builtin_adapters_are_the_reference_five_and_have_no_pattern() -> None:
    assert BUILTIN_ADAPTERS == ("codex", "claude", "gemini", "opencode", "generic")
    for name in BUILTIN_ADAPTERS:
        for configured in (None, {}, {"other": AdapterConfig(name="other", resume_pattern="x")}):
            adapter = resolve(configured, name)
            assert adapter == builtin(name)
            assert not adapter.explicit and adapter.resume_pattern is None
            assert adapter.expand("ext-1") is None
    # Even a built-in that somehow carries a pattern does not expand it: disposable.
    assert (
        AdapterConfig(
            name="codex", resume_pattern="{{external_session_id}}", explicit=False
        ).expand("e")
        is None
    )
    configured = resolve(
        {"codex": AdapterConfig(name="codex", resume_pattern="c {{external_session_id}}")}, "codex"
    )
    assert configured.explicit and configured.expand("e") == "c e"


def test_builtin_adapters_store_no_resume_command(sqlite_store: Store, clock: FakeClock) -> None:
    with sqlite_store.write() as db:
        for name in BUILTIN_ADAPTERS:
            stored = agent_writes.register(
                db=db, session_id=name, agent_id="a", run_id="r", adapter=name,
                working_directory="/w", external_session_id="ext-1", clock=clock,
            )  # fmt: skip
            assert stored.external_resume_command is None, name


def test_builtin_adapters_are_not_resumable(rt: Cli) -> None:
    for name in BUILTIN_ADAPTERS:
        argv = ["--external-session-id", "ext-1"]
        result = rt(
            "sessions", "register", "--id", name, "--agent", name, "--run", "r",
            "--adapter", name, "--cwd", "/w", *argv,
        )  # fmt: skip
        assert result.exit_code == 0
        body = json.loads(rt("resume", "--session", name, "--json").stdout)
        assert body["resumable"] is False and body["resume_argv"] is None
        assert "disposable" in body["reason"]


# ------------------------------------------------------------ §5 register through the CLI


@pytest.mark.parametrize(
    "bad",
    ["[1, 2]", "[]", '"text"', "3", "-1.5", "null", "true", "NaN", "Infinity", '{"a": NaN}',
     '{"a": -Infinity}', "{not json", "{}x", "[" * 5000 + "]" * 5000,
     '{"a":' * 5000 + "1" + "}" * 5000],
    ids=lambda bad: bad if len(bad) < 20 else f"deeply-nested-{bad[:2]}",
)  # fmt: skip
def test_register_metadata_that_is_not_a_json_object_fails_before_writing(
    rt: Cli, bad: str
) -> None:
    rt.register("s1", "--metadata", '{"keep": 1}')
    before = rt.dump()
    rt.clock.advance(seconds=5)
    result = rt(
        "sessions", "register", "--id", "s1", "--agent", "other", "--run", "r", "--adapter",
        "codex", "--cwd", ".", "--metadata", bad, "--json",
    )  # fmt: skip
    assert result.exit_code == 2
    error = last_error(result)
    assert error["code"] == "invalid_session"
    assert error["message"].startswith("Metadata ")
    assert result.stdout == ""
    assert rt.dump() == before


def test_register_empty_metadata_is_stored_as_null(rt: Cli) -> None:
    for empty in ("{}", " { } ", ""):
        rt.register("s1", "--metadata", '{"a": 1}')
        body = json.loads(rt.register("s1", "--metadata", empty, "--json").stdout)
        assert body["metadata"] is None
        assert rt.session_row("s1")["metadata_json"] is None


def test_register_again_replaces_everything_but_the_first_start(rt: Cli) -> None:
    rt.register(
        "s1", "--provider", "openai", "--model", "gpt", "--external-session-id", "e1",
        "--resume-command", "codex resume e1", "--mcp-socket", "/tmp/s", "--status", "running",
        "--metadata", '{"branch": "main"}',
    )  # fmt: skip
    rt.clock.advance(seconds=10)
    assert rt("sessions", "end", "--session", "s1").exit_code == 0
    rt.clock.advance(seconds=10)
    body = json.loads(
        rt(
            "sessions", "register", "--id", "s1", "--agent", "a2", "--run", "r2",
            "--adapter", "claude", "--cwd", "/elsewhere", "--json",
        ).stdout
    )  # fmt: skip
    assert body["started_at"] == "2026-09-17T17:26:35.000000Z"
    assert body["last_seen_at"] == "2026-09-17T17:26:55.000000Z"
    assert body["ended_at"] is None
    assert body["status"] == "active"
    assert (body["agent_id"], body["run_id"], body["adapter"]) == ("a2", "r2", "claude")
    assert body["working_directory"] == "/elsewhere"
    for cleared in (
        "provider", "model", "external_session_id", "external_resume_command", "mcp_socket",
        "metadata",
    ):  # fmt: skip
        assert body[cleared] is None, cleared
    stored = rt.session_row("s1")
    assert stored is not None and stored["metadata_json"] is None and stored["version"] == 2


# ------------------------------------------------------------ §7 reference compatibility


def leaf_commands(
    group: click.Group, path: tuple[str, ...] = ()
) -> dict[tuple[str, ...], click.Command]:
    found: dict[tuple[str, ...], click.Command] = {}
    for name, command in group.commands.items():
        here = (*path, name)
        if isinstance(command, click.Group):
            if command.invoke_without_command:
                found[here] = command
            found.update(leaf_commands(command, here))
        else:
            found[here] = command
    return found


# `hooks run` is the agents' hook process, not a command for people: it reads an event on stdin,
# takes its options raw and exits 0 whatever happens (tests/test_hooks_robust.py holds it to it).
COMMANDS = {
    path: command
    for path, command in leaf_commands(cli).items()  # type: ignore[arg-type]
    if path != ("hooks", "run")
}


def test_every_command_takes_json_db_and_root() -> None:
    assert len(COMMANDS) >= 20
    for path, command in COMMANDS.items():
        options = {opt for param in command.params for opt in getattr(param, "opts", ())}
        assert {"--json", "--db", "--root"} <= options, path


def test_the_reference_invocations_work_with_flags_after_the_subcommand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    rt = Cli(url="unused", clock=clock)

    def ok(*args: str) -> str:
        result = rt(*args, db=False)
        assert result.exit_code == 0, result.stderr
        return result.stdout

    registered = ok(
        "sessions", "register", "--root", ".", "--id", "S", "--agent", "A", "--run", "R",
        "--adapter", "codex", "--cwd", ".",
    )  # fmt: skip
    assert registered == "S\tactive\tA\tR\tcodex\n"
    assert (workspace / ".roundtable" / "roundtable.db").is_file()
    clock.advance(seconds=1)
    assert ok("sessions", "heartbeat", "--root", ".", "--session", "S") == (
        "S\tactive\t2026-09-17T17:26:36.000000Z\n"
    )
    listed = "S\tA\tactive\tcodex\t\n"
    assert ok("sessions", "--root", ".") == listed
    assert ok("sessions", "list", "--root", ".") == listed
    assert ok("resume", "--root", ".", "--session", "S").startswith("# Roundtable Resume Briefing")
    clock.advance(seconds=1)
    assert ok("sessions", "end", "--root", ".", "--session", "S") == (
        "S\tended\t2026-09-17T17:26:37.000000Z\n"
    )
    # Nothing went to the embedded default store.
    assert not (tmp_path / "xdg-data").exists()


def test_list_honours_root_given_after_list(tmp_path: Path, clock: FakeClock) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    rt = Cli(url="unused", clock=clock)
    for root, session_id in ((first, "in-one"), (second, "in-two")):
        result = rt(
            "sessions", "register", "--root", str(root), "--id", session_id, "--agent", "a",
            "--run", "r", "--adapter", "codex", "--cwd", ".", db=False,
        )  # fmt: skip
        assert result.exit_code == 0
    for root, session_id in ((first, "in-one"), (second, "in-two")):
        for args in (("sessions", "list", "--root", str(root)), ("sessions", "--root", str(root))):
            body = json.loads(rt(*args, "--json", db=False).stdout)
            assert [item["id"] for item in body["items"]] == [session_id], args


def test_human_output_on_a_terminal_names_its_columns(
    rt: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(output, "stdout_is_tty", lambda: True)

    def shown(*args: str) -> list[list[str]]:
        result = rt(*args)
        assert result.exit_code == 0, result.stderr
        return [re.split(r"\s{2,}", line) for line in result.stdout.splitlines()]

    assert shown(
        "sessions", "register", "--id", "s1", "--agent", "a1", "--run", "r1", "--adapter",
        "codex", "--cwd", ".", "--resume-command", "codex resume x",
    ) == [
        ["ID", "STATUS", "AGENT", "RUN", "ADAPTER"], ["s1", "active", "a1", "r1", "codex"],
    ]  # fmt: skip
    assert shown("sessions") == [
        ["ID", "AGENT", "STATUS", "ADAPTER", "RESUME COMMAND"],
        ["s1", "a1", "active", "codex", "codex resume x"],
    ]
    rt.clock.advance(seconds=1)
    assert shown("sessions", "heartbeat", "--session", "s1") == [
        ["ID", "STATUS", "LAST SEEN"],
        ["s1", "active", "2026-09-17T17:26:36.000000Z"],
    ]
    assert shown("sessions", "end", "--session", "s1", "--status", "done") == [
        ["ID", "STATUS", "ENDED"],
        ["s1", "done", "2026-09-17T17:26:36.000000Z"],
    ]


# --------------------------------------------------------------------- §5 / §7 error codes


def git_repo_on(path: Path, branch: str) -> Path:
    path.mkdir()
    subprocess.run(["git", "init", "-q", "-b", branch, str(path)], check=True, timeout=30)
    return path


def enabled_agent(rt: Cli, enabled: int = 1) -> None:
    rt.insert(
        Agent, id="a1", role="dev", name="A", adapter="codex", status="idle", is_enabled=enabled
    )


def held_claim(rt: Cli) -> None:
    rt.insert(
        Claim, id="c1", resource_id="src/x.py", agent_id="a1", task_id="t1", claim_type="edit",
        status="active", expires_at="2099-01-01T00:00:00Z", renewable=1, resume_policy="hold",
    )  # fmt: skip


def scenario(code: str, rt: Cli, tmp_path: Path) -> tuple[list[str], str | None]:
    """Set the store up so that the returned command is refused with ``code``."""
    key = ["--idempotency-key", "k"]
    if code == "invalid_session":
        return ["sessions", "register", "--id", " ", "--agent", "a", "--run", "r",
                "--adapter", "codex", "--cwd", "."], None  # fmt: skip
    if code == "invalid_session_status":
        rt.register("s1")
        return ["sessions", "heartbeat", "--session", "s1", "--status", "x" * 65], None
    if code == "session_not_found":
        return ["sessions", "end", "--session", "ghost"], None
    if code == "agent_not_found":
        rt.register("s1", "--status", "paused")
        return ["sessions", "resume", "--session", "s1", *key], None
    if code == "agent_unavailable":
        rt.register("s1", "--status", "stopped")
        enabled_agent(rt, enabled=0)
        return ["sessions", "resume", "--session", "s1", *key], None
    if code == "illegal_session_transition":
        rt.register("s1", "--status", "crashed")
        return ["sessions", "stop", "--session", "s1"], None
    if code == "session_transition_conflict":
        rt.register("s1")
        return ["sessions", "pause", "--session", "s1", "--expected-version", "4"], None
    if code == "session_branch_conflict":
        repo = git_repo_on(tmp_path / "repo", "feature")
        rt.register(
            "s1", "--status", "paused", "--metadata", '{"branch": "main"}', "--cwd", str(repo)
        )
        enabled_agent(rt)
        return ["sessions", "resume", "--session", "s1", *key], None
    if code == "termination_impact_required":
        rt.register("s1")
        held_claim(rt)
        return ["sessions", "terminate", "--session", "s1", *key], None
    if code == "idempotency_key_required":
        rt.register("s1")
        return ["sessions", "terminate", "--session", "s1"], None
    if code == "idempotency_key_reuse":
        rt.register("s1")
        rt.register("s2")
        assert rt("sessions", "pause", "--session", "s1", *key).exit_code == 0
        return ["sessions", "pause", "--session", "s2", *key], None
    if code == "invalid_limit":
        return ["sessions", "list", "--limit", "201"], None
    if code == "invalid_cursor":
        return ["sessions", "list", "--cursor", "Zm9v"], None
    if code == "invalid_import":
        return ["import", "-"], f"{GOOD_AGENT_LINE}\n[]\n"
    if code == "database_unavailable":
        return ["sessions", "list"], None
    if code == "read_only":
        rt.register("s1")
        return ["sessions", "pause", "--session", "s1", "--read-only"], None
    if code == "not_launchable":
        rt.register("s1", "--status", "paused")  # its adapter has no resume_pattern
        return ["resume", "--session", "s1", "--exec", *key], None
    if code == "invalid_token_request":
        return ["tokens", "create", "--name", "no spaces", "--role", "viewer"], None
    if code == "token_not_found":
        return ["tokens", "revoke", "--name", "nobody"], None
    if code == "device_not_found":
        return ["tokens", "revoke-device", "dev_nobody"], None
    if code == "request_not_found":
        return ["requests", "allow", "req-ghost"], None
    if code in ("request_already_settled", "invalid_decision", "not_deliverable"):
        rt.register("s1")
        agent = "gemini" if code == "not_deliverable" else "claude-code"
        state = "denied" if code == "request_already_settled" else "pending"
        seed_request(rt.url, "req-1", "s1", agent=agent, state=state)
        if code == "invalid_decision":
            return ["requests", "deny", "req-1", "--message", "a\x1bb"], None
        return ["requests", "allow", "req-1"], None
    if code == "invalid_reply":
        rt.register("s1")
        seed_listener(rt.url, "s1")
        return ["reply", "s1", "a\x1b[2Jb"], None
    if code == "no_reply_path":
        rt.register("s1")  # its agent waits for nothing
        return ["reply", "s1", "go on"], None
    if code == "invalid_host":
        return ["host", "run", "--name", "not a name"], None
    if code == "invalid_new_session":
        return ["new", "--host", "h", "--project", "p", "--agent", "codex", "--branch", "b"], None
    if code == "agent_not_running":
        rt.register("s1")  # by hand: no pane Roundtable started
        return ["sessions", "stop-agent", "--session", "s1"], None
    raise AssertionError(code)


GOOD_AGENT_LINE = json.dumps(
    {"kind": "agent", "id": "a9", "role": "r", "name": "n", "adapter": "x"}
)
EXPECTED_EXIT = {
    "invalid_session": 2,
    "invalid_session_status": 2,
    "invalid_limit": 2,
    "invalid_cursor": 2,
    "invalid_import": 2,
    "idempotency_key_required": 2,
    "session_not_found": 1,
    "agent_not_found": 1,
    "agent_unavailable": 1,
    "illegal_session_transition": 1,
    "session_transition_conflict": 1,
    "session_branch_conflict": 1,
    "termination_impact_required": 1,
    "idempotency_key_reuse": 1,
    "database_unavailable": 1,
    "read_only": 1,
    "not_launchable": 1,
    "invalid_token_request": 2,
    "token_not_found": 1,
    "device_not_found": 1,
    "request_not_found": 1,
    "request_already_settled": 1,
    "invalid_decision": 2,
    "not_deliverable": 1,
    "invalid_reply": 2,
    "no_reply_path": 1,
    "invalid_host": 2,
    "agent_not_running": 1,
    "invalid_new_session": 2,
}


# Codes the command line never gives: the server's (tests/test_api_*.py reach each of them over
# HTTP), and host_unavailable, the server's and the console's when an agent's host cannot be
# asked (tests/test_hosts_launch.py, tests/test_tui_through_host.py).
SERVER_CODES = frozenset(
    {
        "host_unavailable",
        "invalid_token",
        "workspace_not_found",
        "session_create_conflict",
        "invalid_event_cursor",
        "too_many_pending_requests",
        # An installed app's device: the web console's sign-in (tests/test_device_sign_ins.py).
        "invalid_device",
        # A client's, through a server: tests/test_cli_through_server.py (a server down),
        # tests/test_tui_through_server.py (what the console does not do through one yet).
        "server_unavailable",
        "not_through_server",
        # A host's refusal of a new session: it needs a host running (tests/test_hosts_new.py:
        # the command line's exit 1 there).
        "not_started",
        # A session's worktree removed by its host (tests/test_hosts_changes.py).
        "not_finishable",
        "worktree_not_clean",
    }
)


def test_the_error_codes_are_designs_list_and_the_stores() -> None:
    from roundtable_console.client.calls import ServerRefused

    # A refusal of the server's carries the server's own code, one of these.
    codes = {cls.code for cls in StoreError.__subclasses__() if cls is not ServerRefused}
    assert codes == DESIGN_ERROR_CODES == set(EXPECTED_EXIT) | SERVER_CODES
    assert BAD_INPUT_CODES - SERVER_CODES == {
        code for code, exit in EXPECTED_EXIT.items() if exit == 2
    }


@pytest.mark.parametrize("code", sorted(DESIGN_ERROR_CODES - SERVER_CODES))
def test_every_error_code_is_reachable_with_its_exit_code_and_a_sentence(
    rt: Cli, tmp_path: Path, code: str
) -> None:
    argv, stdin = scenario(code, rt, tmp_path)
    if code == "database_unavailable":
        junk = tmp_path / "junk.db"
        junk.write_bytes(b"not a database at all")
        rt = Cli(url=f"sqlite:///{junk}", clock=rt.clock)
    before = rt.dump() if code != "database_unavailable" else []
    result = rt(*argv, "--json", input=stdin)
    assert result.exit_code == EXPECTED_EXIT[code], result.stderr
    error = last_error(result)
    assert error["code"] == code
    message = error["message"]
    assert "\n" not in message and message.endswith("."), message
    assert len(message.split()) >= 5, message
    assert "Traceback" not in result.stderr and result.stdout == ""
    if code != "database_unavailable":
        assert rt.dump() == before
    human = rt(*argv, input=stdin)
    assert human.exit_code == EXPECTED_EXIT[code]
    assert human.stderr.strip().splitlines()[-1] == f"error: {message}"


def test_a_locked_sqlite_database_is_database_unavailable(
    rt: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt.register("s1")
    monkeypatch.setattr(database, "BUSY_TIMEOUT_MS", 200)
    monkeypatch.setattr(drivers, "BUSY_TIMEOUT_MS", 200)  # the agent's quick writes wait this
    path = rt.url.removeprefix("sqlite:///")
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        result = rt("sessions", "heartbeat", "--session", "s1", "--json")
        assert result.exit_code == 1
        error = last_error(result)
        assert error["code"] == "database_unavailable"
        assert "locked" in error["message"] and "retry" in error["message"]
        # Readers are not blocked by a writer (WAL).
        assert rt("sessions", "--json").exit_code == 0
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert rt("sessions", "heartbeat", "--session", "s1").exit_code == 0


# ------------------------------------------------------- bad locations, for every command


def minimal_argv(path: tuple[str, ...]) -> tuple[list[str], str | None]:
    session = ["--session", "s1"]
    if path == ("sessions", "register"):
        return [*path, "--id", "s1", "--agent", "a", "--run", "r", "--adapter", "codex",
                "--cwd", "."], None  # fmt: skip
    if path[:1] == ("sessions",) and path[1:] and path[1] != "list":
        extra = (
            ["--idempotency-key", "k"]
            if path[1] in ("pause", "stop", "resume", "terminate")
            else []
        )
        return [*path, *session, *extra], None
    if path == ("resume",):
        return [*path, *session], None
    if path == ("import",):
        return [*path, "-"], ""
    if path == ("db", "prune"):
        return [*path, "--heartbeats-older-than", "7d"], None
    if path == ("db", "grants"):
        return [*path, "--role", "r", "--viewer"], None
    if path == ("tokens", "create"):
        return [*path, "--name", "t", "--role", "viewer"], None
    if path == ("tokens", "revoke"):
        return [*path, "--name", "t"], None
    if path == ("tokens", "revoke-device"):
        return [*path, "dev_none"], None
    if path == ("hooks", "install"):
        return [*path, "claude-code", "--project", "."], None
    if path == ("hooks", "uninstall"):
        return [*path, "claude-code", "--dry-run"], None
    if path in (("requests", "allow"), ("requests", "deny")):
        return [*path, "req-1" if path[1] == "allow" else "req-2"], None
    if path == ("reply",):
        return [*path, "s1"], None
    if path == ("new",):
        return [*path, "--host", "h", "--project", "p", "--agent", "claude-code"], None
    if path in (("changes",), ("finish",)):
        return [*path, "s1"], None
    return list(path), None


CHECKED_COMMANDS = sorted(path for path in COMMANDS if path != ("tui",))
# The commands that open the store (db grants prints statements for one, opening none; hooks
# status and uninstall read and write the agents' settings files only).
OPENING_COMMANDS = [
    path
    for path in CHECKED_COMMANDS
    if path
    not in (("db", "grants"), ("hooks", "status"), ("hooks", "uninstall"), ("host", "service"))
]


@pytest.mark.parametrize("path", CHECKED_COMMANDS, ids=" ".join)
def test_a_root_that_is_not_a_directory_is_bad_input_for_every_command(
    tmp_path: Path, clock: FakeClock, path: tuple[str, ...]
) -> None:
    afile = tmp_path / "plain.txt"
    afile.write_text("keep me")
    argv, stdin = minimal_argv(path)
    rt = Cli(url="unused", clock=clock)
    for root in (afile, tmp_path / "missing"):
        result = rt(*argv, "--root", str(root), "--json", input=stdin, db=False)
        assert result.exit_code == 2, (path, result.stderr)
        error = last_error(result)
        assert error["code"] == "invalid_configuration"
        assert str(root) in error["message"]
        assert result.stdout == ""
    assert afile.read_text() == "keep me"
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("path", OPENING_COMMANDS, ids=" ".join)
def test_a_file_that_is_not_sqlite_is_refused_and_never_overwritten_by_any_command(
    tmp_path: Path, clock: FakeClock, path: tuple[str, ...]
) -> None:
    precious = tmp_path / "notes.db"
    content = b"my precious notes, not a database\n" * 10
    precious.write_bytes(content)
    argv, stdin = minimal_argv(path)
    rt = Cli(url=f"sqlite:///{precious}", clock=clock)
    result = rt(*argv, "--json", input=stdin)
    assert result.exit_code == 1, (path, result.stderr)
    error = last_error(result)
    assert error["code"] == "database_unavailable"
    assert str(precious) in error["message"]
    assert result.stdout == ""
    assert precious.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]


# ------------------------------------------------------------------ §7 import and export


@pytest.fixture
def populated(rt: Cli) -> Cli:
    rt.with_store(lambda opened: populate(opened, FakeClock()))
    return rt


def test_the_round_trip_fixture_covers_every_kind_and_column(populated: Cli) -> None:
    records = [json.loads(line) for line in populated.dump()]
    for kind, table in TABLES.items():
        rows = [record for record in records if record["kind"] == kind]
        assert rows, kind
        for column in table.columns.keys():
            assert any(row[column] is not None for row in rows), (kind, column)
    assert list(TABLES) == list(KINDS)


def test_cli_export_then_import_through_a_file_and_stdin_loses_nothing(
    populated: Cli, tmp_path: Path, clock: FakeClock
) -> None:
    exported = populated("export")
    assert exported.exit_code == 0
    assert exported.stderr.strip() == f"Exported {len(exported.stdout.splitlines())} records."
    assert exported.stdout.splitlines(keepends=True) == populated.dump()
    dump_file = tmp_path / "dump.jsonl"
    dump_file.write_text(exported.stdout, encoding="utf-8")
    counts = {
        kind: sum(1 for line in exported.stdout.splitlines() if json.loads(line)["kind"] == kind)
        for kind in KINDS
    }
    for name, argv, stdin in (
        ("from-file", ["import", str(dump_file), "--json"], None),
        ("from-stdin", ["import", "-", "--json"], exported.stdout),
    ):
        target = Cli(url=f"sqlite:///{tmp_path / name / 'copy.db'}", clock=clock)
        imported = target(*argv, input=stdin)
        assert imported.exit_code == 0, imported.stderr
        assert json.loads(imported.stdout) == counts
        assert target("export").stdout == exported.stdout
        # Importing the same export again changes nothing.
        assert target(*argv, input=stdin).exit_code == 0
        assert target("export").stdout == exported.stdout


def test_cli_export_json_is_still_json_lines_and_import_human_output_names_counts(
    rt: Cli, tmp_path: Path, clock: FakeClock
) -> None:
    rt.register("s1")
    exported = rt("export", "--json")
    assert exported.exit_code == 0 and exported.stderr == ""
    records = [json.loads(line) for line in exported.stdout.splitlines()]
    assert {record["kind"] for record in records} == {"session", "session_event"}
    target = Cli(url=f"sqlite:///{tmp_path / 'copy.db'}", clock=clock)
    human = target("import", "-", input=exported.stdout)
    assert human.exit_code == 0
    assert "session\t1" in human.stdout.splitlines()
    assert "session_event\t1" in human.stdout.splitlines()


def test_a_bad_import_names_its_line_and_writes_nothing(rt: Cli, tmp_path: Path) -> None:
    rt.register("s1")
    before = rt.dump()
    good = GOOD_AGENT_LINE
    bad_lines = {
        "[1]": "line 3",
        '{"kind": "session", "id": "s2"}': "line 3",
        '{"kind": "nope"}': "line 3",
        '{"kind": "agent", "id": "a8", "role": "r", "name": "n", "adapter": "x", "bogus": 1}': (
            "line 3"
        ),
        '{"kind": "session_event", "session_id": "s1", "event_type": "x", "payload_json": '
        + '"{}", "created_at": "now", "id": "seven"}': "line 3",
        '{"a":' * 5000 + "1" + "}" * 5000: "line 3",
    }
    for bad, where in bad_lines.items():
        source = tmp_path / "bad.jsonl"
        source.write_text(f"{good}\n\n{bad}\n{good}\n", encoding="utf-8")
        result = rt("import", str(source), "--json")
        assert result.exit_code == 2, bad
        error = last_error(result)
        assert error["code"] == "invalid_import"
        assert error["message"].startswith(f"{where}:"), error["message"]
        assert rt.dump() == before


def test_history_kinds_append_on_import(rt: Cli, tmp_path: Path, clock: FakeClock) -> None:
    rt.register("s1")
    exported = rt("export").stdout
    target = Cli(url=f"sqlite:///{tmp_path / 'copy.db'}", clock=clock)
    clock.advance(seconds=1)
    target.register("s1")
    assert target("import", "-", input=exported).exit_code == 0
    events = target.with_store(_session_events)
    assert sorted(created for _, created in events) == [
        "2026-09-17T17:26:35.000000Z",
        "2026-09-17T17:26:36.000000Z",
    ]
    # The imported session row replaced ours: upsert by id.
    assert target.session_row("s1")["started_at"] == "2026-09-17T17:26:35.000000Z"


def _session_events(opened: Store) -> list[tuple[str, str]]:
    table = AgentSessionEvent.__table__  # type: ignore[attr-defined]
    with opened.read() as db:
        return [(row.event_type, row.created_at) for row in db.execute(select(table))]


# ------------------------------------------------------------------ text that is not text


@pytest.mark.parametrize("bad", ["a\u2028b", "a\u2029b", "a\udcffb", "a\x85b", "\ufeffa"])
def test_a_status_must_be_printable(sqlite_store: Store, clock: FakeClock, bad: str) -> None:
    with pytest.raises(StoreError) as raised, sqlite_store.write() as db:
        agent_writes.register(
            db=db, session_id="s1", agent_id="a", run_id="r", adapter="codex",
            working_directory="/w", status=bad, clock=clock,
        )  # fmt: skip
    assert raised.value.code == "invalid_session_status"
    with sqlite_store.read() as db:
        assert db.execute(text("SELECT COUNT(*) FROM agent_sessions")).scalar_one() == 0


def test_arguments_that_were_not_utf8_are_bad_input_not_a_bug(rt: Cli) -> None:
    # Python keeps undecodable argv bytes as lone surrogates, which no database can store.
    rt.register("s1")
    before = rt.dump()
    for argv in (
        ["sessions", "register", "--id", "s\udcff", "--agent", "a", "--run", "r",
         "--adapter", "codex", "--cwd", "."],
        ["sessions", "heartbeat", "--session", "s1", "--external-session-id", "e\udcff"],
        ["sessions", "pause", "--session", "s1", "--operator", "\udce9ve"],
    ):  # fmt: skip
        result = rt(*argv, "--json")
        assert result.exit_code == 2, result.stderr
        error = last_error(result)
        assert error["code"] == "usage_error"
        assert "not valid UTF-8" in error["message"]
        human = rt(*argv)
        assert human.exit_code == 2
        assert human.stderr.strip().splitlines()[-1].startswith("error: Argument ")
    assert rt.dump() == before


def test_an_import_line_that_is_not_utf8_is_named_and_nothing_is_written(
    rt: Cli, tmp_path: Path
) -> None:
    source = tmp_path / "latin1.jsonl"
    source.write_bytes(GOOD_AGENT_LINE.encode() + b"\n" + b'{"kind": "agent", "id": "caf\xe9"}\n')
    for argv, stdin in ((["import", str(source)], None), (["import", "-"], source.read_bytes())):
        result = rt(*argv, "--json", input=stdin)
        assert result.exit_code == 2
        error = last_error(result)
        assert error["code"] == "invalid_import"
        assert error["message"].startswith("line 2: not UTF-8")
        assert rt.dump() == []


def test_an_import_with_a_bom_and_crlf_line_ends_is_accepted(rt: Cli) -> None:
    data = b"\xef\xbb\xbf" + GOOD_AGENT_LINE.encode() + b"\r\n\r\n"
    result = rt("import", "-", "--json", input=data)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["agent"] == 1
    assert [json.loads(line)["id"] for line in rt.dump()] == ["a9"]


# ---------------------------------------------------- every way a database is unavailable


@pytest.mark.parametrize(
    "url",
    [
        "foo.db",
        "mysql://user@localhost/db",
        "sqlite:///{tmp}",
        "sqlite:///{tmp}/file.txt/child.db",
        "postgresql://127.0.0.1:1/x",
    ],
)
def test_every_unavailable_database_is_refused_with_a_sentence(
    tmp_path: Path, clock: FakeClock, url: str
) -> None:
    (tmp_path / "file.txt").write_text("x")
    rt = Cli(url=url.format(tmp=tmp_path), clock=clock)
    result = rt("sessions", "heartbeat", "--session", "s1", "--json")
    assert result.exit_code == 1
    error = last_error(result)
    assert error["code"] == "database_unavailable"
    assert error["message"].endswith(".") and "\n" not in error["message"]
    assert (tmp_path / "file.txt").read_text() == "x"


# ----------------------------------------------------------- --json output, every command


def success_argv(path: tuple[str, ...]) -> tuple[list[str], str | None]:
    """Arguments under which each command succeeds on the store ``json_ready`` builds."""
    on = {"pause": "p", "stop": "st", "resume": "rs", "terminate": "t"}
    if path == ("sessions", "register"):
        return [*path, "--id", "new", "--agent", "a", "--run", "r", "--adapter", "codex",
                "--cwd", "."], None  # fmt: skip
    if path[:1] == ("sessions",) and path[1:] and path[1] != "list":
        extra = ["--idempotency-key", f"key-{path[1]}"] if path[1] in on else []
        return [*path, "--session", on.get(path[1], "s1"), *extra], None
    if path == ("resume",):
        return [*path, "--session", "s1"], None
    if path in (("requests", "allow"), ("requests", "deny")):
        return [*path, "req-1" if path[1] == "allow" else "req-2"], None
    if path == ("demo",):
        return [*path, "--sessions", "1"], None
    if path == ("reply",):
        return [*path, "w", "go on"], None
    if path == ("import",):
        return [*path, "-"], GOOD_AGENT_LINE + "\n"
    if path == ("db", "prune"):
        return [*path, "--heartbeats-older-than", "7d"], None
    if path == ("db", "grants"):
        return [*path, "--role", "ops", "--writer"], None
    if path == ("tokens", "create"):
        return [*path, "--name", "new-viewer", "--role", "viewer"], None
    if path == ("tokens", "revoke"):
        return [*path, "--name", "viewer-1"], None
    if path == ("tokens", "revoke-device"):
        return [*path, SEEDED_DEVICE], None
    if path[:1] == ("hooks",) and path != ("hooks", "status"):
        return [*path, "claude-code", "--dry-run"], None  # never your own settings, in a test
    return list(path), None


@pytest.fixture
def json_ready(rt: Cli) -> Cli:
    enabled_agent(rt)
    for session_id in ("s1", "p", "st", "t"):
        rt.register(session_id)
    rt.register("rs", "--status", "paused")
    made = rt("tokens", "create", "--name", "viewer-1", "--role", "viewer")
    assert made.exit_code == 0
    rt.with_store(lambda store: seed_device(store, made.stdout.strip()))
    seed_request(rt.url, "req-1", "s1")
    seed_request(rt.url, "req-2", "s1")
    rt.register("w")
    seed_listener(rt.url, "w")
    return rt


SEEDED_DEVICE = "dev_seeded"


def seed_device(store: Store, token: str) -> None:
    """A device sign-in of ``token`` whose id is known (``tokens revoke-device`` ends it)."""
    public = (
        ec.generate_private_key(ec.SECP256R1())
        .public_key()
        .public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    sign_in(store=store, token=token, device=device_key_of("phone", b64url(public)))
    with store.write() as db:
        db.execute(text("UPDATE api_web_sessions SET device_id = :id"), {"id": SEEDED_DEVICE})


# `watch`, `serve` and `host run` answer until they are signalled: watch's JSON lines are
# checked in a child process (tests/test_cli_watch.py), serve's answers on a real server
# (tests/test_api_live.py), a host's in tests/test_hosts_server.py. `sessions stop-agent`
# needs an agent in a tmux pane: its JSON is checked in tests/test_hosts_launch.py; `new` and
# `changes`, a host that starts one and reads its worktree: tests/test_hosts_new.py and
# tests/test_hosts_changes.py.
ANSWERING_COMMANDS = [
    path
    for path in CHECKED_COMMANDS
    if path
    not in (
        ("watch",),
        ("serve",),
        ("host", "run"),
        ("sessions", "stop-agent"),
        ("new",),
        ("changes",),
        ("finish",),
    )
]


@pytest.mark.parametrize("path", ANSWERING_COMMANDS, ids=" ".join)
def test_every_command_answers_json_on_success(json_ready: Cli, path: tuple[str, ...]) -> None:
    argv, stdin = success_argv(path)
    result = json_ready(*argv, "--json", input=stdin)
    assert result.exit_code == 0, (path, result.stderr)
    assert "error" not in result.stderr
    if path == ("export",):
        documents = [json.loads(line) for line in result.stdout.splitlines()]
        assert documents and all("kind" in document for document in documents)
        return
    body = json.loads(result.stdout)
    assert isinstance(body, dict) and body, path
    if path in (("sessions",), ("sessions", "list"), ("sessions", "logs")):
        assert set(body) == {"items", "next_cursor"}
