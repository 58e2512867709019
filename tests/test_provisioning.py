"""The suite brings what it drives (tests/provisioning.py): what is missing is planned, brought
with the ordinary clients, and what cannot be brought stops the run at once in one sentence."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import provisioning
from tests.provisioning import (
    STAMP,
    CannotProvision,
    DebianNeed,
    NpmTree,
    check_possible,
    install_packages,
    install_tree,
    plan,
)

ROOT = Path(__file__).resolve().parent.parent


def tree_at(folder: Path, lock: str = '{"lockfileVersion": 3}') -> NpmTree:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "package-lock.json").write_text(lock)
    return NpmTree(folder, "a tree")


def test_only_what_is_missing_or_stale_is_planned(tmp_path: Path) -> None:
    current, stale, absent = (tree_at(tmp_path / name) for name in ("current", "stale", "absent"))
    for tree in (current, stale):
        tree.modules.mkdir()
        (tree.modules / STAMP).write_text(tree.lock_digest() + "\n")
    (stale.folder / "package-lock.json").write_text('{"lockfileVersion": 3, "changed": true}')
    wanted = plan(
        [DebianNeed("here", lambda: True), DebianNeed("chromium", lambda: False)],
        [current, stale, absent],
    )
    assert wanted.packages == ("chromium",)
    assert wanted.trees == (stale, absent)
    assert wanted.describe() == "chromium (apt-get), a tree (npm ci), a tree (npm ci)"
    assert not plan([DebianNeed("here", lambda: True)], [current])


def test_without_root_the_run_is_refused_in_one_sentence_naming_the_command() -> None:
    wanted = provisioning.Plan(packages=("chromium", "wrk"), trees=())
    with pytest.raises(CannotProvision) as refused:
        check_possible(wanted, is_root=False, apt_get="/usr/bin/apt-get")
    said = str(refused.value)
    assert "\n" not in said and said.count(". ") == 0 and said.endswith("again.")
    assert "chromium, wrk" in said and "`sudo apt-get install -y chromium wrk`" in said
    with pytest.raises(CannotProvision, match="no apt-get here"):
        check_possible(wanted, is_root=True, apt_get=None)
    # npm trees alone need no root.
    check_possible(provisioning.Plan((), (NpmTree(ROOT, "x"),)), is_root=False, apt_get=None)


def test_a_failed_apt_get_names_what_it_said_and_the_command() -> None:
    ran: list[list[str]] = []

    def offline(argv: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        ran.append(argv)
        said = "W: x\nE: Could not resolve 'deb.debian.org'\n"
        return subprocess.CompletedProcess(argv, 100, "", said)

    with pytest.raises(CannotProvision) as refused:
        install_packages(["chromium"], run=offline)
    assert ran == [["apt-get", "update", "-qq"]]
    said = str(refused.value)
    assert "E: Could not resolve 'deb.debian.org'" in said
    assert "`apt-get install -y chromium`" in said and "\n" not in said


def test_npm_ci_stamps_the_lock_it_installed_and_a_failure_writes_no_stamp(tmp_path: Path) -> None:
    tree = tree_at(tmp_path / "clis")

    def failing(argv: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(argv, 1, "", "npm error network ETIMEDOUT\n")

    with pytest.raises(CannotProvision, match=f"ETIMEDOUT.*`npm ci --prefix {tree.folder}`"):
        install_tree(tree, run=failing)
    assert not tree.is_current()

    def npm(argv: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        tree.modules.mkdir(exist_ok=True)
        return subprocess.CompletedProcess(argv, 0, "", "")

    install_tree(tree, run=npm)
    assert tree.is_current()
    (tree.folder / "package-lock.json").write_text('{"lockfileVersion": 3, "bumped": 1}')
    assert not tree.is_current()
    inside = NpmTree(ROOT / "tests" / "agent_clis", "the agents' CLIs")
    assert inside.command()[:4] == ["npm", "ci", "--prefix", "tests/agent_clis"]


def test_a_run_that_cannot_bring_chromium_stops_at_once_in_one_sentence(tmp_path: Path) -> None:
    """The real pytest, as the README runs it, on a PATH without Chromium and with an apt-get
    that cannot reach its mirrors: one sentence, exit 4, no traceback, no test run."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    apt = bin_dir / "apt-get"
    apt.write_text("#!/bin/sh\necho \"E: Could not resolve 'deb.debian.org'\" >&2\nexit 100\n")
    apt.chmod(0o755)
    for tool in ("npm", "strace", "tmux", "wrk", "pg_ctl"):
        found = subprocess.run(["which", tool], capture_output=True, text=True).stdout.strip()
        if found:
            (bin_dir / tool).symlink_to(found)
    env = {**os.environ, "PATH": str(bin_dir)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "tests/x.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 4, out
    assert "Traceback" not in out and "passed" not in out
    said = [line for line in out.splitlines() if line.startswith("Exit: ")]
    assert len(said) == 1, out
    assert "`apt-get install -y chromium`" in said[0]
    assert "Could not resolve 'deb.debian.org'" in said[0]
