"""A notice carried across a form's redirect (post, redirect, get): what a decision did, said on
the page the browser is sent back to, once.

It travels in a cookie of its own: ``HttpOnly``, ``SameSite=Strict``, for a minute, bound to the
browser's sign-in by an HMAC of its secret (a notice another sign-in, or another site, set is
not shown). The page that shows it clears it. Its text is shown as text, as every value is."""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass

from starlette.requests import Request

from roundtable_console.api.context import Call
from roundtable_console.api.web.signin import browser_secret

NOTICE_COOKIE = "roundtable_notice"
NOTICE_SECONDS = 60
MAX_NOTICE = 600


@dataclass(frozen=True)
class Notice:
    text: str
    problem: bool = False


def _mac(secret: str, payload: str) -> str:
    key = secret.encode("utf-8", "surrogatepass")
    message = b"notice\x00" + payload.encode("utf-8", "surrogatepass")
    return hmac.new(key, message, hashlib.sha256).hexdigest()[:32]


def _attributes(request: Request, seconds: int) -> str:
    secure = "; Secure" if request.url.scheme == "https" else ""
    return f"Path=/; Max-Age={seconds}; HttpOnly; SameSite=Strict{secure}"


def notice_cookie(request: Request, secret: str, notice: Notice) -> str:
    """The ``Set-Cookie`` value that carries ``notice`` to the next page."""
    text = notice.text if len(notice.text) <= MAX_NOTICE else notice.text[: MAX_NOTICE - 1] + "…"
    payload = ("!" if notice.problem else "-") + text
    encoded = base64.urlsafe_b64encode(payload.encode("utf-8", "surrogatepass")).decode("ascii")
    value = f"{encoded.rstrip('=')}.{_mac(secret, payload)}"
    return f"{NOTICE_COOKIE}={value}; {_attributes(request, NOTICE_SECONDS)}"


def cleared_notice(request: Request) -> str:
    return f"{NOTICE_COOKIE}=; {_attributes(request, 0)}"


def carried_notice(call: Call) -> Notice | None:
    """The notice the request carries for this sign-in, if any (a forged one is none)."""
    raw = call.cookie(NOTICE_COOKIE)
    secret = browser_secret(call)
    if not raw or not secret:
        return None
    encoded, _dot, mac = raw.rpartition(".")
    try:
        payload = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode("utf-8")
    except ValueError:  # not base64, or not UTF-8 (UnicodeDecodeError is a ValueError)
        return None
    if not payload or not hmac.compare_digest(_mac(secret, payload), mac):
        return None
    return Notice(payload[1:], problem=payload.startswith("!"))


def has_notice(call: Call) -> bool:
    return call.cookie(NOTICE_COOKIE) is not None
