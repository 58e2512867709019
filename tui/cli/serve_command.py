"""``roundtable serve``: the HTTP API for sessions (``api.server``)."""

from __future__ import annotations

import click

from roundtable_console.tui import output
from roundtable_console.tui.cli.invocation import Invocation, with_invocation

# api.edge.exposure's (tests/test_security_limits.py checks they agree); the server's
# modules are imported only when it runs: every other command starts without them.
MAX_CONNECTIONS = 1000
MAX_STREAMS = 512
_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
_NAME = rf"^(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*$"

SERVE_HELP = """Serve the store's sessions over HTTP: the Roundtable reference's API under
/api/v1 (its routes, shapes and errors), with its OpenAPI document at /api/v1/openapi.json.

\b
Callers bring a bearer token (roundtable tokens create). A lone loopback server whose store
holds no token answers as the reference with none: the caller is whoever X-Actor-ID says
(header mode; never with --behind-proxy or --allow-remote). It listens on 127.0.0.1 unless
told otherwise: another address needs --allow-remote, a token in the store, and TLS
(--certfile, --keyfile) or --behind-proxy. It answers only to its own names (Host): its
address, the loopback names, and each --public-name. SIGTERM or SIGINT lets requests in
flight finish, then exits 0."""


@click.command("serve", help=SERVE_HELP)
@click.option("--host", default="127.0.0.1", show_default=True, metavar="ADDRESS")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535))
@click.option("--certfile", type=click.Path(exists=True, dir_okay=False), metavar="FILE")
@click.option("--keyfile", type=click.Path(exists=True, dir_okay=False), metavar="FILE")
@click.option("--allow-remote", is_flag=True, help="Listen on a non-loopback address.")
@click.option(
    "--demo",
    is_flag=True,
    help="Serve the demo store (tui --demo's: demo.db in the user data directory, or the --db "
    "URL given), seeded with demo sessions when empty.",
)
@click.option(
    "--behind-proxy",
    "proxies",
    is_flag=False,
    flag_value="127.0.0.1",
    default=None,
    metavar="[ADDRESSES]",
    help="A TLS proxy is in front, at these addresses or networks (comma-separated; alone: "
    "127.0.0.1): its forwarding headers are believed from them only.",
)
@click.option(
    "--public-name",
    "public_names",
    multiple=True,
    metavar="NAME",
    help="A name the proxy forwards in Host (repeat): the server answers to it too.",
)
@click.option(
    "--allow-origin",
    "origins",
    multiple=True,
    metavar="ORIGIN",
    help="Let pages of this origin (https://host[:port]) write, besides the server's own (repeat).",
)
@click.option(
    "--max-connections",
    type=click.IntRange(1, 100_000),
    default=MAX_CONNECTIONS,
    show_default=True,
    help="Connections open at once; past it a request is answered 503.",
)
@click.option(
    "--max-streams",
    type=click.IntRange(1, 100_000),
    default=MAX_STREAMS,
    show_default=True,
    help="Event streams open at once (a token holds 32 at most); past it 503.",
)
# How long a request's head, its body and an idle connection may take: fixed for operators (the
# docs give them), made short by the tests that wait for them to pass.
@click.option("--head-seconds", type=click.FloatRange(0.5, 600), default=10.0, hidden=True)
@click.option("--body-seconds", type=click.FloatRange(0.5, 600), default=30.0, hidden=True)
@click.option("--keep-alive-seconds", type=click.IntRange(1, 600), default=5, hidden=True)
@click.option(
    "--notify",
    "webhooks",
    multiple=True,
    metavar="URL",
    envvar="ROUNDTABLE_NOTIFY",
    help="Post each notice (a session needs a human, a turn is done, a session failed) as JSON "
    "to this webhook "
    "(ntfy, a Slack-compatible incoming webhook, any receiver; repeat). Retried with backoff. "
    "A URL holding a secret is better given in $ROUNDTABLE_NOTIFY (space-separated): the "
    "command line is visible to every user of the machine.",
)
@click.option(
    "--notify-dwell",
    type=click.FloatRange(0, 3600),
    default=2.0,
    show_default=True,
    metavar="SECONDS",
    help="A session is told of once it has waited (or sat done) this long.",
)
@click.option(
    "--notify-cooling",
    type=click.FloatRange(0, 86400),
    default=300.0,
    show_default=True,
    metavar="SECONDS",
    help="A session's news of a kind is told at most once in this long (devices, webhooks).",
)
@click.option(
    "--notify-again",
    type=click.FloatRange(0, 86400),
    default=600.0,
    show_default=True,
    metavar="SECONDS",
    help="A wait still unanswered this long after it was told is told once more, and to the "
    "--escalate webhooks (0: never).",
)
@click.option(
    "--escalate",
    "escalations",
    multiple=True,
    metavar="URL",
    envvar="ROUNDTABLE_ESCALATE",
    help="A webhook told only of waits still unanswered after --notify-again (repeat; "
    "space-separated in $ROUNDTABLE_ESCALATE).",
)
@click.option(
    "--push-service",
    "push_services",
    multiple=True,
    metavar="ORIGIN",
    help="Trust a push service of this origin besides the browsers' own (repeat).",
)
@click.option(
    "--push-contact",
    default="mailto:roundtable@localhost",
    show_default=True,
    metavar="URI",
    help="Who push services may write to about this server's pushes (mailto: or https:).",
)
@with_invocation
def serve_command(
    inv: Invocation,
    host: str,
    port: int,
    certfile: str | None,
    keyfile: str | None,
    allow_remote: bool,
    demo: bool,
    proxies: str | None,
    public_names: tuple[str, ...],
    origins: tuple[str, ...],
    max_connections: int,
    max_streams: int,
    head_seconds: float,
    body_seconds: float,
    keep_alive_seconds: int,
    webhooks: tuple[str, ...],
    notify_dwell: float,
    notify_cooling: float,
    notify_again: float,
    escalations: tuple[str, ...],
    push_services: tuple[str, ...],
    push_contact: str,
) -> int:
    from roundtable_console.api.edge.exposure import ConnectionLimits
    from roundtable_console.api.notify.notifier import NotifySettings
    from roundtable_console.api.server import POOL_SIZE, Refused, ServeOptions, run

    options = ServeOptions(
        host=host,
        port=port,
        read_only=inv.read_only,
        certfile=certfile,
        keyfile=keyfile,
        allow_remote=allow_remote,
        proxies=proxy_addresses(proxies),
        public_names=tuple(checked_name(name) for name in public_names),
        allowed_origins=tuple(checked_origin(origin) for origin in origins),
        limits=ConnectionLimits(
            max_connections=max_connections,
            head_seconds=head_seconds,
            body_seconds=body_seconds,
            keep_alive_seconds=keep_alive_seconds,
        ),
        max_streams=max_streams,
        stale_after_seconds=inv.settings.stale_after_seconds,
        adapters=inv.adapters(),
        prices=inv.settings.prices,
        budgets=inv.settings.budgets,
        notify=NotifySettings(
            dwell=notify_dwell,
            cooling=notify_cooling,
            webhooks=tuple(checked_webhook(url) for url in webhooks),
            again=notify_again,
            escalate=tuple(checked_webhook(url, "--escalate") for url in escalations),
            push_services=tuple(
                checked_origin(origin, "--push-service") for origin in push_services
            ),
            contact=checked_contact(push_contact),
        ),
    )
    url = None
    if demo:
        from roundtable_console.tui.config import resolve_demo_url

        url = resolve_demo_url(db=inv.db)
    with inv.store(pool_size=POOL_SIZE, url=url) as store:
        if demo and not inv.read_only:
            from roundtable_console.store.writes.demo import seed_if_empty
            from roundtable_console.tui.config import demo_agent_home

            home = demo_agent_home(url or inv.url())
            seeded = seed_if_empty(store, clock=inv.clock, agent_home=home)
            if seeded:
                output.echo_text(f"Seeded the demo store with {seeded} sessions.", err=True)
        try:
            return run(store, options, say=lambda line: output.echo_text(line, err=True))
        except Refused as refused:
            raise click.UsageError(str(refused)) from None


def proxy_addresses(value: str | None) -> tuple[str, ...]:
    """--behind-proxy's addresses and networks, each checked; () without the option."""
    import ipaddress

    if value is None:
        return ()
    found = []
    for part in value.split(","):
        text = part.strip()
        try:
            found.append(str(ipaddress.ip_network(text, strict=False)))
        except ValueError:
            raise click.BadParameter(
                f"{text!r} is not an address or a network (10.0.0.5, 10.0.0.0/24, ::1).",
                param_hint="--behind-proxy",
            ) from None
    return tuple(found)


def checked_name(value: str) -> str:
    import ipaddress
    import re

    name = value.strip().lower().rstrip(".")
    try:
        return str(ipaddress.ip_address(name.strip("[]")))
    except ValueError:
        pass
    if not re.match(_NAME, name):
        raise click.BadParameter(f"{value!r} is not a host name.", param_hint="--public-name")
    return name


def checked_webhook(value: str, option: str = "--notify") -> str:
    """An http(s) URL to post to; the error never repeats it (its path may be its secret)."""
    from urllib.parse import urlsplit

    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment:
        raise click.BadParameter(
            "a webhook is an http or https URL (https://ntfy.sh/TOPIC).", param_hint=option
        )
    return value.strip()


def checked_contact(value: str) -> str:
    """A VAPID ``sub`` push services (and py-vapid, which signs it) take: ``mailto:`` an
    address, or ``https://`` a host name alone."""
    import re

    text = value.strip()
    mail = re.match(r"^mailto:[^@\s]+@(localhost|[^@\s.]+(\.[^@\s.]+)+)$", text)
    web = re.match(r"^https://(localhost|[a-z0-9-]+(\.[a-z0-9-]+)+)$", text, re.IGNORECASE)
    if not (mail or web) or len(text) > 200:
        raise click.BadParameter(
            f"{value[:80]!r} is neither mailto:ADDRESS nor https://HOST.",
            param_hint="--push-contact",
        )
    return text


def checked_origin(value: str, param_hint: str = "--allow-origin") -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(value.strip())
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or parts.username
    ):
        raise click.BadParameter(
            f"{value!r} is not an origin: scheme, host and port only (https://app.example:8443).",
            param_hint=param_hint,
        )
    return f"{parts.scheme}://{parts.netloc}".lower()
