"""The processes pushes leave from (``api.notify.push_sender``), one per core: encrypting a push
and posting it cost CPU that one process (about 530 pushes a second here) would spend alone.
A notice to many devices is shared among them; one to a few goes to the next in turn, so a quiet
server starts one. Each is started at its first push and again after it ended; its answers are
read by a thread of its own: a push service that says a subscription is gone has it dropped."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from typing import Protocol

from roundtable_console.store.push.keys import VapidKeys
from roundtable_console.store.push.subscriptions import TURN_DONE
from roundtable_console.store.push.telling import Notice, Recipient

log = logging.getLogger("roundtable.serve")
PUSH_TTL = 3600  # seconds a push service keeps a push for a device that is offline
# A push service that says the subscription is gone (404, 410), or refuses it for good (400: not
# a subscription of its own; 403: made with another server's key): it is never posted to again.
GONE = (400, 403, 404, 410)
# Fewer devices than this go to one process: starting another costs more than it saves.
SHARED_FROM = 64
MOST_PROCESSES = 8


class Owner(Protocol):
    """What of the notifier the senders use."""

    def keys(self) -> VapidKeys: ...

    def contact(self) -> str: ...

    def drop(self, subscription_id: str) -> None: ...


class PushSender:
    def __init__(self, owner: Owner, processes: int | None = None) -> None:
        self.owner = owner
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
        self.count = max(1, min(processes or cores, MOST_PROCESSES))
        self._processes: list[subprocess.Popen[str] | None] = [None] * self.count
        self._next = 0
        self._lock = threading.Lock()

    def running(self) -> int:
        """How many sender processes are running now."""
        with self._lock:
            return sum(1 for p in self._processes if p is not None and p.poll() is None)

    def send(self, devices: list[Recipient], notice: Notice) -> None:
        urgency = "normal" if notice.kind == TURN_DONE else "high"
        self.send_text(devices, notice.encoded(), urgency)

    def send_text(self, devices: list[Recipient], payload: str, urgency: str) -> None:
        """Push ``payload`` (a notice's or an answer's JSON) to each of ``devices``."""
        if not devices:
            return
        with self._lock:
            if len(devices) < SHARED_FROM:
                shares = {self._next: devices}
                self._next = (self._next + 1) % self.count
            else:
                shares = {index: devices[index :: self.count] for index in range(self.count)}
            for index, share in shares.items():
                line = json.dumps({"payload": payload, "urgency": urgency, "ttl": PUSH_TTL,
                                   "devices": share}) + "\n"  # fmt: skip
                try:
                    process = self._running(index)
                    assert process.stdin is not None
                    process.stdin.write(line)
                    process.stdin.flush()
                except Exception:  # noqa: BLE001 - the sender (or the store's keys) unreachable
                    log.warning("notifications: a push sender could not be started or reached; "
                                "%d pushes not sent", len(share))  # fmt: skip
                    self._processes[index] = None

    def _running(self, index: int) -> subprocess.Popen[str]:
        process = self._processes[index]
        if process is not None and process.poll() is None:
            return process
        keys = self.owner.keys()
        process = subprocess.Popen(
            # Isolated (-I: neither the working directory nor PYTHON* variables on its path), in
            # the root: a project's own json.py is never imported beside the private key.
            [sys.executable, "-I", "-m", "roundtable_console.api.notify.push_sender"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, bufsize=1, cwd="/",
        )  # fmt: skip
        assert process.stdin is not None
        hello = {"key": keys.private_pem, "contact": self.owner.contact()}
        process.stdin.write(json.dumps(hello) + "\n")
        process.stdin.flush()
        threading.Thread(target=self._read, args=(process,), name="roundtable-push-answers",
                         daemon=True).start()  # fmt: skip
        self._processes[index] = process
        return process

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            try:
                answer = json.loads(line)
                device, status = str(answer["id"]), answer.get("status")
                origin = str(answer.get("origin") or "?")
            except (ValueError, KeyError, TypeError):
                continue
            if isinstance(status, int) and 200 <= status < 300:
                continue
            if status in GONE:
                self.owner.drop(device)
            else:
                log.warning("notifications: the push service at %s did not take a push (%s)",
                            origin, status or "no answer")  # fmt: skip

    def close(self) -> None:
        with self._lock:
            processes, self._processes = self._processes, [None] * self.count
        for process in processes:
            if process is None:
                continue
            try:
                assert process.stdin is not None
                process.stdin.close()
                process.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                process.kill()
