"""The web console as an app a phone installs (issue 31): its manifest, its service worker and
the page it shows offline. None holds a session's data, so none asks who the browser is.

The service worker (``templates/service_worker.js``) is served at ``/sw.js`` so that its scope
is the whole console; above its code the server writes the app's shell to keep (the static
files under their hashed names, and the offline page) and a cache name made of their hashes,
so a new release replaces the old shell at once.
"""

from __future__ import annotations

import hashlib
import json
from importlib.resources import files

from starlette.requests import Request
from starlette.responses import Response

from roundtable_console.api.web.assets import StaticFiles
from roundtable_console.api.web.render import Pages

THEME = "#1f5fbf"
OFFLINE = "/offline"
# Fetched again whenever the browser looks (no-cache: it may keep it, but asks first).
NO_CACHE = "no-cache"


class AppShell:
    def __init__(self, statics: StaticFiles, pages: Pages) -> None:
        self.statics = statics
        self.pages = pages
        icons = [
            {"src": statics.url("icon-192.png"), "sizes": "192x192", "type": "image/png",
             "purpose": "any"},
            {"src": statics.url("icon-512.png"), "sizes": "512x512", "type": "image/png",
             "purpose": "any"},
            {"src": statics.url("icon-512.png"), "sizes": "512x512", "type": "image/png",
             "purpose": "maskable"},
            {"src": statics.url("icon.svg"), "sizes": "any", "type": "image/svg+xml",
             "purpose": "any"},
        ]  # fmt: skip
        self.manifest = json.dumps(
            {
                "id": "/sessions",
                "name": "Roundtable console",
                "short_name": "Roundtable",
                "description": "Which agent sessions need you, and answering them.",
                "start_url": "/sessions",
                "scope": "/",
                "display": "standalone",
                "background_color": "#ffffff",
                "theme_color": THEME,
                "icons": icons,
            },
            indent=1,
        ).encode("utf-8")
        shell = sorted(statics.url(name) for name in statics.by_name) + [OFFLINE]
        version = hashlib.sha256("\n".join(shell).encode("utf-8")).hexdigest()[:12]
        code = files("roundtable_console.assets") / "web" / "templates" / "service_worker.js"
        self.worker = (
            f"const SHELL = {json.dumps(shell)};\n"
            f'const CACHE = "roundtable-shell-{version}";\n'
            f"const ICON = {json.dumps(statics.url('icon-192.png'))};\n"
        ).encode() + code.read_bytes()

    async def manifest_file(self, request: Request) -> Response:
        return Response(
            self.manifest,
            media_type="application/manifest+json",
            headers={"Cache-Control": NO_CACHE},
        )

    async def service_worker(self, request: Request) -> Response:
        return Response(
            self.worker,
            media_type="text/javascript; charset=utf-8",
            headers={"Cache-Control": NO_CACHE},
        )

    async def offline(self, request: Request) -> Response:
        return self.pages.page(
            "offline.html",
            caller=None,
            operator=False,
            csrf="",
            nav=(),
            current="offline",
            read_only=False,
            notice=None,
        )
