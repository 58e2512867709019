"""Where the web console's routes are: pages at the root (``/sessions``, ``/sessions/{id}``, as
the reference designed them, and ``/requests``), what pages ask for under ``/fragments`` and
``/actions`` (a permission request's decision is a form's post there), the
live stream at ``/live``, the static files under ``/static``. None is in the OpenAPI document:
they are the console's, not the API's."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response

from roundtable_console.api.answering import as_response, refused
from roundtable_console.api.context import ServerContext
from roundtable_console.api.problems import Problem
from roundtable_console.api.web.app_shell import AppShell
from roundtable_console.api.web.assets import StaticFiles
from roundtable_console.api.web.fragments import WebFragments
from roundtable_console.api.web.pages import WebPages
from roundtable_console.api.web.push_pages import WebPush
from roundtable_console.api.web.render import Pages
from roundtable_console.api.web.request_pages import WebRequests


def install(app: FastAPI, ctx: ServerContext, *, read_only: bool) -> None:
    statics = StaticFiles()
    pages = Pages(statics.url)
    page = WebPages(ctx, pages, read_only=read_only)
    part = WebFragments(ctx, pages, read_only=read_only)
    asked = WebRequests(page, part)
    told = WebPush(page, part)
    shell = AppShell(statics, pages)

    async def static(request: Request) -> Response:
        found = statics.response(request.path_params["name"])
        if found is None:
            return as_response(refused(request.scope, Problem("not_found", "No such file.")))
        return found

    routes = [
        ("/", page.home, "GET"),
        ("/sign-in", page.sign_in_page, "GET"),
        ("/sign-in", page.sign_in_submit, "POST"),
        ("/sign-out", page.sign_out, "POST"),
        ("/sessions", page.sessions, "GET"),
        ("/sessions/{session_id}", page.session, "GET"),
        ("/sessions/{session_id}/briefing", page.briefing, "GET"),
        ("/sessions/{session_id}/briefing.md", page.briefing_download, "GET"),
        ("/sessions/{session_id}/transcript", page.transcript, "GET"),
        ("/sessions/{session_id}/changes", page.changes, "GET"),
        ("/overview", page.overview, "GET"),
        ("/audit", page.audit, "GET"),
        ("/hosts", page.hosts, "GET"),
        ("/requests", asked.requests, "GET"),
        ("/notifications", told.notifications, "GET"),
        ("/manifest.webmanifest", shell.manifest_file, "GET"),
        ("/sw.js", shell.service_worker, "GET"),
        ("/offline", shell.offline, "GET"),
        ("/fragments/rows", part.rows, "GET"),
        ("/fragments/counts", part.counts, "GET"),
        ("/fragments/sessions/{session_id}", part.session, "GET"),
        ("/fragments/sessions/{session_id}/reveal/{field}", part.reveal, "GET"),
        ("/fragments/sessions/{session_id}/terminate", part.terminate_impact, "GET"),
        ("/fragments/sessions/{session_id}/transcript", part.transcript, "GET"),
        ("/fragments/requests", asked.fragment, "GET"),
        ("/actions/sessions/{session_id}/reply", asked.reply, "POST"),  # before {action}
        ("/actions/sessions/{session_id}/{action}", part.action, "POST"),
        ("/actions/sessions/{session_id}/requests/{request_id}/{decision}", asked.decide, "POST"),
        ("/actions/push/subscribe", told.subscribe, "POST"),
        ("/actions/push/unsubscribe", told.unsubscribe, "POST"),
        ("/actions/presence", told.presence, "POST"),
        ("/actions/device/challenge", told.device_challenge, "POST"),
        ("/actions/device/proof", told.device_proof, "POST"),
        ("/actions/device/revoke", told.device_revoke, "POST"),
        ("/fragments/bulk/{action}", part.bulk_preview, "POST"),
        ("/actions/bulk/{action}", part.bulk_action, "POST"),
        ("/live", part.live, "GET"),
        ("/static/{name}", static, "GET"),
    ]
    for route_path, endpoint, method in routes:
        app.add_route(route_path, endpoint, methods=[method], include_in_schema=False)
