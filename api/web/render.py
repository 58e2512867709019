"""The web console's pages, rendered by Jinja2 from ``assets/web/templates``, safe by
construction: every value a template prints is escaped for HTML (autoescape) and, when it is
text, first made printable (``store.safety.display.printable``: credentials redacted, control
and format characters such as bidi overrides shown as escapes), whichever template prints it.
Only what this module marks ``trusted`` (markup it built, or values of its own making that the
redaction must not touch, such as a CSRF proof) skips that second step; it is still escaped.

Every page carries a strict Content-Security-Policy (``api.edge.middleware``): no inline script or
style, nothing from another origin.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape
from starlette.responses import HTMLResponse

from roundtable_console.store.rules import LIFECYCLE_ACTIONS, is_allowed
from roundtable_console.store.safety.display import printable

HTML_TYPE = "text/html; charset=utf-8"


def _finalize(value: Any) -> Any:
    if isinstance(value, Markup) or not isinstance(value, str):
        return value
    return printable(value)


def multiline(value: Any) -> Markup:
    """Text of several lines for a ``<pre>``: printable but for its line breaks and tabs, then
    escaped (the one place a line break is kept)."""
    return escape(printable(str(value), keep_newlines=True))


def trusted(value: str) -> Markup:
    """``value`` escaped, and kept from the printable step (values of the server's making)."""
    return Markup(escape(value))


def path(*parts: str, query: Mapping[str, Any] | None = None) -> Markup:
    """A path of this server: each part quoted whole (an id with ``/`` or ``?`` stays one
    segment), then the query."""
    built = "/" + "/".join(quote(part, safe="") for part in parts)
    if query:
        pairs = [
            (key, item)
            for key, value in query.items()
            for item in (value if isinstance(value, list | tuple) else [value])
            if item not in (None, "", False)
        ]
        if pairs:
            built += "?" + urlencode([(k, "1" if v is True else str(v)) for k, v in pairs])
    return trusted(built)


def shown(value: Any) -> Markup:
    """``value`` as a template's print makes it (printable, then escaped), once, for a template
    that prints it several times: each print of the Markup skips both steps."""
    return escape(_finalize(value))


# The server's own words, trusted: a row prints them several times each.
ACTION_LABELS = {
    action: (trusted(action), trusted(action.capitalize())) for action in LIFECYCLE_ACTIONS
}


@lru_cache(maxsize=64)
def row_actions(status: str) -> tuple[tuple[Markup, Markup], ...]:
    """The lifecycle actions a session of that status allows, with their buttons' labels."""
    return tuple(
        ACTION_LABELS[action] for action in LIFECYCLE_ACTIONS if is_allowed(action, status)
    )


def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("roundtable_console.assets", "web/templates"),
        autoescape=True,
        undefined=StrictUndefined,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        # The templates ship in the wheel: never looked at again (an include per row would
        # otherwise stat its file each time).
        auto_reload=False,
    )
    env.globals["path"] = path
    env.globals["row_actions"] = row_actions
    env.filters["shown"] = shown
    env.filters["multiline"] = multiline
    return env


class Pages:
    """The templates, loaded once, and what every page is given (the asset URLs)."""

    def __init__(self, asset_url: Any) -> None:
        self.env = environment()
        self.env.globals["asset"] = lambda name: trusted(asset_url(name))

    def row(self, row: Any, operator: bool) -> Markup:
        """One row of the sessions list, as the list page renders it (live updates)."""
        return self.env.get_template("_row.html").module.session_row(row, operator)

    def html(self, template: str, **context: Any) -> str:
        return self.env.get_template(template).render(**context)

    def page(
        self,
        template: str,
        *,
        status: int = 200,
        headers: Mapping[str, str] | None = None,
        **context: Any,
    ) -> HTMLResponse:
        return HTMLResponse(
            self.html(template, **context), status_code=status, headers=dict(headers or {})
        )  # fmt: skip
