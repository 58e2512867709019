"""Device sign-ins (issue 44 point 2): the installed app's sign-in, kept while the device is.

A browser tab's sign-in lasts ``web_sessions.LIFETIME``. The installed app, as it signs in, makes
a P-256 key pair whose private half its browser keeps and cannot hand out (WebCrypto,
non-extractable) and gives the public half and a name; its sign-in is then a device's: listed
(``list_devices``), revocable (``revoke_device``), lasting ``DEVICE_LIFETIME`` after its last
proven use. A page of the app proves use by signing the sign-in's current challenge
(``device_challenge``, ``prove_device``); each proof moves the end on and draws a new
challenge. The cookie alone proves nothing: taken to another device it works until the sign-in
ends, and cannot make it last longer.

A device sign-in never outlasts its token: the token's expiry caps it, its revocation ends it.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from sqlalchemy import Connection, text

from roundtable_console.store.access.browser_secrets import csrf_proof, new_secret
from roundtable_console.store.access.tokens import TOKEN_HOLDS, token_hash
from roundtable_console.store.clock import Clock, format_ts, parse_ts, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import DeviceNotFound, InvalidDevice
from roundtable_console.store.push.keys import b64url_bytes
from roundtable_console.store.validation import has_control_characters

DEVICE_LIFETIME = timedelta(days=30)
DEVICE_PREFIX = "dev_"
MAX_NAME = 60
MAX_KEY = 200  # a P-256 public key's SPKI is 91 bytes: 122 characters of base64url
# What a proof signs: these bytes, then the challenge.
CHALLENGE_PREFIX = "roundtable device proof "
_ID = re.compile(r"^dev_[A-Za-z0-9_-]{1,64}$")

_LISTED = (
    "SELECT w.device_id, w.device_name, t.name AS token, w.created_at, w.last_used_at,"
    " w.expires_at, w.secret_hash FROM api_web_sessions w"
    " JOIN api_tokens t ON t.token_hash = w.token_hash"
    " WHERE w.device_id IS NOT NULL AND w.expires_at > :now"
    " AND " + TOKEN_HOLDS
)
_HELD = text(
    "SELECT w.device_key, w.device_nonce, t.expires_at AS token_ends FROM api_web_sessions w"
    " JOIN api_tokens t ON t.token_hash = w.token_hash"
    " WHERE w.secret_hash = :secret_hash AND w.device_id IS NOT NULL AND w.expires_at > :now"
    " AND t.revoked_at IS NULL"
)
_PROVEN = text(
    "UPDATE api_web_sessions SET secret_hash = :new, previous_secret_hash = :old,"
    " previous_csrf = :old_csrf, previous_until = :grace, last_used_at = :now,"
    " expires_at = :ends, device_nonce = :next"
    " WHERE secret_hash = :old AND device_nonce = :nonce AND expires_at > :now"
)
_MOVED = (
    text("UPDATE push_subscriptions SET secret_hash = :new WHERE secret_hash = :old"),
    text("UPDATE push_presence SET secret_hash = :new WHERE secret_hash = :old"),
)
# How long the secret a proof renewed is still taken (with its pages' CSRF proof): a page's
# request under way as the proof was made, another page of the app not yet told.
PREVIOUS_SECONDS = 120
# Who may keep a device signed in: a person (an agent's or a host's token signs in for 12 hours
# at most, if at all).
DEVICE_ROLES = ("operator", "viewer")


@dataclass(frozen=True)
class DeviceKey:
    """What an app gives as it signs in: its device's name and its key's public half."""

    name: str
    public_key: str  # SPKI, base64url


@dataclass(frozen=True)
class DeviceSignIn:
    """A device sign-in as the lists show it: never its secret, key or challenge."""

    id: str
    name: str
    token: str
    created_at: str
    last_used_at: str
    expires_at: str
    this_device: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "signed_in_as": self.token,
            "created_at": self.created_at,
            "last_used_at": self.last_used_at,
            "expires_at": self.expires_at,
            "this_device": self.this_device,
        }


def _public_key(value: str) -> ec.EllipticCurvePublicKey:
    try:
        key = serialization.load_der_public_key(b64url_bytes(value))
    except (ValueError, UnsupportedAlgorithm):
        raise InvalidDevice("The device's key is not a public key in SPKI, base64url.") from None
    if not isinstance(key, ec.EllipticCurvePublicKey) or key.curve.name != "secp256r1":
        raise InvalidDevice("The device's key is not a P-256 public key.")
    return key


def device_key_of(name: object, public_key: object) -> DeviceKey:
    """What a sign-in form gave, checked: a printable name of at most ``MAX_NAME`` characters
    and a P-256 public key; ``InvalidDevice`` otherwise."""
    if (
        not isinstance(name, str)
        or not 0 < len(name.strip()) <= MAX_NAME
        or has_control_characters(name)
    ):
        raise InvalidDevice(f"Name the device in 1 to {MAX_NAME} printable characters.")
    if not isinstance(public_key, str) or not 0 < len(public_key) <= MAX_KEY:
        raise InvalidDevice("The device's key is missing.")
    _public_key(public_key)
    return DeviceKey(name=name.strip(), public_key=public_key.rstrip("="))


def device_columns(device: DeviceKey, now: str) -> dict[str, str]:
    """A new device sign-in's own columns (``web_sessions.sign_in`` writes them)."""
    return {
        "device_id": DEVICE_PREFIX + secrets.token_urlsafe(12),
        "device_name": device.name,
        "device_key": device.public_key,
        "last_used_at": now,
        "device_nonce": secrets.token_urlsafe(24),
    }


def _record(row: Any, secret: str | None) -> DeviceSignIn:
    return DeviceSignIn(
        id=row.device_id,
        name=row.device_name,
        token=row.token,
        created_at=row.created_at,
        last_used_at=row.last_used_at or row.created_at,
        expires_at=row.expires_at,
        this_device=secret is not None and row.secret_hash == token_hash(secret),
    )


def list_devices(
    *,
    store: Store,
    token: str | None = None,
    secret: str | None = None,
    clock: Clock = system_clock,
) -> list[DeviceSignIn]:
    """The device sign-ins that hold, last used first: of the token named ``token``, or every
    token's. ``secret``: the browser asking (its own is marked ``this_device``)."""
    statement = _LISTED + (" AND t.name = :token" if token is not None else "")
    statement += " ORDER BY w.last_used_at DESC, w.device_id"
    with store.read() as db:
        rows = db.execute(text(statement), {"now": format_ts(clock()), "token": token}).all()
    return [_record(row, secret) for row in rows]


def revoke_device(
    *, store: Store, device_id: str, token: str | None = None, clock: Clock = system_clock
) -> DeviceSignIn:
    """End the device sign-in ``device_id`` at once (of the token named ``token`` only, when
    given): its cookie is worth nothing after it, on every server. Its push subscriptions are
    told once that it is signed out, then dropped (``store.push.telling.tidy``).
    ``DeviceNotFound`` when no such sign-in holds (within the token's own)."""
    if not isinstance(device_id, str) or not _ID.match(device_id):
        raise DeviceNotFound(f"No device sign-in has the id {device_id!r}.")
    with store.write(durable=True) as db:
        statement = _LISTED + " AND w.device_id = :device_id"
        statement += " AND t.name = :token" if token is not None else ""
        values = {"now": format_ts(clock()), "device_id": device_id, "token": token}
        row = db.execute(text(statement), values).one_or_none()
        if row is None:
            whose = f" of the token {token!r}" if token is not None else ""
            raise DeviceNotFound(f"No device sign-in{whose} has the id {device_id!r}.")
        db.execute(
            text("DELETE FROM api_web_sessions WHERE device_id = :device_id"),
            {"device_id": device_id},
        )
    return _record(row, None)


def _held(db: Connection, secret: str, now: str) -> Any:
    return db.execute(_HELD, {"secret_hash": token_hash(secret), "now": now}).one_or_none()


@dataclass(frozen=True)
class Challenge:
    """What the next proof of a device sign-in signs (after ``CHALLENGE_PREFIX``), and the
    public key it is checked with (the app signs only with the key its sign-in was given)."""

    nonce: str
    key: str


def device_challenge(*, store: Store, secret: str, clock: Clock = system_clock) -> Challenge | None:
    """The next proof's challenge of the device sign-in held by ``secret``; None when
    ``secret`` holds no device sign-in."""
    with store.read() as db:
        held = _held(db, secret, format_ts(clock()))
    return None if held is None else Challenge(nonce=held.device_nonce, key=held.device_key)


@dataclass(frozen=True)
class Proven:
    """A proof taken: the sign-in's new secret (the cookie's) and when it ends now."""

    secret: str = field(repr=False)
    expires_at: str


def _signature(value: object) -> bytes:
    """A proof as WebCrypto's ECDSA gives it (r then s, 32 bytes each), in DER."""
    if not isinstance(value, str) or not 0 < len(value) <= 128:
        raise InvalidDevice("Give the proof: the challenge signed by the device's key.")
    try:
        raw = b64url_bytes(value)
    except ValueError:
        raise InvalidDevice("The proof is not base64url.") from None
    if len(raw) != 64:
        raise InvalidDevice("The proof is not a P-256 signature (64 bytes).")
    return encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))


def prove_device(
    *, store: Store, secret: str, signature: object, clock: Clock = system_clock
) -> Proven:
    """Take a proof of use: ``signature`` (base64url of WebCrypto's ECDSA P-256 SHA-256) over
    the current challenge, by the device's key. The sign-in then lasts ``DEVICE_LIFETIME``
    from now (never past its token), with a new challenge and a new secret: the cookie the
    proof came with is worth nothing after it (past ``PREVIOUS_SECONDS``), so a copy of it
    taken elsewhere ends at the device's next proof. ``InvalidDevice`` (nothing changed) for a
    secret that holds no device sign-in, a proof of another key, or of a challenge used
    already."""
    now = clock()
    der = _signature(signature)
    # Checked before the store's writer is taken: a page cannot hold it with bad proofs.
    with store.read() as db:
        held = _held(db, secret, format_ts(now))
    if held is None:
        raise InvalidDevice("This browser's sign-in is not a device's: there is nothing to prove.")
    message = (CHALLENGE_PREFIX + held.device_nonce).encode("ascii")
    try:
        _public_key(held.device_key).verify(der, message, ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise InvalidDevice(
            "The proof does not hold: not this device's key, or not its challenge."
        ) from None
    ends = now + DEVICE_LIFETIME
    token_ends = parse_ts(held.token_ends) if held.token_ends else None
    if token_ends is not None and token_ends < ends:
        ends = token_ends
    renewed = new_secret()
    old, new = token_hash(secret), token_hash(renewed)
    grace = now + timedelta(seconds=PREVIOUS_SECONDS)
    values = {"now": format_ts(now), "ends": format_ts(ends), "next": secrets.token_urlsafe(24),
              "old": old, "new": new, "nonce": held.device_nonce,
              "old_csrf": csrf_proof(secret), "grace": format_ts(grace)}  # fmt: skip
    with store.write(durable=True) as db:
        if db.execute(_PROVEN, values).rowcount != 1:  # another page of it proved it first
            raise InvalidDevice("That challenge was answered already: ask for the next one.")
        for moved in _MOVED:  # what the sign-in made goes with it
            db.execute(moved, {"old": old, "new": new})
    return Proven(secret=renewed, expires_at=format_ts(ends))
