"""The web console's static files (``assets/web/static``), served under names that carry their
content's hash (``app.3f2a91c0.js``), so a browser may keep each for a year and a new release is
never met by an old file. Read once, when the server starts."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib.resources import files

from starlette.responses import Response

STATIC_PREFIX = "/static/"
MEDIA_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}
FOREVER = "public, max-age=31536000, immutable"


@dataclass(frozen=True)
class Asset:
    name: str
    hashed_name: str
    content: bytes
    media_type: str


class StaticFiles:
    """Every file of ``assets/web/static`` by its plain name and by its hashed name."""

    def __init__(self) -> None:
        folder = files("roundtable_console.assets") / "web" / "static"
        self.by_name: dict[str, Asset] = {}
        self.by_hashed: dict[str, Asset] = {}
        for entry in sorted(folder.iterdir(), key=lambda item: item.name):
            suffix = "." + entry.name.rsplit(".", 1)[-1]
            if not entry.is_file() or suffix not in MEDIA_TYPES:
                continue
            content = entry.read_bytes()
            digest = hashlib.sha256(content).hexdigest()[:10]
            stem = entry.name[: -len(suffix)]
            asset = Asset(entry.name, f"{stem}.{digest}{suffix}", content, MEDIA_TYPES[suffix])
            self.by_name[asset.name] = asset
            self.by_hashed[asset.hashed_name] = asset

    def url(self, name: str) -> str:
        return STATIC_PREFIX + self.by_name[name].hashed_name

    def response(self, hashed_name: str) -> Response | None:
        asset = self.by_hashed.get(hashed_name)
        if asset is None:
            return None
        return Response(
            asset.content, media_type=asset.media_type, headers={"Cache-Control": FOREVER}
        )
