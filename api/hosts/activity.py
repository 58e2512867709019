"""What the agent is doing, read where the agent runs: a session whose machine runs a host
(``roundtable host run``) is read through that host's link; any other, here, as before.

A session names its machine (``host``). When the store knows a host of that name, the
transcript or pane is on that machine, not on this server's disk: it is asked of the host, over
its link when this server holds it, else through the server that does (``api.hosts.relay``);
a host that is offline is said in one sentence. A session of a machine that runs no host is
read here: an agent on the server's own machine, as before hosts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection

from roundtable_console.agents.panes import read_activity
from roundtable_console.agents.transcripts import Page, TranscriptUnavailable
from roundtable_console.api.context import ServerContext
from roundtable_console.api.hosts.answers import HostRefused, HostUnreachable
from roundtable_console.store.hosts import protocol
from roundtable_console.store.hosts.registry import HostRow, get_host
from roundtable_console.store.reads.launches import last_launch
from roundtable_console.store.records import SessionFields
from roundtable_console.store.safety.display import printable


def unreachable(ctx: ServerContext, host: HostRow) -> str | None:
    """Why no server can ask the session's host now, in one sentence; None when one can (this
    server over its link, or the server or store that holds it, through the store)."""
    if host.name in ctx.hosts.links:
        return None
    name = printable(host.name)
    if not host.online:
        seen = host.last_seen_at or "never"
        return f"The session runs on {name}, whose host is offline (last seen {seen})."
    if host.on_store and ctx.store.dialect != "postgresql":
        return (
            f"The session runs on {name}, whose host reaches this SQLite store itself (host "
            "run --db): a server asks it only over the connection it opens (host run --server), "
            "or through a PostgreSQL store."
        )
    return None


class Source:
    """Where a session's activity is read: its launch (``R``'s pane) and its machine's host,
    read in the caller's transaction with the session."""

    __slots__ = ("host", "launch", "session")

    def __init__(self, db: Connection, session: SessionFields) -> None:
        self.session = session
        self.launch: Mapping[str, Any] | None = last_launch(db, session.id)
        self.host: HostRow | None = get_host(db, session.host) if session.host else None


async def read(ctx: ServerContext, source: Source, *, before: int | None, limit: int) -> Page:
    """A page of the session's activity; ``TranscriptUnavailable`` saying why there is none."""
    host = source.host
    if host is None:
        return await ctx.in_worker(
            read_activity, source.session, source.launch, before=before, limit=limit
        )
    name = printable(host.name)
    why = unreachable(ctx, host)
    if why is not None:
        raise TranscriptUnavailable(f"{why} Its transcript is read through it.")
    args = protocol.activity_args(source.session, source.launch, before=before, limit=limit)
    try:
        body = await ctx.hosts.call_anywhere(host.name, protocol.ACTIVITY, args)
    except (HostUnreachable, HostRefused) as error:
        raise TranscriptUnavailable(str(error)) from None
    try:
        return await ctx.in_worker(Page.from_json, body)  # cleaning a page takes a while
    except ValueError:
        raise TranscriptUnavailable(
            f"The host {name} answered with something that is not a transcript page."
        ) from None
