"""How a host's answer is taken (``store.hosts.protocol``): its ``ok`` part, or why not, as an
error of one of two kinds, over a link or through another server (``api.hosts.relay``)."""

from __future__ import annotations

from typing import Any, Protocol

from roundtable_console.store.safety.display import printable


class HostUnreachable(Exception):
    """The host cannot be asked, or did not answer: why, in one sentence."""


class HostRefused(Exception):
    """The host would not do what it was asked (not its session, say): its words."""


class Asker(Protocol):
    """What asks a host another server holds (``api.hosts.relay.Relay``)."""

    async def ask(self, name: str, op: str, args: dict[str, Any], *, timeout: float) -> Any: ...

    def holding(self) -> None: ...


def outcome_of(name: str, answer: dict[str, Any]) -> dict[str, Any]:
    """A host's answer: its ``ok`` part; ``HostUnreachable`` or ``HostRefused`` in its words."""
    if isinstance(answer.get("ok"), dict):
        return answer["ok"]  # type: ignore[no-any-return]
    for key, error in (("unavailable", HostUnreachable), ("refused", HostRefused)):
        if isinstance(answer.get(key), str):
            raise error(printable(answer[key][:500]))
    raise HostUnreachable(f"The host {name} answered with something this server cannot read.")
