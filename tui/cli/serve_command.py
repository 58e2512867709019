"""``roundtable serve``: the HTTP API for sessions (``api.server``)."""

from __future__ import annotations

import click

from roundtable_console.tui import output
from roundtable_console.tui.cli.invocation import Invocation, with_invocation

SERVE_HELP = """Serve the store's sessions over HTTP: the Roundtable reference's API under
/api/v1 (its routes, shapes and errors), with its OpenAPI document at /api/v1/openapi.json.

\b
Callers bring a bearer token (roundtable tokens create); while the store holds no token the
server answers as the reference with none: the caller is whoever X-Actor-ID says (header
mode, loopback only). It listens on 127.0.0.1 unless told otherwise: another address needs
--allow-remote, a token in the store, and TLS (--certfile, --keyfile) or --behind-proxy.
SIGTERM or SIGINT lets requests in flight finish, then exits 0."""


@click.command("serve", help=SERVE_HELP)
@click.option("--host", default="127.0.0.1", show_default=True, metavar="ADDRESS")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535))
@click.option("--certfile", type=click.Path(exists=True, dir_okay=False), metavar="FILE")
@click.option("--keyfile", type=click.Path(exists=True, dir_okay=False), metavar="FILE")
@click.option("--allow-remote", is_flag=True, help="Listen on a non-loopback address.")
@click.option("--behind-proxy", is_flag=True, help="A TLS proxy is in front: trust its headers.")
@with_invocation
def serve_command(
    inv: Invocation,
    host: str,
    port: int,
    certfile: str | None,
    keyfile: str | None,
    allow_remote: bool,
    behind_proxy: bool,
) -> int:
    from roundtable_console.api.server import POOL_SIZE, Refused, ServeOptions, run

    options = ServeOptions(
        host=host,
        port=port,
        read_only=inv.read_only,
        certfile=certfile,
        keyfile=keyfile,
        allow_remote=allow_remote,
        behind_proxy=behind_proxy,
        stale_after_seconds=inv.settings.stale_after_seconds,
        adapters=inv.adapters(),
    )
    with inv.store(pool_size=POOL_SIZE) as store:
        try:
            return run(store, options, say=lambda line: output.echo_text(line, err=True))
        except Refused as refused:
            raise click.UsageError(str(refused)) from None
