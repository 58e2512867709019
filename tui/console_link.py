"""The console's link to ``roundtable serve`` (``roundtable tui --server URL``): the server's
address, the person's token (read from its variable, held in memory only) and who the server
says the token is (``GET /api/v1/me``): its name is the console's operator, a viewer's console
offers no action. Opened before the screen is taken over, so a wrong token or a server that is
down is one sentence (exit 1), never a traceback."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from roundtable_console.client.calls import ServerCalls
from roundtable_console.store.safety.display import printable


@dataclass(frozen=True)
class ServerLink:
    url: str
    name: str
    role: str
    workspaces: tuple[str, ...] | None
    calls: ServerCalls = field(repr=False)
    # Kept for the live link's own connection; never shown, logged or written.
    token: str = field(repr=False)

    @property
    def viewer(self) -> bool:
        return self.role == "viewer"

    @property
    def changes_path(self) -> str:
        """The stream of changes the console follows (``changes_of``)."""
        return self.changes_of(None)

    def changes_of(self, workspace: str | None) -> str:
        """The stream of ``workspace``'s changes; None: every workspace's, or (a token bound to
        workspaces) its first workspace's, the one its list shows unless it chooses."""
        if workspace is None and self.workspaces is None:
            return "/api/v1/changes"
        from urllib.parse import quote

        chosen = workspace if workspace is not None else (self.workspaces or ("",))[0]
        return f"/api/v1/workspaces/{quote(chosen, safe='')}/sessions/changes"

    def close(self) -> None:
        self.calls.close()


def open_link(url: str, token: str) -> ServerLink:
    """Who the token is on the server at ``url``; a ``StoreError`` in words when it cannot say
    (the token refused, the server down), or when the token is not a person's."""
    calls = ServerCalls(url, token)
    try:
        return link_of(calls, token, calls.get("/api/v1/me"))
    except BaseException:
        calls.close()
        raise


def link_of(calls: ServerCalls, token: str, me: dict[str, Any]) -> ServerLink:
    """The link of the token the server says is ``me`` (``GET /api/v1/me``'s answer); a
    ``StoreError`` when it is not a person's."""
    from roundtable_console.client.calls import as_expected
    from roundtable_console.store.errors import StoreError

    if me.get("role") not in ("viewer", "operator"):
        raise StoreError(
            f"The token is {printable(str(me.get('role')))!r} "
            f"{printable(str(me.get('name')))!r}'s: a person's client needs a person's token "
            "(a viewer's or an operator's)."
        )
    with as_expected(calls.server):
        workspaces = me.get("workspaces")
        return ServerLink(
            url=calls.server,
            name=str(me["name"]),
            role=str(me["role"]),
            workspaces=None if workspaces is None else tuple(str(w) for w in workspaces),
            calls=calls,
            token=token,
        )
