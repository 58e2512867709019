"""What needs the agent's machine goes through its host (issue 41 point 4): a session whose
machine runs a host has its transcript read by that host, through the link the host opened —
through a real ``roundtable serve`` and a real ``roundtable host run``; a host that is gone is
said; what a host answers is checked by the server as untrusted input; and the host does its
fixed operations only, for its own sessions only (point 5)."""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from websockets.sync.client import connect

from roundtable_console.agents import transcripts
from roundtable_console.hosts import operations
from roundtable_console.hosts.found import Machine, Project
from roundtable_console.store.db.database import Store
from roundtable_console.store.hosts import protocol
from roundtable_console.store.hosts.facts import HostFacts
from tests import http_calls
from tests.helpers import register_session
from tests.hosts_support import Team, ended, host_started, team_serving, wait_until
from tests.serve_support import serving

CLAUDE_ID = "3f0c8a52-7c1e-4b8e-9a57-2f1d7c0e9b11"
# A host given every directory (its other checks are these tests' subject).
LAPTOP = Machine(HostFacts(name="laptop"), (Project("/", None),))


@pytest.fixture
def team(sqlite_store: Store, tmp_path: Path) -> Iterator[Team]:
    url = f"sqlite:///{tmp_path / 'roundtable.db'}"
    yield from team_serving(sqlite_store, url, tmp_path / "server-home")


def transcript_on(home: Path, *words: str) -> Path:
    """A Claude Code transcript where Claude Code keeps it on the machine of ``home``."""
    path = home / ".claude" / "projects" / "-w" / f"{CLAUDE_ID}.jsonl"
    path.parent.mkdir(parents=True)
    lines = [{"type": "user", "message": {"role": "user", "content": word}} for word in words]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def register_on(store: Store, session_id: str, host: str, transcript: Path) -> None:
    """A session of Claude Code on ``host``, in the directory its transcript's machine holds."""
    with store.write() as db:
        register_session(
            db, session_id, adapter="claude", host=host, workspace_id="ws-1",
            external_session_id=CLAUDE_ID, working_directory=str(transcript.parents[3]),
            resume_command=f"claude --resume {CLAUDE_ID}",
            metadata={"hooks": "claude-code", "transcript_path": str(transcript)},
        )  # fmt: skip


def read(team: Team, session_id: str, token: str = "ops", **params: Any) -> dict[str, Any]:
    answer = http_calls.get(
        f"{team.served.url}/api/v1/workspaces/ws-1/sessions/{session_id}/transcript",
        params=params, headers=team.bearer(token), timeout=30,
    )  # fmt: skip
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_sessions_transcript_is_read_through_its_host_and_its_absence_said(
    team: Team, tmp_path: Path
) -> None:
    transcript = transcript_on(tmp_path / "laptop-home", "first prompt", "second prompt")
    register_on(team.store, "on-laptop", "laptop", transcript)
    host = team.host("--project", str(tmp_path / "laptop-home"))
    try:
        wait_until(lambda: team.online("laptop"), "the host online")

        def first_page() -> dict[str, Any] | None:
            # On a loaded machine a host's first hello can be late: it connects again, and a
            # call on the link it left is said to have gone away (CI saw it once). Asked again.
            page = read(team, "on-laptop", limit=1)
            return None if "went away" in str(page.get("reason")) else page

        page = wait_until(first_page, "a page read through the host", 15)
        assert page["available"] is True, page
        assert [item["text"] for item in page["items"]] == ["second prompt"]
        older = read(team, "on-laptop", before=page["next_before"], token="vic")
        assert [item["text"] for item in older["items"]] == ["first prompt"]
        assert older["next_before"] is None
    finally:
        host.send_signal(signal.SIGTERM)
    assert ended(host)[0] == 0
    wait_until(lambda: not team.online("laptop"), "the host offline")
    gone = read(team, "on-laptop")
    # The file is on this disk too (one machine plays both): the server does not read it, for
    # the session's machine runs a host, and that host is offline.
    assert gone["available"] is False and gone["items"] == []
    assert "runs on laptop, whose host is offline" in gone["reason"], gone


def test_a_session_of_a_machine_with_no_host_is_read_here_as_before(
    team: Team, tmp_path: Path
) -> None:
    transcript = transcript_on(tmp_path / "server-home", "read here")
    register_on(team.store, "on-server", "the-server", transcript)
    page = read(team, "on-server")
    assert page["available"] is True and page["items"][-1]["text"] == "read here"


@contextmanager
def _connected(team: Team) -> Iterator[Any]:
    """A host of our own making, said hello for: what it is sent and answers is the test's."""
    with connect(
        team.served.url.replace("http", "ws", 1) + protocol.CONNECT_PATH,
        additional_headers=team.bearer("laptop"),
    ) as socket:
        _hello(socket)
        yield socket


def _hello(socket: Any) -> None:
    facts = {"name": "laptop", "agents": [], "projects": [], "tmux": None, "version": "t"}
    socket.send(json.dumps({"kind": protocol.HELLO, **facts, "platform": "t"}))
    assert json.loads(socket.recv(10))["kind"] == protocol.WELCOME


def _answering(socket: Any, answer: Any) -> dict[str, Any]:
    """Receive one call; answer it with ``answer(call)``; the call as it came."""
    call = json.loads(socket.recv(30))
    socket.send(json.dumps(answer(call)))
    return call


@pytest.mark.parametrize(
    ("ok", "expected"),
    [
        # The host's page is made printable and redacted again, as a page read here is.
        (
            {
                "items": [{"kind": "agent", "text": "\x1b[2Jdone api_key=sk-live-123", "at": None}],
                "next_before": None,
                "size": 10,
            },
            {"available": True, "text": "done api_key=[REDACTED]"},
        ),  # fmt: skip
        ({"items": "no", "size": 1}, {"available": False, "reason": "not a transcript page"}),
        (
            {"items": [{"kind": "shell", "text": "rm -rf /"}], "size": 1},
            {"available": False, "reason": "not a transcript page"},
        ),
        (
            {"items": [], "next_before": -5, "size": 1},
            {"available": False, "reason": "not a transcript page"},
        ),
    ],
)
def test_what_a_host_answers_is_checked_by_the_server(
    team: Team, tmp_path: Path, ok: Any, expected: dict[str, Any]
) -> None:
    register_on(team.store, "on-laptop", "laptop", tmp_path / "nowhere.jsonl")
    with _connected(team) as socket:
        result: dict[str, Any] = {}
        reading = threading.Thread(target=lambda: result.update(read(team, "on-laptop")))
        reading.start()
        call = _answering(socket, lambda call: {"kind": "answer", "id": call["id"], "ok": ok})
        reading.join(30)
    assert call["op"] == protocol.ACTIVITY
    assert call["args"]["session"]["id"] == "on-laptop" and call["args"]["limit"] == 50
    assert result["available"] is expected["available"], result
    if expected["available"]:
        shown = result["items"][0]["text"]
        assert "\x1b" not in shown and shown.endswith(expected["text"]), shown
    else:
        assert expected["reason"] in result["reason"]


def test_a_host_that_answers_what_it_was_not_asked_is_let_go(team: Team) -> None:
    """A stolen host token cannot keep the server decoding its messages: an answer to a call
    it was never sent ends its link."""
    with _connected(team) as socket:
        socket.send(json.dumps({"kind": "answer", "id": 999, "ok": {}}))
        wait_until(lambda: not team.online("laptop"), "the host let go", 10)


def test_a_sessions_metadata_is_not_sent_to_its_host(team: Team, tmp_path: Path) -> None:
    """A call names its session's few fields: an agent's megabyte of metadata (its to write)
    cannot make a call too long for the host, and drop its link."""
    transcript = transcript_on(tmp_path / "laptop-home", "still here")
    with team.store.write() as db:
        register_session(
            db, "heavy", adapter="claude", host="laptop", workspace_id="ws-1",
            external_session_id=CLAUDE_ID, working_directory=str(tmp_path / "laptop-home"),
            metadata={"hooks": "claude-code", "transcript_path": str(transcript),
                      "junk": "\\" * 480_000},
        )  # fmt: skip
    with _connected(team) as socket:
        result: dict[str, Any] = {}
        reading = threading.Thread(target=lambda: result.update(read(team, "heavy")))
        reading.start()
        raw = socket.recv(30)
        call = json.loads(raw)
        socket.send(json.dumps({"kind": "answer", "id": call["id"],
                                "ok": {"items": [], "next_before": None, "size": 0}}))  # fmt: skip
        reading.join(30)
    assert len(raw) < 10_000 and set(call["args"]["session"]) == set(protocol.SESSION_FIELDS)
    assert result["available"] is True, result


def test_a_host_that_sends_anything_but_answers_is_let_go(team: Team, tmp_path: Path) -> None:
    register_on(team.store, "on-laptop", "laptop", tmp_path / "nowhere.jsonl")
    with _connected(team) as socket:
        result: dict[str, Any] = {}
        reading = threading.Thread(target=lambda: result.update(read(team, "on-laptop")))
        reading.start()
        json.loads(socket.recv(30))  # the call, not answered: something else instead
        socket.send(json.dumps({"kind": "call", "id": 1, "op": "activity", "args": {}}))
        reading.join(30)
        assert result["available"] is False and "went away" in result["reason"], result
    # The link was ended: the host is not held here any more.
    wait_until(lambda: not team.online("laptop"), "the host let go", 10)


# ------------------------------------------------------------------ the host's own checks


def _args(session_id: str = "s1", **session: Any) -> dict[str, Any]:
    values: dict[str, Any] = dict.fromkeys(protocol.SESSION_FIELDS)
    values.update(id=session_id, adapter="claude", working_directory="/tmp", host="laptop",
                  external_session_id=CLAUDE_ID)  # fmt: skip
    values.update(session)
    return {"session": values, "launch": None, "before": None, "limit": 50}


def test_a_host_does_its_fixed_operations_only_for_its_own_sessions(tmp_path: Path) -> None:
    transcript = str(transcript_on(tmp_path, "mine"))
    mine = _args(transcript_path=transcript)
    assert operations.answer(LAPTOP, "activity", mine)["ok"]["items"]
    refusals = {
        "an operation it does not do": operations.answer(LAPTOP, "run", {"argv": ["sh"]}),
        "a session of another host": operations.answer(
            LAPTOP, "activity", _args(transcript_path=transcript, host="buildbox")
        ),
        "a session of no host": operations.answer(
            LAPTOP, "activity", _args(transcript_path=transcript, host=None)
        ),
        "no session": operations.answer(LAPTOP, "activity", {"limit": 5}),
        "a field that is not text": operations.answer(
            LAPTOP, "activity", _args(transcript_path={"nested": transcript})
        ),
        "a field more than it names": operations.answer(
            LAPTOP, "activity", {**mine, "session": {**mine["session"], "metadata_json": "{}"}}
        ),
        "arguments that are not an object": operations.answer(LAPTOP, "activity", ["x"]),
        "a limit out of range": operations.answer(LAPTOP, "activity", {**mine, "limit": 10_000}),
        "a negative offset": operations.answer(LAPTOP, "activity", {**mine, "before": -1}),
        "a directory outside its projects": operations.answer(
            Machine(LAPTOP.facts, (Project(str(tmp_path / "api"), None),)), "activity", mine
        ),
        "a project of another workspace": operations.answer(
            Machine(LAPTOP.facts, (Project("/", "ws-2"),)),
            "activity",
            _args(transcript_path=transcript, workspace_id="ws-1"),
        ),  # fmt: skip
    }
    for what, answer in refusals.items():
        assert set(answer) == {"refused"}, (what, answer)
    bound = Machine(LAPTOP.facts, (Project("/", "ws-1"),))
    assert "ok" in operations.answer(bound, "activity", _args(transcript_path=transcript,
                                                               workspace_id="ws-1"))  # fmt: skip


def test_a_host_reads_only_where_the_agent_keeps_that_sessions_transcript(
    tmp_path: Path,
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text(json.dumps({"type": "user", "message": {"content": "SECRET"}}) + "\n")
    for path in (str(secret), "/etc/passwd", f"/x/.claude/projects/../../etc/{CLAUDE_ID}.jsonl"):
        answer = operations.answer(LAPTOP, "activity", _args(transcript_path=path))
        assert set(answer) == {"unavailable"} and "SECRET" not in json.dumps(answer), path


def test_a_page_too_long_for_one_message_is_shortened_not_refused(tmp_path: Path) -> None:
    long = "é" * (transcripts.MESSAGE_CUT - 10)  # 200 of them: more than a message holds
    transcript = transcript_on(tmp_path, *[f"{n} {long}" for n in range(400)])
    args = {**_args(transcript_path=str(transcript)), "limit": transcripts.MAX_LIMIT}
    body = operations.answer(LAPTOP, "activity", args)
    sent = operations.encoded(7, body)
    assert len(sent.encode()) < protocol.MESSAGE_MOST_BYTES
    items = body["ok"]["items"]
    assert 0 < len(items) < transcripts.MAX_LIMIT and items[-1]["text"].startswith("399 ")
    assert body["ok"]["next_before"] > 0  # the older entries are the next page's


def test_a_host_reads_no_pane_but_its_own_tmux_servers(tmp_path: Path) -> None:
    """A launch row naming a pane of another tmux server (another user's, the operator's own)
    is not read: the host reads panes in the tmux server it starts agents in only."""
    import socket as sockets

    launch = {"tmux_pane": "%0", "tmux_socket": str(tmp_path / "other"), "via_host": "laptop",
              "tmux_server_pid": "1", "host": sockets.gethostname()}  # fmt: skip
    mine = _args(working_directory=str(tmp_path))
    answer = operations.answer(LAPTOP, "activity", {**mine, "launch": launch})
    assert set(answer) == {"unavailable"} and "No transcript is known" in answer["unavailable"]


def test_a_host_builds_the_agents_command_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a launch runs is the host's own resume of a found agent, the briefing one argument:
    an argv, a program or a shell line in the call is never run; an id is the agent's own (a
    UUID: never "latest", an index or an option); a "#" of the directory is no tmux format."""
    from roundtable_console.hosts import launching
    from roundtable_console.store.hosts.facts import AgentFound

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text("#!/bin/sh\n")
    (bin_dir / "claude").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    machine = Machine(
        HostFacts(name="laptop", agents=(AgentFound("claude-code", "2.1"),)),
        (Project(str(tmp_path), None),),
    )
    odd = tmp_path / "#(touch pwned)"
    odd.mkdir()
    session = operations.session_of("laptop", _args(working_directory=str(odd)))
    cwd = launching.checked_directory(machine, session)
    started, name = launching.command(machine, session, cwd, "$(rm -rf ~); `reboot`")
    after = started[started.index("--") + 1 :]
    assert after == [str(bin_dir / "claude"), "--resume", CLAUDE_ID, "$(rm -rf ~); `reboot`"]
    assert started[started.index("-c") + 1] == str(odd).replace("#", "##")
    assert name == protocol.tmux_session_name("s1") and started[1:3] == ["-L", "roundtable-host"]
    for bad_id in ("-rf", "a b", "latest", "1", "x" * 200, CLAUDE_ID + "; x"):
        with pytest.raises(launching.Refused):
            launching.command(
                machine, operations.session_of("laptop", _args(external_session_id=bad_id)),
                cwd, "p",
            )  # fmt: skip


def test_a_host_types_only_into_panes_it_started_and_only_a_reply_line(tmp_path: Path) -> None:
    from roundtable_console.hosts import launching

    own = {"tmux_pane": "%1", "tmux_socket": launching.tmux_socket(), "via_host": "laptop",
           "tmux_server_pid": "1", "host": "x"}  # fmt: skip
    cases = {
        "a pane another host started": {**own, "via_host": "buildbox"},
        "a pane no host started": {k: v for k, v in own.items() if k != "via_host"},
        "a pane of another tmux server": {**own, "tmux_socket": str(tmp_path / "other")},
    }
    for what, launch in cases.items():
        for op in ("pane", "type"):
            answer = operations.answer(LAPTOP, op, {"launch": launch, "line": "go on"})
            assert set(answer) == {"refused"}, (what, op, answer)
    # Its own pane, gone (no such tmux server here): said, nothing typed.
    assert set(operations.answer(LAPTOP, "type", {"launch": own, "line": "go on"})) == {
        "unavailable"
    }


@pytest.mark.parametrize("line", ["/exit", "!rm -rf ~", "#note", "two\nlines", "", 5, "x" * 5000])
def test_a_host_types_no_prompt_command_and_no_second_line(
    line: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from roundtable_console.hosts import launching

    monkeypatch.setattr(operations, "verified_pane", lambda launch, **_: ([], "%1"))
    typed: list[str] = []
    monkeypatch.setattr(operations, "type_into_pane", lambda launch, line, **_: typed.append(line))
    own = {"tmux_pane": "%1", "tmux_socket": launching.tmux_socket(), "via_host": "laptop"}
    answer = operations.answer(LAPTOP, "type", {"launch": own, "line": line})
    assert set(answer) == {"refused"} and typed == []


def test_a_pane_a_host_started_is_never_read_here() -> None:
    """What a host said of its pane is not taken for this machine's: a reader here (the
    console, the server of a machine with no host) does not open it."""
    import socket as sockets

    from roundtable_console.agents.panes import verified_pane

    launch = {"tmux_pane": "%1", "tmux_socket": "/tmp/x", "tmux_server_pid": "1",
              "host": sockets.gethostname(), "via_host": "laptop"}  # fmt: skip
    with pytest.raises(transcripts.TranscriptUnavailable, match="through that host"):
        verified_pane(launch)


def test_stop_agent_is_offered_only_where_it_can_happen() -> None:
    from types import SimpleNamespace

    from roundtable_console.api.web.reads import agent_reachable

    ctx: Any = SimpleNamespace(hosts=SimpleNamespace(links={"laptop": object()}))
    pane = {"tmux_pane": "%1"}
    assert agent_reachable(ctx, pane)  # R's, on this machine
    assert agent_reachable(ctx, {**pane, "via_host": "laptop"})  # its host is held here
    assert not agent_reachable(ctx, {**pane, "via_host": "buildbox"})  # offline, or elsewhere
    assert not agent_reachable(ctx, {"host": "x"}) and not agent_reachable(ctx, None)  # no pane


@pytest.fixture
def two_servers(store: Store, store_url: str, tmp_path: Path) -> Iterator[tuple[Team, str]]:
    """A team's two servers on one store (each engine): the first, with its tokens; the
    second's URL."""
    for team in team_serving(store, store_url, tmp_path / "first-home"):
        with serving(store_url, tmp_path / "second-home") as second:
            yield team, second.url


def test_a_host_held_by_another_server_of_the_store_is_reached_through_it(
    two_servers: tuple[Team, str], tmp_path: Path
) -> None:
    """Several servers on one store share the hosts: the laptop's host holds its link to the
    first server; the second reads its session's transcript, starts nothing it should not,
    and says so when the host is gone."""
    team, second = two_servers
    transcript = transcript_on(tmp_path / "laptop-home", "asked on the second server")
    register_on(team.store, "on-laptop", "laptop", transcript)
    host = team.host("--project", str(tmp_path / "laptop-home"))
    url = f"{second}/api/v1/workspaces/ws-1/sessions/on-laptop"
    try:
        wait_until(lambda: team.online("laptop"), "the host online on the first server")
        page = http_calls.get(f"{url}/transcript", headers=team.bearer("vic"), timeout=30).json()
        assert page["available"] is True, page
        assert page["items"][-1]["text"] == "asked on the second server"
        with team.store.write() as db:
            db.execute(text("UPDATE agent_sessions SET status = 'stopped' WHERE id = 'on-laptop'"))
        refused = http_calls.post(f"{url}/launch", timeout=60,
                             headers={**team.bearer("ops"), "Idempotency-Key": "k1"})  # fmt: skip
        # Asked through the first server, the host refuses: it has no claude (its own words).
        assert refused.status_code == 409 and "has no claude-code" in refused.json()["detail"]
    finally:
        host.send_signal(signal.SIGTERM)
    assert ended(host)[0] == 0
    wait_until(lambda: not team.online("laptop"), "the host offline")
    gone = http_calls.get(f"{url}/transcript", headers=team.bearer("vic"), timeout=30).json()
    assert gone["available"] is False and "whose host is offline" in gone["reason"]


def test_a_host_on_the_store_itself_is_said_not_waited_for(team: Team, tmp_path: Path) -> None:
    """A host that reaches the store itself (host run --db) has no link any server can use:
    said at once."""
    from roundtable_console.store.hosts import registry

    transcript = transcript_on(tmp_path / "laptop-home", "on the store")
    register_on(team.store, "on-laptop", "laptop", transcript)
    with team.store.write() as db:
        registry.connect(db, HostFacts(name="laptop"), connection_id=registry.ON_STORE + "x")
    page = read(team, "on-laptop")
    assert page["available"] is False and "store itself (host run --db)" in page["reason"], page


def test_a_host_on_a_postgresql_store_answers_through_it(pg_store: Store, tmp_path: Path) -> None:
    """On PostgreSQL a host on the store itself (host run --db) answers the calls servers make
    for it through the store: woken by its own channel, never by the fleet's changes."""
    url = pg_store.engine.url.render_as_string(hide_password=False)
    with contextmanager(team_serving)(pg_store, url, tmp_path / "server-home") as team:
        transcript = transcript_on(tmp_path / "laptop-home", "asked through the store")
        register_on(team.store, "on-laptop", "laptop", transcript)
        host = host_started(
            team.home, "--name", "laptop", "--db", url, "--project", str(tmp_path / "laptop-home")
        )
        try:
            wait_until(lambda: team.online("laptop"), "the host on the store online")
            page = read(team, "on-laptop")
            assert page["available"] is True, page
            assert page["items"][-1]["text"] == "asked through the store"
        finally:
            host.send_signal(signal.SIGTERM)
        assert ended(host)[0] == 0


def test_the_console_on_the_store_reads_a_transcript_through_the_host(
    team: Team, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The terminal console opens the store and holds no link: a session of another machine
    whose host is online is read through the store and the server that holds that host."""
    from roundtable_console.screens.session.transcript import read_transcript
    from roundtable_console.store.reads.sessions import get_session

    monkeypatch.setenv("ROUNDTABLE_HOST", "desk")  # the console's machine
    transcript = transcript_on(tmp_path / "laptop-home", "read from the console")
    register_on(team.store, "on-laptop", "laptop", transcript)
    with team.store.read() as db:
        session = get_session(db=db, session_id="on-laptop")
    host = team.host("--project", str(tmp_path / "laptop-home"))
    try:
        wait_until(lambda: team.online("laptop"), "the host online")
        page = read_transcript(team.store, session, None)
        assert not isinstance(page, str), page
        assert page.entries[-1].text == "read from the console"
    finally:
        host.send_signal(signal.SIGTERM)
    assert ended(host)[0] == 0
    wait_until(lambda: not team.online("laptop"), "the host offline")
    said = read_transcript(team.store, session, None)
    assert isinstance(said, str) and "runs on laptop (its host is offline" in said


async def test_the_consoles_transcript_tab_reads_another_machines_session_through_its_host(
    team: Team, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the real console: the Transcript tab (8) of a session of the laptop shows what
    the laptop's host read; the console's own asking does not make it ask again and again (a
    call is a change of the store, and a change makes the tab look again)."""
    import asyncio
    import time

    from roundtable_console.store.hosts import calls
    from tests.test_tui_support import console, press, screen_text, settle

    monkeypatch.setenv("ROUNDTABLE_HOST", "desk")  # the console's machine
    asks: list[str] = []
    real_ask = calls.ask

    def counted(*args: Any, **kwargs: Any) -> str:
        asks.append(args[2])
        return real_ask(*args, **kwargs)

    monkeypatch.setattr(calls, "ask", counted)
    transcript = transcript_on(tmp_path / "laptop-home", "shown in the console")
    register_on(team.store, "on-laptop", "laptop", transcript)
    host = team.host("--project", str(tmp_path / "laptop-home"))
    try:
        wait_until(lambda: team.online("laptop"), "the host online")
        app = console(team.url, refresh_seconds=0.5)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await press(pilot, "enter", "8")
            deadline = time.monotonic() + 20
            while "shown in the console" not in screen_text(app):
                assert time.monotonic() < deadline, screen_text(app)
                await asyncio.sleep(0.1)
                await settle(pilot)
            asked = len(asks)
            await asyncio.sleep(3)  # six refreshes, and the calls' own changes
            await settle(pilot)
            assert asked >= 1 and len(asks) - asked <= 1, asks
            assert "you   › shown in the console" in screen_text(app)
    finally:
        host.send_signal(signal.SIGTERM)
    assert ended(host)[0] == 0
