"""A push service on loopback for the tests (issue 31 point 5), and a device subscribed to it.

``PushService`` takes each push as a browser's push service would (``POST /push/<device>``),
keeps what came (headers, body, when) and answers 201, or what a device's path was told to
answer (410: the subscription is gone). ``Device`` is a subscription's own keys: it decrypts a
push as RFC 8291 says (aes128gcm, with its private key and auth secret) and its VAPID
authorization is checked as RFC 8292 says (an ES256 JWT for the endpoint's origin, signed by
the key it names). ``Receiver`` is a webhook receiver that can be down."""

from __future__ import annotations

import base64
import json
import os
import queue
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import http_ece
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from roundtable_console.store.push.subscriptions import KINDS


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class Delivery:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        status = self.server.owner.answer_for(self.path)
        if status < 300:
            self.server.owner.deliveries.put(
                Delivery(self.path, {k.lower(): v for k, v in self.headers.items()}, body,
                         time.monotonic())
            )  # fmt: skip
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    owner: Receiver
    daemon_threads = True


class Receiver:
    """An HTTP receiver on a free loopback port, in a thread, until ``close``; ``answers``:
    the status a path's posts get (201 otherwise)."""

    def __init__(self, port: int = 0) -> None:
        self.deliveries: queue.Queue[Delivery] = queue.Queue()
        self.answers: dict[str, int] = {}
        self.server = _Server(("127.0.0.1", port), _Handler)
        self.server.owner = self
        self.port = self.server.server_address[1]
        self.origin = f"http://127.0.0.1:{self.port}"
        # Polled often: closing waits for the next poll, and every push test closes two.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def answer_for(self, path: str) -> int:
        return self.answers.get(path, 201)

    def next(self, timeout: float = 30.0) -> Delivery:
        """The next delivery. Pushes leave from a sender process of lower priority, started at
        the first push: on a machine the whole suite saturates it may start late (a CI run
        waited over 10 s once), so the bound is generous; a missing push still fails."""
        return self.deliveries.get(timeout=timeout)

    def none_within(self, seconds: float) -> bool:
        try:
            self.deliveries.get(timeout=seconds)
        except queue.Empty:
            return True
        return False

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


PushService = Receiver


@dataclass
class Device:
    """A browser's push subscription: its keys, and its endpoint at ``service``."""

    service: Receiver
    name: str = field(default_factory=lambda: b64url(os.urandom(9)))
    key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(
        ec.SECP256R1()))  # fmt: skip
    auth: bytes = field(default_factory=lambda: os.urandom(16))

    @property
    def path(self) -> str:
        return f"/push/{self.name}"

    @property
    def endpoint(self) -> str:
        return self.service.origin + self.path

    def subscription(self, kinds: list[str] | None = None) -> dict[str, Any]:
        """What the page posts: ``PushSubscription.toJSON()`` and the kinds."""
        point = self.key.public_key().public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)
        return {
            "endpoint": self.endpoint,
            "keys": {"p256dh": b64url(point), "auth": b64url(self.auth)},
            "kinds": kinds if kinds is not None else list(KINDS),  # every box, as the page comes
        }

    def decrypt(self, delivery: Delivery) -> dict[str, Any]:
        assert delivery.headers.get("content-encoding") == "aes128gcm"
        plain = http_ece.decrypt(
            delivery.body, private_key=self.key, auth_secret=self.auth, version="aes128gcm"
        )
        return json.loads(plain)


def verify_vapid(delivery: Delivery, public_key: str, *, subject: str) -> dict[str, Any]:
    """The claims of the push's VAPID JWT, once its signature (by ``public_key``), audience
    (the endpoint's origin) and expiry (within 24 h) hold."""
    scheme, _, params = delivery.headers["authorization"].partition(" ")
    assert scheme == "vapid", scheme
    fields = dict(part.strip().split("=", 1) for part in params.split(","))
    assert fields["k"] == public_key
    head, claims_part, signature = fields["t"].split(".")
    assert json.loads(unb64url(head)) == {"typ": "JWT", "alg": "ES256"}
    raw = unb64url(signature)
    assert len(raw) == 64
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    signer = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64url(public_key))
    signer.verify(der, f"{head}.{claims_part}".encode("ascii"), ec.ECDSA(hashes.SHA256()))
    claims = json.loads(unb64url(claims_part))
    host = delivery.headers["host"]
    assert claims["aud"] == f"http://{host}", claims
    assert time.time() < claims["exp"] <= time.time() + 24 * 3600
    assert claims["sub"] == subject
    return claims
