"""What the suite drives for real and brings itself at its start (``pytest_configure`` in
tests/conftest.py, once, in the process that starts the workers): Debian's packages through
apt-get where it runs as root, and the npm trees of the agents' CLIs and axe-core through
``npm ci``, under a lock, when their ``node_modules`` are missing or older than their lock file.
Nothing is skipped for want of them: what cannot be brought stops the run at once with one
sentence that names what is missing and the command that brings it.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "tests" / ".provisioning.lock"
# What npm ci was last run against, beside what it installed.
STAMP = ".roundtable-lock-sha256"
APT_ENV = {"DEBIAN_FRONTEND": "noninteractive"}


def _on_path(command: str) -> Callable[[], bool]:
    return lambda: shutil.which(command) is not None


def _postgres_server() -> bool:
    return shutil.which("pg_ctl") is not None or bool(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))


@dataclass(frozen=True)
class DebianNeed:
    """A Debian package the suite runs, and how to tell it is there."""

    package: str
    present: Callable[[], bool]


@dataclass(frozen=True)
class NpmTree:
    """A folder of the suite's with a package-lock.json, installed by ``npm ci``."""

    folder: Path
    what: str

    @property
    def modules(self) -> Path:
        return self.folder / "node_modules"

    def lock_digest(self) -> str:
        return hashlib.sha256((self.folder / "package-lock.json").read_bytes()).hexdigest()

    def is_current(self) -> bool:
        stamp = self.modules / STAMP
        return stamp.is_file() and stamp.read_text().strip() == self.lock_digest()

    def command(self) -> list[str]:
        prefix = self.folder.relative_to(ROOT) if self.folder.is_relative_to(ROOT) else self.folder
        return ["npm", "ci", "--prefix", str(prefix), "--no-audit", "--no-fund",
                "--ignore-scripts", "--loglevel=error"]  # fmt: skip


DEBIAN_NEEDS = (
    # tests/pg_server.py: a throwaway cluster per worker.
    DebianNeed("postgresql", _postgres_server),
    # The web console's tests: Chromium, headless, through Playwright.
    DebianNeed("chromium", _on_path("chromium")),
    # tests/test_durability.py watches SQLite's syncs; the agents' CLIs are checked for traffic.
    DebianNeed("strace", _on_path("strace")),
    # Launches, panes and replies run agents in tmux.
    DebianNeed("tmux", _on_path("tmux")),
    # bench/serve.py's load, which CI runs after the suite.
    DebianNeed("wrk", _on_path("wrk")),
    # The npm trees below.
    DebianNeed("npm", _on_path("npm")),
)

NPM_TREES = (
    # Claude Code, Codex and Gemini CLI, at the versions the lock file pins.
    NpmTree(ROOT / "tests" / "agent_clis", "the agents' CLIs"),
    # Deque's axe-core, the accessibility rules tests/test_web_a11y.py runs.
    NpmTree(ROOT / "tests" / "axe", "axe-core"),
)


class CannotProvision(Exception):
    """Something the suite needs is missing and cannot be brought: one sentence saying what,
    and the command that brings it."""


@dataclass(frozen=True)
class Plan:
    packages: tuple[str, ...]
    trees: tuple[NpmTree, ...]

    def __bool__(self) -> bool:
        return bool(self.packages or self.trees)

    def describe(self) -> str:
        parts = []
        if self.packages:
            parts.append(f"{', '.join(self.packages)} (apt-get)")
        parts += [f"{tree.what} (npm ci)" for tree in self.trees]
        return ", ".join(parts)


def plan(needs: Sequence[DebianNeed] = DEBIAN_NEEDS,
         trees: Sequence[NpmTree] = NPM_TREES) -> Plan:  # fmt: skip
    return Plan(
        packages=tuple(need.package for need in needs if not need.present()),
        trees=tuple(tree for tree in trees if not tree.is_current()),
    )


def apt_command(packages: Sequence[str]) -> str:
    return f"apt-get install -y {' '.join(packages)}"


def check_possible(wanted: Plan, *, is_root: bool, apt_get: str | None) -> None:
    """Refuse at once what this process cannot bring."""
    if wanted.packages and (not is_root or apt_get is None):
        why = "not root" if apt_get is not None else "no apt-get here"
        raise CannotProvision(
            f"The tests need {', '.join(wanted.packages)} from Debian's packages, and cannot "
            f"install them ({why}): run `sudo {apt_command(wanted.packages)}`, then the tests "
            "again."
        )


def _last_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no output"


def install_packages(packages: Sequence[str], run: Callable[..., subprocess.CompletedProcess[str]]
                     = subprocess.run) -> None:  # fmt: skip
    env = {**os.environ, **APT_ENV}
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *packages]):
        done = run(argv, capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0:
            raise CannotProvision(
                f"The tests need {', '.join(packages)}, and `{' '.join(argv[:2])}` failed "
                f"({_last_line(done.stderr or done.stdout)}): run `{apt_command(packages)}` "
                "where Debian's mirrors can be reached, then the tests again."
            )


def install_tree(tree: NpmTree, run: Callable[..., subprocess.CompletedProcess[str]]
                 = subprocess.run) -> None:  # fmt: skip
    command = tree.command()
    done = run(command, capture_output=True, text=True, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise CannotProvision(
            f"The tests need {tree.what}, and `npm ci` failed "
            f"({_last_line(done.stderr or done.stdout)}): run `{' '.join(command[:4])}` where "
            "the npm registry can be reached, then the tests again."
        )
    (tree.modules / STAMP).write_text(tree.lock_digest() + "\n")


@contextmanager
def provisioning_lock(path: Path = LOCK) -> Iterator[None]:
    """One provisioning at a time on this checkout (two suites started at once wait)."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def provision(say: Callable[[str], None] = lambda line: print(line, file=sys.stderr)) -> None:
    """Bring what is missing, or raise ``CannotProvision``."""
    if not plan():
        return
    with provisioning_lock():
        wanted = plan()
        if not wanted:
            return
        check_possible(wanted, is_root=os.geteuid() == 0, apt_get=shutil.which("apt-get"))
        say(f"Bringing what the tests need: {wanted.describe()}…")
        # npm itself may be among the packages: the trees wait for apt-get then.
        if "npm" in wanted.packages:
            install_packages(wanted.packages)
            for tree in wanted.trees:
                install_tree(tree)
            return
        with ThreadPoolExecutor(max_workers=1 + len(wanted.trees)) as pool:
            jobs = [pool.submit(install_packages, wanted.packages)] if wanted.packages else []
            jobs += [pool.submit(install_tree, tree) for tree in wanted.trees]
            for job in jobs:
                job.result()
