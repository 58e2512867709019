"""The web console's pages: sign-in and sign-out, the sessions list, a session, its briefing,
the overview and the audit trail. Each route parses its request, asks who it is (a signed-in
browser: ``api.web.signin``), reads in a worker thread (``api.web.reads``) and renders a
template (``api.web.render``). A page that cannot be shown says why in a page of its own, with
the request's id; a browser that is not signed in is sent to sign in first, and comes back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from markdown_it import MarkdownIt
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from roundtable_console.api.answering import call_of
from roundtable_console.api.context import Call, ServerContext
from roundtable_console.api.edge.identity import Caller
from roundtable_console.api.edge.middleware import BodyTooLarge
from roundtable_console.api.problems import CODES, Problem, from_store_error, problem_status
from roundtable_console.api.routes import wire
from roundtable_console.api.web import reads
from roundtable_console.api.web.notices import Notice, carried_notice, cleared_notice, has_notice
from roundtable_console.api.web.render import Pages, path, trusted
from roundtable_console.api.web.signin import (
    browser_secret,
    cleared_cookie,
    cookie_header,
    end_sign_in,
    form_fields,
    page_caller,
    safe_next,
    try_sign_in,
)
from roundtable_console.store.access.browser_secrets import csrf_proof
from roundtable_console.store.access.tokens import holds_tokens
from roundtable_console.store.errors import StoreError
from roundtable_console.store.hosts.registry import get_host, list_hosts
from roundtable_console.store.reads.audit import AuditFilter, audit_page
from roundtable_console.store.reads.overview import read_overview
from roundtable_console.store.resume.launch import shell_line
from roundtable_console.store.service import read_briefing
from roundtable_console.store.validation import whole_number

Handler = Callable[[Request], Awaitable[Response]]
NAV = (("sessions", "Sessions", "/sessions"), ("requests", "Requests", "/requests"),
       ("overview", "Overview", "/overview"), ("audit", "Audit", "/audit"))  # fmt: skip
AUDIT_PAGE = 50


def markdown_html(text: str) -> Markup:
    """The briefing's Markdown as HTML: CommonMark with raw HTML off (any ``<`` in it is text),
    no images (nothing fetched), links only of safe schemes (markdown-it's own check)."""
    renderer = MarkdownIt("commonmark", {"html": False}).disable("image")
    return Markup(renderer.render(text))


class WebPages:
    """The page routes, over one server's context and templates."""

    def __init__(self, ctx: ServerContext, pages: Pages, *, read_only: bool) -> None:
        self.ctx = ctx
        self.pages = pages
        self.read_only = read_only

    # -- what every page shares ------------------------------------------------------------

    def call(self, request: Request, body: bytes = b"") -> Call:
        return call_of(request.scope, body, request.state.request_id)

    def common(
        self, call: Call, caller: Caller | None, current: str, notice: Notice | None = None
    ) -> dict[str, Any]:
        secret = browser_secret(call)
        return {
            "caller": caller,
            "operator": caller is not None and caller.role == "operator" and not self.read_only,
            "csrf": trusted(csrf_proof(secret)) if secret and caller else trusted(""),
            "nav": NAV,
            "current": current,
            "read_only": self.read_only,
            "notice": notice,
        }

    def noticed(self, request: Request, call: Call) -> tuple[Notice | None, dict[str, str]]:
        """The notice a form's redirect carried here (``api.web.notices``), and the header
        that clears it: it is said once."""
        if not has_notice(call):
            return None, {}
        return carried_notice(call), {"Set-Cookie": cleared_notice(request)}

    def problem_page(self, call: Call, problem: Problem, caller: Caller | None) -> Response:
        status = problem_status(problem.code)
        return self.pages.page(
            "problem.html",
            status=status,
            headers=problem.headers,
            problem=problem,
            title=CODES.get(problem.code, (500, "Error"))[1],
            status_code=status,
            request_id=call.request_id,
            **self.common(call, caller, ""),
        )

    async def signed_in(
        self, request: Request, current: str, work: Callable[[Call, Caller], Awaitable[Response]]
    ) -> Response:
        """``work`` for a signed-in browser; the sign-in page (coming back here) otherwise."""
        call = self.call(request)
        caller: Caller | None = None
        try:
            caller = await self.ctx.in_worker(page_caller, self.ctx, call)
            if caller is None:
                back = call.path + (f"?{request.url.query}" if request.url.query else "")
                target = path("sign-in", query={"next": back})
                response = RedirectResponse(str(target), status_code=303)
                if browser_secret(call):
                    response.headers["Set-Cookie"] = cleared_cookie(request)
                return response
            return await work(call, caller)
        except Problem as problem:
            return self.problem_page(call, problem, caller)
        except StoreError as error:
            return self.problem_page(call, from_store_error(error), caller)

    # -- signing in and out ----------------------------------------------------------------

    async def home(self, request: Request) -> Response:
        return RedirectResponse("/sessions", status_code=303)

    async def sign_in_page(self, request: Request) -> Response:
        call = self.call(request)
        if await self.ctx.in_worker(page_caller, self.ctx, call) is not None:
            return RedirectResponse(safe_next(call.arg("next")), status_code=303)
        return await self._sign_in_form(call, call.arg("next"), error=None, status=200)

    async def _sign_in_form(
        self, call: Call, next_path: str | None, *, error: Problem | None, status: int
    ) -> Response:
        def tokens() -> bool:
            with self.ctx.store.read() as db:
                return holds_tokens(db)

        return self.pages.page(
            "sign_in.html",
            status=status,
            headers=error.headers if error else None,
            error=error,
            next=safe_next(next_path),
            holds_tokens=await self.ctx.in_worker(tokens),
            **self.common(call, None, "sign-in"),
        )

    async def sign_in_submit(self, request: Request) -> Response:
        try:
            body = await request.body()
        except BodyTooLarge:
            body = b""
        call = self.call(request, body)
        fields: dict[str, str] = {}
        try:
            fields = form_fields(body)
            token = fields.get("token", "")
            made = await self.ctx.in_worker(try_sign_in, self.ctx, call, token, fields)
        except Problem as problem:
            status = problem_status(problem.code)
            return await self._sign_in_form(call, fields.get("next"), error=problem, status=status)
        response = RedirectResponse(safe_next(fields.get("next")), status_code=303)
        response.headers["Set-Cookie"] = cookie_header(
            request, made.secret, made.expires_at, self.ctx.clock()
        )
        return response

    async def sign_out(self, request: Request) -> Response:
        body = await request.body()
        call = self.call(request, body)
        try:
            fields = form_fields(body)
            await self.ctx.in_worker(end_sign_in, self.ctx, call, fields.get("csrf"))
        except Problem as problem:
            return self.problem_page(call, problem, None)
        response = RedirectResponse("/sign-in", status_code=303)
        response.headers["Set-Cookie"] = cleared_cookie(request)
        return response

    # -- the pages -------------------------------------------------------------------------

    async def sessions(self, request: Request) -> Response:
        async def work(call: Call, caller: Caller) -> Response:
            query = reads.SessionsQuery.from_call(call)
            page = await self.ctx.in_worker(reads.read_sessions, self.ctx, caller, query)
            return self.pages.page(
                "sessions.html", page=page, query=query, **self.common(call, caller, "sessions")
            )

        return await self.signed_in(request, "sessions", work)

    async def session(self, request: Request) -> Response:
        async def work(call: Call, caller: Caller) -> Response:
            session_id = wire.path_id(request.path_params["session_id"], what="session")
            page = await self.ctx.in_worker(reads.read_session_page, self.ctx, caller, session_id)
            notice, headers = self.noticed(request, call)
            return self.pages.page(
                "session.html",
                headers=headers,
                page=page,
                **self.common(call, caller, "sessions", notice),
            )

        return await self.signed_in(request, "sessions", work)

    def _briefing(self, caller: Caller, session_id: str) -> Any:
        return read_briefing(
            store=self.ctx.store,
            adapters=self.ctx.adapters,
            session_id=session_id,
            clock=self.ctx.clock,
            wall=caller.wall,
        )

    def _host_of(self, session: Any) -> Any:
        """The host of the session's machine, when that machine runs one (it can start it)."""
        if not session.host:
            return None
        with self.ctx.store.read() as db:
            return get_host(db, session.host, clock=self.ctx.clock)

    async def briefing(self, request: Request) -> Response:
        async def work(call: Call, caller: Caller) -> Response:
            session_id = wire.path_id(request.path_params["session_id"], what="session")
            view = await self.ctx.in_worker(self._briefing, caller, session_id)
            host = await self.ctx.in_worker(self._host_of, view.session)
            return self.pages.page(
                "briefing.html",
                view=view,
                host=host,
                session_id=session_id,
                briefing_html=markdown_html(view.briefing.markdown),
                command=shell_line(view.plan.argv, view.session.id),
                **self.common(call, caller, "sessions"),
            )

        return await self.signed_in(request, "sessions", work)

    async def transcript(self, request: Request) -> Response:
        async def work(call: Call, caller: Caller) -> Response:
            session_id = wire.path_id(request.path_params["session_id"], what="session")
            raw = call.arg("before")
            before = whole_number(raw) if raw else None
            view = await reads.read_transcript(self.ctx, caller, session_id, before)
            return self.pages.page(
                "transcript.html",
                view=view,
                session_id=session_id,
                follow=before is None and view.reason is None,
                **self.common(call, caller, "sessions"),
            )

        return await self.signed_in(request, "sessions", work)

    async def changes(self, request: Request) -> Response:
        """What the session changed, a page of its patch at a time, read by its host."""
        from roundtable_console.api.hosts.changes import read_page
        from roundtable_console.api.routes import found

        async def work(call: Call, caller: Caller) -> Response:
            session_id = wire.path_id(request.path_params["session_id"], what="session")
            raw = call.arg("offset")
            offset = (whole_number(raw) if raw else None) or 0
            page = await read_page(self.ctx, caller, found.by_id(session_id), offset)
            return self.pages.page(
                "changes.html", page=page, session_id=session_id,
                **self.common(call, caller, "sessions"),
            )  # fmt: skip

        return await self.signed_in(request, "sessions", work)

    async def briefing_download(self, request: Request) -> Response:
        async def work(call: Call, caller: Caller) -> Response:
            session_id = wire.path_id(request.path_params["session_id"], what="session")
            view = await self.ctx.in_worker(self._briefing, caller, session_id)
            name = "".join(c if c.isalnum() or c in "-_." else "_" for c in session_id)[:80]
            return Response(
                view.briefing.markdown,
                media_type="text/markdown; charset=utf-8",
                headers={"Content-Disposition": f'attachment; filename="briefing-{name}.md"'},
            )

        return await self.signed_in(request, "sessions", work)

    async def overview(self, request: Request) -> Response:
        async def work(call: Call, caller: Caller) -> Response:
            if caller.workspaces is not None:
                raise Problem(
                    "forbidden",
                    "The overview counts every workspace: a token bound to some does not see it.",
                )

            def read() -> Any:
                now = self.ctx.clock()
                stale = timedelta(seconds=self.ctx.stale_after_seconds)
                with self.ctx.store.read() as db:
                    return read_overview(
                        db=db, now=now, stale_after=stale, budgets=self.ctx.budgets
                    )

            overview = await self.ctx.in_worker(read)
            return self.pages.page(
                "overview.html", overview=overview, **self.common(call, caller, "overview")
            )

        return await self.signed_in(request, "overview", work)

    async def hosts(self, request: Request) -> Response:
        async def work(call: Call, caller: Caller) -> Response:
            if caller.workspaces is not None:
                raise Problem(
                    "forbidden",
                    "The hosts are the whole team's machines: a token bound to some workspaces "
                    "does not see them.",
                )

            def read() -> Any:
                with self.ctx.store.read() as db:
                    return list_hosts(db, clock=self.ctx.clock)

            hosts = await self.ctx.in_worker(read)
            return self.pages.page(
                "hosts.html",
                hosts=hosts,
                online=sum(1 for host in hosts if host.online),
                **self.common(call, caller, "overview"),
            )

        return await self.signed_in(request, "hosts", work)

    async def audit(self, request: Request) -> Response:
        async def work(call: Call, caller: Caller) -> Response:
            if caller.workspaces is not None:
                raise Problem(
                    "forbidden",
                    "The audit trail spans every workspace: a token bound to some does not see it.",
                )
            filters = AuditFilter(
                actor=(call.arg("actor") or "").strip() or None,
                action=(call.arg("action") or "").strip() or None,
                session_id=(call.arg("session") or "").strip() or None,
            )
            cursor = (call.arg("cursor") or "").strip() or None

            def read() -> Any:
                with self.ctx.store.read() as db:
                    return audit_page(db=db, filters=filters, limit=AUDIT_PAGE, cursor=cursor)

            entries = await self.ctx.in_worker(read)
            return self.pages.page(
                "audit.html",
                entries=entries,
                filters=filters,
                now=self.ctx.clock(),
                **self.common(call, caller, "audit"),
            )

        return await self.signed_in(request, "audit", work)
