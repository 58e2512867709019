"""A reply typed into the pane a host started (``POST …/launch``): the launch names its host
(``via_host``), and the pane is looked at and typed into by that host, from the worker the
reply runs in. A launch no host made is the local pane, as before hosts.

A reply is typed inside the store's write transaction (``store.replies.sending``): there, the
host is asked once, to type (it looks at its pane first, and a refusal rolls the reply back),
within ``TYPE_SECONDS``; the look alone (``look``) is for showing the route, outside it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roundtable_console.agents.replying import Panes, pane_route, type_keys
from roundtable_console.api.context import ServerContext
from roundtable_console.api.hosts.answers import HostRefused, HostUnreachable
from roundtable_console.store.errors import NoReplyPath
from roundtable_console.store.hosts import protocol
from roundtable_console.store.replies.sending import PANE, ReplyRoute
from roundtable_console.store.safety.display import one_line, printable


def panes_of(ctx: ServerContext, *, look: bool = True) -> Panes:
    def route(launch: Mapping[str, Any]) -> ReplyRoute:
        host = launch.get("via_host")
        if not isinstance(host, str):
            return pane_route(launch)
        if not look:
            if host not in ctx.hosts.links:
                return ReplyRoute(None, f"The host {printable(host)} is not connected here.")
            return ReplyRoute(PANE, f"typed into its tmux pane on {printable(host)}", launch=launch)
        try:
            body = ctx.hosts.call_from_worker(
                host, protocol.PANE, {"launch": dict(launch)}, timeout=protocol.TYPE_SECONDS
            )
        except (HostUnreachable, HostRefused) as why:
            return ReplyRoute(None, f"{why} Answer in the agent's own terminal.")
        pane = one_line(printable(str(body.get("tmux_pane", ""))), 16)
        return ReplyRoute(
            PANE, f"typed into tmux pane {pane} on {printable(host)}, where it was started",
            launch=launch,
        )  # fmt: skip

    def typed(launch: Mapping[str, Any], line: str) -> None:
        host = launch.get("via_host")
        if not isinstance(host, str):
            type_keys(launch, line)
            return
        try:
            ctx.hosts.call_from_worker(
                host, protocol.TYPE, {"launch": dict(launch), "line": line},
                timeout=protocol.TYPE_SECONDS,  # inside the store's write: this server's only
            )  # fmt: skip
        except (HostUnreachable, HostRefused) as why:
            raise NoReplyPath(f"{why} Nothing was sent.") from None

    return Panes(route, typed)
