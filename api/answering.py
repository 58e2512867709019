"""How ``roundtable serve`` answers one request: its fields read off the ASGI scope, its path's
ids checked, its work done (in a worker thread, or at once for an agent's beat on SQLite), its
answer or its refusal in the reference's form; and the routes agents call all day, answered
ahead of the framework's router."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from fastapi import FastAPI, Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.edge.middleware import TOO_LARGE, UNSAFE_METHODS, BodyTooLarge
from roundtable_console.api.problems import MEDIA_TYPE, Problem, from_store_error, problem_body
from roundtable_console.api.routes import actions as action_ops
from roundtable_console.api.routes import wire
from roundtable_console.store.db.database import WriteBusy
from roundtable_console.store.errors import StoreError

Operation = Callable[..., Answer | Awaitable[Answer]]


def call_of(scope: Scope, body: bytes, request_id: str) -> Call:
    """A request's fields, read off its ASGI scope (without Starlette's URL and header objects,
    which together cost as much as a beat's statements)."""
    query: dict[str, list[str]] = {}
    if scope.get("query_string"):
        for name, value in parse_qsl(
            scope["query_string"].decode("latin-1"), keep_blank_values=True
        ):
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
        request_id=request_id,
    )


def refusal(request: Request, problem: Problem) -> Response:
    return as_response(refused(request.scope, problem))


@dataclass(frozen=True)
class Reply:
    """An answer or a refusal, rendered: what goes on the wire."""

    status: int
    body: bytes
    media_type: str
    headers: dict[str, str]


def rendered(content: Any) -> bytes:
    # As Starlette's JSONResponse renders.
    return json.dumps(
        content, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")
    ).encode("utf-8")


def refused(scope: Scope, problem: Problem) -> Reply:
    body = problem_body(
        problem.code,
        problem.detail,
        instance=scope["path"],
        request_id=scope["state"]["request_id"],
        metadata=problem.metadata,
    )
    return Reply(body["status"], rendered(body), MEDIA_TYPE, problem.headers)


def as_response(reply: Reply) -> Response:
    return Response(reply.body, reply.status, reply.headers, reply.media_type)


async def reply_to(
    ctx: ServerContext,
    scope: Scope,
    body: bytes | None,
    operation: Operation,
    params: dict[str, str],
) -> Reply:
    """One request's reply: its work in a worker thread (at once, or awaited), its answer or its
    refusal. ``body`` is None when it was over the limit."""
    if body is None:
        return refused(scope, Problem("request_too_large", TOO_LARGE))
    call = call_of(scope, body, scope["state"]["request_id"])
    if any("\x00" in value for values in call.query.values() for value in values):
        return refused(scope, Problem("invalid_request", "A query value holds a NUL character."))
    try:
        if inspect.iscoroutinefunction(operation):
            # A long wait (``api.routes.hook_waits``): awaited on the loop; its store work is
            # in workers of its own.
            answer = await operation(ctx, call, **params)
        else:
            answer = _at_once(ctx, operation, call, params)
            if answer is None:
                answer = await ctx.in_worker(operation, ctx, call, **params)
    except Problem as problem:
        return refused(scope, problem)
    except StoreError as error:
        return refused(scope, from_store_error(error))
    return Reply(answer.status, rendered(answer.body), "application/json", answer.headers)


async def run(request: Request, operation: Operation, **params: str) -> Response:
    """One request through the router: ``reply_to`` as a Starlette response. A long wait ends
    when its client goes away (uvicorn does not end it): nothing would read its answer."""
    try:
        body: bytes | None = await request.body() if request.method in UNSAFE_METHODS else b""
    except BodyTooLarge:
        body = None
    replying = reply_to(request.app.state.ctx, request.scope, body, operation, params)
    if not inspect.iscoroutinefunction(operation):
        return as_response(await replying)
    work = asyncio.ensure_future(replying)
    gone = asyncio.ensure_future(_disconnected(request))
    await asyncio.wait({work, gone}, return_when=asyncio.FIRST_COMPLETED)
    gone.cancel()
    if not work.done():
        work.cancel()
        return Response(status_code=499)  # the client has gone: written nowhere
    return as_response(work.result())


async def _disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


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


def path_params(path_params: dict[str, str], names: list[str]) -> dict[str, str]:
    return {key: wire.path_id(path_params[key], what=key.removesuffix("_id")) for key in names}


async def answer(request: Request, operation: Operation, names: list[str]) -> Response:
    """A route's answer: its path's ids checked, then ``run``."""
    try:
        params = path_params(request.path_params, names)
    except Problem as problem:
        return refusal(request, problem)
    return await run(request, operation, **params)


class HotRoutes:
    """The routes agents call all day, answered ahead of the framework's router: the same
    ``reply_to`` the routed endpoint gives, without the dozen layers of routing, middleware,
    dependency solving, request and response objects around it (a third of a beat's time on
    SQLite). Everything else, and every refusal of method or path, goes through the router;
    the guard stays around both."""

    def __init__(
        self, app: FastAPI, ctx: ServerContext, routes: list[tuple[str, str, Operation]]
    ) -> None:
        self.app = app
        self.ctx = ctx
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
                    reply = await self._reply(scope, receive, operation, names, matched.groupdict())
                    if reply is not None:
                        await send_reply(send, reply)
                    return
        await self.app(scope, receive, send)

    async def _reply(
        self,
        scope: Scope,
        receive: Receive,
        operation: Operation,
        names: list[str],
        found: dict[str, str],
    ) -> Reply | None:
        """The reply, or None when the client went away before its request was read."""
        try:
            params = path_params(found, names)
        except Problem as problem:
            return refused(scope, problem)
        chunks: list[bytes] = []
        try:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return None
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    break
        except BodyTooLarge:
            return await reply_to(self.ctx, scope, None, operation, params)
        return await reply_to(self.ctx, scope, b"".join(chunks), operation, params)


async def send_reply(send: Send, reply: Reply) -> None:
    headers = [
        (b"content-length", str(len(reply.body)).encode("latin-1")),
        (b"content-type", reply.media_type.encode("latin-1")),
        *(
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in reply.headers.items()
        ),
    ]
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": reply.body})
