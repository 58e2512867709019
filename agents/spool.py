"""What a hook could not write, kept for the next hook: a JSON Lines file of its owner's only
(0600 in a 0700 directory), replayed in order, each line under its idempotency key so that a
replay interrupted half-way writes nothing twice."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from roundtable_console.agents.operations import Operation

ENV_SPOOL = "ROUNDTABLE_HOOK_SPOOL"
# Past this the spool takes no more (said on stderr): a store down for days is not a disk filled.
MAX_SPOOL_BYTES = 8 * 1024 * 1024


def spool_path(given: str | None = None) -> Path:
    """$ROUNDTABLE_HOOK_SPOOL, else the install's ``--spool`` (the user's state directory, found
    once at install: platformdirs is not imported by every hook), else that directory now."""
    configured = os.environ.get(ENV_SPOOL, "").strip() or (given or "").strip()
    if configured:
        return Path(configured)
    return default_spool_path()


def default_spool_path() -> Path:
    import platformdirs

    return platformdirs.user_state_path("roundtable") / "hook-spool.jsonl"


class Spool:
    def __init__(self, path: Path) -> None:
        self.path = path

    def pending(self) -> bool:
        try:
            return self.path.stat().st_size > 0
        except OSError:
            return False

    @contextmanager
    def locked(self) -> Iterator[int]:
        """The spool, opened and locked (hooks of several sessions run at once)."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
        try:
            os.fchmod(fd, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield fd
        finally:
            os.close(fd)

    def add(self, fd: int, operation: Operation) -> bool:
        """Append ``operation``; False when the spool is full."""
        line = _line(operation)
        if os.fstat(fd).st_size + len(line) > MAX_SPOOL_BYTES:
            return False
        os.write(fd, line)
        return True

    def read(self, fd: int) -> list[Operation]:
        os.lseek(fd, 0, os.SEEK_SET)
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        operations = []
        for line in b"".join(chunks).splitlines():
            try:
                values = json.loads(line)
                operations.append(Operation(**values))
            except (ValueError, TypeError):
                continue  # a torn or foreign line: nothing of ours to replay
        return operations

    def rewrite(self, fd: int, operations: list[Operation]) -> None:
        """Keep only ``operations`` (those not yet written), in order."""
        data = b"".join(_line(op) for op in operations)
        os.ftruncate(fd, 0)
        if data:
            os.write(fd, data)


def _line(operation: Operation) -> bytes:
    """The operation as a spool line, its agent's words redacted as the store keeps them (a
    command asked about may carry a secret)."""
    from roundtable_console.store.safety.redaction import redact_text

    values = operation.to_json()
    fields = dict(values["fields"])
    for name in ("waiting", "turn"):
        if isinstance(fields.get(name), str):
            fields[name] = redact_text(fields[name])
    if fields.get("tool_calls"):  # what a tool was run on may carry a credential as well
        from roundtable_console.store.safety.credentials import redact_output_value

        fields["tool_calls"] = redact_output_value(fields["tool_calls"])
    values["fields"] = fields
    return (json.dumps(values, ensure_ascii=True) + "\n").encode()
