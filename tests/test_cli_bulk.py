"""`roundtable sessions pause|stop|resume|terminate|heartbeat` on several sessions (issue 9 point 5,
``docs/operators-guide.md#the-command-line``): --session repeated, --all-matching with the list's
filters, --dry-run, run keys, the JSON shape, exit codes, and one --session printing what it always
did. Run through the real CLI in-process, as tests/test_cli.py does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import Result

from roundtable_console.store.db.models import (
    Agent,
    AgentSessionEvent,
    Claim,
    Event,
    IdempotencyKey,
)
from roundtable_console.store.writes.bulk import session_key
from roundtable_console.tui import output
from roundtable_console.tui.cli.sessions_commands import sessions_group
from tests.conftest import FakeClock
from tests.helpers import Cli, UnavailableAtCommit, last_stderr_line

pytestmark = pytest.mark.usefixtures("isolated_env")

ACTIONS = ("pause", "stop", "resume", "terminate", "heartbeat")
FILTER_FLAGS = (
    ("--status", "active"),
    ("--agent", "a1"),
    ("--run", "r1"),
    ("--workspace", "w"),
    ("--active",),
    ("--stale",),
    ("--waiting",),
    ("--text", "s"),
)
BULK_KEYS = ["items", "done", "skipped", "failed"]
ITEM_KEYS = ["session_id", "outcome", "code", "message"]


def error_of(result: Result) -> dict[str, Any]:
    return json.loads(result.stderr.strip().splitlines()[-1])["error"]


def bulk_json(result: Result) -> dict[str, Any]:
    body = json.loads(result.stdout)
    assert list(body)[:4] == BULK_KEYS
    for item in body["items"]:
        assert list(item) == ITEM_KEYS
    return body


def outcomes(body: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [(item["session_id"], item["outcome"], item["code"]) for item in body["items"]]


def events(rt: Cli, session_id: str) -> list[str]:
    return [row.event_type for row in rt.rows(AgentSessionEvent) if row.session_id == session_id]


def add_agent(rt: Cli, agent_id: str = "a1") -> None:
    rt.insert(Agent, id=agent_id, role="coder", name=agent_id, adapter="codex", is_enabled=1)


def add_claim(rt: Cli, claim_id: str, agent_id: str = "a1") -> None:
    rt.insert(
        Claim, id=claim_id, resource_id=f"file:{claim_id}.py", agent_id=agent_id,
        task_id="t1", claim_type="edit", status="active", expires_at="2030-01-01T00:00:00Z",
    )  # fmt: skip


@pytest.fixture
def fleet(rt: Cli) -> Cli:
    """s1, s2 active (agent a1), s3 paused (agent a1), s4 ended (agent a2)."""
    for session_id in ("s1", "s2"):
        rt.clock.advance(seconds=1)
        rt.register(session_id)
    rt.clock.advance(seconds=1)
    rt.register("s3", "--status", "paused")
    rt.clock.advance(seconds=1)
    rt.register("s4", "--status", "ended", agent="a2")
    return rt


# ------------------------------------------------------------------- one session: as it always was


def test_one_session_prints_exactly_what_it_always_has(rt: Cli) -> None:
    rt.register("s1")
    result = rt("sessions", "pause", "--session", "s1", "--idempotency-key", "k1")
    assert (result.exit_code, result.stdout) == (
        0,
        "pause: session s1 is now paused (version 1).\n",
    )
    replay = rt("sessions", "pause", "--session", "s1", "--idempotency-key", "k1")
    assert replay.stdout == (
        "pause: session s1 is now paused (version 1).\n(replayed: already applied with this key)\n"
    )
    body = rt.json("sessions", "stop", "--session", "s1")
    assert set(body) == {"action", "session", "replayed", "notes", "claims"}
    refused = rt("sessions", "stop", "--session", "s1", "--json")
    assert refused.exit_code == 1
    assert error_of(refused)["code"] == "illegal_session_transition"
    beat = rt("sessions", "heartbeat", "--session", "s1")
    assert beat.stdout == "s1\tstopped\t2026-09-17T17:26:35.000000Z\n"


def test_one_sessions_heartbeat_loads_no_bulk_code(rt: Cli, tmp_path: Path) -> None:
    rt.register("s1")
    env = {key: value for key, value in os.environ.items() if key != "ROUNDTABLE_DB"}
    for argv in (["heartbeat", "--session", "s1"], ["pause", "--session", "s1"]):
        done = subprocess.run(
            [
                sys.executable,
                "-X",
                "importtime",
                "-m",
                "roundtable_console.tui.cli",
                "sessions",
                *argv,
            ]
            + ["--db", rt.url],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parents[1],
            env=env,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        imported = {
            line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if "|" in line
        }
        # The log really was read (one session's own heartbeat takes the quick path).
        assert {
            "roundtable_console.store.reads.sessions",
            "roundtable_console.store.writes.quick_writes",
        } & imported
        assert "roundtable_console.store.writes.bulk" not in imported, argv


# --------------------------------------------------------------------------- several sessions


def test_several_sessions_print_a_line_each_then_the_totals(fleet: Cli) -> None:
    result = fleet(
        "sessions", "pause", "--session", "s1", "--session", "s3", "--session", "s4",
        "--session", "nope", "--session", "s2",
    )  # fmt: skip
    assert result.exit_code == 1
    assert result.stdout == (
        "s1\tdone\t\tpause: now 'paused' (version 1)\n"
        "s3\tskipped\tillegal_session_transition\talready paused\n"
        "s4\tskipped\tillegal_session_transition\tstatus 'ended': pause is allowed from an "
        "active state other than 'paused'\n"
        "nope\tfailed\tsession_not_found\tNo session has the id 'nope'.\n"
        "s2\tdone\t\tpause: now 'paused' (version 1)\n"
        "2 done, 2 skipped, 1 failed (no idempotency key).\n"
    )
    assert [fleet.session(s).status for s in ("s1", "s2", "s3", "s4")] == [
        "paused", "paused", "paused", "ended",
    ]  # fmt: skip


def test_on_a_terminal_the_lines_are_aligned_under_a_header(
    fleet: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(output, "stdout_is_tty", lambda: True)
    result = fleet("sessions", "stop", "--session", "s1", "--session", "s4")
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["SESSION", "OUTCOME", "CODE", "MESSAGE"]
    assert lines[1].split()[:3] == ["s1", "done", "stop:"]
    for header in ("OUTCOME", "MESSAGE"):  # every line's cells start under their header
        column = lines[0].index(header)
        assert all(line[column - 1] == " " != line[column] for line in lines[1:3]), header
    assert lines[-1] == "1 done, 1 skipped, 0 failed (no idempotency key)."


def test_several_sessions_in_json_are_exactly_the_bulk_shape(fleet: Cli) -> None:
    result = fleet("sessions", "stop", "--session", "s1", "--session", "s4", "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {
        "items": [
            {
                "session_id": "s1",
                "outcome": "done",
                "code": None,
                "message": "stop: now 'stopped' (version 1)",
            },
            {
                "session_id": "s4",
                "outcome": "skipped",
                "code": "illegal_session_transition",
                "message": "status 'ended': stop is allowed from an active state (starting, "
                "active, running, paused, resuming)",
            },
        ],
        "done": 1,
        "skipped": 1,
        "failed": 0,
    }
    assert result.stderr == ""


def test_exit_1_when_any_session_failed(fleet: Cli) -> None:
    result = fleet("sessions", "pause", "--session", "s1", "--session", "ghost", "--json")
    assert result.exit_code == 1
    body = bulk_json(result)
    assert outcomes(body) == [("s1", "done", None), ("ghost", "failed", "session_not_found")]
    assert (body["done"], body["skipped"], body["failed"]) == (1, 0, 1)


def test_a_repeated_session_is_acted_on_once(fleet: Cli) -> None:
    body = bulk_json(fleet("sessions", "pause", "--session", "s1", "--session", "s1", "--json"))
    assert outcomes(body) == [("s1", "done", None)]
    assert events(fleet, "s1") == ["registered", "paused"]


# ------------------------------------------------------------------------------ --all-matching


@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize("flag", FILTER_FLAGS, ids=lambda flag: flag[0])
def test_a_selection_without_all_matching_is_refused_and_writes_nothing(
    fleet: Cli, action: str, flag: tuple[str, ...]
) -> None:
    before = fleet.dump()
    result = fleet("sessions", action, *flag, "--idempotency-key", "k", "--json")
    assert result.exit_code == 2
    error = error_of(result)
    assert error["code"] == "usage_error"
    # heartbeat's own --status and --waiting are one session's new status and reason to wait
    if action != "heartbeat" or flag[0] not in ("--status", "--waiting"):
        assert f"{flag[0]} selects sessions only with --all-matching" in error["message"]
        assert "add --all-matching" in error["message"]
    assert fleet.dump() == before


def test_a_selection_beside_a_session_without_all_matching_is_refused(fleet: Cli) -> None:
    before = fleet.dump()
    result = fleet("sessions", "stop", "--session", "s1", "--agent", "a1", "--status", "active")
    assert result.exit_code == 2
    assert last_stderr_line(result) == (
        "error: --status, --agent select sessions only with --all-matching, so a typo never "
        "acts on a fleet: add --all-matching to act on every session that matches."
    )
    assert fleet.dump() == before


@pytest.mark.parametrize(
    "args",
    [
        ("--session", "s1", "--all-matching"),  # both
        (),  # neither
    ],
)
def test_sessions_come_from_session_or_all_matching(fleet: Cli, args: tuple[str, ...]) -> None:
    before = fleet.dump()
    for action in ACTIONS:
        result = fleet("sessions", action, *args, "--idempotency-key", "k", "--json")
        assert result.exit_code == 2, action
        assert error_of(result)["code"] == "usage_error"
    assert fleet.dump() == before


@pytest.mark.parametrize(
    "filters",
    [
        ("--agent", "a1"),
        ("--status", "active", "--status", "paused"),
        ("--run", "r1", "--status", "ended"),
        ("--workspace", "w1"),
        ("--text", "s1"),
        ("--active",),
        ("--stale",),
        ("--waiting",),
        ("--waiting", "--agent", "a1"),
        (),
    ],
)
def test_all_matching_selects_what_the_list_shows_with_the_same_filters(
    fleet: Cli, filters: tuple[str, ...]
) -> None:
    fleet.register("s5", "--metadata", '{"workspace_id": "w1"}')
    fleet.clock.advance(minutes=3)
    fleet("sessions", "heartbeat", "--session", "s2")
    fleet("sessions", "heartbeat", "--session", "s3", "--waiting", "a review")
    fleet.clock.advance(minutes=3)  # s2, s3 were seen 3 minutes ago; the others are stale
    listed = [item["id"] for item in fleet.json("sessions", "list", *filters)["items"]]
    body = bulk_json(fleet("sessions", "stop", "--all-matching", *filters, "--dry-run", "--json"))
    assert [item["session_id"] for item in body["items"]] == listed
    assert listed  # each filter selects something


def test_all_matching_acts_on_every_page(rt: Cli) -> None:
    ids = [f"s{n:03d}" for n in range(230)]
    lines = "".join(
        json.dumps(
            {
                "kind": "session", "id": session_id, "agent_id": "a1", "run_id": "r1",
                "adapter": "codex", "working_directory": "/w", "status": "active",
                "started_at": f"2026-09-17T10:{n // 60:02d}:{n % 60:02d}Z",
            }
        ) + "\n"
        for n, session_id in enumerate(ids)
    )  # fmt: skip
    assert rt("import", "-", input=lines).exit_code == 0
    body = bulk_json(rt("sessions", "pause", "--all-matching", "--agent", "a1", "--json"))
    assert [item["session_id"] for item in body["items"]] == ids
    assert body["done"] == 230
    assert {item["status"] for item in rt.json("sessions", "list", "--limit", "200")["items"]} == {
        "paused"
    }


# --------------------------------------------------------------------------------- --dry-run


def test_dry_run_says_what_would_happen_and_writes_nothing(fleet: Cli) -> None:
    before = fleet.dump()
    text = fleet("sessions", "pause", "--all-matching", "--agent", "a1", "--dry-run")
    assert text.exit_code == 0
    assert text.stdout == (
        "s1\tdone\t\twould pause (status 'active')\n"
        "s2\tdone\t\twould pause (status 'active')\n"
        "s3\tskipped\tillegal_session_transition\talready paused\n"
        "2 done, 1 skipped, 0 failed (dry run: nothing written).\n"
    )
    result = fleet(
        "sessions", "pause", "--session", "s1", "--session", "ghost", "--dry-run", "--json"
    )
    assert result.exit_code == 1  # one would fail
    assert json.loads(result.stdout) == {
        "items": [
            {
                "session_id": "s1",
                "outcome": "done",
                "code": None,
                "message": "would pause (status 'active')",
            },
            {
                "session_id": "ghost",
                "outcome": "failed",
                "code": "session_not_found",
                "message": "No session has the id 'ghost'.",
            },
        ],
        "done": 1,
        "skipped": 0,
        "failed": 1,
        "dry_run": True,
    }
    one = fleet("sessions", "terminate", "--session", "s1", "--dry-run", "--json")
    assert bulk_json(one)["dry_run"] is True
    assert fleet.dump() == before
    assert events(fleet, "s1") == ["registered"]
    assert fleet.rows(Event) == [] and fleet.rows(IdempotencyKey) == []


def test_dry_run_of_terminate_names_the_claims_that_need_impact_details(fleet: Cli) -> None:
    add_claim(fleet, "c1")
    body = bulk_json(
        fleet("sessions", "terminate", "--all-matching", "--agent", "a1", "--dry-run", "--json")
    )
    assert outcomes(body) == [
        ("s1", "failed", "termination_impact_required"),
        ("s2", "failed", "termination_impact_required"),
        ("s3", "failed", "termination_impact_required"),
    ]
    assert "agent 'a1' holds 1 active claim(s): file:c1.py" in body["items"][0]["message"].lower()
    acknowledged = bulk_json(
        fleet(
            "sessions",
            "terminate",
            "--all-matching",
            "--agent",
            "a1",
            "--dry-run",
            "--impact-details",
            "edits abandoned",
            "--json",
        )  # fmt: skip
    )
    assert [item["outcome"] for item in acknowledged["items"]] == ["done"] * 3


# ---------------------------------------------------------------------------------- run keys


def test_a_retry_with_the_run_key_applies_nothing_twice(fleet: Cli) -> None:
    args = ("sessions", "stop", "--all-matching", "--agent", "a1", "--idempotency-key", "K")
    first = fleet(*args)
    assert first.exit_code == 0
    assert first.stdout.splitlines()[-1] == "3 done, 0 skipped, 0 failed (idempotency key K)."
    keys = {row.key: row.session_id for row in fleet.rows(IdempotencyKey)}
    assert keys == {session_key("K", s): s for s in ("s1", "s2", "s3")}
    before = fleet.dump()
    fleet.clock.advance(minutes=1)
    again = bulk_json(fleet(*args, "--json"))
    assert outcomes(again) == [
        ("s1", "done", "replayed"),
        ("s2", "done", "replayed"),
        ("s3", "done", "replayed"),
    ]
    assert fleet.dump() == before
    assert events(fleet, "s1") == ["registered", "stopped"]


@pytest.mark.parametrize("action", ["resume", "terminate"])
def test_resume_and_terminate_of_several_need_a_key(fleet: Cli, action: str) -> None:
    before = fleet.dump()
    result = fleet("sessions", action, "--session", "s1", "--session", "s3", "--json")
    assert result.exit_code == 2
    assert error_of(result)["code"] == "idempotency_key_required"
    assert result.stdout == ""
    assert fleet.dump() == before


def test_resume_of_several_checks_each_agent(fleet: Cli) -> None:
    add_agent(fleet, "a1")
    fleet("sessions", "stop", "--session", "s1")
    result = fleet(
        "sessions", "resume", "--session", "s1", "--session", "s3", "--session", "s4",
        "--idempotency-key", "r1", "--json",
    )  # fmt: skip
    # s4 ended (an agent that exited is resumed too), but its agent a2 is not in the store.
    assert outcomes(bulk_json(result)) == [
        ("s1", "done", None),
        ("s3", "done", None),
        ("s4", "failed", "agent_not_found"),
    ]
    assert result.exit_code == 1
    assert fleet.session("s4").status == "ended"


def test_terminate_of_several_needs_impact_details_where_claims_are_held(fleet: Cli) -> None:
    fleet.register("s5", agent="a3")
    add_claim(fleet, "c1", "a3")
    args = ("sessions", "terminate", "--session", "s1", "--session", "s5", "--json")
    refused = fleet(*args, "--idempotency-key", "t1")
    assert refused.exit_code == 1
    assert outcomes(bulk_json(refused)) == [
        ("s1", "done", None),
        ("s5", "failed", "termination_impact_required"),
    ]
    assert fleet.session("s5").status == "active"
    done = fleet(*args, "--idempotency-key", "t2", "--impact-details", "its edit is dropped")
    assert done.exit_code == 0
    assert outcomes(bulk_json(done)) == [
        ("s1", "skipped", "illegal_session_transition"),
        ("s5", "done", None),
    ]
    (terminated,) = [row for row in fleet.rows(AgentSessionEvent) if row.event_type == "terminated"
                     and row.session_id == "s5"]  # fmt: skip
    assert json.loads(terminated.payload_json)["impact_details"] == "its edit is dropped"


def test_expected_version_applies_to_one_session_only(fleet: Cli) -> None:
    result = fleet(
        "sessions", "pause", "--session", "s1", "--session", "s2", "--expected-version", "0"
    )
    assert result.exit_code == 2
    assert "--expected-version applies to one session" in last_stderr_line(result)
    assert fleet.session("s1").status == "active"


# --------------------------------------------------------------------------------- heartbeat


def test_heartbeat_of_several_is_the_operators_heartbeat(fleet: Cli) -> None:
    fleet.clock.advance(minutes=5)
    result = fleet(
        "sessions", "heartbeat", "--session", "s1", "--session", "s4", "--operator", "olga",
        "--json",
    )  # fmt: skip
    assert outcomes(bulk_json(result)) == [
        ("s1", "done", None),
        ("s4", "skipped", "illegal_session_transition"),
    ]
    assert fleet.session("s1").last_seen_at == "2026-09-17T17:31:39.000000Z"
    beats = [row for row in fleet.rows(Event) if row.type == "session.heartbeat"]
    assert [(row.actor_id, json.loads(row.payload_json)["session_id"]) for row in beats] == [
        ("olga", "s1")
    ]


def test_heartbeat_with_all_matching_status_selects_by_status(fleet: Cli) -> None:
    body = bulk_json(
        fleet("sessions", "heartbeat", "--all-matching", "--status", "paused", "--json")
    )
    assert outcomes(body) == [("s3", "done", None)]
    assert fleet.session("s3").status == "paused"


@pytest.mark.parametrize(
    "extra",
    [
        ("--every", "5"),
        ("--external-session-id", "e1"),
        ("--status", "running"),  # a new status is one session's; selecting needs --all-matching
        ("--waiting", "a review"),
    ],
)
def test_heartbeat_of_several_refuses_one_sessions_options(
    fleet: Cli, extra: tuple[str, ...]
) -> None:
    before = fleet.dump()
    result = fleet("sessions", "heartbeat", "--session", "s1", "--session", "s2", *extra)
    assert result.exit_code == 2
    assert fleet.dump() == before


def test_heartbeat_all_matching_refuses_every(fleet: Cli) -> None:
    result = fleet("sessions", "heartbeat", "--all-matching", "--every", "5", "--json")
    assert result.exit_code == 2
    assert error_of(result)["message"] == (
        "--every applies to one session's own heartbeat, not to the operator's heartbeat of "
        "several."
    )


@pytest.mark.parametrize(
    "extra", [("--dry-run",), ("--operator", "olga"), ("--idempotency-key", "k")]
)
def test_one_sessions_heartbeat_refuses_the_operators_options(
    fleet: Cli, extra: tuple[str, ...]
) -> None:
    before = fleet.dump()
    result = fleet("sessions", "heartbeat", "--session", "s1", *extra)
    assert result.exit_code == 2
    assert last_stderr_line(result) == (
        f"error: {extra[0]} applies to the operator's heartbeat of several sessions "
        "(--session more than once, or --all-matching)."
    )
    assert fleet.dump() == before


def test_one_sessions_heartbeat_takes_one_status(fleet: Cli) -> None:
    result = fleet("sessions", "heartbeat", "--session", "s1", "--status", "a", "--status", "b")
    assert result.exit_code == 2
    assert fleet.session("s1").status == "active"


# ------------------------------------------------------------------------------ safe output


def test_store_text_in_bulk_lines_is_escaped_and_secrets_redacted(rt: Cli) -> None:
    rt.register("evil\x1b[2J", agent="a1")
    rt.register("s2", "--status", "failed password=hunter2")
    result = rt("sessions", "stop", "--session", "evil\x1b[2J", "--session", "s2")
    assert "\x1b" not in result.stdout
    assert "evil\\e[2J\tdone" in result.stdout
    assert "hunter2" not in result.stdout and "password=[REDACTED]" in result.stdout
    body = rt("sessions", "stop", "--session", "evil\x1b[2J", "--session", "s2", "--json")
    assert "hunter2" not in body.stdout


# ------------------------------------------------------------------- filters added to the list


def test_every_list_filter_is_a_bulk_selection_filter() -> None:
    """A filter added to the list (store.reads.listing.SessionFilter and tui.cli.options.FILTERS)
    is one place: the bulk commands take it too."""

    def options(command: click.Command) -> set[str]:
        return {flag for param in command.params for flag in getattr(param, "opts", ())}

    group = sessions_group
    listed = options(group.commands["list"]) - {"--limit", "--cursor", "--sort", "--descending",
                                                "--server", "--token-env"}
    for action in ACTIONS:
        assert listed <= options(group.commands[action]), action


# ------------------------------------------------------------------------------ both backends


def test_bulk_on_each_backend(store_url: str, clock: FakeClock) -> None:
    rt = Cli(url=store_url, clock=clock)
    for session_id in ("s1", "s2", "s3"):
        clock.advance(seconds=1)
        rt.register(session_id)
    args = ("sessions", "pause", "--all-matching", "--agent", "a1", "--idempotency-key", "k")
    dry = bulk_json(rt(*args, "--dry-run", "--json"))
    assert [item["outcome"] for item in dry["items"]] == ["done"] * 3
    assert [rt.session(s).status for s in ("s1", "s2", "s3")] == ["active"] * 3
    first = rt(*args, "--json")
    assert (first.exit_code, bulk_json(first)["done"]) == (0, 3)
    again = bulk_json(rt(*args, "--json"))
    assert [item["code"] for item in again["items"]] == ["replayed"] * 3
    assert events(rt, "s2") == ["registered", "paused"]
    mixed = rt("sessions", "stop", "--session", "s1", "--session", "nope", "--json")
    assert mixed.exit_code == 1
    assert outcomes(bulk_json(mixed)) == [
        ("s1", "done", None),
        ("nope", "failed", "session_not_found"),
    ]


def test_a_run_stopped_by_the_database_reports_what_it_did_then_the_error(
    fleet: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    from roundtable_console.store.db.database import Store
    from roundtable_console.store.writes import bulk_run

    monkeypatch.setattr(bulk_run, "BATCH_SESSIONS", 1)
    write = Store.write
    opened = iter(range(100))

    def second_write_fails(self: Store, **options: Any) -> Any:
        if next(opened) == 1:
            return UnavailableAtCommit(write(self, **options))
        return write(self, **options)

    monkeypatch.setattr(Store, "write", second_write_fails)
    result = fleet("sessions", "stop", "--session", "s1", "--session", "s2", "--session", "s3")
    assert result.exit_code == 1
    assert result.stdout == (
        "s1\tdone\t\tstop: now 'stopped' (version 1)\n"
        "s2\tfailed\tdatabase_unavailable\tThe database is unavailable: gone. Retry.\n"
        "1 done, 0 skipped, 1 failed (no idempotency key).\n"
    )
    assert last_stderr_line(result) == (
        "error: The run stopped: The database is unavailable: gone. Retry."
    )
    monkeypatch.setattr(Store, "write", write)
    assert [fleet.session(s).status for s in ("s1", "s2", "s3")] == ["stopped", "active", "paused"]
