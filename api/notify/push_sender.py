"""A process a server's pushes leave from (``api.notify.push_processes`` starts one per core):
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
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

NICENESS = 10
THREADS = 4
TIMEOUT = 10.0
VAPID_SECONDS = 12 * 3600  # what pywebpush signs for; push services take at most 24 hours
KEPT_BEFORE_EXPIRY = 3600

_local = threading.local()
_said = threading.Lock()
_signing = threading.Lock()
_headers: dict[str, tuple[int, dict[str, str]]] = {}  # audience -> (expiry, its header)


def _session(endpoint: str) -> Any:
    """This thread's session for ``endpoint``'s push service. The environment's proxies and CA
    bundle are read once per service, not at every push (requests reads the whole environment
    for each request otherwise: a fifth of a push's CPU)."""
    import requests
    from requests.utils import get_environ_proxies

    parts = urlsplit(endpoint)
    audience = f"{parts.scheme}://{parts.netloc}"
    sessions = getattr(_local, "sessions", None)
    if sessions is None:
        sessions = _local.sessions = {}
    session = sessions.get(audience)
    if session is None:
        session = sessions[audience] = requests.Session()
        session.trust_env = False
        session.proxies = get_environ_proxies(endpoint)
        bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
        if bundle:
            session.verify = bundle
        session.max_redirects = 0  # a push service answers; it never sends us elsewhere
    return session


def _say(line: dict[str, Any]) -> None:
    with _said:
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()


def _signed(signer: Any, contact: str, endpoint: str) -> dict[str, str]:
    """The VAPID header for ``endpoint``'s push service: signed once per service and kept until
    an hour before it expires (a signature costs as much as the push's own encryption)."""
    parts = urlsplit(endpoint)
    audience = f"{parts.scheme}://{parts.netloc}"
    now = time.time()
    with _signing:
        kept = _headers.get(audience)
        if kept is None or kept[0] < now + KEPT_BEFORE_EXPIRY:
            expires = int(now) + VAPID_SECONDS
            headers = signer.sign({"sub": contact, "aud": audience, "exp": expires})
            kept = _headers[audience] = (expires, dict(headers))
        return kept[1]


def _push(device: list[str], job: dict[str, Any], signer: Any, contact: str) -> None:
    from pywebpush import WebPusher

    name, endpoint, p256dh, auth = device
    status: int | None
    try:
        headers = {**_signed(signer, contact, endpoint), "Urgency": job.get("urgency") or "normal"}
        answer = WebPusher(
            {"endpoint": endpoint, "keys": {"p256dh": p256dh, "auth": auth}},
            requests_session=_session(endpoint),
        ).send(
            job["payload"], headers, ttl=int(job.get("ttl") or 0),
            content_encoding="aes128gcm", timeout=TIMEOUT,
        )  # fmt: skip
        status = getattr(answer, "status_code", None)
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
