"""``roundtable serve`` processes started from one that has already imported the server.

A server's own start is the import of the server's modules (FastAPI, SQLAlchemy, uvicorn, ours):
0.6 s of CPU each time, a hundred times a run. Here each test worker keeps one process (the
zygote) that imports them once, single-threaded, and forks a server on demand: the child takes
the test's environment, working directory and log, and runs the console script's own ``main``
with the test's arguments, as ``python -m roundtable_console serve …`` would. What a test holds
is a ``Forked``: a process of its own (a pid, signals, an exit code), as ``subprocess.Popen``
gives, whose exit the zygote collects and writes down.
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import NoReturn

ROOT = Path(__file__).resolve().parents[1]


class Forked:
    """A server forked by the zygote, as much of ``subprocess.Popen`` as the tests use."""

    def __init__(self, pid: int, statuses: Path) -> None:
        self.pid = pid
        self._status = statuses / str(pid)
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and self._status.exists():
            text = self._status.read_text()
            if text.endswith("\n"):  # written whole
                self.returncode = int(text)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"serve (pid {self.pid})", timeout or 0)
            time.sleep(0.01)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, number: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, number)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Zygote:
    """This test worker's fork server, started at its first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None
        self.statuses = Path(tempfile.mkdtemp(prefix="rt-zygote-"))

    def _started(self) -> subprocess.Popen[str]:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "tests.serve_zygote", str(self.statuses)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
            )  # fmt: skip
            atexit.register(self._process.kill)
        return self._process

    def start(self, argv: list[str], *, env: dict[str, str], cwd: Path, log: Path) -> Forked:
        """``roundtable ARGV`` in a process of its own, its output into ``log``."""
        request = {"argv": argv, "env": env, "cwd": str(cwd), "log": str(log)}
        with self._lock:
            zygote = self._started()
            assert zygote.stdin is not None and zygote.stdout is not None
            zygote.stdin.write(json.dumps(request) + "\n")
            zygote.stdin.flush()
            answer = zygote.stdout.readline()
        if not answer:
            raise AssertionError(f"the serve zygote exited ({zygote.poll()})")
        return Forked(int(json.loads(answer)["pid"]), self.statuses)


ZYGOTE = Zygote()


# --- the zygote itself ----------------------------------------------------------------------


def _serve_child(request: dict[str, object]) -> NoReturn:
    """In the forked child: become the test's server. It ends as the console script does: its
    code, or an exception, through the interpreter's own exit (its exit handlers run)."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.chdir(str(request["cwd"]))
    env = request["env"]
    assert isinstance(env, dict)
    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = None
    log = os.open(str(request["log"]), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.close(devnull)
    if env.get("PYTHONFAULTHANDLER"):
        import faulthandler

        faulthandler.enable()
    from roundtable_console.tui.entry import main

    argv = [str(arg) for arg in request["argv"]]  # type: ignore[attr-defined]
    sys.argv = ["roundtable", *argv]
    main(argv)
    sys.exit(0)


def _reap(statuses: Path) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        partial = statuses / f".{pid}"
        partial.write_text(f"{code}\n")
        partial.rename(statuses / str(pid))


def zygote_main(statuses: Path) -> None:
    # What a server imports, imported once; nothing else runs here (no thread, no store).
    import roundtable_console.api.app  # noqa: F401
    import roundtable_console.api.server  # noqa: F401
    import roundtable_console.tui.cli.serve_command  # noqa: F401
    import roundtable_console.tui.entry  # noqa: F401
    import roundtable_console.tui.quick_cli  # noqa: F401

    # What was imported, out of every collection's walk, as Python's docs advise before forking:
    # a child's own collection at its start (api.server.settle_heap) then walks what it made,
    # not the whole heap again (and copies no page of it to mark it).
    gc.collect()
    gc.freeze()

    selector = selectors.DefaultSelector()
    selector.register(sys.stdin, selectors.EVENT_READ)
    while True:
        ready = selector.select(timeout=0.05)
        _reap(statuses)
        if not ready:
            continue
        line = sys.stdin.readline()
        if not line:
            return  # the test worker is gone
        request = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            selector.close()
            _serve_child(request)
        sys.stdout.write(json.dumps({"pid": pid}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    zygote_main(Path(sys.argv[1]))
