"""``roundtable serve``: the app on uvicorn, exposed only as safely as asked.

- Loopback by default. A non-loopback host is refused in words unless ``allow_remote``, and
  then also unless the store holds a token and TLS is configured (``certfile``/``keyfile``) or
  ``proxies`` say a TLS proxy is in front (whose forwarding headers are then believed from
  those addresses only: the client is the nearest hop the proxies do not vouch for).
- The reference's header mode (a caller is whoever ``X-Actor-ID`` says) only for a lone
  loopback server whose store holds no token: never behind a proxy or with ``allow_remote``
  (refused at start); decided here once, and lost for good when a token appears.
- A request must name the server (``Host``: ``api.edge.exposure``), and its connection stays within
  ``api.edge.connections``' limits: head size, header count, head time, open connections.
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
from roundtable_console.api.edge.connections import bounded_http
from roundtable_console.api.edge.exposure import ConnectionLimits, Exposure
from roundtable_console.api.edge.identity import HeaderMode
from roundtable_console.api.notify.notifier import NotifySettings
from roundtable_console.store.budgets.limits import Budget
from roundtable_console.store.clock import Clock, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.hosts import protocol
from roundtable_console.store.resume.adapters import AdapterConfig
from roundtable_console.store.writes.usage_values import SHIPPED, Prices

GRACE_SECONDS = 5
# The largest message a WebSocket client may send: a host's answer (a transcript page) is the
# largest (the reference's socket only reads closes).
WS_MAX_BYTES = protocol.MESSAGE_MOST_BYTES
# The store's connections kept open: one for each worker thread, and a few for the streams.
POOL_SIZE = WORKER_THREADS + 4
LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost", "ip6-loopback"})
NO_TOKEN = (
    "the store holds no token, so a caller would be whoever X-Actor-ID says (header mode), which "
    "is for a lone loopback server only"
)


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
    # The addresses (or networks) of the TLS proxy in front, whose forwarding headers are
    # believed (--behind-proxy); none: no proxy.
    proxies: tuple[str, ...] = ()
    # The names the proxy forwards (--public-name): the server answers to them too.
    public_names: tuple[str, ...] = ()
    # Origins besides the server's own whose pages may write (--allow-origin).
    allowed_origins: tuple[str, ...] = ()
    limits: ConnectionLimits = ConnectionLimits()
    max_streams: int = Exposure.streams_in_all
    stale_after_seconds: float = 300.0
    adapters: Mapping[str, AdapterConfig] = field(default_factory=dict)
    prices: Prices = SHIPPED
    budgets: tuple[Budget, ...] = ()
    notify: NotifySettings = field(default_factory=NotifySettings)

    @property
    def behind_proxy(self) -> bool:
        return bool(self.proxies)

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
    loopback = is_loopback(options.host)
    if not loopback and not options.allow_remote:
        raise Refused(
            f"refusing non-loopback bind to {options.host}; pass --allow-remote explicitly "
            "(and give the store a token first: roundtable tokens create)."
        )
    if not holds_tokens and not loopback:
        raise Refused(
            f"refusing to listen on {options.host}: {NO_TOKEN}. Make one first: roundtable "
            "tokens create --name NAME --role operator."
        )
    if not holds_tokens and (options.behind_proxy or options.allow_remote):
        flag = "--behind-proxy" if options.behind_proxy else "--allow-remote"
        raise Refused(
            f"refusing to serve with {flag}: {NO_TOKEN}, never one others reach through a "
            "proxy or the network. Make one first: roundtable tokens create --name NAME "
            "--role operator."
        )
    if loopback:
        return
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
    exposure = Exposure.of(
        host=options.host,
        public_names=options.public_names,
        origins=options.allowed_origins,
        proxies=options.proxies,
        tls=options.tls,
        streams_in_all=options.max_streams,
        hosts_in_all=max(1, options.limits.max_connections * 3 // 4),
    )
    ctx = ServerContext(
        store=store,
        clock=clock,
        stale_after_seconds=options.stale_after_seconds,
        adapters=options.adapters,
        prices=options.prices,
        budgets=options.budgets,
        header_mode=HeaderMode(granted=not tokens),
        exposure=exposure,
        notify=options.notify,
    )
    app = create_app(ctx, read_only=options.read_only)
    config = uvicorn.Config(
        app,
        host=options.host,
        port=options.port,
        ssl_certfile=options.certfile,
        ssl_keyfile=options.keyfile,
        http=bounded_http(options.limits),
        ws_max_size=WS_MAX_BYTES,
        # A compressed message would cost its full size to take in: a host's answer, a
        # stream's (unread) frame. Nothing sent here is worth the risk.
        ws_per_message_deflate=False,
        timeout_keep_alive=options.limits.keep_alive_seconds,
        proxy_headers=options.behind_proxy,
        forwarded_allow_ips=list(options.proxies) if options.behind_proxy else None,
        timeout_graceful_shutdown=GRACE_SECONDS,
        server_header=False,
        access_log=False,  # a query string may carry a token (streams): nothing logs requests
        log_level="warning",
        lifespan="off",
    )
    if not options.read_only:  # a read-only server keeps no claim of what it told
        ctx.notifier.start()

    def on_exit() -> None:
        ctx.notifier.close()
        ctx.hub.close()
        ctx.hosts.close_all()

    server = _Server(config, on_exit=on_exit)
    address = f"{options.scheme}://{_shown_host(options.host)}:{options.port}"
    mode = (
        "callers need one of the store's tokens (roundtable tokens list)"
        if tokens
        else "header mode: the store holds no token, so a caller is whoever X-Actor-ID says "
        "(loopback only; roundtable tokens create ends it)"
    )
    say(f"Serving {store.description} on {address}/api/v1 — {mode}"
        + ("; read-only" if options.read_only else "") + ".")  # fmt: skip
    say(f"It answers to {', '.join(exposure.shown_names)}"
        + (f", behind a proxy at {', '.join(options.proxies)}" if options.proxies else "")
        + (f"; pages of {', '.join(sorted(exposure.origins))} may write" if exposure.origins
           else "") + ".")  # fmt: skip
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
