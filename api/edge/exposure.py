"""How a server is reached, decided once at start (``roundtable serve``'s options): the names it
answers to, the pages of other origins it lets write, whether a proxy stands in front.

**Names.** A request whose ``Host`` is not one of the server's names is refused before routing
(``host_not_allowed``), for the API, the web console and the streams alike: a page of another site
whose name was made to resolve to this server's address (DNS rebinding) sends its own name, and
is refused. The names: the loopback ones, the address the request arrived at, ``--host``, and each
``--public-name`` (the names a proxy forwards).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "ip6-localhost", "ip6-loopback"})
# --host values that name no one address: the address a request arrived at stands for them.
WILDCARDS = frozenset({"", "0.0.0.0", "::"})


def host_name(value: str) -> str | None:
    """The name in a ``Host`` header's value (without its port), lowercased; None when the
    value is no host at all."""
    text = value.strip().lower()
    if not text:
        return None
    if text.startswith("["):
        end = text.find("]")
        if end == -1 or (text[end + 1 :] and not _is_port(text[end + 1 :])):
            return None
        return text[1:end] or None
    name, colon, port = text.rpartition(":")
    if not colon:
        return text
    if ":" in name:  # an IPv6 address without brackets: no port can be told apart
        return text
    return name if name and (not port or port.isdigit()) else None


def _is_port(text: str) -> bool:
    return text.startswith(":") and (text == ":" or text[1:].isdigit())


def canonical(name: str) -> str:
    """A name as ``host_name`` gives it back: lowercased, an IPv6 address without brackets."""
    text = name.strip().lower().strip("[]")
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return text


@dataclass(frozen=True)
class ConnectionLimits:
    """What one connection may send and how many may be open (``api.edge.connections``)."""

    max_head_bytes: int = 16 * 1024
    max_headers: int = 100
    head_seconds: float = 10.0
    body_seconds: float = 30.0
    # An idle connection between requests (uvicorn's keep-alive timeout).
    keep_alive_seconds: int = 5
    max_connections: int = 1000


@dataclass(frozen=True)
class Exposure:
    """What start decided of how the server is reached (the module's docstring)."""

    names: frozenset[str] = LOOPBACK_NAMES
    # Origins besides the server's own whose pages may write (--allow-origin).
    origins: frozenset[str] = frozenset()
    # A proxy is in front: its forwarding headers are believed, from its own addresses.
    proxies: tuple[str, ...] = ()
    tls: bool = False
    # Streams open at once, per token and in all (api.streams.slots).
    streams_per_token: int = 32
    streams_in_all: int = 512
    # Hosts held at once (api.hosts.links): three quarters of the connections at most, so
    # hosts never lock operators, agents and browsers out.
    hosts_in_all: int = 750

    @classmethod
    def of(
        cls,
        *,
        host: str,
        public_names: Iterable[str] = (),
        origins: Iterable[str] = (),
        proxies: Iterable[str] = (),
        tls: bool = False,
        **limits: Any,
    ) -> Exposure:
        named = {canonical(name) for name in (host, *public_names)} - WILDCARDS
        return cls(
            names=LOOPBACK_NAMES | frozenset(named),
            origins=frozenset(origin.rstrip("/").lower() for origin in origins),
            proxies=tuple(proxies),
            tls=tls,
            **limits,
        )

    def answers_to(self, host: str | None, arrived_at: str | None) -> bool:
        """Whether a request whose ``Host`` is ``host``, arriving at the local address
        ``arrived_at``, names this server."""
        if host is None:
            return False
        name = host_name(host)
        if name is None:
            return False
        if name in self.names:
            return True
        return arrived_at is not None and canonical(name) == canonical(arrived_at)

    @property
    def shown_names(self) -> list[str]:
        return sorted(self.names - {"ip6-localhost", "ip6-loopback"})
