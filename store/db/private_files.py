"""Keeping a SQLite store's files to their owner.

A store holds what the reference calls sensitive (resume commands, external session ids) and,
with the server, token hashes. The default store's directory is kept ``0700`` and its files
``0600`` whatever the umask (``keep_private``), and a new store file in a directory that only
its owner may enter is created ``0600`` (``create_private_if_missing``), so SQLite gives its
``-wal`` and ``-shm`` files the same mode. A store the user names keeps the mode it has;
``exposure`` says when others may read it.

Standard library only: the agents' commands resolve the default store on every beat.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

PRIVATE_DIRECTORY = 0o700
PRIVATE_FILE = 0o600
# What SQLite keeps beside a database file (WAL mode's log and shared memory, a rollback journal).
SIDE_SUFFIXES = ("-wal", "-shm", "-journal")


def store_files(path: Path) -> list[Path]:
    """The database file and those of its side files that exist."""
    return [path, *(side for suffix in SIDE_SUFFIXES if (side := Path(f"{path}{suffix}")).exists())]


def keep_private(path: Path) -> None:
    """The default store at ``path``: its directory created or narrowed to ``0700``, and the
    files already there narrowed to ``0600`` (an earlier version left them readable by all).
    Creates no store file: a read-only open of a store that is not there must find none."""
    directory = path.parent
    if directory.is_dir():
        _narrow(directory, PRIVATE_DIRECTORY)
    else:
        directory.mkdir(mode=PRIVATE_DIRECTORY, parents=True, exist_ok=True)
        os.chmod(directory, PRIVATE_DIRECTORY)  # exactly: the umask may have taken the owner's
    for existing in store_files(path) if path.exists() else ():
        _narrow(existing, PRIVATE_FILE)


def create_private_if_missing(path: Path) -> None:
    """Before SQLite creates the store at ``path``: when its directory grants nothing to group
    or others, create the (empty) file ``0600``, whatever the umask; SQLite then creates the
    ``-wal`` and ``-shm`` files with the database file's mode. Elsewhere SQLite creates it as
    it always does, by the umask."""
    try:
        directory_mode = path.parent.stat().st_mode
    except OSError:
        return
    if directory_mode & 0o077:
        return
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    except FileExistsError:
        return
    try:
        os.fchmod(descriptor, PRIVATE_FILE)  # the umask may have taken more than group and others
    finally:
        os.close(descriptor)


def exposure(path: Path) -> str | None:
    """A sentence when other users of the machine may read the store at ``path`` (its file or a
    side file is readable by group or others); None when only its owner may."""
    exposed = []
    for existing in store_files(path) if path.exists() else ():
        try:
            mode = stat.S_IMODE(existing.stat().st_mode)
        except OSError:
            continue
        if mode & 0o044:
            exposed.append((existing, mode))
    if not exposed:
        return None
    shown = ", ".join(f"{found.name} {mode:04o}" for found, mode in exposed)
    return (
        f"The store {path} is readable by other users of this machine ({shown}); it holds "
        "resume commands and external session ids. To keep it yours: chmod 600 "
        f"{' '.join(str(found) for found, _mode in exposed)}"
    )


def _narrow(path: Path, mode: int) -> None:
    try:
        if stat.S_IMODE(path.stat().st_mode) & ~mode:
            os.chmod(path, stat.S_IMODE(path.stat().st_mode) & mode)
    except OSError:
        pass  # not ours to change (another owner): the open says what is wrong, if anything
