"""A browser's push subscription, kept for the sign-in that made it.

What a browser's ``PushManager.subscribe`` gives (its push service's endpoint, the P-256 public
key and the auth secret the payload is encrypted to) is kept with the sign-in's secret hash and
its token's hash, and the kinds of news it wants. A subscription goes with its sign-in: signing
out on the device (``store.access.web_sessions.sign_out``) removes it; a sign-in that ends
otherwise (expired, revoked, its token revoked) has its subscriptions told so once, then
removed (``store.push.telling.tidy``); a push service that says it is gone (404, 410) has it
removed too (``drop_subscription``).

The endpoint is where the servers will post: only an ``https`` URL of a browser's push service
(Google's, Mozilla's, Apple's, Microsoft's: ``PUSH_SERVICE_HOSTS``), or one under an origin the
server was told to trust (``--push-service``): a signed-in page cannot make the servers post to
an address of their own network.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from sqlalchemy import Connection, text

from roundtable_console.store.access.tokens import TOKEN_HOLDS, token_hash
from roundtable_console.store.clock import Clock, format_ts, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import InvalidToken
from roundtable_console.store.push.keys import b64url_bytes

NEEDS_YOU = "needs_you"  # a session waits on a human: a question, a permission request
TURN_DONE = "turn_done"  # an agent's turn is done: it awaits a prompt
# A session failed, or went stale while its agent holds claims (issue 44 point 4).
FAILED = "failed"
# A budget reached 80 % or 100 % of its limit (issue 46 point 3; store.budgets).
BUDGET = "budget"
KINDS = (NEEDS_YOU, TURN_DONE, FAILED, BUDGET)
MAX_ENDPOINT = 2048
# Push services that end a subscription whose pushes show nothing (WebKit's, after a few): an
# "answered" push, which closes a notice and shows none, is not sent to them.
SHOWN_ONLY_HOSTS = ("web.push.apple.com",)
# A sign-in is one browser: it has one subscription, a few after its push service renewed it;
# a token's sign-ins, a person's few devices.
MAX_PER_SIGN_IN = 5
MAX_PER_TOKEN = 20
# The browsers' push services: Chrome, Edge on Android and Chromium (FCM), Firefox (autopush),
# Safari (Apple), Edge on Windows (WNS). A host is one of them, or a name under one.
PUSH_SERVICE_HOSTS = (
    "fcm.googleapis.com",
    "push.services.mozilla.com",
    "web.push.apple.com",
    "notify.windows.com",
)
# The sign-in that holds a subscription, while it and its token do (``{subscription}``: the
# subscriptions' table or its alias).
LIVE_SIGN_IN = (
    "SELECT 1 FROM api_web_sessions w JOIN api_tokens t ON t.token_hash = w.token_hash"
    " WHERE w.secret_hash = {subscription}.secret_hash AND w.expires_at > :now"
    " AND " + TOKEN_HOLDS
)
_SIGNED_IN = text(
    "SELECT token_hash FROM api_web_sessions WHERE secret_hash = :secret_hash AND expires_at > :now"
)
_COUNT_OF_SIGN_IN = text("SELECT count(*) FROM push_subscriptions WHERE secret_hash = :secret_hash")
_UPSERT = text(
    "INSERT INTO push_subscriptions (id, endpoint, p256dh, auth, secret_hash, token_hash, kinds,"
    " created_at) VALUES (:id, :endpoint, :p256dh, :auth, :secret_hash, :token_hash, :kinds,"
    " :now) ON CONFLICT (endpoint) DO UPDATE SET p256dh = excluded.p256dh,"
    " auth = excluded.auth, secret_hash = excluded.secret_hash,"
    " token_hash = excluded.token_hash, kinds = excluded.kinds"
    # Another token's device is not taken over (its sign-in still holds it).
    " WHERE push_subscriptions.token_hash = excluded.token_hash OR NOT EXISTS ("
    + LIVE_SIGN_IN.format(subscription="push_subscriptions")
    + ")"
)
_ONE = text("SELECT * FROM push_subscriptions WHERE endpoint = :endpoint")
_OTHERS = text(
    "SELECT count(*) FROM push_subscriptions WHERE secret_hash = :secret_hash"
    " AND endpoint <> :endpoint"
)
_OTHERS_OF_TOKEN = text(
    "SELECT count(*) FROM push_subscriptions WHERE token_hash = :token_hash"
    " AND endpoint <> :endpoint"
)
_REMOVE = text(
    "DELETE FROM push_subscriptions WHERE endpoint = :endpoint AND secret_hash = :secret_hash"
)
_DROP = text("DELETE FROM push_subscriptions WHERE id = :id")


class InvalidPushSubscription(ValueError):
    """What a page sent is not a subscription the servers may post to (a server's 400)."""


@dataclass(frozen=True)
class PushSubscriptionRecord:
    id: str
    endpoint: str
    p256dh: str
    auth: str
    kinds: tuple[str, ...]
    created_at: str

    @classmethod
    def of(cls, row: object) -> PushSubscriptionRecord:
        return cls(
            id=row.id,  # type: ignore[attr-defined]
            endpoint=row.endpoint,  # type: ignore[attr-defined]
            p256dh=row.p256dh,  # type: ignore[attr-defined]
            auth=row.auth,  # type: ignore[attr-defined]
            kinds=parse_kinds(row.kinds),  # type: ignore[attr-defined]
            created_at=row.created_at,  # type: ignore[attr-defined]
        )


def parse_kinds(value: str) -> tuple[str, ...]:
    return tuple(kind for kind in KINDS if kind in value.split(","))


def checked_kinds(kinds: Iterable[object]) -> tuple[str, ...]:
    chosen = list(kinds)
    unknown = [kind for kind in chosen if kind not in KINDS]
    if unknown:
        raise InvalidPushSubscription(
            f"Unknown kinds of news: {', '.join(map(str, unknown))[:80]} "
            f"(give {' and '.join(KINDS)})."
        )
    return tuple(kind for kind in KINDS if kind in chosen)


def _decoded(value: object, what: str, size: int) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= 256:
        raise InvalidPushSubscription(f"The subscription's {what} is missing.")
    try:
        raw = b64url_bytes(value)
    except ValueError:
        raise InvalidPushSubscription(f"The subscription's {what} is not base64url.") from None
    if len(raw) != size or (what == "p256dh key" and raw[0] != 4):
        raise InvalidPushSubscription(f"The subscription's {what} is not one a browser makes.")
    return value.rstrip("=")


_HOST = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$")


def _posted_host(url: str) -> str | None:
    from urllib3.util import parse_url  # the parser of the client that posts (requests')

    try:
        return (parse_url(url).host or "").lower()
    except ValueError:
        return None


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def checked_endpoint(value: object, trusted_origins: Iterable[str] = ()) -> str:
    """``value`` when the servers may post to it (see the module's docstring)."""
    if not isinstance(value, str) or not value or len(value) > MAX_ENDPOINT:
        raise InvalidPushSubscription("The subscription's endpoint is missing or too long.")
    not_a_url = InvalidPushSubscription("The subscription's endpoint is not a URL.")
    if any(ord(char) <= 0x20 or ord(char) == 0x7F or char == "\\" for char in value):
        raise not_a_url
    try:
        parts = urlsplit(value)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        raise not_a_url from None
    # The host as every HTTP client reads it: plain letters, digits, dots and dashes, the whole
    # of the authority but for a port (a backslash, "%", "@" or ";" there is read differently by
    # the client that posts than by this check), and the same to urllib3, which posts.
    if not _HOST.match(host) or parts.netloc.lower() != host + (f":{port}" if port else ""):
        raise not_a_url
    if _posted_host(value) != host:
        raise not_a_url
    if _origin(value) in {origin.lower().rstrip("/") for origin in trusted_origins}:
        return value
    known = any(host == known or host.endswith("." + known) for known in PUSH_SERVICE_HOSTS)
    if parts.scheme != "https" or not known or parts.username is not None or parts.port:
        raise InvalidPushSubscription(
            "The subscription's endpoint is not a push service's: an https URL of a browser's "
            "push service (or of a --push-service the server trusts)."
        )
    return value


def subscribe(
    *,
    store: Store,
    secret: str,
    endpoint: str,
    p256dh: object,
    auth: object,
    kinds: Iterable[object],
    trusted_origins: Iterable[str] = (),
    clock: Clock = system_clock,
) -> PushSubscriptionRecord:
    """Keep (or move to this sign-in, with these keys and kinds) the subscription of
    ``endpoint``, in one transaction; ``invalid_token`` when the sign-in has ended."""
    values = {
        "id": "push_" + secrets.token_hex(8),
        "endpoint": checked_endpoint(endpoint, trusted_origins),
        "p256dh": _decoded(p256dh, "p256dh key", 65),
        "auth": _decoded(auth, "auth secret", 16),
        "secret_hash": token_hash(secret),
        "kinds": ",".join(checked_kinds(kinds)),
        "now": format_ts(clock()),
    }
    with store.write(durable=True) as db:
        owner = signed_in_token(db, secret, values["now"])
        if owner is None:
            raise InvalidToken("Sign in again: this page's sign-in ended.")
        values["token_hash"] = owner
        if db.execute(_OTHERS, values).scalar_one() >= MAX_PER_SIGN_IN:
            raise InvalidPushSubscription(
                f"This sign-in already has {MAX_PER_SIGN_IN} subscriptions: turn one off first."
            )
        if db.execute(_OTHERS_OF_TOKEN, values).scalar_one() >= MAX_PER_TOKEN:
            raise InvalidPushSubscription(
                f"This token's sign-ins already have {MAX_PER_TOKEN} subscriptions: turn one off "
                "first (or sign out of a device)."
            )
        kept = db.execute(_UPSERT, values)
        if not kept.rowcount:
            raise InvalidPushSubscription("Another sign-in turned this device on: sign out there.")
        row = db.execute(_ONE, values).one()
    return PushSubscriptionRecord.of(row)


def unsubscribe(*, store: Store, secret: str, endpoint: str) -> bool:
    """Remove this sign-in's subscription of ``endpoint``; whether there was one."""
    with store.write(durable=True) as db:
        gone = db.execute(_REMOVE, {"endpoint": endpoint, "secret_hash": token_hash(secret)})
    return bool(gone.rowcount)


def signed_in_token(db: Connection, secret: str, now: str) -> str | None:
    """The token hash of the sign-in holding ``secret``, while it lasts; None after."""
    found = db.execute(_SIGNED_IN, {"secret_hash": token_hash(secret), "now": now}).scalar()
    return None if found is None else str(found)


def devices_of(*, store: Store, secret: str) -> int:
    """How many subscriptions the sign-in holding ``secret`` keeps."""
    with store.read() as db:
        return int(db.execute(_COUNT_OF_SIGN_IN, {"secret_hash": token_hash(secret)}).scalar_one())


def drop_subscription(*, store: Store, subscription_id: str) -> None:
    """A push service said the subscription is gone (404, 410): it is never posted to again."""
    with store.write() as db:
        db.execute(_DROP, {"id": subscription_id})


def takes_silent_pushes(endpoint: str) -> bool:
    """Whether the push service of ``endpoint`` keeps a subscription whose pushes show nothing."""
    host = _posted_host(endpoint) or ""
    return not any(host == shown or host.endswith("." + shown) for shown in SHOWN_ONLY_HOSTS)
