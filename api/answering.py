"""How ``roundtable serve`` answers one request: its fields read off the ASGI scope, its path's
ids checked, its work done (in a worker thread, or at once for an agent's beat on SQLite), its
answer or its refusal in the reference's form; and the routes agents call all day, answered
ahead of the framework's router."""

from __future__ import annotations

import re
from collections.abc import Callable

from fastapi import FastAPI, Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from roundtable_console.api import action_ops, wire
from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.middleware import TOO_LARGE, UNSAFE_METHODS, BodyTooLarge
from roundtable_console.api.problems import Problem, from_store_error, problem_response
from roundtable_console.store.db.database import WriteBusy
from roundtable_console.store.errors import StoreError

Operation = Callable[..., Answer]


def call_of(request: Request, body: bytes) -> Call:
    # Read off the ASGI scope, without Starlette's URL and header objects: together they cost
    # as much as a beat's statements.
    scope = request.scope
    query: dict[str, list[str]] = {}
    if scope.get("query_string"):
        for name, value in request.query_params.multi_items():
            query.setdefault(name, []).append(value)
    client = scope.get("client")
    return Call(
        method=scope["method"],
        path=scope["path"],
        headers={
            name.decode("latin-1").lower(): value.decode("latin-1")
            for name, value in scope["headers"]
        },
        query=query,
        body=body,
        address=client[0] if client else "",
        request_id=request.state.request_id,
    )


def refusal(request: Request, problem: Problem) -> JSONResponse:
    return problem_response(
        problem.code,
        problem.detail,
        instance=request.scope["path"],
        request_id=request.state.request_id,
        metadata=problem.metadata,
        headers=problem.headers,
    )


async def run(request: Request, operation: Operation, **params: str) -> Response:
    """One request: its call built here, its work in a worker thread, its answer or refusal."""
    ctx: ServerContext = request.app.state.ctx
    try:
        body = await request.body() if request.method in UNSAFE_METHODS else b""
    except BodyTooLarge:
        return refusal(request, Problem("request_too_large", TOO_LARGE))
    call = call_of(request, body)
    if any("\x00" in value for values in call.query.values() for value in values):
        return refusal(request, Problem("invalid_request", "A query value holds a NUL character."))
    try:
        answer = _at_once(ctx, operation, call, params)
        if answer is None:
            answer = await ctx.in_worker(operation, ctx, call, **params)
    except Problem as problem:
        return refusal(request, problem)
    except StoreError as error:
        return refusal(request, from_store_error(error))
    return JSONResponse(answer.body, status_code=answer.status, headers=answer.headers)


# Short writes an agent sends all day: on SQLite they run where the request is read when the
# store lets them write at once (``Store.without_waiting``), and in a worker otherwise. A
# beat costs a few hundred microseconds; handing it to a thread and back costs as much again.
AT_ONCE = frozenset({action_ops.heartbeat})


def _at_once(
    ctx: ServerContext, operation: Operation, call: Call, params: dict[str, str]
) -> Answer | None:
    if operation not in AT_ONCE or ctx.store.dialect != "sqlite":
        return None
    if "idempotency-key" in call.headers:
        return None  # more than one transaction: the worker's
    try:
        with ctx.store.without_waiting():
            return operation(ctx, call, **params)
    except WriteBusy:
        return None  # nothing was done: the worker does it, waiting its turn


def path_names(path: str) -> list[str]:
    return [part[1:-1] for part in path.split("/") if part.startswith("{")]


async def answer(request: Request, operation: Operation, names: list[str]) -> Response:
    """A route's answer: its path's ids checked, then ``run``."""
    try:
        params = {
            key: wire.path_id(request.path_params[key], what=key.removesuffix("_id"))
            for key in names
        }
    except Problem as problem:
        return refusal(request, problem)
    return await run(request, operation, **params)


class HotRoutes:
    """The routes agents call all day, answered ahead of the framework's router: the same
    ``answer`` the routed endpoint gives, without the dozen layers of routing, middleware and
    dependency solving around it (a third of a beat's time on SQLite). Everything else, and
    every refusal of method or path, goes through the router; the guard stays around both."""

    def __init__(self, app: FastAPI, routes: list[tuple[str, str, Operation]]) -> None:
        self.app = app
        self.routes = [
            (method, re.compile(re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(path))),
             operation, path_names(path))
            for method, path, operation in routes
        ]  # fmt: skip

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for method, pattern, operation, names in self.routes:
                matched = pattern.fullmatch(scope["path"])
                if matched is not None and scope["method"] == method:
                    scope["app"] = self.app
                    scope["path_params"] = matched.groupdict()
                    response = await answer(Request(scope, receive), operation, names)
                    await response(scope, receive, send)
                    return
        await self.app(scope, receive, send)
