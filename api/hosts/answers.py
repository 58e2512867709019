"""How a host's answer is taken (``store.hosts.protocol``: its ``ok`` part, or why not, as an
error of one of two kinds), over a link or through another server (``api.hosts.relay``)."""

from __future__ import annotations

from typing import Any, Protocol

from roundtable_console.store.hosts.protocol import HostRefused, HostUnreachable, outcome_of


class Asker(Protocol):
    """What asks a host another server holds (``api.hosts.relay.Relay``)."""

    async def ask(self, name: str, op: str, args: dict[str, Any], *, timeout: float) -> Any: ...

    def holding(self) -> None: ...


__all__ = ["Asker", "HostRefused", "HostUnreachable", "outcome_of"]
