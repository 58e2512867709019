"""Hosts in the store and on the command line (issue 41 point 2): a host's row as it connects,
is seen and goes, online only while held and seen within ONLINE_SECONDS, a newer connection
taking it over; what a host says of itself checked before it is kept; ``roundtable hosts`` and
``host service``. The connection through a real server: tests/test_hosts_server.py."""

from __future__ import annotations

import json
import plistlib
from pathlib import Path
from typing import Any

import pytest

from roundtable_console.hosts.found import AGENT_COMMANDS, ProjectMissing, projects_of
from roundtable_console.hosts.link import BACKOFF_MAX_SECONDS, Target, backoff
from roundtable_console.store.access.tokens import create_token
from roundtable_console.store.access.web_sessions import sign_in
from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import InvalidHost, InvalidToken, InvalidTokenRequest
from roundtable_console.store.hosts import registry
from roundtable_console.store.hosts.facts import MAX_AGENTS, MAX_PROJECTS, AgentFound, HostFacts
from tests.conftest import FakeClock
from tests.helpers import Cli, register_session

FACTS = HostFacts(
    name="laptop",
    agents=(AgentFound("claude-code", "2.1.328"), AgentFound("codex", None)),
    tmux="3.3a",
    projects=("/home/ann/api", "/home/ann/web"),
    version="0.1.0",
    platform="Linux x86_64",
)


def _hosts(store: Store, clock: FakeClock) -> dict[str, registry.HostRow]:
    with store.read() as db:
        return {host.name: host for host in registry.list_hosts(db, clock=clock)}


def test_a_host_is_online_while_held_and_seen_and_offline_after(
    store: Store, clock: FakeClock
) -> None:
    with store.write() as db:
        registry.connect(db, FACTS, connection_id="c1", clock=clock)
    host = _hosts(store, clock)["laptop"]
    assert host.online and host.facts == FACTS
    assert host.to_json()["agents"] == [
        {"name": "claude-code", "version": "2.1.328"},
        {"name": "codex", "version": None},
    ]
    clock.advance(seconds=registry.ONLINE_SECONDS - 1)
    assert _hosts(store, clock)["laptop"].online
    clock.advance(seconds=2)  # not seen for longer than ONLINE_SECONDS: its server went silent
    assert not _hosts(store, clock)["laptop"].online
    with store.write() as db:
        assert registry.seen(db, ["c1"], clock=clock) == {"c1"}
    assert _hosts(store, clock)["laptop"].online
    with store.write() as db:
        assert registry.disconnect(db, "laptop", connection_id="c1", clock=clock)
    gone = _hosts(store, clock)["laptop"]
    assert not gone.online and gone.connected_at is None
    assert gone.last_seen_at is not None and gone.first_seen_at is not None


def test_a_host_held_is_not_taken_by_another_connection_until_the_holder_goes(
    store: Store, clock: FakeClock
) -> None:
    with store.write() as db:
        assert registry.connect(db, FACTS, connection_id="first", clock=clock)
    clock.advance(seconds=5)
    other = HostFacts(name="laptop", projects=("/attacker/controlled",))
    with store.write() as db:  # a second process, or a stolen token: it waits
        assert not registry.connect(db, other, connection_id="second", clock=clock)
        assert registry.seen(db, ["first", "second"], clock=clock) == {"first"}
    assert _hosts(store, clock)["laptop"].facts == FACTS
    with store.write() as db:  # the holder goes: the next one takes it
        assert registry.disconnect(db, "laptop", connection_id="first", clock=clock)
        assert registry.connect(db, other, connection_id="second", clock=clock)
        assert not registry.disconnect(db, "laptop", connection_id="first", clock=clock)
    host = _hosts(store, clock)["laptop"]
    assert host.online and host.facts.projects == ("/attacker/controlled",)
    assert host.first_seen_at < host.last_seen_at  # first seen kept, the rest replaced


def test_a_holder_not_seen_for_long_is_taken_over(store: Store, clock: FakeClock) -> None:
    with store.write() as db:
        assert registry.connect(db, FACTS, connection_id="silent", clock=clock)
    clock.advance(seconds=registry.ONLINE_SECONDS - 1)
    with store.write() as db:
        assert not registry.connect(db, FACTS, connection_id="next", clock=clock)
    clock.advance(seconds=2)  # its server stopped without a word
    with store.write() as db:
        assert registry.connect(db, FACTS, connection_id="next", clock=clock)
        assert registry.seen(db, ["silent", "next"], clock=clock) == {"next"}


def test_a_host_counts_the_sessions_that_name_it(store: Store, clock: FakeClock) -> None:
    with store.write() as db:
        registry.connect(db, FACTS, connection_id="c1", clock=clock)
        registry.connect(db, HostFacts(name="buildbox"), connection_id="c2", clock=clock)
        register_session(db, "s1", host="laptop", status="running", clock=clock)
        register_session(db, "s2", host="laptop", status="ended", clock=clock)
        register_session(db, "s3", host="elsewhere", status="running", clock=clock)
    hosts = _hosts(store, clock)
    assert (hosts["laptop"].sessions, hosts["laptop"].active) == (2, 1)
    assert (hosts["buildbox"].sessions, hosts["buildbox"].active) == (0, 0)
    assert set(hosts) == {"laptop", "buildbox"}  # a session's host alone makes no host


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"name": "two words"}, "host's name"),
        ({"name": "-leading"}, "host's name"),
        ({"name": "x" * 65}, "host's name"),
        ({"name": "laptop\n"}, "host's name"),
        ({"name": 7}, "host's name"),
        ({"agents": "claude"}, "agents is a list"),
        ({"agents": [{"name": "a"}] * (MAX_AGENTS + 1)}, "agents is a list"),
        ({"agents": [{"name": "Claude Code"}]}, "agent's name"),
        ({"agents": [{"name": "codex\n"}]}, "agent's name"),
        ({"agents": [{"name": "codex"}, {"name": "codex"}]}, "named once"),
        ({"agents": [{"name": "codex", "version": "1\x1b[2J"}]}, "version"),
        ({"agents": ["codex"]}, "Each agent"),
        ({"projects": ["relative/dir"]}, "absolute"),
        ({"projects": ["/srv/../etc"]}, "absolute"),
        ({"projects": ["/srv/x\ny"]}, "absolute"),
        ({"projects": ["/p"] * (MAX_PROJECTS + 1)}, "projects is a list"),
        ({"tmux": "x" * 65}, "tmux"),
        ({"platform": ["Linux"]}, "platform"),
    ],
)
def test_what_a_host_says_of_itself_is_checked(change: dict[str, Any], words: str) -> None:
    with pytest.raises(InvalidHost, match=words):
        HostFacts.from_json({**FACTS.to_json(), **change})


def test_what_a_host_says_comes_back_as_it_was() -> None:
    assert HostFacts.from_json(json.loads(json.dumps(FACTS.to_json()))) == FACTS


def test_a_hosts_token_signs_in_nowhere_and_reaches_no_workspace(store: Store) -> None:
    token = create_token(store=store, name="laptop", role="host").token
    with pytest.raises(InvalidToken, match="host's"):
        sign_in(store=store, token=token)
    with pytest.raises(InvalidTokenRequest, match="reaches no workspace"):
        create_token(store=store, name="bound-host", role="host", workspaces=("ws-1",))


def test_projects_are_real_directories_given_once(tmp_path: Path) -> None:
    real = tmp_path / "api"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    assert projects_of([str(real), str(tmp_path / "link"), str(real) + "/"]) == (str(real),)
    with pytest.raises(ProjectMissing, match="not a directory"):
        projects_of([str(tmp_path / "missing")])


def test_a_lost_connection_is_tried_again_less_often_up_to_a_minute() -> None:
    waits = [backoff(attempt, jitter=lambda: 1.0) for attempt in range(10)]
    assert waits[:4] == [1.0, 2.0, 4.0, 8.0] and waits[-1] == BACKOFF_MAX_SECONDS
    assert backoff(3, jitter=lambda: 0.0) == 4.0  # jitter: between half and all of it
    assert Target("https://team.example/rt/", None).url == (
        "wss://team.example/rt/api/v1/hosts/connect"
    )
    assert Target("http://127.0.0.1:8700", "t").url == "ws://127.0.0.1:8700/api/v1/hosts/connect"


def test_the_hosts_command_lists_them(rt: Cli, clock: FakeClock) -> None:
    assert rt("hosts").stdout == ""
    rt.with_store(lambda store: _connect(store, clock))
    rt.register("s1", "--host", "laptop")
    listed = rt("hosts")
    assert listed.exit_code == 0
    assert listed.stdout.split("\t") == [
        "laptop", "online", "2026-09-17T17:26:35.000000Z", "claude-code 2.1.328, codex",
        "1 active / 1", "/home/ann/api, /home/ann/web\n",
    ]  # fmt: skip
    [host] = rt.json("hosts")["items"]
    assert host["online"] is True and host["sessions"] == 1 and host["tmux"] == "3.3a"
    clock.advance(seconds=registry.ONLINE_SECONDS + 1)
    assert rt.json("hosts")["items"][0]["online"] is False


def _connect(store: Store, clock: Any) -> None:
    with store.write() as db:
        registry.connect(db, FACTS, connection_id="c1", clock=clock)


def test_host_run_refuses_a_bad_name_a_missing_project_and_a_token_without_server(
    rt: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = rt("host", "run", "--name", "not a name")
    assert bad.exit_code == 2 and "host's name" in bad.stderr
    missing = rt("host", "run", "--name", "laptop", "--project", str(tmp_path / "nope"))
    assert missing.exit_code == 2 and "not a directory" in missing.stderr
    alone = rt("host", "run", "--name", "laptop", "--token-env", "T")
    assert alone.exit_code == 2 and "--token-env goes with --server" in alone.stderr
    monkeypatch.delenv("HOST_TOKEN", raising=False)
    unset = rt("host", "run", "--server", "http://127.0.0.1:9", "--token-env", "HOST_TOKEN")
    assert unset.exit_code == 2 and "HOST_TOKEN is not set" in unset.stderr
    clear = rt("host", "run", "--server", "http://team.example", "--token-env", "HOST_TOKEN")
    assert clear.exit_code == 2 and "clear text" in clear.stderr
    assert rt.json("hosts")["items"] == []


def test_host_service_prints_a_unit_that_runs_the_host_and_holds_no_token(
    rt: Cli, tmp_path: Path
) -> None:
    args = ("host", "service", "--name", "laptop", "--server", "https://team.example",
            "--token-env", "RT_HOST_TOKEN", "--project", str(tmp_path))  # fmt: skip
    unit = rt(*args, db=False)
    assert unit.exit_code == 0, unit.stderr
    [start] = [line for line in unit.stdout.splitlines() if line.startswith("ExecStart=")]
    assert start.endswith(
        f"host run --name laptop --server https://team.example --token-env RT_HOST_TOKEN "
        f"--project {tmp_path.resolve()}"
    )
    assert "EnvironmentFile=%h/.config/roundtable/host.env" in unit.stdout
    assert "Restart=on-failure" in unit.stdout and "WantedBy=default.target" in unit.stdout
    plist = rt(*args, "--launchd", db=False)
    assert plist.exit_code == 0
    parsed = plistlib.loads(plist.stdout.encode())
    assert parsed["ProgramArguments"][-10:] == [
        "host", "run", "--name", "laptop", "--server", "https://team.example",
        "--token-env", "RT_HOST_TOKEN", "--project", str(tmp_path.resolve()),
    ]  # fmt: skip
    assert parsed["EnvironmentVariables"] == {"RT_HOST_TOKEN": "PASTE THE HOST TOKEN HERE"}
    assert parsed["KeepAlive"] == {"SuccessfulExit": False} and parsed["RunAtLoad"] is True


def test_the_agents_a_host_looks_for_are_the_three() -> None:
    from roundtable_console.agents.registry import AGENT_NAMES

    assert tuple(AGENT_COMMANDS) == AGENT_NAMES


def test_a_session_of_another_machine_with_a_host_is_reached_through_it(
    rt: Cli, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """This machine does not start, read or pretend to reach a session of another machine
    whose host the store knows: it says where it runs and how it is reached (issue 41 point
    4). Sessions of this machine, and of machines that run no host, are as before."""
    from roundtable_console.screens.session.transcript import read_transcript
    from roundtable_console.store.reads.sessions import get_session

    monkeypatch.setenv("ROUNDTABLE_HOST", "desk")
    rt.with_store(lambda store: _connect(store, clock))
    for session_id, host in (("s-laptop", "laptop"), ("s-desk", "desk"), ("s-nohost", "vm")):
        rt.register(session_id, "--host", host, "--status", "paused", "--cwd", str(tmp_path),
                    "--adapter", "claude", "--external-session-id", "e-1")  # fmt: skip
    with rt.with_store(lambda store: store.read()) as db:
        assert registry.runs_elsewhere(db, get_session(db=db, session_id="s-laptop"), "desk")
        for mine in ("s-desk", "s-nohost"):
            assert registry.runs_elsewhere(db, get_session(db=db, session_id=mine), "desk") is None
    refused = rt("resume", "--session", "s-laptop", "--exec", "--json")
    assert refused.exit_code == 1
    assert "runs on laptop (its host is online)" in refused.stderr
    assert rt.session("s-laptop").status == "paused"  # nothing was done

    def shown(session_id: str) -> Any:
        def read(store: Store) -> Any:
            with store.read() as db:
                session = get_session(db=db, session_id=session_id)
            return read_transcript(store, session, None)

        return rt.with_store(read)

    assert "runs on laptop (its host is" in shown("s-laptop")
    assert "runs on" not in shown("s-nohost")  # read here, as before: none is known


def test_a_call_through_the_store_is_taken_once_answered_once_and_not_kept(
    store: Store, clock: FakeClock
) -> None:
    """store.hosts.calls: the rules a relayed call keeps, on each engine."""
    from sqlalchemy import text

    from roundtable_console.store.hosts import calls, protocol

    with store.write() as db:
        first = calls.ask(db, "laptop", protocol.ACTIVITY, {"a": 1}, seconds=10, clock=clock)
        other = calls.ask(db, "buildbox", protocol.LAUNCH, {"b": 2}, seconds=10, clock=clock)
        given_up = calls.ask(db, "laptop", protocol.STOP_AGENT, {}, seconds=10, clock=clock)
        with pytest.raises(ValueError):  # a reply is never typed through the store
            calls.ask(db, "laptop", protocol.TYPE, {}, seconds=10, clock=clock)
        # Written by something other than a server: an operation, arguments, a time out of shape.
        for row_id, op, args, expires in (
            ("forged-op", "run", "{}", "2999-01-01T00:00:00.000000Z"),
            ("forged-args", protocol.ACTIVITY, "[1]", "2026-09-17T17:26:45.000000Z"),
        ):
            db.execute(text(
                "INSERT INTO host_calls (id, host, op, args_json, asked_at, expires_at) VALUES"
                " (:id, 'laptop', :op, :args, '2026-09-17T17:26:35.000000Z', :expires)"
            ), {"id": row_id, "op": op, "args": args, "expires": expires})  # fmt: skip
    with store.write() as db:
        assert calls.abandon(db, given_up, clock=clock) is True
    with store.read() as db:
        found = calls.open_for(db, ["laptop"], clock=clock)
    # The far-future row is left alone; the given-up one is nobody's; buildbox's is not ours.
    assert [call.id for call in found] == [first, "forged-args"]
    assert found[0].answer_unasked(clock) is None and found[1].answer_unasked(clock) is not None
    with store.write() as db:
        assert [c.id for c in calls.take(db, found, "server-1", clock=clock)] == [
            first, "forged-args"]  # fmt: skip
        assert calls.take(db, found, "server-2", clock=clock) == []  # taken once
        calls.answer(db, first, {"ok": {"x": 1}}, "server-2", clock=clock)  # not its taker
        assert calls.answer_of(db, first) is None
        calls.answer(db, first, {"ok": {"x": 1}}, "server-1", clock=clock)
        calls.answer(db, first, {"ok": {"x": 2}}, "server-1", clock=clock)  # once
        assert calls.answer_of(db, first) == {"ok": {"x": 1}}
        calls.forget(db, first)
        assert calls.answer_of(db, first) is None
    clock.advance(seconds=11)
    with store.read() as db:
        assert calls.open_for(db, ["buildbox"], clock=clock) == []  # past its time
    with store.write() as db:
        calls.ask(db, "laptop", protocol.ACTIVITY, {}, seconds=5, clock=clock)  # prunes
        left = {row[0] for row in db.execute(text("SELECT id FROM host_calls"))}
    assert other not in left and given_up not in left and "forged-op" in left


def test_a_read_only_console_says_why_it_cannot_ask_a_host(
    rt: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading through a host is a call written to the store: a read-only console cannot write
    one, and says so rather than failing."""
    from roundtable_console.screens.session.transcript import read_transcript
    from roundtable_console.store.clock import system_clock
    from roundtable_console.store.db.database import open_store
    from roundtable_console.store.reads.sessions import get_session

    monkeypatch.setenv("ROUNDTABLE_HOST", "desk")
    rt.with_store(lambda store: _connect(store, system_clock))  # online now
    rt.register("s-laptop", "--host", "laptop")
    store = open_store(rt.url, read_only=True)
    try:
        with store.read() as db:
            session = get_session(db=db, session_id="s-laptop")
        said = read_transcript(store, session, None)
    finally:
        store.dispose()
    assert isinstance(said, str) and "this console could not write" in said, said
