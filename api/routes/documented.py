"""How a route of ``roundtable serve`` is added: its endpoint (``api.answering.answer``: its
path's ids checked, its work done, its refusals in the reference's form) and its entry in the
OpenAPI document (path ids, parameters, body, every answer it may give)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from starlette.responses import Response

from roundtable_console.api.answering import Operation, answer, path_names
from roundtable_console.api.routes import schemas

# Every refusal's schema, by reference: a ``model`` would have FastAPI build a validator for each
# status of each route (eight in nine of the fields of a server, and two thirds of the time one
# takes to make); the document carries the schema once (``api.app._document``).
PROBLEM_SCHEMA = {"$ref": "#/components/schemas/Problem"}


def responses(successes: tuple[int, ...], model: type | None, *errors: int) -> dict[int | str, Any]:
    documented: dict[int | str, Any] = {
        status: {
            "description": "A problem (RFC 7807).",
            "content": {"application/json": {"schema": dict(PROBLEM_SCHEMA)}},
        }
        for status in sorted({400, 401, 403, 404, 413, 429, 500, 503, *errors})
    }
    for success in successes:
        documented[success] = (
            {"model": model, "description": "Done."} if model else {"description": "Done."}
        )
    return documented


def operation(
    app: FastAPI,
    method: str,
    path: str,
    operation: Operation,
    *,
    name: str,
    summary: str,
    success: int = 200,
    also: tuple[int, ...] = (),
    model: type | None = None,
    errors: tuple[int, ...] = (),
    parameters: list[dict[str, Any]] | None = None,
    body: dict[str, Any] | None = None,
    body_required: bool = False,
) -> None:
    names = path_names(path)

    async def endpoint(request: Request) -> Response:
        return await answer(request, operation, names)

    extra: dict[str, Any] = {}
    path_parameters = [PATH_ID | {"name": key} for key in names]
    extra["parameters"] = [*path_parameters, *(parameters or [])]
    if body is not None:
        extra["requestBody"] = {
            "required": body_required,
            "content": {"application/json": {"schema": body}},
        }
    app.add_api_route(
        path,
        endpoint,
        methods=[method],
        name=name,
        summary=summary,
        status_code=success,
        responses=responses((success, *also), model, *errors),
        openapi_extra=extra,
    )


# Ids in a path: printable, at most 256 characters, no "/" (even encoded, it ends a path's
# part); an id no store holds answers as not found.
PATH_ID = {
    "in": "path",
    "required": True,
    "schema": {
        "type": "string",
        "format": schemas.PRINTABLE,
        "maxLength": 256,
        "pattern": "^[^/]+$",
    },
}
