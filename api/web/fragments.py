"""What a web console page asks for while it is open: rows and counts read again when the
live stream names them, a session's parts, a sensitive field revealed, a termination's impact,
and the lifecycle actions themselves. Each answers JSON (HTML fragments as strings inside it,
rendered by the same templates as the pages) or an RFC 7807 problem, never a page: the
script that asked shows it where it belongs.

An action is the API's own (``api.routes.actions.act``): the console's rules, the operator as the
actor, under the page's ``Idempotency-Key`` (a retry after a lost answer replays the first
outcome), refused with 409 when the session changed since the page read it (``If-Match``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any
from weakref import WeakKeyDictionary

from markupsafe import Markup
from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import Response

from roundtable_console.api.answering import Reply, as_response, call_of, refused, rendered
from roundtable_console.api.context import Call, ServerContext
from roundtable_console.api.edge.identity import Caller
from roundtable_console.api.edge.middleware import TOO_LARGE, BodyTooLarge
from roundtable_console.api.hosts import launch as host_launch
from roundtable_console.api.hosts import stop_agent as host_stop
from roundtable_console.api.problems import Problem, from_store_error
from roundtable_console.api.routes import actions as action_ops
from roundtable_console.api.routes import wire
from roundtable_console.api.web import bulk, live, reads
from roundtable_console.api.web.render import Pages, trusted
from roundtable_console.api.web.shared import SingleFlight
from roundtable_console.api.web.signin import browser_secret, page_caller
from roundtable_console.store.access.browser_secrets import csrf_proof
from roundtable_console.store.errors import StoreError
from roundtable_console.store.rules import SENSITIVE_FIELDS
from roundtable_console.store.safety.display import printable
from roundtable_console.store.service import read_termination_impact, reveal_field
from roundtable_console.store.validation import whole_number
from roundtable_console.store.writes.bulk_plan import BULK_EFFECTS

ACTIONS = ("heartbeat", "pause", "stop", "resume", "terminate")


def csrf_of(call: Call) -> Markup:
    """The page's CSRF proof, for the forms a fragment renders."""
    secret = browser_secret(call)
    return trusted(csrf_proof(secret)) if secret else trusted("")


def _json(content: Any, status: int = 200) -> Response:
    return as_response(Reply(status, rendered(content), "application/json", {}))


class WebFragments:
    def __init__(self, ctx: ServerContext, pages: Pages, *, read_only: bool) -> None:
        self.ctx = ctx
        self.pages = pages
        self.read_only = read_only
        # One reader of the change feed for the pages of each event loop (a server has one).
        self.fanouts: WeakKeyDictionary[asyncio.AbstractEventLoop, live.LiveFanout] = (
            WeakKeyDictionary()
        )
        self.shared_rows: SingleFlight[bytes] = SingleFlight()

    async def answer(
        self,
        request: Request,
        work: Callable[[Call, Caller], Awaitable[Response]],
        body: bytes = b"",
    ) -> Response:
        """``work`` for a signed-in browser; a problem (401 when it is not signed in)."""
        call = call_of(request.scope, body, request.state.request_id)
        try:
            caller = await self.ctx.in_worker(page_caller, self.ctx, call)
            if caller is None:
                raise Problem(
                    "authentication_required", "Sign in again: this page's sign-in ended."
                )
            return await work(call, caller)
        except Problem as problem:
            return as_response(refused(request.scope, problem))
        except StoreError as error:
            return as_response(refused(request.scope, from_store_error(error)))  # fmt: skip

    def _row_html(self, row: reads.SessionRow | None, operator: bool) -> str | None:
        if row is None:
            return None
        return str(self.pages.row(row, operator))

    def _operator(self, caller: Caller) -> bool:
        return caller.role == "operator" and not self.read_only

    async def rows(self, request: Request) -> Response:
        """Rows read again; ``seq``: the live batch the page reacts to (pages reacting to the same
        one, showing the same rows, share one read)."""

        async def work(call: Call, caller: Caller) -> Response:
            ids = [value for value in call.query.get("id", []) if value][: reads.MAX_IDS]
            operator = self._operator(caller)

            def read_and_render() -> bytes:
                found = reads.read_rows(self.ctx, caller, ids)
                html = {key: self._row_html(row, operator) for key, row in found.items()}
                return rendered({"rows": html})

            async def read() -> bytes:
                return await self.ctx.in_worker(read_and_render)

            seq = call.arg("seq") or ""
            number = whole_number(seq)
            if number is not None and number > 0:
                key = (number, tuple(ids), caller.workspaces, operator)
                body = await self.shared_rows.answer(key, read)
            else:
                body = await read()
            return as_response(Reply(200, body, "application/json", {}))

        return await self.answer(request, work)

    async def counts(self, request: Request) -> Response:
        async def work(call: Call, caller: Caller) -> Response:
            query = reads.SessionsQuery.from_call(call)
            page = await self.ctx.in_worker(reads.read_sessions, self.ctx, caller, query)
            return _json({"counts": self.pages.html("_counts.html", page=page, query=query)})

        return await self.answer(request, work)

    async def session(self, request: Request) -> Response:
        async def work(call: Call, caller: Caller) -> Response:
            session_id = wire.path_id(request.path_params["session_id"], what="session")
            after = call.arg("after") or ""
            page = await self.ctx.in_worker(reads.read_session_page, self.ctx, caller, session_id)
            operator = self._operator(caller)
            seen = whole_number(after)
            newer = [row for row in page.history if seen is None or row.id > seen]
            return _json(
                {
                    "head": self.pages.html("_session_head.html", page=page, operator=operator),
                    "requests": self.pages.html(
                        "_session_requests.html", page=page, operator=operator, csrf=csrf_of(call)
                    ),
                    "fields": self.pages.html("_fields.html", page=page, operator=operator),
                    "projections": self.pages.html("_projections.html", page=page),
                    "history": self.pages.html("_history.html", history=newer),
                    "last_event_id": page.last_event_id,
                    "version": page.row.version,
                }
            )

        return await self.answer(request, work)

    async def reveal(self, request: Request) -> Response:
        async def work(call: Call, caller: Caller) -> Response:
            session_id = wire.path_id(request.path_params["session_id"], what="session")
            name = request.path_params["field"]
            if name not in SENSITIVE_FIELDS:
                raise Problem("not_found", "No such field to reveal.")
            if not self._operator(caller):
                raise Problem("forbidden", "Revealing a masked field is an operator's (audited).")

            def read() -> str:
                value = reveal_field(
                    store=self.ctx.store,
                    session_id=session_id,
                    field=name,
                    actor=caller.name,
                    wall=caller.wall,
                    clock=self.ctx.clock,
                )
                return printable(value)

            return _json({"value": await self.ctx.in_worker(read)})

        return await self.answer(request, work)

    async def terminate_impact(self, request: Request) -> Response:
        async def work(call: Call, caller: Caller) -> Response:
            session_id = wire.path_id(request.path_params["session_id"], what="session")

            def read() -> Any:
                return read_termination_impact(
                    store=self.ctx.store,
                    session_id=session_id,
                    clock=self.ctx.clock,
                    wall=caller.wall,
                )

            impact = await self.ctx.in_worker(read)
            # The box to stop its agent too, only where this server can reach it (as its page's
            # button): a stop that cannot happen is not offered.
            stoppable = reads.agent_reachable(self.ctx, impact.launch)
            return _json(
                {
                    "impact": self.pages.html("_impact.html", impact=impact, stoppable=stoppable),
                    "requires_details": impact.requires_details,
                    "version": int(impact.session.version or 0),
                }
            )

        return await self.answer(request, work)

    async def transcript(self, request: Request) -> Response:
        """The newest entries of the session's transcript, for a page that follows it."""

        async def work(call: Call, caller: Caller) -> Response:
            session_id = wire.path_id(request.path_params["session_id"], what="session")
            view = await reads.read_transcript(self.ctx, caller, session_id, None)
            html = self.pages.html("_transcript.html", view=view)
            return _json({"html": html, "size": view.size, "reason": view.reason})

        return await self.answer(request, work)

    async def answer_posted(
        self, request: Request, work: Callable[[Call, Caller], Awaitable[Response]]
    ) -> Response:
        """``answer`` for a request with a body (read whole, within the server's limit)."""
        try:
            body = await request.body()
        except BodyTooLarge:
            return as_response(refused(request.scope, Problem("request_too_large", TOO_LARGE)))
        return await self.answer(request, work, body)

    async def action(self, request: Request) -> Response:
        async def work(call: Call, caller: Caller) -> Response:
            session_id = wire.path_id(request.path_params["session_id"], what="session")
            action = request.path_params["action"]
            if action not in (*ACTIONS, "launch", "stop-agent"):
                raise Problem("not_found", f"No action is called {action!r}.")

            def found(db: Connection, who: Caller) -> Any:
                return reads.reached(db, who, session_id)

            def act() -> Any:
                caller.require_human()
                return action_ops.act(
                    self.ctx, call, caller, action, session_id,
                    found=lambda db: found(db, caller),
                )  # fmt: skip

            if action == "launch":  # on the session's host (api.hosts.launch)
                answer = await host_launch.start(self.ctx, call, caller, found)
            elif action == "stop-agent":  # where it runs (api.hosts.stop_agent)
                answer = await host_stop.run(self.ctx, call, caller, found)
            else:
                answer = await self.ctx.in_worker(act)
            return as_response(
                Reply(answer.status, rendered(answer.body), "application/json", answer.headers)
            )

        return await self.answer_posted(request, work)

    async def bulk_preview(self, request: Request) -> Response:
        """What an action would do to the selected sessions (the console's bulk preview)."""

        async def work(call: Call, caller: Caller) -> Response:
            action = request.path_params["action"]
            plan = await self.ctx.in_worker(bulk.preview, self.ctx, call, caller, action)
            effect, caveat = BULK_EFFECTS[action]
            html = self.pages.html(
                "_bulk_plan.html",
                plan=plan,
                sections=bulk.sections(plan.tally),
                effect=effect,
                caveat=caveat,
            )
            return _json(
                {
                    "preview": html,
                    "requires_details": plan.requires_impact_details,
                    "applies": plan.tally.done,
                    "total": plan.tally.total,
                }
            )

        return await self.answer_posted(request, work)

    async def bulk_action(self, request: Request) -> Response:
        """The action on every selected session, each under a key derived from the page's."""

        async def work(call: Call, caller: Caller) -> Response:
            action = request.path_params["action"]
            done = await self.ctx.in_worker(bulk.run, self.ctx, call, caller, action)
            summary = self.pages.html(
                "_bulk_done.html",
                label=action.capitalize(),
                tally=done.tally,
                sections=bulk.sections(done.tally, done=True),
                error=done.error,
            )
            return _json({"summary": summary, **done.to_json()})

        return await self.answer_posted(request, work)

    async def live(self, request: Request) -> Response:
        async def work(call: Call, caller: Caller) -> Response:
            loop = asyncio.get_running_loop()
            fanout = self.fanouts.get(loop)
            if fanout is None:
                fanout = self.fanouts[loop] = live.LiveFanout(self.ctx)
            return live.live_stream(self.ctx, fanout, call, caller)

        return await self.answer(request, work)
