"""Signed-in browsers of the web console (issue 21): a token given once at sign-in is exchanged
for a secret of the browser's own, kept in an ``HttpOnly`` cookie.

The store keeps the secret's SHA-256 (``api_web_sessions``), the hash of the token it was
opened with and when it expires, never the secret. A browser is whoever its token is, read
through the token's own row on every request: a token revoked or expired signs out every
browser it opened at once, on every server of the store. Signing out removes the row.

A write from a page also carries the CSRF proof ``csrf_proof(secret)``
(``store.access.browser_secrets``): a page of this server holds it (it is in the page's
``<meta>``), another origin cannot compute it, since the cookie is out of its reach.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import Connection, and_, bindparam, delete, insert, or_, select, text

from roundtable_console.store.access.browser_secrets import csrf_holds, new_secret
from roundtable_console.store.access.devices import (
    DEVICE_LIFETIME,
    DEVICE_ROLES,
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
    secret = new_secret()
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


_SIGNED_IN = select(_TOKENS, _BROWSERS.c.expires_at.label("signed_in_until")).select_from(
    _BROWSERS.join(_TOKENS, _TOKENS.c.token_hash == _BROWSERS.c.token_hash)
)
_BY_SECRET = Prepared(_SIGNED_IN.where(_BROWSERS.c.secret_hash == bindparam("hash")))
# A secret a device's proof renewed: still taken for PREVIOUS_SECONDS (store.access.devices).
_BY_PREVIOUS = Prepared(
    _SIGNED_IN.where(
        _BROWSERS.c.previous_secret_hash == bindparam("hash"),
        _BROWSERS.c.previous_until > bindparam("now"),
    )
)


def identify_browser(db: Connection, secret: str, *, clock: Clock = system_clock) -> Identity:
    """Who the browser holding ``secret`` is: its token's identity while the sign-in, and the
    token, hold; ``invalid_token`` otherwise."""
    found = _BY_SECRET.execute(db, {"hash": token_hash(secret)})
    if found is None:
        found = _BY_PREVIOUS.execute(db, {"hash": token_hash(secret), "now": format_ts(clock())})
    if found is not None and is_expired(found["signed_in_until"], clock):
        found = None
    return identity_of(found, clock, _SIGNED_OUT)


def sign_out(*, store: Store, secret: str, clock: Clock = system_clock) -> bool:
    """End the sign-in holding ``secret`` (or, for a short while, the secret a device's proof
    renewed), and the push subscriptions it made; whether there was one."""
    held = token_hash(secret)
    with store.write(durable=True) as db:
        gone = (
            db.execute(
                delete(_BROWSERS)
                .where(
                    or_(
                        _BROWSERS.c.secret_hash == held,
                        and_(
                            _BROWSERS.c.previous_secret_hash == held,
                            _BROWSERS.c.previous_until > format_ts(clock()),
                        ),
                    )
                )
                .returning(_BROWSERS.c.secret_hash)
            )
            .scalars()
            .all()
        )
        for table in (_SUBSCRIPTIONS, _PRESENCE):
            db.execute(delete(table).where(table.c.secret_hash.in_([held, *gone])))
    return bool(gone)


_PROOF_BEFORE = text(
    "SELECT previous_csrf FROM api_web_sessions WHERE secret_hash = :hash AND previous_until > :now"
)


def csrf_holds_now(
    db: Connection, secret: str, proof: str | None, *, clock: Clock = system_clock
) -> bool:
    """Whether ``proof`` is the CSRF proof of the browser holding ``secret``: its own, or, for a
    short while after a device's proof renewed its secret, the one its pages carried before."""
    if csrf_holds(secret, proof):
        return True
    if proof is None:
        return False
    before = db.execute(_PROOF_BEFORE, {"hash": token_hash(secret), "now": format_ts(clock())})
    held = before.scalar()
    return held is not None and hmac.compare_digest(held, proof.strip())
