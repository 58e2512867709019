"""Issue 28 point 7, against a real ``roundtable serve`` on each engine: the limits of a public
server. A head too large or with too many headers is refused (431) before it is read whole; a
head sent a line a second, or a connection that says nothing, is closed in time (408); past the
most connections a new one is answered 503; an idle connection is closed; and through all of it
the server answers everyone else."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from roundtable_console.api.edge.exposure import ConnectionLimits
from roundtable_console.tui.cli.serve_command import MAX_CONNECTIONS, MAX_STREAMS, serve_command
from tests import http_calls
from tests.security_support import (
    WS_B,
    address,
    raw_exchange,
    read_all,
    read_response,
    seed_two_workspaces,
    status_of,
)
from tests.serve_support import serving

SESSIONS = f"/api/v1/workspaces/{WS_B}/sessions"
LIMITS = ConnectionLimits()
# The time limits a server of these tests is given (serve's hidden options): what they bound is
# the same at any length, and a test waits each one out.
SHORT = ConnectionLimits(head_seconds=3.0, body_seconds=4.0, keep_alive_seconds=2)
SHORT_OPTIONS = (
    "--head-seconds", str(SHORT.head_seconds), "--body-seconds", str(SHORT.body_seconds),
    "--keep-alive-seconds", str(SHORT.keep_alive_seconds),
)  # fmt: skip


def _head(served_host: str, extra: bytes = b"") -> bytes:
    return f"GET {SESSIONS} HTTP/1.1\r\nHost: {served_host}\r\n".encode() + extra


def _peak_rss(pid: int) -> int:
    """The process's peak resident memory, in bytes (Linux's VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def _still_answers(url: str) -> None:
    assert http_calls.get(url + SESSIONS, timeout=5).status_code == 200


def test_the_cli_and_the_server_agree_on_the_limits() -> None:
    from roundtable_console.api.edge.exposure import Exposure

    assert MAX_CONNECTIONS == LIMITS.max_connections
    assert MAX_STREAMS == Exposure.streams_in_all
    # The time limits operators get (docs/security.md says them) unless a test shortens them.
    limits = (LIMITS.head_seconds, LIMITS.body_seconds, LIMITS.keep_alive_seconds)
    assert limits == (10.0, 30.0, 5)
    defaults = {option.name: option.default for option in serve_command.params}
    assert (defaults["head_seconds"], defaults["body_seconds"]) == limits[:2]
    assert defaults["keep_alive_seconds"] == limits[2]


def test_a_head_too_large_is_refused_before_it_is_read_whole(
    store_url: str, tmp_path: Path
) -> None:
    seed_two_workspaces(store_url)
    with serving(store_url, tmp_path) as served:
        host, port = address(served)
        name = f"{host}:{port}"
        # 8 MB of one header: refused once the limit is passed; what follows is read and
        # dropped (so the client reads the answer), never kept: the server's peak memory
        # does not grow by it.
        peak = _peak_rss(served.process.pid)
        with socket.create_connection((host, port), timeout=10) as raw:
            raw.sendall(_head(name, b"X-Big: "))
            sent, answer = 0, b""
            chunk = b"y" * 65536
            try:
                while sent < 8 * 1024 * 1024:
                    raw.sendall(chunk)
                    sent += len(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass
            answer = read_all(raw, 5)
        assert status_of(answer) == 431, answer[:300]
        assert b"request_header_fields_too_large" in answer and b"16384 bytes" in answer
        assert _peak_rss(served.process.pid) - peak < 4 * 1024 * 1024
        # Many small headers, and one line just over the limit, whole.
        many = b"".join(b"X-H%d: v\r\n" % n for n in range(LIMITS.max_headers + 1))
        assert status_of(raw_exchange(served, _head(name, many + b"\r\n"))) == 431
        line = b"X-Big: " + b"y" * LIMITS.max_head_bytes + b"\r\n\r\n"
        assert status_of(raw_exchange(served, _head(name, line))) == 431
        # Just within: answered as any request (and closed after it, not kept alive).
        fits = b"Connection: close\r\nX-Fits: " + b"y" * (LIMITS.max_head_bytes - 220) + b"\r\n\r\n"
        assert status_of(raw_exchange(served, _head(name, fits))) == 200
        _still_answers(served.url)


DRIP_SECONDS = 0.5


def test_what_is_sent_too_slowly_is_closed_in_time(store_url: str, tmp_path: Path) -> None:
    """A header line every half second; nothing at all; after one answered request, a blank
    line as often (which once kept the connection open for ever); a body a byte at a time. Each ends
    in a 408 within its limit, while everyone else is answered."""
    seed_two_workspaces(store_url)
    with serving(store_url, tmp_path, *SHORT_OPTIONS) as served:
        host, port = address(served)
        name = f"{host}:{port}"
        body_head = (
            f"POST {SESSIONS}/s1/end HTTP/1.1\r\nHost: {name}\r\nContent-Length: 1000\r\n\r\n"
        ).encode()
        cases = {  # what is sent first, what then a second at a time, within what limit
            "slow head": (_head(name), b"X-Drip: v\r\n", SHORT.head_seconds),
            "silent": (b"", b"", SHORT.head_seconds),
            "blank lines": (_head(name, b"\r\n"), b"\r\n", SHORT.head_seconds),
            "slow body": (body_head, b"x", SHORT.body_seconds),
        }
        answers: dict[str, bytes] = {}
        took: dict[str, float] = {}

        def drip(kind: str) -> None:
            first, each, most = cases[kind]
            with socket.create_connection((host, port), timeout=most + 20) as raw:
                raw.sendall(first)
                if kind == "blank lines":
                    assert status_of(read_response(raw)) == 200
                began = time.monotonic()
                try:
                    while each and time.monotonic() - began < most + 10:
                        raw.sendall(each)
                        time.sleep(DRIP_SECONDS)
                        raw.settimeout(0.01)
                        try:
                            if raw.recv(1, socket.MSG_PEEK):
                                break  # answered
                        except TimeoutError:
                            pass
                        raw.settimeout(most + 20)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                answers[kind] = read_all(raw, most + 10)
                took[kind] = time.monotonic() - began

        threads = [threading.Thread(target=drip, args=(kind,)) for kind in cases]
        for thread in threads:
            thread.start()
        time.sleep(1)
        _still_answers(served.url)  # meanwhile, everyone else is answered
        for thread in threads:
            thread.join(timeout=SHORT.body_seconds + 40)
        for kind, (_first, _each, most) in cases.items():
            assert status_of(answers[kind]) == 408, (kind, answers[kind][:200])
            assert b"request_timeout" in answers[kind]
            assert most - DRIP_SECONDS <= took[kind] <= most + 4, (kind, took)
        _still_answers(served.url)


def test_an_upgrade_leaves_no_connection_unbounded(store_url: str, tmp_path: Path) -> None:
    """An upgrade uvicorn does not take (h2c) left the connection unwatched: a later head on it
    had no limit at all. A WebSocket upgrade that carries a body was taken over and never
    answered, an uncounted connection held for ever. Both are bounded now."""
    seed_two_workspaces(store_url)
    with serving(store_url, tmp_path, "--max-connections", "3") as served:
        host, port = address(served)
        name = f"{host}:{port}"
        upgrade = (
            b"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AA\r\n\r\n"
        )
        big = b"".join(b"X-H%d: v\r\n" % n for n in range(LIMITS.max_headers + 50)) + b"\r\n"
        with socket.create_connection((host, port), timeout=10) as raw:
            raw.sendall(_head(name, upgrade))
            assert status_of(read_response(raw)) == 200  # answered as plain HTTP
            raw.sendall(_head(name, big))
            assert status_of(read_response(raw)) == 431
        socket_with_body = (
            f"GET /api/v1/workspaces/{WS_B}/events/ws HTTP/1.1\r\nHost: {name}\r\n"
            "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nContent-Length: 5\r\n\r\nhello"
        ).encode()
        refused = [raw_exchange(served, socket_with_body, timeout=5) for _ in range(5)]
        assert all(status_of(answer) == 400 for answer in refused), refused[0][:200]
        _still_answers(served.url)  # the cap of 3 was not filled by them


def test_numbers_too_long_are_refused_not_failed(store_url: str, tmp_path: Path) -> None:
    """Python's int() refuses over 4,300 digits with an error of its own, and takes other
    scripts' digits: each number a request carries is refused in words (400), never a 500."""
    from tests.api_support import assert_problem
    from tests.security_support import bearer, make_token

    seed_two_workspaces(store_url)
    token = make_token(store_url, "ops", "operator")
    huge = "9" * 5000
    with serving(store_url, tmp_path) as served:
        auth = bearer(token)
        for path, headers, code in (
            (f"{SESSIONS}?limit={huge}", {}, "invalid_limit"),
            (f"{SESSIONS}?limit=\u00b2", {}, "invalid_limit"),
            (f"{SESSIONS}/changes", {"Last-Event-ID": f"{huge}.-.0"}, "invalid_event_cursor"),
            (f"{SESSIONS}/changes", {"Last-Event-ID": "9" * 30 + ".-.0"}, "invalid_event_cursor"),
        ):
            answer = http_calls.get(served.url + path, headers={**auth, **headers})
            assert_problem(answer, 400, code)
        paused = http_calls.post(
            f"{served.url}{SESSIONS}/s1/pause", headers={**auth, "If-Match": huge}
        )
        assert_problem(paused, 400, "invalid_request")
        host, port = address(served)
        sized = raw_exchange(
            served,
            f"POST {SESSIONS}/s1/end HTTP/1.1\r\nHost: {host}:{port}\r\n".encode()
            + "Content-Length: \u00b2\r\n\r\n".encode("latin-1"),
            timeout=5,
        )
        assert 400 <= status_of(sized) < 500, sized[:200]


def test_a_client_gone_mid_body_leaves_no_traceback(store_url: str, tmp_path: Path) -> None:
    seed_two_workspaces(store_url)
    with serving(store_url, tmp_path) as served:
        host, port = address(served)
        for _ in range(5):
            with socket.create_connection((host, port), timeout=10) as raw:
                raw.sendall(
                    f"POST {SESSIONS} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                    "Content-Length: 1000\r\n\r\nhalf".encode()
                )
        time.sleep(0.5)
        _still_answers(served.url)
    log = served.log.read_text() if served.log else ""
    assert "Traceback" not in log and "internal_error" not in log


def test_an_idle_connection_is_closed_after_its_keep_alive(store_url: str, tmp_path: Path) -> None:
    keep_alive = SHORT.keep_alive_seconds
    seed_two_workspaces(store_url)
    with serving(store_url, tmp_path, *SHORT_OPTIONS) as served:
        host, port = address(served)
        with socket.create_connection((host, port), timeout=30) as raw:
            raw.sendall(_head(f"{host}:{port}", b"\r\n"))
            assert status_of(read_response(raw)) == 200
            began = time.monotonic()
            rest = read_all(raw, keep_alive + 10)
            closed_after = time.monotonic() - began
        assert rest == b"" or b"HTTP/1.1" not in rest
        assert keep_alive - 0.5 <= closed_after <= keep_alive + 4, closed_after


@pytest.mark.parametrize("most", [4])
def test_past_the_most_connections_a_new_one_is_answered_503(
    store_url: str, tmp_path: Path, most: int
) -> None:
    seed_two_workspaces(store_url)
    with serving(store_url, tmp_path, "--max-connections", str(most)) as served:
        host, port = address(served)
        held = []
        try:
            for _ in range(most):  # keep-alive connections, each after one answered request
                raw = socket.create_connection((host, port), timeout=10)
                raw.sendall(_head(f"{host}:{port}", b"\r\n"))
                assert status_of(read_response(raw)) == 200
                held.append(raw)
            answer = raw_exchange(served, _head(f"{host}:{port}", b"\r\n"))
            assert status_of(answer) == 503 and b"server_busy" in answer
            assert b"retry-after: 1" in answer.lower()
            # The connections already open are served as before.
            held[0].sendall(_head(f"{host}:{port}", b"\r\n"))
            assert status_of(read_response(held[0])) == 200
        finally:
            for raw in held:
                raw.close()
        time.sleep(0.5)
        _still_answers(served.url)
