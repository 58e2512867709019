"""A real ``roundtable serve`` process for the tests: started on a free loopback port over a
store (forked from one that has imported the server already: tests/serve_zygote.py), waited for
(bounded), stopped with SIGTERM; and a reader of its server-sent events."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from roundtable_console.api.server import free_port
from tests import http_calls
from tests.serve_zygote import ZYGOTE, Forked

ROOT = Path(__file__).resolve().parents[1]
START_SECONDS = 30.0


@dataclass
class Served:
    """A running server: its base URL, its process, what it said at start."""

    url: str
    process: Forked
    said: str = ""
    log: Path | None = None

    def stop(self, *, timeout: float = 15.0) -> int:
        """SIGTERM, and the exit code once it has stopped."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            # What it was doing: py-spy is not here, but faulthandler is (serve_env sets it).
            self.process.send_signal(signal.SIGABRT)
            self.process.wait(timeout=5)
            said = self.log.read_text()[-6000:] if self.log is not None else ""
            raise AssertionError(f"serve did not stop within {timeout} s:\n{said}") from None
        finally:
            if self.process.poll() is None:
                self.process.kill()


def serve_env(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("ROUNDTABLE_")}
    env.update(XDG_CONFIG_HOME=str(home / "config"), XDG_DATA_HOME=str(home / "data"))
    env["PYTHONFAULTHANDLER"] = "1"  # a server that hangs says where, when aborted
    return env


# Runs its arguments with an empty tmpfs mounted over each of the first $1 paths, in a mount
# namespace of its own: what is there is not on this "machine" (tests/test_hosts_apart.py).
APART = (
    'n=$1; shift; while [ "$n" -gt 0 ]; do mount -t tmpfs -o size=1m tmpfs "$1" || exit 97;'
    ' shift; n=$((n - 1)); done; exec "$@"'
)


def apart(hidden: tuple[Path, ...], argv: list[str]) -> list[str]:
    """``argv`` run on another "machine": one that cannot see ``hidden`` (APART)."""
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", APART, "apart",
            str(len(hidden)), *map(str, hidden), *argv]  # fmt: skip


@contextmanager
def serving(
    store_url: str,
    home: Path,
    *extra: str,
    scheme: str = "http",
    port: int | None = None,
    hidden: tuple[Path, ...] = (),
) -> Iterator[Served]:
    """``roundtable serve`` on a free loopback port (or ``port``), until the block ends (then
    SIGTERM). ``hidden``: directories the server cannot see (another machine's files): it runs
    in a mount namespace of its own with an empty tmpfs over each."""
    port = port or free_port()
    log = home / f"serve-{port}.log"
    home.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    argv = ["serve", "--port", str(port), "--db", store_url, *extra]
    if hidden:
        with log.open("a") as out:
            process: Any = subprocess.Popen(
                apart(hidden, [sys.executable, "-m", "roundtable_console", *argv]),
                stdout=out, stderr=subprocess.STDOUT, env=serve_env(home), cwd=ROOT,
            )  # fmt: skip
    else:
        process = ZYGOTE.start(argv, env=serve_env(home), cwd=ROOT, log=log)
    served = Served(url=f"{scheme}://127.0.0.1:{port}", process=process, log=log)
    deadline = time.monotonic() + START_SECONDS
    try:
        while True:
            if process.poll() is not None:
                raise AssertionError(f"serve exited {process.returncode}: {log.read_text()}")
            try:
                http_calls.get(
                    f"{served.url}/api/v1/security/capabilities", timeout=1, verify=False
                )
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"serve did not answer: {log.read_text()}") from None
                time.sleep(0.05)
        served.said = log.read_text()
        yield served
    finally:
        served.stop()


@dataclass
class EventReader:
    """Reads a server-sent events stream in a thread; ``next`` waits for the next event."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    events: queue.Queue[dict[str, Any]] = field(default_factory=queue.Queue)
    status: int | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> EventReader:
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        return self

    def _read(self) -> None:
        with httpx.Client(timeout=httpx.Timeout(5.0, read=None)) as client:
            with client.stream("GET", self.url, headers=self.headers) as response:
                self.status = response.status_code
                event: dict[str, Any] = {}
                for line in response.iter_lines():
                    if self._stop.is_set():
                        return
                    if not line:
                        if event:
                            self.events.put(event)
                        event = {}
                        continue
                    name, _colon, value = line.partition(":")
                    if name == "":
                        continue  # a comment (keep-alive)
                    value = value.removeprefix(" ")
                    event[name] = json.loads(value) if name == "data" else value

    def next(self, timeout: float = 5.0) -> dict[str, Any]:
        return self.events.get(timeout=timeout)

    def next_change(self, timeout: float = 5.0) -> dict[str, Any]:
        while True:
            event = self.next(timeout)
            if event.get("event") == "change":
                return event

    def close(self) -> None:
        self._stop.set()


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made by openssl, valid for a day."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


def serve_refused(home: Path, *arguments: str) -> str:
    """``roundtable serve`` with ``arguments``, which must refuse to start: its words (exit 2,
    no traceback). Forked by the zygote, as a server that starts is: the refusal comes after
    the same imports, which the zygote has made once."""
    home.mkdir(parents=True, exist_ok=True)
    log = home / f"serve-refused-{time.monotonic_ns()}.log"
    argv = ["serve", "--port", "0", *arguments]
    process = ZYGOTE.start(argv, env=serve_env(home), cwd=ROOT, log=log)
    code = process.wait(timeout=60)
    said = log.read_text()
    assert code == 2, (code, said)
    assert "Traceback" not in said
    return said
