"""The ASGI application of ``roundtable serve``: the reference's session routes, ours beside
them, the OpenAPI document at ``/api/v1/openapi.json``, one handler for every refusal.

``create_app`` is the one factory: the server process and the tests build exactly the same app.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request, WebSocket
from fastapi.openapi.utils import get_openapi
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.routing import Match

from roundtable_console.api.agent_routes import add_agent_routes
from roundtable_console.api.answering import (
    HotRoutes,
    call_of,
    refusal,
    run,
)
from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.edge.middleware import Guard
from roundtable_console.api.hosts import listing as host_ops
from roundtable_console.api.hosts import new_sessions
from roundtable_console.api.people_routes import add_people_routes
from roundtable_console.api.problems import MEDIA_TYPE, STATUSES, Problem
from roundtable_console.api.routes import actions as action_ops
from roundtable_console.api.routes import audit as audit_ops
from roundtable_console.api.routes import bodies, hook_waits, schemas, wire
from roundtable_console.api.routes import details as detail_ops
from roundtable_console.api.routes import requests as request_ops
from roundtable_console.api.routes import sessions as session_ops
from roundtable_console.api.routes.documented import PATH_ID, operation, responses
from roundtable_console.api.routes.parameters import (
    ALL_STATES,
    API,
    CHANGES_PARAMETERS,
    DECISION_BODY,
    IF_MATCH,
    LIST_PARAMETERS,
    STATUS_PARAMETER,
)
from roundtable_console.api.streams import events as streams
from roundtable_console.api.web.routes import install as install_web
from roundtable_console.store.access.tokens import ROLES
from roundtable_console.store.hosts.protocol import CONNECT_PATH

SESSIONS = API + "/workspaces/{workspace_id}/sessions"
ONE = SESSIONS + "/{session_id}"

# Answered ahead of the router (api.answering.HotRoutes); each is also routed, for its document.
HOT_ROUTES = [("POST", ONE + "/heartbeat", action_ops.heartbeat)]


def _streams(app: FastAPI) -> None:
    async def changes(request: Request) -> Response:
        call = call_of(request.scope, b"", request.state.request_id)
        try:
            workspace = wire.path_id(request.path_params["workspace_id"], what="workspace")
        except Problem as problem:
            return refusal(request, problem)
        return await streams.changes_stream(request, call, workspace)

    app.add_api_route(
        SESSIONS + "/changes",
        changes,
        methods=["GET"],
        name="session_changes",
        summary="The workspace's session changes as server-sent events (what watch prints).",
        responses={
            **responses((), None),
            200: {
                "description": "An endless text/event-stream: ready, then one event a change.",
                "content": {"text/event-stream": {"schema": {"type": "string"}}},
            },
        },
        openapi_extra={
            "parameters": [
                PATH_ID | {"name": "workspace_id"},
                *CHANGES_PARAMETERS,
            ]
        },
    )

    async def every_change(request: Request) -> Response:
        call = call_of(request.scope, b"", request.state.request_id)
        return await streams.changes_stream(request, call, None)

    app.add_api_route(
        API + "/changes",
        every_change,
        methods=["GET"],
        name="every_change",
        summary="Every workspace's session changes as server-sent events (what watch prints), "
        "for callers bound to no workspace: the terminal console through a server follows it.",
        responses={
            **responses((), None),
            200: {
                "description": "An endless text/event-stream: ready, then one event a change.",
                "content": {"text/event-stream": {"schema": {"type": "string"}}},
            },
        },
        openapi_extra={"parameters": CHANGES_PARAMETERS},
    )

    async def events(websocket: WebSocket) -> None:
        await streams.events_socket(websocket, websocket.path_params["workspace_id"])

    app.add_api_websocket_route(API + "/workspaces/{workspace_id}/events/ws", events)


def _routes(app: FastAPI) -> None:
    _streams(app)  # before the session routes: "changes" is not a session id
    operation(app, "GET", SESSIONS, session_ops.list_page, name="list_sessions",
               summary="A page of the workspace's sessions.", model=schemas.SessionPage,
               parameters=LIST_PARAMETERS)  # fmt: skip
    operation(app, "POST", SESSIONS, session_ops.create, name="create_session",
               summary="Create a session (a human's; an Idempotency-Key is required).",
               success=201, model=schemas.Session, errors=(409,),
               parameters=[schemas.idempotency(True)],
               body=schemas.body_schema(bodies.CREATE_FIELDS, ("agent_id", "run_id", "adapter")),
               body_required=True)  # fmt: skip
    operation(app, "GET", ONE, session_ops.read_one, name="get_session",
               summary="One session.", model=schemas.Session)  # fmt: skip
    operation(app, "PUT", ONE, session_ops.register, name="register_session",
               summary="Register a session (an agent's upsert; 201 new, 200 replaced).",
               also=(201,), model=schemas.Session, errors=(409,),
               parameters=[schemas.idempotency(False)],
               body=schemas.body_schema(
                   bodies.REGISTER_FIELDS,
                   ("agent_id", "run_id", "adapter", "working_directory"),
                   objects=("metadata",),
               ), body_required=True)  # fmt: skip
    operation(app, "POST", ONE + "/end", session_ops.end, name="end_session",
               summary="Record that the session ended.", model=schemas.Session, errors=(409,),
               parameters=[schemas.idempotency(False)],
               body=schemas.body_schema(bodies.END_FIELDS))  # fmt: skip
    operation(app, "POST", ONE + "/heartbeat", action_ops.heartbeat, name="heartbeat_session",
               summary="Heartbeat (an agent's: its external id and whether it waits too).",
               model=schemas.Session, errors=(409,),
               parameters=[STATUS_PARAMETER, schemas.idempotency(False)],
               body=schemas.body_schema(bodies.HEARTBEAT_FIELDS))  # fmt: skip
    for action, required in (("pause", False), ("stop", False), ("resume", True)):
        operation(app, "POST", f"{ONE}/{action}", getattr(action_ops, action),
                   name=f"{action}_session", summary=f"{action.capitalize()} (a human's).",
                   model=schemas.Session, errors=(409,),
                   parameters=[schemas.idempotency(required), IF_MATCH])  # fmt: skip
    operation(app, "POST", ONE + "/terminate", action_ops.terminate, name="terminate_session",
               summary="Terminate (a human's; impact details when the agent holds claims).",
               model=schemas.Session, errors=(409,),
               parameters=[schemas.idempotency(True), IF_MATCH],
               body=schemas.body_schema(bodies.TERMINATE_FIELDS))  # fmt: skip
    for name, model in (
        ("logs", schemas.LogPage),
        ("tool-calls", schemas.ToolCallPage),
        ("claims", schemas.ClaimPage),
        ("proposals", schemas.ProposalPage),
    ):
        operation(app, "GET", f"{ONE}/{name}", detail_ops.page_of(name),
                   name=f"session_{name.replace('-', '_')}", summary=f"A page of {name}.",
                   model=model, parameters=[schemas.LIMIT, schemas.CURSOR])  # fmt: skip
    operation(app, "GET", f"{ONE}/requests", request_ops.session_requests,
               name="session_requests",
               summary="The session's permission requests: pending, oldest first (all=true: "
               "every state, newest first).",
               parameters=[ALL_STATES])  # fmt: skip
    operation(app, "POST", f"{ONE}/requests/{{request_id}}/decision", request_ops.decide,
               name="decide_request",
               summary="Allow or deny a permission request (an operator's; an Idempotency-Key "
               "is required; a request decided, expired or withdrawn already answers 409).",
               errors=(409,), parameters=[schemas.idempotency(True)],
               body=DECISION_BODY, body_required=True)  # fmt: skip
    add_agent_routes(app, ONE, by_id=False)
    hook_waits.add_routes(app, ONE)
    operation(app, "GET", API + "/audit", audit_ops.audit, name="audit_trail",
               summary="The operators' actions across every session, newest first, a page at a "
               "time (roundtable audit's). For callers bound to no workspace.",
               model=schemas.AuditPage,
               parameters=[*schemas.AUDIT_FILTERS, schemas.LIMIT,
                           schemas.OPTIONAL_CURSOR])  # fmt: skip
    add_people_routes(app)
    operation(app, "GET", API + "/hosts", host_ops.hosts_page, name="list_hosts",
               summary="The machines that run agents (roundtable host run): what each found, "
               "whether it is online, its sessions. For callers bound to no workspace.",
               model=schemas.HostList)  # fmt: skip
    operation(app, "POST", API + "/hosts/{name}/sessions", new_sessions.start,
               name="start_new_session", success=201, model=schemas.NewSessionStarted,
               summary="Start a new session on the host: in a project it was given, optionally "
               "in a git worktree of its own, with an agent it found and a first prompt (an "
               "operator's; an Idempotency-Key is required and names the session).",
               errors=(409,), parameters=[schemas.idempotency(True)],
               body=new_sessions.BODY, body_required=True)  # fmt: skip
    for name, model in (("metrics", schemas.Metrics), ("environment", schemas.Environment)):
        operation(app, "GET", f"{ONE}/{name}", detail_ops.record_of(name),
                   name=f"session_{name}", summary=f"The session's {name}.",
                   model=model)  # fmt: skip


def capabilities(ctx: ServerContext, call: Call) -> Answer:
    """The reference's answer, and only what it says: public, so that a client can tell how to
    authenticate."""
    if ctx.header_mode.on:
        with ctx.store.read() as db:
            ctx.header_mode.still_on(db)
    bearer = not ctx.header_mode.on
    return Answer(
        200,
        {
            "authentication": "bearer-token" if bearer else "local-header-development",
            "agent_boundary": "agent tokens write only their own agent's sessions"
            if bearer
            else "none: header mode trusts X-Actor-ID",
            "csrf": "origin-checked writes",
            "default_bind": "127.0.0.1",
            "roles": list(ROLES),
            "allowed_origins": sorted(ctx.exposure.origins),
        },
    )


def openapi_document(ctx: ServerContext, call: Call, app: FastAPI) -> Answer:
    """The OpenAPI document: to any caller of a server in header mode; with tokens, to a caller
    with one (a stranger learns nothing of the routes from it)."""
    ctx.caller(call)
    return Answer(200, _document(app))


def _application() -> FastAPI:
    app = FastAPI(
        title="Roundtable sessions",
        version="1",
        description="The Roundtable reference's HTTP API for agent sessions, with real identities.",
        openapi_url=None,  # served by openapi_document: with tokens, to their holders only
        docs_url=None,
        redoc_url=None,
    )
    _routes(app)
    return app


def api_document() -> dict[str, Any]:
    """The OpenAPI document the server serves, made without a server or a store (the docs'
    HTTP reference is generated from it: docs/hooks.py)."""
    return _document(_server(ServerContext(store=None), read_only=False))  # type: ignore[arg-type]


def web_routes() -> list[tuple[str, str]]:
    """(method, path) of every route outside the document: the web console's, the streams'."""
    app = _server(ServerContext(store=None), read_only=False)  # type: ignore[arg-type]
    found = []
    for route in app.routes:
        if getattr(route, "include_in_schema", True) and hasattr(route, "methods"):
            continue
        for method in sorted(getattr(route, "methods", None) or {"GET (WebSocket)"}):
            if method != "HEAD":
                found.append((method, route.path))  # type: ignore[attr-defined]
    return found


def create_app(ctx: ServerContext, *, read_only: bool = False) -> Guard:
    """The whole server: routes and document inside, the guard of ``api.edge.middleware`` around."""
    app = _server(ctx, read_only=read_only)
    return Guard(HotRoutes(app, ctx, HOT_ROUTES), read_only=read_only, exposure=ctx.exposure)


def _server(ctx: ServerContext, *, read_only: bool) -> FastAPI:
    app = _application()
    app.state.ctx = ctx

    async def security_capabilities(request: Request) -> Response:
        return await run(request, capabilities)

    async def openapi(request: Request) -> Response:
        return await run(request, lambda c, call: openapi_document(c, call, app))

    app.add_route(API + "/openapi.json", openapi, methods=["GET"], include_in_schema=False)

    app.add_api_route(
        API + "/security/capabilities",
        security_capabilities,
        methods=["GET"],
        name="security_capabilities",
        summary="How this server authenticates and what it allows.",
        responses=responses((200,), schemas.Capabilities, 503),
    )

    @app.exception_handler(StarletteHTTPException)
    async def httprefusal(request: Request, error: StarletteHTTPException) -> Response:
        code = {404: "not_found", 405: "method_not_allowed"}.get(error.status_code)
        problem = Problem(code or "invalid_request", str(error.detail))
        response = refusal(request, problem)
        if error.status_code == 405:
            response.headers["Allow"] = ", ".join(_allowed_methods(app, request))
        return response

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception) -> Response:
        # Logged by the guard with its request id; the client gets words, not a traceback.
        return refusal(
            request,
            Problem(
                "internal_error",
                "The server failed to answer this request; its log names it "
                f"{request.state.request_id}.",
            ),
        )

    async def host_connects(websocket: WebSocket) -> None:
        await host_ops.host_socket(websocket, read_only=read_only)

    app.add_api_websocket_route(CONNECT_PATH, host_connects)
    install_web(app, ctx, read_only=read_only)
    app.openapi = lambda: _document(app)  # type: ignore[method-assign]
    return app


def _allowed_methods(app: FastAPI, request: Request) -> list[str]:
    """Every method some route takes at this path (each method is a route of its own here, so
    the router's 405 names only the first one's)."""
    methods: set[str] = set()
    for route in app.routes:
        match, _child = route.matches({**request.scope, "method": "\0"})
        if match is not Match.NONE:
            methods.update(getattr(route, "methods", None) or ())
    return sorted(methods - {"HEAD"}) or ["GET"]


def _document(app: FastAPI) -> dict[str, Any]:
    """FastAPI's document, with every refusal served as ``application/problem+json`` and
    without the 422 FastAPI documents for validation this server does itself."""
    if app.openapi_schema is not None:
        return app.openapi_schema
    document = get_openapi(
        title=app.title, version=app.version, description=app.description, routes=app.routes
    )
    for item in document.get("paths", {}).values():
        for documented in item.values():
            answers = documented.get("responses", {})
            answers.pop("422", None)
            for status, response in answers.items():
                content = response.get("content", {})
                if int(status) >= 400 and "application/json" in content:
                    response["content"] = {MEDIA_TYPE.split(";")[0]: content["application/json"]}
    shapes = document.setdefault("components", {}).setdefault("schemas", {})
    shapes.pop("HTTPValidationError", None)
    shapes.pop("ValidationError", None)
    shapes["Problem"] = schemas.Problem.model_json_schema(mode="serialization")
    document["components"]["schemas"] = dict(sorted(shapes.items()))
    app.openapi_schema = document
    return document


__all__ = ["STATUSES", "create_app"]
