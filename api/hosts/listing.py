"""The hosts' routes: a host connects (a WebSocket its machine opens), and the surfaces list
the hosts (``GET /api/v1/hosts``).

The list is the whole team's machines, with the sessions each runs and the projects it serves:
it is for callers bound to no workspace (a bound token is refused, as its reach ends at its
workspaces). A host's own token reads nothing, this list neither.
"""

from __future__ import annotations

from starlette.websockets import WebSocket

from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.problems import Problem, from_store_error, refusal_of
from roundtable_console.api.streams.events import ws_call
from roundtable_console.store.errors import StoreError
from roundtable_console.store.hosts.registry import list_hosts


def hosts_page(ctx: ServerContext, call: Call) -> Answer:
    ctx.caller(call).require_every_workspace("the hosts are the whole team's machines")
    with ctx.store.read() as db:
        hosts = list_hosts(db, clock=ctx.clock)
    return Answer(200, {"hosts": [host.to_json() for host in hosts]})


async def host_socket(websocket: WebSocket, *, read_only: bool) -> None:
    ctx: ServerContext = websocket.app.state.ctx
    call = ws_call(websocket)
    try:
        if read_only:
            raise Problem("read_only", "A read-only server holds no host: connect to another.")
        if "access_token" in call.query:  # a URL is logged by proxies: a header, never a query
            raise Problem("invalid_request", "A host gives its token as Authorization: Bearer.")
        caller = await ctx.in_worker(ctx.caller, call, host=True)
    except (Problem, StoreError) as error:
        problem = error if isinstance(error, Problem) else from_store_error(error)
        await websocket.send_denial_response(refusal_of(call, problem))
        return
    await ctx.hosts.serve(websocket, caller, call)
