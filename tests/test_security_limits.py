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

import httpx
import pytest

from roundtable_console.api.exposure import ConnectionLimits
from roundtable_console.tui.cli.serve_command import MAX_CONNECTIONS, MAX_STREAMS
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


def _head(served_host: str, extra: bytes = b"") -> bytes:
    return f"GET {SESSIONS} HTTP/1.1\r\nHost: {served_host}\r\n".encode() + extra


def _peak_rss(pid: int) -> int:
    """The process's peak resident memory, in bytes (Linux's VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def _still_answers(url: str) -> None:
    assert httpx.get(url + SESSIONS, timeout=5).status_code == 200


def test_the_cli_and_the_server_agree_on_the_limits() -> None:
    from roundtable_console.api.exposure import Exposure

    assert MAX_CONNECTIONS == LIMITS.max_connections
    assert MAX_STREAMS == Exposure.streams_in_all


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
        # Just within: answered as any request.
        fits = b"X-Fits: " + b"y" * (LIMITS.max_head_bytes - 200) + b"\r\n\r\n"
        assert status_of(raw_exchange(served, _head(name, fits))) == 200
        _still_answers(served.url)


def test_a_slow_head_and_a_silent_connection_are_closed_in_time(
    store_url: str, tmp_path: Path
) -> None:
    seed_two_workspaces(store_url)
    with serving(store_url, tmp_path) as served:
        host, port = address(served)
        answers: dict[str, bytes] = {}
        took: dict[str, float] = {}

        def slow() -> None:
            with socket.create_connection((host, port), timeout=30) as raw:
                began = time.monotonic()
                raw.sendall(_head(f"{host}:{port}"))
                try:
                    for n in range(25):  # a header line a second, for longer than allowed
                        raw.sendall(b"X-Drip-%d: v\r\n" % n)
                        time.sleep(1.0)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                answers["slow"] = read_all(raw, 5)
                took["slow"] = time.monotonic() - began

        def silent() -> None:
            with socket.create_connection((host, port), timeout=30) as raw:
                began = time.monotonic()
                answers["silent"] = read_all(raw, 25)
                took["silent"] = time.monotonic() - began

        threads = [threading.Thread(target=slow), threading.Thread(target=silent)]
        for thread in threads:
            thread.start()
        time.sleep(2)
        _still_answers(served.url)  # meanwhile, everyone else is answered
        for thread in threads:
            thread.join(timeout=40)
        for kind in ("slow", "silent"):
            assert status_of(answers[kind]) == 408, (kind, answers[kind][:200])
            assert b"request_timeout" in answers[kind]
            assert LIMITS.head_seconds - 0.5 <= took[kind] <= LIMITS.head_seconds + 6, took
        _still_answers(served.url)


def test_an_idle_connection_is_closed_after_its_keep_alive(store_url: str, tmp_path: Path) -> None:
    from roundtable_console.api.server import KEEP_ALIVE_SECONDS

    seed_two_workspaces(store_url)
    with serving(store_url, tmp_path) as served:
        host, port = address(served)
        with socket.create_connection((host, port), timeout=30) as raw:
            raw.sendall(_head(f"{host}:{port}", b"\r\n"))
            assert status_of(read_response(raw)) == 200
            began = time.monotonic()
            rest = read_all(raw, KEEP_ALIVE_SECONDS + 10)
            closed_after = time.monotonic() - began
        assert rest == b"" or b"HTTP/1.1" not in rest
        assert KEEP_ALIVE_SECONDS - 1 <= closed_after <= KEEP_ALIVE_SECONDS + 5, closed_after


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
