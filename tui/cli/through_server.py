"""Commands that reach ``roundtable serve`` rather than a store: its address checked, the token read
from the environment variable that holds it (never from an option, never written), and which of
the two a person's command reads and acts through (``--server``, ``$ROUNDTABLE_SERVER``, the
config's ``server``; ``--db``, ``--root`` or ``$ROUNDTABLE_DB`` given instead name a store)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import click

# The variable that holds a person's token when neither --token-env nor the config names one.
DEFAULT_TOKEN_ENV = "ROUNDTABLE_TOKEN"


def checked_server(server: str) -> None:
    """A token goes to ``server`` in every request: in clear text only on this machine."""
    from urllib.parse import urlsplit

    parts = urlsplit(server)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise click.BadParameter("an http:// or https:// URL", param_hint="'--server'")
    loopback = parts.hostname == "localhost" or is_loopback_address(parts.hostname)
    if parts.scheme == "http" and not loopback:
        raise click.BadParameter(
            "the token would cross the network in clear text: use https:// (or a loopback address)",
            param_hint="'--server'",
        )


def is_loopback_address(host: str) -> bool:
    """An IP address of this machine's loopback (a name such as 127.0.0.1.example is not)."""
    import ipaddress

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def token_from(variable: str, whose: str) -> str:
    """The token held by ``variable`` (``whose``: in words, whose token it is)."""
    token = os.environ.get(variable, "").strip()
    if not token:
        raise click.UsageError(f"{variable} is not set: it holds {whose}.")
    return token


def server_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--server`` and ``--token-env``, as parameters ``server`` and ``token_env``."""
    func = click.option(
        "--token-env",
        "token_env",
        metavar="VAR",
        help=f"With a server: the variable holding your token (default: config token_env, "
        f"else {DEFAULT_TOKEN_ENV}). The token itself is never given as an option.",
    )(func)
    return click.option(
        "--server",
        "server",
        metavar="URL",
        help="Read and act through roundtable serve at URL with your own token (also "
        "$ROUNDTABLE_SERVER, config server) rather than opening a store.",
    )(func)


def chosen_server(*, server: str | None, store_named: bool, configured: str | None) -> str | None:
    """The server a command goes through, or None for a store. ``store_named``: --db, --root or
    $ROUNDTABLE_DB was given, which name a store; ``configured``: the config's ``server``."""
    if server is not None:
        if store_named:
            raise click.UsageError(
                "--server and a store (--db, --root or $ROUNDTABLE_DB) were both given: a "
                "command goes through one of them."
            )
        chosen: str | None = server.strip()
    elif store_named:
        return None
    else:
        chosen = os.environ.get("ROUNDTABLE_SERVER", "").strip() or configured
    if chosen is not None:
        if not chosen:
            raise click.BadParameter("must not be blank.", param_hint="'--server'")
        checked_server(chosen)
    return chosen
