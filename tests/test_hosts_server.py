"""A host on each machine (issue 41 point 2), through a real ``roundtable serve`` and real
``roundtable host run`` processes: the host connects out with its token and is listed online,
goes offline as it stops, comes back by itself after the server restarts, is replaced by a newer
connection of its name, and is ended by its token's revocation. Its token reaches nothing else;
no other token connects a host; what it says in its hello is checked."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from roundtable_console.api.server import free_port
from roundtable_console.store.access.tokens import create_token, revoke_token
from roundtable_console.store.db.database import Store
from roundtable_console.store.hosts import protocol
from tests import http_calls
from tests.hosts_support import Team, ended, host_started, team_serving, wait_until
from tests.serve_support import ROOT, serve_env, serving


@pytest.fixture
def team(store: Store, store_url: str, tmp_path: Path) -> Iterator[Team]:
    yield from team_serving(store, store_url, tmp_path / "home")


@pytest.fixture
def sqlite_team(sqlite_store: Store, tmp_path: Path) -> Iterator[Team]:
    yield from team_serving(sqlite_store, _sqlite_url(tmp_path), tmp_path / "home")


def _sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'roundtable.db'}"


def test_a_host_connects_out_is_listed_and_goes_offline_as_it_stops(
    team: Team, tmp_path: Path
) -> None:
    project = tmp_path / "api"
    project.mkdir()
    process = team.host("--project", str(project))
    try:
        wait_until(lambda: team.online("laptop"), "the host online")
        host = team.hosts()["laptop"]
        assert host["projects"] == [str(project.resolve())] and host["tmux"]
        assert host["platform"] and host["version"] and host["connected_at"]
        assert team.hosts("vic")["laptop"]["online"]  # a viewer sees the hosts too
        listed = subprocess.run(
            [sys.executable, "-m", "roundtable_console", "hosts", "--json", "--db",
             team.url], capture_output=True, text=True, cwd=ROOT,
            env=serve_env(team.home), check=True,
        )  # fmt: skip
        assert json.loads(listed.stdout)["items"][0]["online"] is True
    finally:
        process.send_signal(signal.SIGTERM)
    code, said = ended(process)
    assert code == 0, said
    assert "Connected to" in said and "Host stopped." in said
    assert team.tokens["laptop"] not in said
    wait_until(lambda: not team.online("laptop"), "the host offline once it stopped", 10)


def test_a_hosts_token_reaches_nothing_but_its_connection(sqlite_team: Team) -> None:
    team, url = sqlite_team, sqlite_team.served.url
    sessions = f"{url}/api/v1/workspaces/ws-1/sessions"
    host = team.bearer("laptop")
    for method, path in (
        ("GET", sessions),
        ("GET", f"{url}/api/v1/hosts"),
        ("GET", f"{url}/api/v1/openapi.json"),
        ("PUT", f"{sessions}/s1"),
        ("POST", f"{sessions}/s1/pause"),
    ):
        answer = http_calls.request(method, path, headers=host, json={})
        assert answer.status_code == 403, (method, path, answer.text)
        assert "host's" in answer.json()["detail"]
    with pytest.raises(InvalidStatus) as refused:
        connect(f"{url.replace('http', 'ws')}/api/v1/workspaces/ws-1/events/ws",
                additional_headers=host).close()  # fmt: skip
    assert refused.value.response.status_code == 403
    # No other token connects a host; a token bound to workspaces does not list the team's.
    for name in ("ops", "vic", "hooks"):
        with pytest.raises(InvalidStatus) as refused:
            connect(_ws(team), additional_headers=team.bearer(name)).close()
        assert refused.value.response.status_code == 403
        assert "Only a host's token" in refused.value.response.body.decode()
    with pytest.raises(InvalidStatus) as refused:
        connect(_ws(team)).close()
    assert refused.value.response.status_code == 401
    bound = http_calls.get(f"{url}/api/v1/hosts", headers=team.bearer("bound"))
    assert bound.status_code == 403 and "whole team" in bound.json()["detail"]
    assert team.hosts() == {}


def _ws(team: Team) -> str:
    return team.served.url.replace("http", "ws", 1) + protocol.CONNECT_PATH


def _hello(**facts: Any) -> str:
    return json.dumps({"kind": "hello", "name": "laptop", "agents": [], "projects": [], **facts})


@pytest.mark.parametrize(
    ("sent", "code", "words"),
    [
        ("not json", "invalid_request", "one JSON object"),
        (json.dumps({"kind": "beat"}), "invalid_request", '"kind": "hello"'),
        (_hello(name="buildbox"), "forbidden", "connects the host 'laptop', not 'buildbox'"),
        (_hello(projects=["../etc"]), "invalid_host", "absolute directory"),
        (_hello(agents=[{"name": "x\x1b[2J"}]), "invalid_host", "agent's name"),
    ],
)
def test_a_hello_is_checked_before_anything_is_kept(
    sqlite_team: Team, sent: str, code: str, words: str
) -> None:
    with connect(_ws(sqlite_team), additional_headers=sqlite_team.bearer("laptop")) as socket:
        socket.send(sent)
        answer = json.loads(socket.recv(timeout=10))
        assert answer["kind"] == "refused" and answer["code"] == code
        assert words in answer["detail"]
        with pytest.raises(ConnectionClosed):  # the server closes it, with the refused code
            socket.recv(timeout=10)
        assert socket.close_code == protocol.CLOSE_REFUSED
    assert sqlite_team.hosts() == {}


def test_a_host_under_another_name_than_its_tokens_is_refused_and_stops(
    sqlite_team: Team,
) -> None:
    code, said = ended(sqlite_team.host(name="buildbox", token="laptop"))
    assert code == 1 and "connects the host 'laptop', not 'buildbox'" in said
    assert "Traceback" not in said and sqlite_team.hosts() == {}


def test_a_second_host_of_a_held_name_waits_and_takes_over_when_the_first_stops(
    sqlite_team: Team,
) -> None:
    """A second process of the name (or a stolen token) never pushes the holder out."""
    team = sqlite_team
    first = team.host("--project", "/")
    wait_until(lambda: team.online("laptop"), "the first host online")
    second = team.host("--project", str(ROOT))
    try:
        wait_until(lambda: _said(second, "another connection holds"), "the second told to wait")
        assert first.poll() is None and team.hosts()["laptop"]["projects"] == ["/"]
        first.send_signal(signal.SIGTERM)
        assert ended(first)[0] == 0
        wait_until(lambda: team.hosts()["laptop"]["projects"] == [str(ROOT)], "the second's")
        assert team.online("laptop") and second.poll() is None
    finally:
        second.send_signal(signal.SIGTERM)
    code, said = ended(second)
    assert code == 0 and "Connected to" in said


def _said(process: subprocess.Popen[str], words: str) -> bool:
    """Whether ``process`` said ``words`` on stderr by now (read without blocking)."""
    import select

    assert process.stderr is not None
    found = getattr(process, "said_so_far", "")
    while select.select([process.stderr], [], [], 0)[0]:
        line = process.stderr.readline()
        if not line:
            break
        found += line
    process.said_so_far = found  # type: ignore[attr-defined]
    return words in found


def test_a_hosts_connection_is_bounded(sqlite_store: Store, tmp_path: Path) -> None:
    """Hosts take three quarters of --max-connections at most, refused before they are
    accepted; a binary hello is refused; a host that says more after its hello is closed; a
    token in the URL is refused; in header mode two hosts of one address both connect."""
    home = tmp_path / "home"
    with (
        serving(_sqlite_url(tmp_path), home, "--max-connections", "4") as served,
        ExitStack() as stack,
    ):
        url = served.url.replace("http", "ws", 1) + protocol.CONNECT_PATH
        held = []
        for name in ("one", "two", "three"):  # 4 * 3 // 4
            socket = stack.enter_context(connect(url))
            socket.send(_hello(name=name))
            assert json.loads(socket.recv(timeout=10))["kind"] == "welcome"
            held.append(socket)
        with pytest.raises(InvalidStatus) as refused:
            connect(url).close()
        assert refused.value.response.status_code == 503
        assert "holds 3 hosts, its most" in refused.value.response.body.decode()
        held.pop().close()
        with connect(url) as socket:
            socket.send(b"\x00binary")
            answer = json.loads(socket.recv(timeout=10))
            assert answer["code"] == "invalid_request" and "text frame" in answer["detail"]
        with connect(url) as socket:
            socket.send(_hello(name="chatty"))
            assert json.loads(socket.recv(timeout=10))["kind"] == "welcome"
            socket.send("more")
            with pytest.raises(ConnectionClosed):
                socket.recv(timeout=10)
            assert socket.close_code == 1008
        with pytest.raises(InvalidStatus) as refused:
            connect(url + "?access_token=rt_x").close()
        assert refused.value.response.status_code == 400
        for socket in held:
            socket.close()
        log = served.log.read_text() if served.log else ""
    assert "Traceback" not in log


def test_a_revoked_host_token_ends_its_host(sqlite_team: Team) -> None:
    team = sqlite_team
    process = team.host()
    wait_until(lambda: team.online("laptop"), "the host online")
    revoke_token(store=team.store, name="laptop")
    code, said = ended(process, seconds=30)
    assert code == 1 and "The server ended this host: invalid_token." in said
    wait_until(lambda: not team.online("laptop"), "the host offline", 10)


def test_a_host_comes_back_by_itself_when_the_server_restarts(
    sqlite_store: Store, tmp_path: Path
) -> None:
    token = create_token(store=sqlite_store, name="laptop", role="host").token
    home, port = tmp_path / "home", free_port()
    url = f"http://127.0.0.1:{port}"
    process = host_started(home, "--name", "laptop", "--server", url, token=token)
    said: list[str] = []  # what the host says, as it says it
    assert process.stderr is not None

    def read() -> None:
        for line in process.stderr or ():
            said.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()

    def connected(times: int) -> Callable[[], bool]:
        return lambda: "".join(said).count("Connected to") == times

    try:
        with serving(_sqlite_url(tmp_path), home, port=port):
            wait_until(lambda: _online_in_store(sqlite_store), "online at the first server")
            wait_until(connected(1), "the host says it is connected")
        # The server stopped: the host is let go, and tries again, less and less often.
        assert not _online_in_store(sqlite_store)
        time.sleep(1.5)
        assert process.poll() is None
        with serving(_sqlite_url(tmp_path), home, port=port):
            wait_until(lambda: _online_in_store(sqlite_store), "online at the second server")
            # The server holds it before the host hears so: its word is waited for too.
            wait_until(connected(2), "the host says it is connected again")
            assert process.poll() is None
    finally:
        process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0
    reader.join(timeout=30)
    assert "trying again" in "".join(said)


def _online_count(store: Store) -> int:
    from roundtable_console.store.hosts.registry import list_hosts

    with store.read() as db:
        return sum(1 for host in list_hosts(db) if host.online)


def _online_in_store(store: Store) -> bool:
    from roundtable_console.store.hosts.registry import list_hosts

    with store.read() as db:
        return any(host.online for host in list_hosts(db))


def test_a_read_only_server_holds_no_host(sqlite_store: Store, tmp_path: Path) -> None:
    token = create_token(store=sqlite_store, name="laptop", role="host").token
    home = tmp_path / "home"
    with serving(_sqlite_url(tmp_path), home, "--read-only") as served:
        process = host_started(home, "--name", "laptop", "--server", served.url, token=token)
        code, said = ended(process)
    assert code == 1 and "read-only server holds no host" in said


def test_a_lone_loopback_server_without_tokens_takes_a_host_at_its_word(
    sqlite_store: Store, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    with serving(_sqlite_url(tmp_path), home) as served:
        processes = [
            host_started(home, "--name", name, "--server", served.url)
            for name in ("devbox", "devbox2")  # one address, two hosts
        ]
        try:
            wait_until(lambda: _online_count(sqlite_store) == 2, "both hosts online")
        finally:
            for process in processes:
                process.send_signal(signal.SIGTERM)
        assert [ended(process)[0] for process in processes] == [0, 0]


def test_a_host_on_the_store_itself(store: Store, store_url: str, tmp_path: Path) -> None:
    process = host_started(tmp_path / "home", "--name", "dbhost", "--db", store_url)
    try:
        wait_until(lambda: _online_in_store(store), "the host online on the store")
    finally:
        process.send_signal(signal.SIGTERM)
    code, said = ended(process)
    assert code == 0 and "Host 'dbhost' is on" in said and "Host stopped." in said
    assert not _online_in_store(store)
    assert os.environ.get("RT_HOST_TOKEN") is None
