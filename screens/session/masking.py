"""The external session id masked wherever it shows (the briefing, the resume plan, the launch
dialog) until ``v`` reveals it: it is sensitive (``docs/reference/roundtable.md#sessions``)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from roundtable_console.store.safety.display import markdown_line, printable

MASKED_ID = "••••••"


def secret_forms(secret: str | None) -> list[str]:
    """Every form in which the external session id can appear in what is shown: as stored,
    trimmed (the resume plan), and as the briefing writes it on one line; longest first."""
    if not secret:
        return []
    forms = {secret, secret.strip(), markdown_line(secret), printable(secret)}
    return sorted((form for form in forms if form), key=len, reverse=True)


def mask(text: str, forms: Sequence[str]) -> str:
    for form in forms:
        text = text.replace(form, MASKED_ID)
    return text


def quoted_argv(argv: Sequence[str], forms: Sequence[str]) -> str:
    """``argv`` as a shell would quote it (it is never run through one), printable, each form
    of the secret masked; quoting writes a quote inside the id as '"'"': that form too."""
    quoted = [form.replace("'", "'\"'\"'") for form in forms]
    return printable(mask(" ".join(shlex.quote(word) for word in argv), [*quoted, *forms]))
