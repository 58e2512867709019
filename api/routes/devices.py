"""The caller's device sign-ins (issue 44 point 2): listed and revoked through the API as on the
notifications page and with ``roundtable tokens devices`` (``store.access.devices``). A token
reaches its own devices only: another token's are not found."""

from __future__ import annotations

from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.routes.session_records import person
from roundtable_console.store.access.devices import list_devices, revoke_device


def list_own(ctx: ServerContext, call: Call) -> Answer:
    """The device sign-ins of the caller's token that hold, last used first."""
    caller = person(ctx, call)
    found = list_devices(store=ctx.store, token=caller.name, clock=ctx.clock)
    return Answer(200, {"items": [device.to_json() for device in found]})


def revoke_own(ctx: ServerContext, call: Call, device_id: str) -> Answer:
    """End one device sign-in of the caller's token at once (it is told so, once)."""
    caller = person(ctx, call)
    gone = revoke_device(store=ctx.store, device_id=device_id, token=caller.name, clock=ctx.clock)
    return Answer(200, gone.to_json())
