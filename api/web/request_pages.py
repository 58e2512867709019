"""The web console's permission requests: the page of every pending one the caller reaches
(``/requests``, read again while open through ``/fragments/requests``), and a decision on one
from a form of that page or of the session's (``POST /actions/sessions/{id}/requests/{request}/
allow|deny``).

A decision is a form posted as a browser posts it, without script: the origin checked by the
server's guard (``api.edge.middleware``), the page's CSRF proof carried in the form (checked as a
script's ``X-CSRF-Token`` is), an operator only, within the caller's wall, decided by the same
service as the API's (``store.requests.deciding.decide_request``) with the caller's name as the
actor. The browser is sent back where it was (post, redirect, get) and told what happened
(``api.web.notices``): decided; or, when another decision came first, who decided and how.
"""

from __future__ import annotations

from dataclasses import replace

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from roundtable_console.api.answering import Reply, as_response, rendered
from roundtable_console.api.context import Call
from roundtable_console.api.edge.identity import Caller
from roundtable_console.api.edge.middleware import TOO_LARGE, BodyTooLarge
from roundtable_console.api.problems import Problem, from_store_error
from roundtable_console.api.routes import wire
from roundtable_console.api.web.fragments import WebFragments, csrf_of
from roundtable_console.api.web.notices import Notice, notice_cookie
from roundtable_console.api.web.pages import WebPages
from roundtable_console.api.web.render import path
from roundtable_console.api.web.request_views import (
    decided_words,
    fleet_requests,
    lost_words,
)
from roundtable_console.api.web.signin import browser_secret, form_fields, page_caller
from roundtable_console.store.errors import (
    InvalidDecision,
    InvalidReply,
    NoReplyPath,
    NotDeliverable,
    RequestAlreadySettled,
    StoreError,
)
from roundtable_console.store.requests.asking import read_request
from roundtable_console.store.requests.deciding import decide_request
from roundtable_console.store.requests.records import ALLOW, DECISIONS, DENY
from roundtable_console.store.validation import whole_number

# Where a decision's form sends the browser back: the fleet's page, or the session's.
BACK_TO_REQUESTS = "requests"


class WebRequests:
    """The permission requests' page, its fragment and the decision, over the console's
    pages (``WebPages``: signing in, the page's shared values, problem pages) and fragments."""

    def __init__(self, page: WebPages, part: WebFragments) -> None:
        self.page = page
        self.part = part
        self.ctx = page.ctx
        self.pages = page.pages

    def _operator(self, caller: Caller) -> bool:
        return caller.role == "operator" and not self.page.read_only

    async def requests(self, request: Request) -> Response:
        async def work(call: Call, caller: Caller) -> Response:
            fleet = await self.ctx.in_worker(fleet_requests, self.ctx, caller)
            notice, headers = self.page.noticed(request, call)
            return self.pages.page(
                "requests.html",
                headers=headers,
                fleet=fleet,
                **self.page.common(call, caller, "requests", notice),
            )

        return await self.page.signed_in(request, "requests", work)

    async def fragment(self, request: Request) -> Response:
        """The page's list read again (the live stream said something changed)."""

        async def work(call: Call, caller: Caller) -> Response:
            fleet = await self.ctx.in_worker(fleet_requests, self.ctx, caller)
            html = self.pages.html(
                "_fleet_requests.html",
                fleet=fleet,
                operator=self._operator(caller),
                csrf=csrf_of(call),
            )
            return as_response(Reply(200, rendered({"html": html}), "application/json", {}))

        return await self.part.answer(request, work)

    async def decide(self, request: Request) -> Response:
        try:
            body = await request.body()
        except BodyTooLarge:
            call = self.page.call(request)
            return self.page.problem_page(call, Problem("request_too_large", TOO_LARGE), None)
        call = self.page.call(request, body)
        caller: Caller | None = None
        try:
            session_id = wire.path_id(request.path_params["session_id"], what="session")
            request_id = request.path_params["request_id"]
            decision = request.path_params["decision"]
            if decision not in DECISIONS:
                raise Problem("not_found", f"A decision is allow or deny, not {decision[:40]!r}.")
            fields = form_fields(body)
            back = (
                "/requests"
                if fields.get("back") == BACK_TO_REQUESTS
                else str(path("sessions", session_id))
            )
            # The form's proof, checked where a script's header is (``api.edge.identity``).
            call = replace(call, headers={**call.headers, "x-csrf-token": fields.get("csrf", "")})
            caller = await self.ctx.in_worker(page_caller, self.ctx, call)
            if caller is None:
                target = path("sign-in", query={"next": back})
                return RedirectResponse(str(target), status_code=303)
            if not self._operator(caller):
                raise Problem(
                    "forbidden",
                    f"The token {caller.name!r} is a {caller.role}'s: only an operator answers "
                    "a permission request.",
                )
            caller.require_human()
            notice = await self.ctx.in_worker(
                self._decide, caller, session_id, request_id, decision, fields
            )
        except Problem as problem:
            return self.page.problem_page(call, problem, caller)
        except StoreError as error:
            return self.page.problem_page(call, from_store_error(error), caller)
        response = RedirectResponse(back, status_code=303)
        secret = browser_secret(call)
        if secret:
            response.headers["Set-Cookie"] = notice_cookie(request, secret, notice)
        return response

    async def reply(self, request: Request) -> Response:
        """A reply to the session's agent, from its page's form (``api.web.reply_views``): the
        same guards as a decision's, sent by the same service as the API's."""
        try:
            body = await request.body()
        except BodyTooLarge:
            call = self.page.call(request)
            return self.page.problem_page(call, Problem("request_too_large", TOO_LARGE), None)
        call = self.page.call(request, body)
        caller: Caller | None = None
        try:
            session_id = wire.path_id(request.path_params["session_id"], what="session")
            back = str(path("sessions", session_id))
            fields = form_fields(body)
            call = replace(call, headers={**call.headers, "x-csrf-token": fields.get("csrf", "")})
            caller = await self.ctx.in_worker(page_caller, self.ctx, call)
            if caller is None:
                return RedirectResponse(str(path("sign-in", query={"next": back})), status_code=303)
            if not self._operator(caller):
                raise Problem(
                    "forbidden",
                    f"The token {caller.name!r} is a {caller.role}'s: only an operator replies "
                    "to an agent.",
                )
            caller.require_human()
            notice = await self.ctx.in_worker(self._reply, caller, session_id, fields)
        except Problem as problem:
            return self.page.problem_page(call, problem, caller)
        except StoreError as error:
            return self.page.problem_page(call, from_store_error(error), caller)
        response = RedirectResponse(back, status_code=303)
        secret = browser_secret(call)
        if secret:
            response.headers["Set-Cookie"] = notice_cookie(request, secret, notice)
        return response

    def _reply(self, caller: Caller, session_id: str, fields: dict[str, str]) -> Notice:
        """The reply (a blocking call), and the notice that says what it did; a session out
        of reach raises (a page of its own)."""
        from roundtable_console.agents.replying import reply
        from roundtable_console.api.hosts.panes import panes_of

        message = (fields.get("message") or "").replace("\r\n", "\n").replace("\r", "\n")
        try:
            sent = reply(
                self.ctx.store,
                session_id,
                message,
                caller.name,
                wall=caller.wall,
                clock=self.ctx.clock,
                expected_via=fields.get("via") or "",
                panes=panes_of(self.ctx, look=False),
            )
        except (NoReplyPath, InvalidReply) as refused:
            return Notice(f"Nothing was sent: {refused.message}", problem=True)
        how = "through its hook" if sent.via == "hook" else "typed into its tmux pane"
        hidden = " Parts that looked like secrets were hidden." if sent.hidden else ""
        return Notice(f"Replied to the agent {how}.{hidden}")

    def _decide(
        self,
        caller: Caller,
        session_id: str,
        request_id: str,
        decision: str,
        fields: dict[str, str],
    ) -> Notice:
        """The decision (a blocking call), and the notice that says what it did. Out of reach
        or missing raises (a page of its own, not found); anything else is said."""
        raw = (fields.get("suggestion") or "").strip()
        suggestion = whole_number(raw) if raw else None
        if raw and suggestion is None:
            return Notice(f"{raw[:20]!r} is not one of the agent's suggestions.", problem=True)
        # A browser sends a textarea's line breaks as CR LF; the message keeps them as LF.
        message = (fields.get("message") or "").replace("\r\n", "\n").replace("\r", "\n")
        try:
            record = decide_request(
                store=self.ctx.store,
                request_id=request_id,
                decision=decision,
                actor=caller.name,
                message=message if decision == DENY else None,
                suggestion=suggestion,
                hidden_seen=decision == ALLOW and fields.get("despite_hidden") == "1",
                wall=caller.wall,
                session_id=session_id,
                clock=self.ctx.clock,
            )
        except RequestAlreadySettled:
            return Notice(
                lost_words(read_request(self.ctx.store, request_id), decision, self.ctx),
                problem=True,
            )
        except (NotDeliverable, InvalidDecision) as refused:
            return Notice(refused.message, problem=True)
        return Notice(decided_words(record))
