"""The people's commands through a server (issue 42 point 1): ``sessions`` (list, show, pause,
stop, resume, terminate), and ``audit`` with ``--server URL --token-env VAR`` read and act through
a real ``roundtable serve`` with that person's token, and print exactly what they print against
the store (each engine). The token's role and workspaces are what they may do, its name is who
acted; every refusal and bad day is one sentence, never a traceback."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import text

from roundtable_console.store import service
from roundtable_console.store.db.database import Store
from roundtable_console.store.hosts import registry
from roundtable_console.store.hosts.facts import HostFacts
from roundtable_console.store.reads.listing import SessionFilter, SessionOrder
from roundtable_console.store.reads.sessions import get_session
from roundtable_console.store.requests.reads import MAX_LISTED
from roundtable_console.store.window import wire
from roundtable_console.store.window.questions import Read, RowsAsked
from roundtable_console.store.writes import agent_writes
from roundtable_console.tui.cli import cli
from roundtable_console.tui.cli.invocation import CliState
from tests import http_calls
from tests.api_support import seed_agent, seed_workspace
from tests.helpers import seed_request
from tests.serve_support import Served, serving
from tests.web_support import OTHER_WORKSPACE, WORKSPACE, hold_claim, register, tokens, web

pytestmark = pytest.mark.usefixtures("isolated_env")


@dataclass
class Team:
    served: Served
    store: Store
    url: str
    made: dict[str, str]
    monkeypatch: pytest.MonkeyPatch

    def run(self, *args: str, role: str | None = "operator", server: bool = True) -> Result:
        """The command through the server with ``role``'s token (in $RT_TOKEN), or against the
        store (``server`` False)."""
        if role is not None:
            self.monkeypatch.setenv("RT_TOKEN", self.made[role])
        where = ["--server", self.served.url, "--token-env", "RT_TOKEN"] if server else [
            "--db", self.url]  # fmt: skip
        result = CliRunner().invoke(cli, [*args, *where], obj=CliState())
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            result.exception
        )
        assert "Traceback" not in result.output and "Traceback" not in result.stderr
        return result

    def json(self, *args: str, role: str = "operator", server: bool = True) -> Any:
        result = self.run(*args, "--json", role=role, server=server)
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)

    def refused(self, *args: str, role: str | None = "operator") -> tuple[int, dict[str, Any]]:
        """A refused command's exit code and its error (``--json``: the last line of stderr)."""
        result = self.run(*args, "--json", role=role)
        error = json.loads(result.stderr.strip().splitlines()[-1])["error"]
        return result.exit_code, error


@pytest.fixture
def team(
    store: Store, store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Team]:
    made = tokens(store)
    seed_workspace(store, WORKSPACE)
    seed_workspace(store, OTHER_WORKSPACE)
    seed_agent(store, "agent-1")
    seed_agent(store, "agent-2")
    register(store, "a-one")
    register(store, "a-two", agent="agent-2")
    register(store, "b-one", workspace=OTHER_WORKSPACE)
    with store.write() as db:
        agent_writes.heartbeat(db=db, session_id="a-two", waiting="review the diff")
    with serving(store_url, tmp_path / "home") as served:
        yield Team(served, store, store_url, made, monkeypatch)
        log = served.log.read_text() if served.log else ""
        assert not any(token in log for token in made.values())  # never in the server's log


def test_reads_print_what_the_store_prints(team: Team) -> None:
    for args in (
        ("sessions", "list"),
        ("sessions", "list", "--sort", "attention", "--limit", "2"),
        ("sessions", "list", "--agent", "agent-1", "--status", "active"),
        ("sessions", "show", "--session", "a-two"),
        ("sessions", "logs", "--session", "a-two", "--limit", "2"),
        ("sessions", "claims", "--session", "a-two"),
        ("sessions", "metrics", "--session", "a-two"),
        ("audit",),
    ):
        through = team.json(*args, role="viewer")
        direct = team.json(*args, server=False)
        assert through == direct, args
    # The text too, and the group's own options (roundtable sessions --server …).
    text = team.run("sessions", role="viewer")
    assert text.exit_code == 0 and text.stdout == team.run("sessions", server=False).stdout
    assert "a-two" in text.stdout and "b-one" in text.stdout
    shown = team.run("sessions", "show", "--session", "a-two", role="viewer").stdout
    assert shown == team.run("sessions", "show", "--session", "a-two", server=False).stdout
    assert "review the diff" in shown
    # The server and the token's variable from the environment, then from the config.
    team.monkeypatch.setenv("ROUNDTABLE_SERVER", team.served.url)
    team.monkeypatch.setenv("ROUNDTABLE_TOKEN", team.made["viewer"])
    plain = CliRunner().invoke(cli, ["audit", "--json"], obj=CliState())
    assert plain.exit_code == 0 and json.loads(plain.stdout) == team.json("audit", role="viewer")
    team.monkeypatch.delenv("ROUNDTABLE_SERVER")
    team.monkeypatch.delenv("ROUNDTABLE_TOKEN")
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "roundtable" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'server = "{team.served.url}"\ntoken_env = "TEAM_TOKEN"\n')
    team.monkeypatch.setenv("TEAM_TOKEN", team.made["viewer"])
    configured = CliRunner().invoke(cli, ["sessions", "show", "--session", "a-one", "--json"],
                                    obj=CliState())  # fmt: skip
    assert configured.exit_code == 0, configured.stderr
    assert json.loads(configured.stdout)["id"] == "a-one"
    config.unlink()
    # Pages: a cursor the server gave brings the rest.
    first = team.json("sessions", "list", "--limit", "2", role="viewer")
    rest = team.json("sessions", "list", "--limit", "2", "--cursor", first["next_cursor"],
                     role="viewer")  # fmt: skip
    ids = [s["id"] for s in first["items"] + rest["items"]]
    assert sorted(ids) == ["a-one", "a-two", "b-one"] and rest["next_cursor"] is None


def test_actions_are_the_tokens_and_answer_as_against_the_store(team: Team) -> None:
    paused = team.json("sessions", "pause", "--session", "a-one")
    assert paused["action"] == "pause" and paused["session"]["status"] == "paused"
    assert paused["replayed"] is False
    text = team.run("sessions", "resume", "--session", "a-one", "--idempotency-key", "k-1")
    assert text.exit_code == 0, text.stderr
    assert text.stdout.startswith("resume: session a-one is now resuming (version ")
    again = team.json("sessions", "resume", "--session", "a-one", "--idempotency-key", "k-1")
    assert again["replayed"] is True and again["session"]["status"] == "resuming"
    # Who acted is the token's name (olivia), whatever the machine's login.
    [last] = team.json("audit", "--session", "a-one", "--action", "resume", role="viewer")["items"]
    assert last["actor"] == "olivia"
    # A stale version is refused in words (If-Match), nothing done.
    version = team.json("sessions", "show", "--session", "a-two", role="viewer")["version"]
    code, error = team.refused("sessions", "stop", "--session", "a-two", "--expected-version",
                               str(version - 1))  # fmt: skip
    assert (code, error["code"]) == (1, "session_transition_conflict")
    assert "changed since it was read" in error["message"]
    # Terminating an agent that holds claims needs the impact read, then done with it.
    hold_claim(team.store, "agent-1")
    code, error = team.refused("sessions", "terminate", "--session", "a-one",
                               "--idempotency-key", "t-1")  # fmt: skip
    assert (code, error["code"]) == (1, "termination_impact_required")
    done = team.json("sessions", "terminate", "--session", "a-one", "--idempotency-key", "t-2",
                     "--impact-details", "handed back")  # fmt: skip
    assert done["session"]["status"] == "terminated"
    assert [c["resource_id"] for c in done["claims"]] == ["src/app.py"]
    with team.store.read() as db:
        assert get_session(db=db, session_id="a-one").status == "terminated"


def test_a_tokens_role_and_workspaces_are_what_it_may(team: Team) -> None:
    code, error = team.refused("sessions", "pause", "--session", "a-one", role="viewer")
    assert (code, error["code"]) == (1, "forbidden")
    assert service.read_session(store=team.store, session_id="a-one").status == "active"
    bound = team.json("sessions", "list", role="bound")
    assert [s["id"] for s in bound["items"]] == ["b-one"]  # its one workspace, nothing else
    code, error = team.refused("sessions", "show", "--session", "a-one", role="bound")
    assert (code, error["code"]) == (1, "session_not_found")
    code, error = team.refused("sessions", "list", role="agent")
    assert (code, error["code"]) == (1, "forbidden") and "agent's" in error["message"]
    # Through a server, several sessions, --operator and --stop-agent are the store's.
    for extra in (("--session", "a-two"), ("--operator", "mallory"), ("--all-matching",)):
        refused = team.run("sessions", "pause", "--session", "a-one", *extra)
        assert refused.exit_code == 2 and "Through a server" in refused.stderr


def test_bad_days_are_one_sentence(team: Team, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RT_TOKEN", "rt_wrong")
    code, error = team.refused("sessions", "list", role=None)
    assert code == 1 and "did not accept your token" in error["message"]
    monkeypatch.delenv("RT_TOKEN")
    unset = team.run("sessions", "list", role=None)
    assert unset.exit_code == 2 and "RT_TOKEN is not set" in unset.stderr
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setenv("RT_TOKEN", team.made["viewer"])
    down = CliRunner().invoke(cli, ["sessions", "--server", f"http://127.0.0.1:{port}",
                                    "--token-env", "RT_TOKEN"], obj=CliState())  # fmt: skip
    assert down.exit_code == 1 and "could not be reached" in down.stderr
    said = CliRunner().invoke(cli, ["audit", "--json", "--server", f"http://127.0.0.1:{port}",
                                    "--token-env", "RT_TOKEN"], obj=CliState())  # fmt: skip
    assert json.loads(said.stderr.splitlines()[-1])["error"]["code"] == "server_unavailable"
    assert "Traceback" not in down.stderr
    clear = CliRunner().invoke(cli, ["audit", "--server", "http://example.com"], obj=CliState())
    assert clear.exit_code == 2 and "clear text" in clear.stderr
    store_only = CliRunner().invoke(
        cli, ["sessions", "--server", team.served.url, "end", "--session", "a-one"],
        obj=CliState(),
    )  # fmt: skip
    assert store_only.exit_code == 2 and "end reads or writes a store" in store_only.stderr
    both = team.run("sessions", "list", "--db", team.url)
    assert both.exit_code == 2 and "both given" in both.stderr
    # Too many failed sign-ins from this address: told to wait, in words.
    for _ in range(12):
        http_calls.get(f"{team.served.url}/api/v1/sessions",
                       headers={"Authorization": "Bearer rt_wrong"})  # fmt: skip
    monkeypatch.setenv("RT_TOKEN", "rt_wrong")
    code, error = team.refused("sessions", "list", role=None)
    assert (code, error["code"]) == (1, "too_many_requests")
    assert "asked too often" in error["message"] and "retry in " in error["message"]


def test_what_an_attacker_would_try_on_the_routes_is_refused(store: Store) -> None:
    """In-process: another workspace asked for by a bound token, a signed-in browser's cookie
    sent by another site's page (no token, no CSRF proof), an agent's token acting."""
    made = tokens(store)
    with web(store) as site:
        register(store, "w-one")
        bound = {"Authorization": f"Bearer {made['bound']}"}
        other = site.client.get(f"/api/v1/sessions?workspace_id={WORKSPACE}", headers=bound)
        assert (other.status_code, other.json()["code"]) == (404, "workspace_not_found")
        assert site.client.get("/api/v1/sessions/w-one", headers=bound).status_code == 404
        site.sign_in(made["operator"])  # the browser now holds the operator's cookie
        for origin in ({}, {"Origin": "https://evil.example.com"}):
            forged = site.client.post("/api/v1/sessions/w-one/pause", headers=origin)
            assert forged.status_code in (401, 403), forged.text
        agent = {"Authorization": f"Bearer {made['agent']}"}
        acted = site.client.post("/api/v1/sessions/w-one/pause", headers=agent)
        assert (acted.status_code, acted.json()["code"]) == (403, "forbidden")
        assert service.read_session(store=store, session_id="w-one").status == "active"
        bad = site.client.get("/api/v1/sessions?status=" + "x" * 1100, headers=agent)
        assert bad.status_code == 403  # who it is is checked first
        viewer = {"Authorization": f"Bearer {made['viewer']}"}
        for query in ("status=" + "x" * 1100, "stale=maybe", "limit=", "cursor=%2F"):
            refused = site.client.get(f"/api/v1/sessions?{query}", headers=viewer)
            assert refused.status_code == 400, query


def test_a_bound_token_reaches_no_session_beyond_its_workspaces_by_id_nor_learns_of_hosts(
    store: Store,
) -> None:
    """The people's routes by a session's id (reply, transcript, launch, stop-agent, briefing):
    a session of another workspace, or of none, is not there for a token bound to workspaces;
    and naming a host in a session of its own tells it nothing of that host."""
    made = tokens(store)
    with web(store) as site:
        register(store, "w-theirs")  # WORKSPACE: not the bound token's
        with store.write() as db:
            agent_writes.register(db=db, session_id="w-none", agent_id="agent-1",
                                  run_id="run-1", adapter="codex", working_directory="/srv")
            registry.connect(db, HostFacts(name="ceo-laptop"), connection_id="c-1")
        register(store, "b-mine", workspace=OTHER_WORKSPACE, host="ceo-laptop")
        bound = {"Authorization": f"Bearer {made['bound']}", "Idempotency-Key": "k-1"}
        for session_id in ("w-theirs", "w-none", "nobody"):
            for method, rest in (("GET", "reply"), ("POST", "reply"), ("GET", "transcript"),
                                 ("POST", "launch"), ("POST", "stop-agent"),
                                 ("GET", "briefing")):  # fmt: skip
                body = {"message": "hi"} if rest == "reply" and method == "POST" else None
                answer = site.client.request(method, f"/api/v1/sessions/{session_id}/{rest}",
                                             headers=bound, json=body)  # fmt: skip
                assert (answer.status_code, answer.json()["code"]) == (
                    404, "session_not_found"), (session_id, method, rest)  # fmt: skip
        mine = site.client.get("/api/v1/sessions/b-mine/briefing", headers=bound).json()
        assert mine["host"] == {"name": "ceo-laptop", "online": None, "last_seen_at": None}
        everyone = {"Authorization": f"Bearer {made['operator']}"}
        seen = site.client.get("/api/v1/sessions/b-mine/briefing", headers=everyone).json()
        assert seen["host"]["name"] == "ceo-laptop" and seen["host"]["online"] is True


def test_the_consoles_questions_are_bounded_redacted_and_refused_in_words(store: Store) -> None:
    """In-process: what the terminal console's routes take and give, read as an attacker would
    send it (the review of issue 42's routes)."""
    made = tokens(store)
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    with web(store) as site:
        register(store, "w-one", metadata={"workspace_id": WORKSPACE, "api_key": secret})
        viewer = {"Authorization": f"Bearer {made['viewer']}"}
        asked = wire.asked_json(RowsAsked(Read("at", 0, 50, 1, 1), SessionFilter(),
                                          SessionOrder(), datetime.now(UTC)))  # fmt: skip
        rows = site.client.post("/api/v1/console/rows", json=asked, headers=viewer)
        assert rows.status_code == 200 and "w-one" in rows.text
        assert secret not in rows.text  # redacted as every read path is
        assert "object at" not in rows.text  # the change token is opaque
        refused = {
            "too many ids": {"selection": {"ids": [f"s{n}" for n in range(2001)]}},
            "a bad pair": {**asked, "groups": {"keys": [], "sizes": [], "counts": [[]]}},
            "attention without a time": {**asked, "order": {"column": "attention"}},
            "too many folded": {**asked, "grouping": "agent",
                                "folded": [str(n) for n in range(257)]},
        }  # fmt: skip
        for what, body in refused.items():
            path = "/api/v1/console/selected" if "selection" in body else "/api/v1/console/rows"
            answer = site.client.post(path, json=body, headers=viewer)
            assert answer.status_code == 400, (what, answer.text)
        # A time at the end of every calendar: answered, or refused in words, never a 500.
        late = {**asked, "now": "9999-12-31T23:59:59.000000Z",
                "order": {"column": "attention", "stale_before": "9999-12-31T23:00:00Z"},
                "read": {**asked["read"], "refresh": True}}  # fmt: skip
        assert site.client.post("/api/v1/console/rows", json=late, headers=viewer).status_code in (
            200, 400)  # fmt: skip
    with web(store, read_only=True) as site:  # a read-only server answers the console's reads
        answer = site.client.post("/api/v1/console/rows", json=asked, headers=viewer)
        assert answer.status_code == 200, answer.text


def test_a_bound_tokens_pending_requests_are_not_hidden_by_another_workspaces(
    store: Store, store_url: str
) -> None:
    made = tokens(store)
    with web(store) as site:
        register(store, "a-busy")
        register(store, "b-asks", workspace=OTHER_WORKSPACE)
        backlog = [  # an older backlog in the other workspace, in one transaction
            {"id": f"req-a{number:04d}", "session": "a-busy",
             "asked": f"2026-09-17T09:{number // 60:02d}:{number % 60:02d}.000000Z"}
            for number in range(MAX_LISTED + 5)
        ]  # fmt: skip
        with store.write() as db:
            db.execute(
                text(
                    "INSERT INTO permission_requests (id, session_id, agent, tool_name,"
                    " tool_input_json, input_cut, answers, reason, asked_at, expires_at, state)"
                    " VALUES (:id, :session, 'claude-code', 'Bash', '{}', 0, 'allow,deny',"
                    " 'asks to run Bash', :asked, '2999-01-01T00:00:00.000000Z', 'pending')"
                ),
                backlog,
            )
        seed_request(store_url, "req-b", "b-asks")
        bound = {"Authorization": f"Bearer {made['bound']}"}
        found = site.client.get("/api/v1/requests", headers=bound).json()["items"]
    assert [item["id"] for item in found] == ["req-b"]


def test_the_token_goes_to_the_server_alone(team: Team, monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy from the environment receives it; a name that only looks like a loopback
    address is refused for plain http."""
    with socket.socket() as trap:
        trap.bind(("127.0.0.1", 0))
        trap.listen()
        trap.settimeout(0.2)
        proxy = f"http://127.0.0.1:{trap.getsockname()[1]}"
        for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.setenv(name, proxy)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        listed = team.json("sessions", "list", role="viewer")
        assert {s["id"] for s in listed["items"]} == {"a-one", "a-two", "b-one"}
        with pytest.raises(TimeoutError):
            trap.accept()  # the proxy was never called
    looks_local = CliRunner().invoke(
        cli, ["audit", "--server", "http://127.0.0.1.nip.io:8080"], obj=CliState()
    )
    assert looks_local.exit_code == 2 and "clear text" in looks_local.stderr


def test_a_bound_tokens_console_reads_count_nothing_beyond_its_workspace(store: Store) -> None:
    made = tokens(store)
    with web(store) as site:
        for number in range(3):
            register(store, f"a-{number}")
        register(store, "b-only", workspace=OTHER_WORKSPACE)
        bound = {"Authorization": f"Bearer {made['bound']}"}
        asked = wire.asked_json(RowsAsked(Read("at", 0, 50, 1, 1), SessionFilter(),
                                          SessionOrder(), datetime.now(UTC)))  # fmt: skip
        answer = site.client.post("/api/v1/console/rows", json=asked, headers=bound).json()
        assert [row["id"] for row in answer["rows"]] == ["b-only"]
        assert answer["counts"] == {"active": 1} and answer["attention"] is None
        theirs = {**asked, "filters": {"workspace_id": WORKSPACE}}
        refused = site.client.post("/api/v1/console/rows", json=theirs, headers=bound)
        assert (refused.status_code, refused.json()["code"]) == (404, "workspace_not_found")
        others = {"selection": {"ids": ["a-0", "a-1", "b-only"],
                                "by_filter": [{"filters": {}, "excluded": []}]}}  # fmt: skip
        counted = site.client.post("/api/v1/console/selected", json=others, headers=bound)
        assert counted.json() == {"total": 1}  # its own session, by id and by filter
        admitted = site.client.post("/api/v1/console/admitted", headers=bound,
                                    json={"filters": {}, "ids": ["a-0", "b-only"]})  # fmt: skip
        assert admitted.json() == {"ids": ["b-only"]}
        total = site.client.post("/api/v1/console/count", json={"filters": {}}, headers=bound)
        assert total.json() == {"total": 1}
        claims = site.client.get("/api/v1/sessions/a-0/projections/claims", headers=bound)
        assert claims.status_code == 404  # another workspace's session answers as none


def test_a_run_on_many_sessions_is_an_operators_within_its_reach_once(store: Store) -> None:
    made = tokens(store)
    with web(store) as site:
        for session_id in ("a-1", "a-2"):
            register(store, session_id)
        register(store, "b-1", workspace=OTHER_WORKSPACE)
        chosen = {"selection": {"ids": ["a-1", "a-2", "b-1"]}}
        plan = {**chosen, "action": "pause", "run_key": "run-1"}
        key = {"Idempotency-Key": "run-1"}
        as_viewer = {"Authorization": f"Bearer {made['viewer']}"}
        for path, body in (("/api/v1/console/bulk-plan", plan), ("/api/v1/bulk/pause", chosen)):
            refused = site.client.post(path, json=body, headers={**as_viewer, **key})
            assert (refused.status_code, refused.json()["code"]) == (403, "forbidden")
        bound = {"Authorization": f"Bearer {made['bound']}"}
        keyless = site.client.post("/api/v1/bulk/pause", json=chosen, headers=bound)
        assert (keyless.status_code, keyless.json()["code"]) == (400, "idempotency_key_required")
        planned = site.client.post("/api/v1/console/bulk-plan", json=plan, headers=bound).json()
        assert planned["tally"]["counts"] == {"done": 1, "skipped": 0, "failed": 0}
        ran = site.client.post("/api/v1/bulk/pause", json=chosen, headers={**bound, **key})
        assert ran.json()["tally"]["counts"] == {"done": 1, "skipped": 0, "failed": 0}
        again = site.client.post("/api/v1/bulk/pause", json=chosen, headers={**bound, **key})
        assert [i["code"] for i in again.json()["tally"]["items"]] == ["replayed"]
    statuses = {sid: service.read_session(store=store, session_id=sid).status
                for sid in ("a-1", "a-2", "b-1")}  # fmt: skip
    assert statuses == {"a-1": "active", "a-2": "active", "b-1": "paused"}


def test_requests_are_listed_and_answered_through_the_server(team: Team) -> None:
    seed_request(team.url, "req-1", "a-two")
    seed_request(team.url, "req-2", "b-one", asked_at="2026-09-17T11:00:00.000000Z")
    through = team.json("requests", role="viewer")
    assert [item["id"] for item in through["items"]] == ["req-1", "req-2"]
    assert through == team.json("requests", server=False)
    one = team.json("requests", "--session", "b-one", role="viewer")
    assert [item["id"] for item in one["items"]] == ["req-2"]
    code, error = team.refused("requests", "allow", "req-1", role="viewer")
    assert (code, error["code"]) == (1, "forbidden")
    denied = team.json("requests", "deny", "req-1", "--message", "not on Fridays")
    assert (denied["state"], denied["decided_by"]) == ("denied", "olivia")
    code, error = team.refused("requests", "allow", "req-1")  # decided already: said who
    assert (code, error["code"]) == (1, "request_already_settled")
    everything = team.json("requests", "--all", role="viewer")
    assert {item["id"] for item in everything["items"]} == {"req-1", "req-2"}
    refused = team.run("requests", "allow", "req-2", "--operator", "mallory")
    assert refused.exit_code == 2 and "Through a server" in refused.stderr


def test_a_session_whose_id_holds_a_slash_is_said_not_reachable_through_a_server(
    team: Team,
) -> None:
    register(team.store, "a/b")
    listed = team.json("sessions", "list", role="viewer")
    assert "a/b" in [s["id"] for s in listed["items"]]  # listed: its id is in a body
    code, error = team.refused("sessions", "show", "--session", "a/b", role="viewer")
    assert (code, error["code"]) == (1, "not_through_server")
    assert "has a '/' in its id" in error["message"]
