"""The default store is its owner's alone (issue 19 point 5): its directory ``0700`` and its
files (the database, ``-wal``, ``-shm``, ``demo.db`` too) ``0600`` whatever the umask; a store
the user names keeps the mode it has, and the console and ``db upgrade`` say so when others may
read it."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from roundtable_console.store.db.database import open_store
from roundtable_console.store.db.private_files import exposure
from roundtable_console.tui.config import resolve_demo_url
from tests.test_tui_support import console, notifications, settle

ROOT = Path(__file__).resolve().parents[1]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@contextmanager
def umask(value: int) -> Iterator[None]:
    old = os.umask(value)
    try:
        yield
    finally:
        os.umask(old)


def roundtable(*args: str, home: Path, mask: int = 0o022) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("ROUNDTABLE_")}
    env.update(XDG_CONFIG_HOME=str(home / "config"), XDG_DATA_HOME=str(home / "data"))
    return subprocess.run(
        [sys.executable, "-m", "roundtable_console", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        preexec_fn=lambda: os.umask(mask),
    )


def register(home: Path, *extra: str, mask: int = 0o022) -> subprocess.CompletedProcess[str]:
    result = roundtable(
        "sessions", "register", "--id", "s1", "--agent", "a", "--run", "r",
        "--adapter", "codex", "--cwd", "/work", *extra, home=home, mask=mask,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result


@pytest.mark.parametrize("mask", [0o022, 0o000, 0o002], ids=lambda m: f"umask-{m:03o}")
def test_the_default_store_is_created_for_its_owner_alone(tmp_path: Path, mask: int) -> None:
    register(tmp_path, mask=mask)
    directory = tmp_path / "data" / "roundtable"
    database = directory / "roundtable.db"
    assert mode(directory) == 0o700
    assert mode(database) == 0o600
    # SQLite's log and shared memory, while another connection keeps them (as a console does).
    holder = sqlite3.connect(database)
    try:
        holder.execute("SELECT count(*) FROM agent_sessions").fetchall()
        beat = roundtable("sessions", "heartbeat", "--session", "s1", home=tmp_path, mask=mask)
        assert beat.returncode == 0, beat.stderr
        sides = [Path(f"{database}{suffix}") for suffix in ("-wal", "-shm")]
        assert all(side.exists() for side in sides)
        assert [mode(side) for side in sides] == [0o600, 0o600]
    finally:
        holder.close()


def test_a_default_store_an_older_version_left_open_is_narrowed(tmp_path: Path) -> None:
    directory = tmp_path / "data" / "roundtable"
    register(tmp_path)
    os.chmod(directory, 0o755)
    os.chmod(directory / "roundtable.db", 0o644)
    beat = roundtable("sessions", "heartbeat", "--session", "s1", home=tmp_path)
    assert beat.returncode == 0, beat.stderr
    assert (mode(directory), mode(directory / "roundtable.db")) == (0o700, 0o600)


def test_the_demo_store_is_private_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    with umask(0o000):
        url = resolve_demo_url(db=None)
        store = open_store(url)
        store.dispose()
    demo = tmp_path / "data" / "roundtable" / "demo.db"
    assert url.endswith("demo.db") and demo.exists()
    assert (mode(demo.parent), mode(demo)) == (0o700, 0o600)


def test_a_read_only_look_at_a_missing_default_store_creates_no_file(tmp_path: Path) -> None:
    listed = roundtable("sessions", "list", "--read-only", home=tmp_path)
    assert listed.returncode == 1
    assert not (tmp_path / "data" / "roundtable" / "roundtable.db").exists()
    assert mode(tmp_path / "data" / "roundtable") == 0o700


def test_a_store_the_user_names_keeps_its_mode_and_db_upgrade_says_it_is_readable(
    tmp_path: Path,
) -> None:
    named = tmp_path / "shared" / "team.db"
    register(tmp_path, "--db", f"sqlite:///{named}")
    assert mode(named) == 0o644  # created by the umask, as SQLite creates any file
    upgraded = roundtable("db", "upgrade", "--db", f"sqlite:///{named}", home=tmp_path)
    assert upgraded.returncode == 0
    assert mode(named) == 0o644
    assert "readable by other users of this machine (team.db 0644)" in upgraded.stderr
    assert f"chmod 600 {named}" in upgraded.stderr
    os.chmod(named, 0o600)
    quiet = roundtable("db", "upgrade", "--db", f"sqlite:///{named}", "--json", home=tmp_path)
    assert quiet.returncode == 0 and "readable" not in quiet.stderr


def test_a_new_store_in_a_private_directory_is_private(tmp_path: Path) -> None:
    private = tmp_path / "mine"
    private.mkdir(mode=0o700)
    os.chmod(private, 0o700)
    register(tmp_path, "--db", f"sqlite:///{private / 'roundtable.db'}", mask=0o000)
    assert mode(private / "roundtable.db") == 0o600


def test_exposure_names_each_file_others_may_read(tmp_path: Path) -> None:
    database = tmp_path / "roundtable.db"
    assert exposure(database) is None  # no store there
    database.write_bytes(b"")
    os.chmod(database, 0o600)
    assert exposure(database) is None
    wal = Path(f"{database}-wal")
    wal.write_bytes(b"")
    os.chmod(wal, 0o640)
    said = exposure(database)
    assert said is not None and "(roundtable.db-wal 0640)" in said
    assert said.endswith(f"chmod 600 {wal}")


async def test_the_console_says_when_its_store_is_readable_by_others(tmp_path: Path) -> None:
    database = tmp_path / "roundtable.db"
    open_store(f"sqlite:///{database}").dispose()
    os.chmod(database, 0o644)
    app = console(f"sqlite:///{database}")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        notes = notifications(app)
    assert any("readable by other users of this machine" in note for note in notes), notes
    os.chmod(database, 0o600)
    app = console(f"sqlite:///{database}")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert not any("readable" in note for note in notifications(app))
