"""Signed-in browsers of the web console (issue 21): a token given once at sign-in is exchanged
for a secret of the browser's own, kept in an ``HttpOnly`` cookie.

The store keeps the secret's SHA-256 (``api_web_sessions``), the hash of the token it was
opened with and when it expires, never the secret. A browser is whoever its token is, read
through the token's own row on every request: a token revoked or expired signs out every
browser it opened at once, on every server of the store. Signing out removes the row.

A write from a page also carries the CSRF proof ``csrf_proof(secret)``: a page of this server
holds it (it is in the page's ``<meta>``), another origin cannot compute it, since the cookie
is out of its reach.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import Connection, bindparam, delete, insert, select

from roundtable_console.store.access.devices import (
    DEVICE_LIFETIME,
    DEVICE_ROLES,
    SECRET_PREFIX,
    DeviceKey,
    device_columns,
)
from roundtable_console.store.access.tokens import (
    Identity,
    identify,
    identity_of,
    is_expired,
    token_hash,
)
from roundtable_console.store.clock import Clock, format_ts, parse_ts, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.models import (
    ApiToken,
    ApiWebSession,
    PushPresence,
    PushSubscription,
)
from roundtable_console.store.errors import InvalidToken
from roundtable_console.store.writes.history import Prepared

_TOKENS = ApiToken.__table__  # type: ignore[attr-defined]
_BROWSERS = ApiWebSession.__table__  # type: ignore[attr-defined]
_SUBSCRIPTIONS = PushSubscription.__table__  # type: ignore[attr-defined]
_PRESENCE = PushPresence.__table__  # type: ignore[attr-defined]
# How long a sign-in lasts (the token's own expiry ends it sooner).
LIFETIME = timedelta(hours=12)
_SIGNED_OUT = "Signed out: the sign-in expired, was ended, or its token was revoked."


@dataclass(frozen=True)
class WebSignIn:
    """A sign-in just made: the only time its secret is known."""

    secret: str
    identity: Identity
    expires_at: str


def sign_in(
    *,
    store: Store,
    token: str,
    clock: Clock = system_clock,
    lifetime: timedelta = LIFETIME,
    device: DeviceKey | None = None,
) -> WebSignIn:
    """Exchange ``token`` for a browser's secret, in one durable transaction that also drops
    the sign-ins already expired; ``invalid_token`` (nothing written) for a token the store
    does not hold, or holds revoked or expired. ``device``: the installed app's, whose sign-in
    is a device's (``store.access.devices``: it lasts ``DEVICE_LIFETIME`` from each proven
    use)."""
    now = clock()
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    with store.write(durable=True) as db:
        identity = identify(db, token.strip(), clock=clock)
        if identity.role == "host":
            raise InvalidToken(
                f"The token {identity.name!r} is a host's: it connects its machine (roundtable "
                "host run) and signs in nowhere."
            )
        if identity.role not in DEVICE_ROLES:
            device = None  # an agent's token signs in as a tab does, if at all
        if device is not None:
            lifetime = DEVICE_LIFETIME
        token_ends = db.execute(
            select(_TOKENS.c.expires_at).where(_TOKENS.c.token_hash == token_hash(token.strip()))
        ).scalar_one()
        ends = now + lifetime
        if token_ends is not None and (parse_ts(token_ends) or now) < ends:
            ends = parse_ts(token_ends) or now
        expires_at = format_ts(ends)
        db.execute(delete(_BROWSERS).where(_BROWSERS.c.expires_at <= format_ts(now)))
        db.execute(
            insert(_BROWSERS).values(
                secret_hash=token_hash(secret),
                token_hash=token_hash(token.strip()),
                created_at=format_ts(now),
                expires_at=expires_at,
                **(device_columns(device, format_ts(now)) if device is not None else {}),
            )
        )
    return WebSignIn(secret=secret, identity=identity, expires_at=expires_at)


_BY_SECRET = Prepared(
    select(_TOKENS, _BROWSERS.c.expires_at.label("signed_in_until"))
    .select_from(_BROWSERS.join(_TOKENS, _TOKENS.c.token_hash == _BROWSERS.c.token_hash))
    .where(_BROWSERS.c.secret_hash == bindparam("hash"))
)


def identify_browser(db: Connection, secret: str, *, clock: Clock = system_clock) -> Identity:
    """Who the browser holding ``secret`` is: its token's identity while the sign-in, and the
    token, hold; ``invalid_token`` otherwise."""
    found = _BY_SECRET.execute(db, {"hash": token_hash(secret)})
    if found is not None and is_expired(found["signed_in_until"], clock):
        found = None
    return identity_of(found, clock, _SIGNED_OUT)


def sign_out(*, store: Store, secret: str) -> bool:
    """End the sign-in holding ``secret``, and the push subscriptions it made; whether there
    was one."""
    with store.write(durable=True) as db:
        gone = db.execute(delete(_BROWSERS).where(_BROWSERS.c.secret_hash == token_hash(secret)))
        for table in (_SUBSCRIPTIONS, _PRESENCE):
            db.execute(delete(table).where(table.c.secret_hash == token_hash(secret)))
    return bool(gone.rowcount)


def csrf_proof(secret: str) -> str:
    """What a page's writes carry beside the cookie (see the module's docstring)."""
    return hmac.new(secret.encode("utf-8", "surrogatepass"), b"csrf", hashlib.sha256).hexdigest()


def csrf_holds(secret: str, proof: str | None) -> bool:
    return proof is not None and hmac.compare_digest(csrf_proof(secret), proof.strip())
