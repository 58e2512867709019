"""``roundtable serve``: the app on uvicorn, exposed only as safely as asked.

- Loopback by default. A non-loopback host is refused in words unless ``allow_remote``, and
  then also unless the store holds a token and TLS is configured (``certfile``/``keyfile``) or
  ``behind_proxy`` says a TLS proxy is in front (whose ``X-Forwarded-*`` headers are then
  believed, from that proxy's address).
- While the store holds no token the server runs in the reference's header mode and says so.
- SIGTERM (or SIGINT) stops taking connections, lets requests in flight finish for up to
  ``GRACE_SECONDS``, then exits 0.
"""

from __future__ import annotations

import gc
import ipaddress
import signal
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import FrameType

import uvicorn

from roundtable_console.api.app import create_app
from roundtable_console.api.context import WORKER_THREADS, ServerContext
from roundtable_console.store.clock import Clock, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.resume.adapters import AdapterConfig

GRACE_SECONDS = 5
# The store's connections kept open: one for each worker thread, and a few for the streams.
POOL_SIZE = WORKER_THREADS + 4
LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost", "ip6-loopback"})


class Refused(Exception):
    """The server will not start as asked: the sentence says why and what to do."""


@dataclass(frozen=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 8080
    read_only: bool = False
    certfile: str | None = None
    keyfile: str | None = None
    allow_remote: bool = False
    behind_proxy: bool = False
    stale_after_seconds: float = 300.0
    adapters: Mapping[str, AdapterConfig] = field(default_factory=dict)

    @property
    def tls(self) -> bool:
        return self.certfile is not None

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"


def is_loopback(host: str) -> bool:
    name = host.strip().strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_exposure(options: ServeOptions, *, holds_tokens: bool) -> None:
    """Refuse an unsafe exposure before anything listens."""
    if (options.certfile is None) != (options.keyfile is None):
        raise Refused("TLS needs both --certfile and --keyfile.")
    if is_loopback(options.host):
        return
    if not options.allow_remote:
        raise Refused(
            f"refusing non-loopback bind to {options.host}; pass --allow-remote explicitly "
            "(and give the store a token first: roundtable tokens create)."
        )
    if not holds_tokens:
        raise Refused(
            f"refusing to listen on {options.host}: the store holds no token, so anyone who "
            "reaches it would act as whoever X-Actor-ID says. Make one first: roundtable "
            "tokens create --name NAME --role operator."
        )
    if not (options.tls or options.behind_proxy):
        raise Refused(
            f"refusing to listen on {options.host} without TLS: tokens would cross the network "
            "in clear. Give --certfile and --keyfile, or --behind-proxy when a TLS proxy is in "
            "front of this server."
        )


def run(
    store: Store,
    options: ServeOptions,
    *,
    say: Callable[[str], None],
    clock: Clock = system_clock,
) -> int:
    """Serve until SIGTERM or SIGINT; the exit code (0 after a graceful stop)."""
    from roundtable_console.store.access.tokens import holds_tokens

    with store.read() as db:
        tokens = holds_tokens(db)
    check_exposure(options, holds_tokens=tokens)
    ctx = ServerContext(
        store=store,
        clock=clock,
        stale_after_seconds=options.stale_after_seconds,
        adapters=options.adapters,
    )
    app = create_app(ctx, read_only=options.read_only)
    config = uvicorn.Config(
        app,
        host=options.host,
        port=options.port,
        ssl_certfile=options.certfile,
        ssl_keyfile=options.keyfile,
        proxy_headers=options.behind_proxy,
        forwarded_allow_ips="*" if options.behind_proxy else None,
        timeout_graceful_shutdown=GRACE_SECONDS,
        server_header=False,
        access_log=False,  # a query string may carry a token (streams): nothing logs requests
        log_level="warning",
        lifespan="off",
    )
    server = _Server(config, on_exit=ctx.hub.close)
    address = f"{options.scheme}://{_shown_host(options.host)}:{options.port}"
    mode = (
        "callers need one of the store's tokens (roundtable tokens list)"
        if tokens
        else "header mode: the store holds no token, so a caller is whoever X-Actor-ID says "
        "(loopback only; roundtable tokens create ends it)"
    )
    say(f"Serving {store.description} on {address}/api/v1 — {mode}"
        + ("; read-only" if options.read_only else "") + ".")  # fmt: skip
    # uvicorn raises the stop signal again once it has stopped, to the handler it found: ours
    # takes it, so a graceful stop ends the process with 0 rather than killed by the signal.
    for stop in (signal.SIGTERM, signal.SIGINT):
        signal.signal(stop, lambda _number, _frame: None)
    config.load()  # its protocols and the wrapped app: made now, part of the heap settled next
    settle_heap()
    server.run()
    return 0


class _Server(uvicorn.Server):
    """uvicorn's server, which also ends the open streams when told to stop (a stream would
    otherwise hold the graceful stop for its whole grace)."""

    def __init__(self, config: uvicorn.Config, *, on_exit: Callable[[], None]) -> None:
        super().__init__(config)
        self.on_exit = on_exit

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.on_exit()
        super().handle_exit(sig, frame)


def settle_heap() -> None:
    """Collect once, then leave what start-up made (the modules, the app, its routes and
    templates: over 100,000 objects) out of every later collection. A full collection walks
    every object it tracks while holding the interpreter lock; over that heap it stopped the
    whole server for 80-240 ms on a 2-core machine, every 10-30 s under a fleet's beats. (A
    reference cycle made at start-up that dies later is never collected: a few, once.)"""
    gc.collect()
    gc.freeze()


def _shown_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now (tests and benches start servers on one)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])
