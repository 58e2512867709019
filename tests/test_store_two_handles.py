"""Two stores on one SQLite file in one process (a console that opens another to decide a
request, a test beside its fixture), with hooks writing from processes of their own.

SQLite's locks are POSIX advisory locks: they belong to the process, and closing *any* of its
descriptors of the file drops them all. Opening a store once read the file's header through a
descriptor of its own and closed it: the first store's lock on the file was gone, so the next
hook to close thought itself the file's last user, checkpointed, and deleted the ``-wal`` and
``-shm`` files. The first store went on reading the deleted ones and saw no hook's write after
that one (until it next wrote)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from roundtable_console.store.db.database import Store, open_store
from roundtable_console.store.errors import DatabaseUnavailable
from roundtable_console.store.requests.deciding import decide_request
from roundtable_console.store.requests.reads import list_requests
from tests.conftest import new_sqlite_store
from tests.helpers import register_session

ROOT = Path(__file__).resolve().parent.parent
# How long a change another process committed may take to be seen: the watch reads the data
# version every SQLITE_WATCH_SECONDS, so this is only a bound for a loaded machine.
SEEN_WITHIN_SECONDS = 10.0

# A hook process, as agents/asking.py: its own store, one pending request, the store disposed.
HOOK = """
import sys
from roundtable_console.store.db.database import open_store
from roundtable_console.store.requests import asking
store = open_store(sys.argv[1])
try:
    record = asking.open_request(
        store, session_id="s1", agent="claude-code", tool_name="Bash",
        tool_input={"command": sys.argv[2]}, suggestions=None, reason="asks to run Bash",
        wait_seconds=600,
    )
finally:
    store.dispose()
print(record.id)
"""


def hook_asks(url: str, command: str) -> str:
    """The id of the request a separate hook process recorded (and closed its store on)."""
    done = subprocess.run(
        [sys.executable, "-c", HOOK, url, command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def seen_pending(store: Store, request_id: str) -> bool:
    """Whether ``store`` sees ``request_id`` pending, waiting on its change signal (bounded)."""
    deadline = time.monotonic() + SEEN_WITHIN_SECONDS
    token = store.change_token()
    while True:
        if request_id in {record.id for record in list_requests(store=store)}:
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        token = store.wait_for_change(token, left)


@pytest.mark.parametrize("second_read_only", [False, True], ids=["writer", "reader"])
def test_a_second_store_opened_and_disposed_leaves_the_first_seeing_hooks(
    sqlite_template: Path, tmp_path: Path, second_read_only: bool
) -> None:
    path = tmp_path / "roundtable.db"
    url = new_sqlite_store(sqlite_template, path)
    console = open_store(url)  # long-lived, as the console's
    try:
        with console.write() as db:
            register_session(db, "s1")
        first = hook_asks(url, "make first")
        assert seen_pending(console, first)

        # Another store on the same file, in this process: used, then disposed.
        other = open_store(url, read_only=second_read_only)
        try:
            if second_read_only:
                assert first in {record.id for record in list_requests(store=other)}
            else:
                decide_request(store=other, request_id=first, decision="deny", actor="alice")
        finally:
            other.dispose()

        for command in ("make second", "make third"):
            later = hook_asks(url, command)
            assert seen_pending(console, later), f"the console never saw {command!r}"
        # The console's connections hold the file still: no hook closed it as its last user.
        assert Path(f"{path}-wal").exists() and Path(f"{path}-shm").exists()
    finally:
        console.dispose()


@pytest.mark.parametrize("read_only", [False, True], ids=["writer", "reader"])
def test_a_file_that_is_not_a_database_is_still_refused_untouched(
    tmp_path: Path, read_only: bool
) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"my notes, not a database\n" * 100)
    with pytest.raises(DatabaseUnavailable) as refused:
        open_store(f"sqlite:///{path}", read_only=read_only)
    assert f"{path} is not a SQLite database" in refused.value.message
    assert path.read_bytes() == b"my notes, not a database\n" * 100
    assert sorted(found.name for found in tmp_path.iterdir()) == ["notes.db"]
