"""The process a server's pushes leave from (``api.notify.notifier.PushSender`` starts it):
encrypting a push (RFC 8291) and signing its VAPID claim cost a couple of milliseconds of CPU each,
so a thousand devices told of one session would take the server's own CPU from its requests for
seconds. Here they run at a lower priority (``nice`` 10: when the CPU is contended the server
gets about nine tenths of it, and the pushes still go out, where an idle-only priority would
starve them on a busy machine), beside the server, on a few threads (a push service answers in
its own time).

Its standard input: a first line ``{"key": PEM, "contact": URI}``, then a line per notice
``{"payload", "urgency", "ttl", "devices": [[id, endpoint, p256dh, auth], …]}``. Its standard
output: a line per push ``{"id", "status", "origin"}`` (the push service's status, or null when
it could not be reached; the endpoint's origin, for the server's log), so the server drops a
subscription whose push service says it is gone. It ends when its input does. Nothing here
writes a key, an endpoint or a payload anywhere else.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

NICENESS = 10
THREADS = 4
TIMEOUT = 10.0

_local = threading.local()
_said = threading.Lock()


def _session() -> Any:
    import requests

    if getattr(_local, "session", None) is None:
        _local.session = requests.Session()
        _local.session.max_redirects = 0  # a push service answers; it never sends us elsewhere
    return _local.session


def _say(line: dict[str, Any]) -> None:
    with _said:
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()


def _push(device: list[str], job: dict[str, Any], signer: Any, contact: str) -> None:
    from pywebpush import WebPushException, webpush

    name, endpoint, p256dh, auth = device
    status: int | None
    try:
        answer = webpush(
            {"endpoint": endpoint, "keys": {"p256dh": p256dh, "auth": auth}},
            job["payload"],
            vapid_private_key=signer,
            vapid_claims={"sub": contact},
            timeout=TIMEOUT,
            ttl=int(job.get("ttl") or 0),
            headers={"Urgency": job.get("urgency") or "normal"},
            requests_session=_session(),
        )
        status = getattr(answer, "status_code", None)
    except WebPushException as error:
        status = getattr(error.response, "status_code", None)
    except Exception:  # noqa: BLE001 - unreachable, refused, redirected: said as no status
        status = None
    parts = urlsplit(endpoint)
    _say({"id": name, "status": status, "origin": f"{parts.scheme}://{parts.hostname}"})


def main() -> int:
    try:
        os.nice(NICENESS)
    except OSError:  # a platform that refuses: the server's own priority
        pass
    from py_vapid import Vapid02

    first = sys.stdin.readline()
    if not first:
        return 0
    hello = json.loads(first)
    signer = Vapid02.from_pem(hello["key"].encode("ascii"))
    contact = hello["contact"]
    with ThreadPoolExecutor(THREADS) as pool:
        for line in sys.stdin:
            try:
                job = json.loads(line)
                devices = list(job["devices"])
            except (ValueError, KeyError, TypeError):
                continue
            for device in devices:
                pool.submit(_push, device, job, signer, contact)
    return 0


if __name__ == "__main__":
    sys.exit(main())
