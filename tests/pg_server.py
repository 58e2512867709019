"""A throwaway PostgreSQL cluster on a loopback port, started by the test suite itself.

initdb refuses to run as root, so under root (as in CI) the cluster runs as the ``postgres``
system user that Debian's server package creates.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def find_pg_bin() -> Path:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if candidates:
        return Path(candidates[-1]).parent
    raise RuntimeError(
        "PostgreSQL's server (initdb, pg_ctl) is not installed: "
        "apt-get install postgresql (the tests need a real server; they never skip it)."
    )


# What PostgreSQL's log says when its port was taken between ``free_port`` and the bind.
PORT_TAKEN = ("could not bind", "Address already in use")
START_ATTEMPTS = 5


class PortTaken(RuntimeError):
    """Another process bound the port first: a parallel test worker's server or any socket."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# A cluster directory left by a run that was killed (its server gone, nothing written in it
# for this long) is removed by the next run: on tmpfs it holds memory until then.
STALE_CLUSTER_SECONDS = 15 * 60


def clear_stale_clusters(directory: Path | None = None) -> list[Path]:
    """Remove the ``rt-pg-*`` directories of ``directory`` (TMPDIR) that no server runs in and
    that have not changed for ``STALE_CLUSTER_SECONDS``; returns them."""
    import shutil
    import time

    removed = []
    for base in Path(directory or tempfile.gettempdir()).glob("rt-pg-*"):
        pid_file = base / "data" / "postmaster.pid"
        try:
            if pid_file.exists():
                pid = int(pid_file.read_text().split()[0])
                try:
                    os.kill(pid, 0)
                    continue  # a server runs there
                except ProcessLookupError:
                    # initdb's single-user steps leave their pid file behind between them: a
                    # cluster being made by another run is not stale yet.
                    if time.time() - pid_file.stat().st_mtime < STALE_CLUSTER_SECONDS:
                        continue
                except PermissionError:
                    continue
            elif time.time() - base.stat().st_mtime < STALE_CLUSTER_SECONDS:
                continue  # a cluster being made, or stopped a moment ago
        except (OSError, ValueError, IndexError):
            continue
        shutil.rmtree(base, ignore_errors=True)
        removed.append(base)
    return removed


class PostgresServer:
    """``durable``: fsync and synchronous commit on, as a production server runs (the suite turns
    them off for speed; a load bench must not)."""

    def __init__(self, *, durable: bool = False) -> None:
        self.durable = durable
        self.bin = find_pg_bin()
        self.port = free_port()
        self.base = Path(tempfile.mkdtemp(prefix="rt-pg-"))
        self.data = self.base / "data"
        self.log = self.base / "server.log"
        self.run_as: str | None = "postgres" if os.geteuid() == 0 else None

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin / args[0]), *args[1:]]
        if self.run_as:
            command = ["runuser", "-u", self.run_as, "--", *command]
        return subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)

    def start(self) -> None:
        if self.run_as:
            entry = pwd.getpwnam(self.run_as)
            os.chown(self.base, entry.pw_uid, entry.pw_gid)
        result = self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
            "--locale=C",
        )
        if result.returncode != 0:
            raise RuntimeError(f"initdb failed: {result.stderr.strip()}")
        self._start_on_a_free_port()

    def _start_on_a_free_port(self) -> None:
        """A port picked free may be taken before the server binds it (pytest-xdist starts one
        server per worker at the same moment): then pick another and start again."""
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                self.start_server()
                return
            except PortTaken:
                if attempt == START_ATTEMPTS:
                    raise
                self.port = free_port()

    def start_server(self) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.base} "
        if not self.durable:
            options += "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            # The WAL recycled past 128 MB rather than 1 GB: the cluster lives on tmpfs.
            options += "-c max_wal_size=128MB -c min_wal_size=32MB "
        options += "-c max_connections=200"
        logged = self.log.stat().st_size if self.log.exists() else 0
        result = self._run(
            "pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.log), "-w", "start"
        )
        if result.returncode != 0:
            log = (
                self.log.read_bytes()[logged:].decode(errors="replace") if self.log.exists() else ""
            )
            failure = PortTaken if any(words in log for words in PORT_TAKEN) else RuntimeError
            raise failure(
                f"PostgreSQL did not start on port {self.port}: {result.stderr.strip()}\n{log}"
            )

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def stop_server(self) -> None:
        """Stop the server, its data kept (its connections are cut); ``start_server`` starts it
        again on the same port."""
        result = self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        if result.returncode != 0:
            raise RuntimeError(f"PostgreSQL did not stop: {result.stderr.strip()}")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "stop")
        # A suite's cluster holds hundreds of test databases, some 20 s of unlinking: a detached
        # rm does it while the run goes on to its end.
        subprocess.Popen(
            ["rm", "-rf", "--", str(self.base)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
