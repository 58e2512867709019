"""What the tests of hosts share: a team (a real ``roundtable serve`` on a store with tokens of
each role) and ``roundtable host run`` processes as machines run them."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roundtable_console.store.access.tokens import create_token
from roundtable_console.store.db.database import Store
from tests import http_calls
from tests.api_support import seed_workspace
from tests.serve_support import ROOT, Served, serve_env, serving

WAIT_SECONDS = 30.0


def stand_in_machine(tmp_path: Path, stand_in: str, out: str) -> Iterator[dict[str, str]]:
    """A machine's environment: ``stand_in`` as its ``claude`` on its PATH (it writes to
    ``FAKE_OUT``, ``tmp_path / out``), its own tmux directory (short: a socket's path is at
    most 107 bytes); its host's tmux server ended after."""
    import os
    import shutil
    import tempfile

    from roundtable_console.hosts import launching

    bin_dir = tmp_path / "laptop-bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text(stand_in)
    (bin_dir / "claude").chmod(0o755)
    tmux_dir = tempfile.mkdtemp(prefix="rt-tmux-", dir="/tmp")
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "TMUX_TMPDIR": tmux_dir,
        "FAKE_OUT": str(tmp_path / out),
    }
    yield env
    subprocess.run(["tmux", "-L", launching.TMUX_LABEL, "kill-server"],
                   env={**os.environ, **env}, capture_output=True, check=False)  # fmt: skip
    shutil.rmtree(tmux_dir, ignore_errors=True)


def wait_until(check: Callable[[], Any], what: str, seconds: float = WAIT_SECONDS) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds} s: {what}")
        time.sleep(0.05)


def host_started(
    home: Path,
    *args: str,
    token: str | None = None,
    env: dict[str, str] | None = None,
    user: tuple[str, ...] = (),
) -> subprocess.Popen[str]:
    """``roundtable host run`` as a machine runs it: a process of its own (``env``: what its
    machine's environment has besides; ``user``: the command that runs it as its machine's
    user)."""
    env = {**serve_env(home), **(env or {})}
    if token is not None:
        env["RT_HOST_TOKEN"] = token
        args = (*args, "--token-env", "RT_HOST_TOKEN")
    return subprocess.Popen(
        [*user, sys.executable, "-m", "roundtable_console", "host", "run", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )


def ended(process: subprocess.Popen[str], seconds: float = WAIT_SECONDS) -> tuple[int, str]:
    _out, err = process.communicate(timeout=seconds)
    return process.returncode, err


@dataclass
class Team:
    served: Served
    store: Store
    url: str  # the store's
    home: Path
    tokens: dict[str, str]

    def bearer(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[name]}"}

    def hosts(self, as_name: str = "ops") -> dict[str, dict[str, Any]]:
        answer = http_calls.get(f"{self.served.url}/api/v1/hosts", headers=self.bearer(as_name))
        assert answer.status_code == 200, answer.text
        return {host["name"]: host for host in answer.json()["hosts"]}

    def online(self, name: str) -> bool:
        host = self.hosts().get(name)
        return bool(host and host["online"])

    def host(
        self,
        *args: str,
        name: str = "laptop",
        token: str = "laptop",
        env: dict[str, str] | None = None,
        user: tuple[str, ...] = (),
    ) -> Any:
        return host_started(
            self.home, "--name", name, "--server", self.served.url, *args,
            token=self.tokens[token], env=env, user=user,
        )  # fmt: skip


def team_serving(
    store: Store, store_url: str, home: Path, *extra: str, hidden: tuple[Path, ...] = ()
) -> Iterator[Team]:
    seed_workspace(store, "ws-1")
    tokens = {
        name: create_token(store=store, name=name, role=role, **kwargs).token
        for name, role, kwargs in (
            ("laptop", "host", {}),
            ("buildbox", "host", {}),
            ("ops", "operator", {}),
            ("vic", "viewer", {}),
            ("bound", "viewer", {"workspaces": ["ws-1"]}),
            ("hooks", "agent", {"agent_id": "claude-code"}),
        )
    }
    with serving(store_url, home, *extra, hidden=hidden) as served:
        yield Team(served, store, store_url, home, tokens)
        log = served.log.read_text() if served.log else ""
        assert not any(token in log for token in tokens.values())
