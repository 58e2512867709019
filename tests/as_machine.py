"""Runs a command as another "machine"'s user: ``as_machine.py UID GID PATH... -- COMMAND...``,
run as root inside a mount namespace of its own (``unshare --mount``). The user can reach each
PATH (the Python and the repository the suite runs from, which may lie in root's private home):
the folder that stops them is covered, in this namespace only, by an empty tmpfs holding just
the way to PATH. Then the command runs as UID:GID, with no groups and no capabilities.

Only the standard library: it runs with ``python -I -S`` before anything is imported."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path


def _stopping(path: Path) -> Path | None:
    """The highest folder on the way to ``path`` that others may not pass through."""
    for folder in reversed(path.parents):
        if not os.stat(folder).st_mode & 0o001:
            return folder
    return None


def _mount(*argv: str) -> None:
    subprocess.run(["mount", *argv], check=True)


def main(uid: int, gid: int, reach: list[Path], argv: list[str]) -> None:
    stage = Path(tempfile.mkdtemp(prefix="rt-reach-"))
    _mount("-t", "tmpfs", "-o", "size=1m", "tmpfs", str(stage))
    ways = []
    for number, path in enumerate(reach):
        stop = _stopping(path)
        if stop is not None:
            kept = stage / str(number)
            kept.mkdir()
            _mount("--bind", str(path), str(kept))
            ways.append((stop, path, kept))
    for stop in sorted({stop for stop, _, _ in ways}):
        _mount("-t", "tmpfs", "-o", "mode=0755,size=1m", "tmpfs", str(stop))
    for _, path, kept in ways:
        path.mkdir(parents=True, exist_ok=True)
        _mount("--bind", str(kept), str(path))
    subprocess.run(["umount", "-l", str(stage)], check=True)
    stage.rmdir()
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    split = sys.argv.index("--")
    uid, gid, *paths = sys.argv[1:split]
    main(int(uid), int(gid), [Path(path).resolve() for path in paths], sys.argv[split + 1 :])
