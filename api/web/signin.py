"""Signing a browser in and out of the web console, and who a page's request is.

Sign-in takes a token the store holds (typed once into the sign-in form) and gives the browser
a secret of its own in a cookie: ``HttpOnly`` (no script reads it), ``SameSite=Strict`` (no other
site's page sends it), ``Secure`` when the page came over TLS, for as long as the sign-in lasts
(``store.access.web_sessions``). Failed sign-ins count against the address as failed bearer
tokens do (429 past the limit; a valid token is never refused for others' failures). Sign-out
ends the sign-in in the store, so the cookie is worth nothing after it, wherever it went.
"""

from __future__ import annotations

from datetime import datetime
from urllib.parse import parse_qs

from starlette.requests import Request

from roundtable_console.api.context import Call, ServerContext
from roundtable_console.api.edge.identity import BROWSER_COOKIE, Caller
from roundtable_console.api.problems import Problem
from roundtable_console.store.access.devices import device_key_of
from roundtable_console.store.access.web_sessions import (
    WebSignIn,
    csrf_holds_now,
    sign_in,
    sign_out,
)
from roundtable_console.store.clock import parse_ts
from roundtable_console.store.errors import InvalidDevice, InvalidToken

MAX_TOKEN = 512
REFUSED = "That token is not valid: unknown, revoked or expired."


def form_fields(body: bytes) -> dict[str, str]:
    """A form's fields (``application/x-www-form-urlencoded``): the last of each name."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise Problem("invalid_request", "The form is not UTF-8 text.") from None
    try:
        fields = parse_qs(text, max_num_fields=20)
    except ValueError:  # more fields than any of our forms has
        raise Problem("invalid_request", "The form has more fields than it takes.") from None
    return {name: values[-1] for name, values in fields.items()}


def safe_next(target: str | None) -> str:
    """Where to go after signing in: a path of this server only (never ``//host`` or a URL)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/sessions"
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in target):
        return "/sessions"
    return target


def browser_secret(call: Call) -> str | None:
    return call.cookie(BROWSER_COOKIE)


def page_caller(ctx: ServerContext, call: Call) -> Caller | None:
    """The signed-in browser's caller, or None when it is not signed in (or no longer is)."""
    if not browser_secret(call):
        return None
    try:
        caller = ctx.caller(call)
    except Problem as problem:
        if problem.code == "invalid_token":
            return None
        raise
    return caller if caller.mode == "browser" else None


def try_sign_in(
    ctx: ServerContext, call: Call, token: str, fields: dict[str, str] | None = None
) -> WebSignIn:
    """``token`` exchanged for a sign-in; ``Problem`` (counted as a failure, 429 past the limit)
    when it is none. A valid token signs in whatever others failed from the same address.
    ``fields``: the form's; an installed app's carry its device's name and key
    (``device_name``, ``device_key``), and its sign-in is a device's."""
    token = token.strip()
    if not token or len(token) > MAX_TOKEN:
        raise ctx.failures.refuse(
            call.address, Problem("invalid_token", "Give one of the server's tokens.")
        )
    device = None
    if fields and fields.get("device_key"):
        try:
            device = device_key_of(fields.get("device_name"), fields["device_key"])
        except InvalidDevice as error:
            raise Problem("invalid_device", error.message) from None
    try:
        return sign_in(store=ctx.store, token=token, clock=ctx.clock, device=device)
    except InvalidToken:
        raise ctx.failures.refuse(call.address, Problem("invalid_token", REFUSED)) from None


def end_sign_in(ctx: ServerContext, call: Call, proof: str | None) -> None:
    secret = browser_secret(call)
    if secret is None:
        return
    with ctx.store.read() as db:
        proven = csrf_holds_now(db, secret, proof, clock=ctx.clock)
    if not proven:
        raise Problem("csrf_origin_forbidden", "Sign out from this server's own page.")
    sign_out(store=ctx.store, secret=secret, clock=ctx.clock)


def cookie_header(request: Request, secret: str, expires_at: str, now: datetime) -> str:
    ends = parse_ts(expires_at)
    seconds = max(int((ends - now).total_seconds()), 0) if ends is not None else 0
    secure = "; Secure" if request.url.scheme == "https" else ""
    return (
        f"{BROWSER_COOKIE}={secret}; Path=/; Max-Age={seconds}; HttpOnly; SameSite=Strict{secure}"
    )


def cleared_cookie(request: Request) -> str:
    secure = "; Secure" if request.url.scheme == "https" else ""
    return f"{BROWSER_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict{secure}"
