"""The store's VAPID key pair (RFC 8292), made once by the first server that needs it and read
by every other, so every server of a store signs pushes alike and a browser's subscription,
bound to the public key, holds whichever server sends.

The private key is kept in the store beside the tokens' hashes (whoever reads the store's files
or tables can sign pushes as the servers do); it never reaches a page, a log or an error: only
``VapidKeys.signer`` uses it, and its ``repr`` leaves it out.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy import text

from roundtable_console.store.clock import Clock, format_ts, system_clock
from roundtable_console.store.db.database import Store

if TYPE_CHECKING:
    from py_vapid import Vapid02

KEY_NAME = "vapid"
_READ = text("SELECT public_key, private_pem FROM push_keys WHERE name = :name")
_INSERT = text(
    "INSERT INTO push_keys (name, public_key, private_pem, created_at)"
    " VALUES (:name, :public_key, :private_pem, :created_at) ON CONFLICT (name) DO NOTHING"
)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_bytes(value: str) -> bytes:
    """What base64url ``value`` holds, padded or not; ``ValueError`` when it is not that."""
    bare = value.rstrip("=")
    try:
        return base64.b64decode(bare + "=" * (-len(bare) % 4), altchars=b"-_", validate=True)
    except binascii.Error:
        raise ValueError("not base64url") from None


@dataclass(frozen=True)
class VapidKeys:
    """``public_key``: the application server key a browser subscribes with (base64url of the
    uncompressed P-256 point)."""

    public_key: str
    private_pem: str = field(repr=False)

    def signer(self) -> Vapid02:
        from py_vapid import Vapid02  # a server that never pushes starts without it

        return Vapid02.from_pem(self.private_pem.encode("ascii"))


def _made() -> VapidKeys:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    from py_vapid import Vapid02

    vapid = Vapid02()
    vapid.generate_keys()
    point = vapid.public_key.public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)
    return VapidKeys(b64url(point), vapid.private_pem().decode("ascii"))


def vapid_keys(*, store: Store, clock: Clock = system_clock) -> VapidKeys:
    """The store's key pair; made and kept in one transaction the first time (when two servers
    make one at once, the first kept wins and both read it)."""
    with store.read() as db:
        found = db.execute(_READ, {"name": KEY_NAME}).one_or_none()
    if found is not None:
        return VapidKeys(found.public_key, found.private_pem)
    made = _made()
    with store.write(durable=True) as db:
        db.execute(
            _INSERT,
            {
                "name": KEY_NAME,
                "public_key": made.public_key,
                "private_pem": made.private_pem,
                "created_at": format_ts(clock()),
            },
        )
        kept = db.execute(_READ, {"name": KEY_NAME}).one()
    return VapidKeys(kept.public_key, kept.private_pem)
