"""The web console's notifications (issue 31): the page where a signed-in operator turns them on
for this device (``/notifications``; the browser's permission is asked only on that button's
click, by the page's script), and what its script posts: the device's push subscription with
the kinds of news it wants (``/actions/push/subscribe``), its removal
(``/actions/push/unsubscribe``), and whether a page of the console is in view
(``/actions/presence``: no push goes to the token's devices meanwhile). The page lists the
token's device sign-ins (``store.access.devices``); an installed app's script proves its device's
use (``/actions/device/challenge``, ``/actions/device/proof``: the sign-in and its cookie then
last 30 days more), and a device sign-in of the token is revoked (``/actions/device/revoke``).

Each post is a script's: JSON, the page's CSRF proof in ``X-CSRF-Token`` (``api.edge.identity``),
from a page of this server (``api.edge.middleware``), by a signed-in browser of a human's token. The
subscription belongs to that sign-in (``store.push.subscriptions``).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from roundtable_console.api.answering import Reply, as_response, refused, rendered
from roundtable_console.api.context import Call
from roundtable_console.api.edge.identity import Caller
from roundtable_console.api.edge.middleware import TOO_LARGE, BodyTooLarge
from roundtable_console.api.problems import Problem
from roundtable_console.api.web.fragments import WebFragments
from roundtable_console.api.web.pages import WebPages
from roundtable_console.api.web.signin import browser_secret, cookie_header
from roundtable_console.api.web.views import moment
from roundtable_console.store.access.browser_secrets import csrf_proof
from roundtable_console.store.access.devices import (
    DeviceSignIn,
    device_challenge,
    list_devices,
    prove_device,
    revoke_device,
)
from roundtable_console.store.push.subscriptions import (
    InvalidPushSubscription,
    devices_of,
    subscribe,
    unsubscribe,
)
from roundtable_console.store.push.telling import HUMAN_ROLES, mark_presence
from roundtable_console.store.safety.display import short_duration

MAX_BODY = 8 * 1024


# A page says when it spoke in its clock's milliseconds (Date.now()): JavaScript's largest safe
# integer bounds it, and what a column of 64 bits holds.
MOST_MILLISECONDS = 2**53


def _decoded(body: bytes) -> dict[str, Any]:
    try:
        found = json.loads(body)
    except (ValueError, RecursionError):
        raise Problem("invalid_request", "The body is not JSON.") from None
    if not isinstance(found, dict):
        raise Problem("invalid_request", "The body is a JSON object.")
    return found


class WebPush:
    def __init__(self, page: WebPages, part: WebFragments) -> None:
        self.page = page
        self.part = part
        self.ctx = page.ctx
        self.pages = page.pages

    def _human(self, caller: Caller) -> None:
        if caller.role not in HUMAN_ROLES:
            raise Problem(
                "forbidden", f"The token {caller.name!r} is an agent's: it is told nothing."
            )
        if self.page.read_only:
            raise Problem("read_only", "This server is read-only: it keeps no subscription.")

    async def notifications(self, request: Request) -> Response:
        async def work(call: Call, caller: Caller) -> Response:
            if caller.role not in HUMAN_ROLES:
                agent = Problem("forbidden", f"The token {caller.name!r} is an agent's: it is "
                                "told nothing.")  # fmt: skip
                return self.page.problem_page(call, agent, caller)
            secret = browser_secret(call) or ""

            def read() -> tuple[str, int, list[DeviceSignIn]]:
                key = self.ctx.notifier.keys().public_key if not self.page.read_only else ""
                signed_in = list_devices(
                    store=self.ctx.store, token=caller.name, secret=secret, clock=self.ctx.clock
                )
                return key, devices_of(store=self.ctx.store, secret=secret), signed_in

            key, devices, signed_in = await self.ctx.in_worker(read)
            now = self.ctx.clock()
            kept = [
                {"device": device, "last": moment(device.last_used_at, now),
                 "until": moment(device.expires_at, now)}
                for device in signed_in
            ]  # fmt: skip
            return self.pages.page(
                "notifications.html",
                push_key=key,
                devices=devices,
                signed_in=kept,
                cooling=short_duration(self.ctx.notify.cooling),
                **self.page.common(call, caller, "notifications"),
            )

        return await self.page.signed_in(request, "notifications", work)

    async def _json_post(self, request: Request, act: Any, *, renews: bool = False) -> Response:
        """``act``'s answer as JSON; ``renews``: it answers the sign-in's new secret too, which
        the cookie is set to."""
        try:
            body = await request.body()
        except BodyTooLarge:
            return as_response(refused(request.scope, Problem("request_too_large", TOO_LARGE)))
        if len(body) > MAX_BODY:
            too_large = Problem("request_too_large", f"The body is over {MAX_BODY} bytes.")
            return as_response(refused(request.scope, too_large))

        async def work(call: Call, caller: Caller) -> Response:
            self._human(caller)
            secret = browser_secret(call) or ""
            fields = _decoded(body)
            try:
                answer = await self.ctx.in_worker(act, caller, secret, fields)
            except InvalidPushSubscription as error:
                raise Problem("invalid_request", str(error)) from None
            headers = {}
            if renews:
                answer, renewed = answer
                headers["set-cookie"] = cookie_header(
                    request, renewed, answer["expires_at"], self.ctx.clock()
                )
            return as_response(Reply(200, rendered(answer), "application/json", headers))

        return await self.part.answer(request, work, body)

    async def subscribe(self, request: Request) -> Response:
        def act(caller: Caller, secret: str, fields: dict[str, Any]) -> dict[str, Any]:
            keys = fields.get("keys") if isinstance(fields.get("keys"), dict) else {}
            kinds = fields.get("kinds")
            if not isinstance(kinds, list):
                raise InvalidPushSubscription("Give the kinds of news as a list.")
            kept = subscribe(
                store=self.ctx.store,
                secret=secret,
                endpoint=fields.get("endpoint"),  # type: ignore[arg-type]
                p256dh=keys.get("p256dh"),
                auth=keys.get("auth"),
                kinds=kinds,
                trusted_origins=self.ctx.notify.push_services,
                clock=self.ctx.clock,
            )
            return {"subscribed": True, "kinds": list(kept.kinds)}

        return await self._json_post(request, act)

    async def unsubscribe(self, request: Request) -> Response:
        def act(caller: Caller, secret: str, fields: dict[str, Any]) -> dict[str, Any]:
            endpoint = fields.get("endpoint")
            if not isinstance(endpoint, str):
                raise InvalidPushSubscription("Give the subscription's endpoint.")
            gone = unsubscribe(store=self.ctx.store, secret=secret, endpoint=endpoint)
            return {"unsubscribed": gone}

        return await self._json_post(request, act)

    async def presence(self, request: Request) -> Response:
        def act(caller: Caller, secret: str, fields: dict[str, Any]) -> dict[str, Any]:
            visible, said_at = fields.get("visible"), fields.get("at")
            if not isinstance(visible, bool):
                raise InvalidPushSubscription("Say whether the page is visible (true, false).")
            if said_at is not None and not (
                type(said_at) is int and 0 < said_at < MOST_MILLISECONDS
            ):
                raise InvalidPushSubscription("Say when, in milliseconds since 1970 (at).")
            mark_presence(
                store=self.ctx.store,
                secret=secret,
                visible=visible,
                said_at=said_at,
                clock=self.ctx.clock,
            )
            return {"visible": visible}

        return await self._json_post(request, act)

    # -- device sign-ins (store.access.devices) -------------------------------------------------

    async def device_challenge(self, request: Request) -> Response:
        def act(caller: Caller, secret: str, fields: dict[str, Any]) -> dict[str, Any]:
            asked = device_challenge(store=self.ctx.store, secret=secret, clock=self.ctx.clock)
            if asked is None:
                return {"device": False, "challenge": None, "key": None}
            return {"device": True, "challenge": asked.nonce, "key": asked.key}

        return await self._json_post(request, act)

    async def device_proof(self, request: Request) -> Response:
        def act(caller: Caller, secret: str, fields: dict[str, Any]) -> tuple[dict[str, Any], str]:
            proven = prove_device(
                store=self.ctx.store,
                secret=secret,
                signature=fields.get("signature"),
                clock=self.ctx.clock,
            )
            # The page's writes carry the new secret's proof from now on (static/device.js).
            answer = {"proven": True, "expires_at": proven.expires_at,
                      "csrf": csrf_proof(proven.secret)}  # fmt: skip
            return answer, proven.secret

        return await self._json_post(request, act, renews=True)

    async def device_revoke(self, request: Request) -> Response:
        def act(caller: Caller, secret: str, fields: dict[str, Any]) -> dict[str, Any]:
            gone = revoke_device(
                store=self.ctx.store,
                device_id=fields.get("device_id"),  # type: ignore[arg-type]
                token=caller.name,
                clock=self.ctx.clock,
            )
            return {"revoked": gone.to_json()}

        return await self._json_post(request, act)
