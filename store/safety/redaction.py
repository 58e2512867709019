"""Redaction of secrets in text and JSON before anything from the store is shown to a person.

The reference redacted only the first occurrence of each marker; here every occurrence goes, in
one pass, so the result is stable: redacting twice changes nothing more. Numbers under token-count
keys (``input_tokens``, ``tokens``) are usage, not secrets, and are kept.

Standard library only and cheap to import: the heartbeat's fast path redacts with it before storing.
What read paths show goes through ``store.safety.credentials``, which adds credential shapes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache

# typing is not imported at run time: every hook's process would pay ~3 ms for it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

REDACTED = "[REDACTED]"

TEXT_MARKERS: tuple[str, ...] = ("token", "password", "secret", "api_key", "authorization")
JSON_KEY_MARKERS: tuple[str, ...] = (*TEXT_MARKERS, "chain_of_thought")

# A value runs up to whitespace, '&', ',' or the end. A quoted value ("a b") is taken whole when
# its closing quote ends the value; otherwise the quotes are just part of a plain value.
_VALUE = r"""(?P<quote>["'])(?P<quoted>[^"'\n]*)(?P=quote)(?=[\s&,;}\])]|$)|(?P<plain>[^\s&,]+)"""
_MARKER = "|".join(re.escape(marker) for marker in TEXT_MARKERS)


# Compiled on first use, not at import: a heartbeat that stores no text never needs it.
@cache
def _secret() -> re.Pattern[str]:
    # Markers match case-insensitively in ASCII only ((?a:...)), so e.g. "paſsword" is not one.
    # A value is never a "bearer" or a marker's assignment (access_token=, X-Token:): taken as
    # the value, it would leave the real value after it shown ("bearer token=Bearer X",
    # "Authorization: Bearer bearer X"); the later one is matched on its own instead.
    return re.compile(
        rf"""(?P<prefix>(?a:{_MARKER})["']?[ \t]*[=:][ \t]*(?:(?a:bearer|basic|token)[ \t]+)?"""
        rf"""|(?<![A-Za-z0-9_])(?a:bearer)[ \t]+)"""
        rf"""(?!(?a:bearer)[ \t]|(?a:[A-Za-z0-9]*[_-])?(?a:{_MARKER})["']?[ \t]*[=:])"""
        rf"""(?:{_VALUE})""",
        re.IGNORECASE,
    )


def _replace(match: re.Match[str]) -> str:
    quote = match.group("quote")
    if quote:
        return f"{match.group('prefix')}{quote}{REDACTED}{quote}"
    return f"{match.group('prefix')}{REDACTED}"


# A text holding none of these (in any case) holds nothing to hide: it is not searched, and a
# hook's beat with such a reason never compiles the pattern (several milliseconds).
_SOUGHT = (*TEXT_MARKERS, "bearer")


def redact_text(text: str) -> str:
    """Every ``marker=value``, ``marker: value`` and ``Bearer value`` with the value hidden."""
    lowered = text.lower()
    if not any(marker in lowered for marker in _SOUGHT):
        return text
    return _secret().sub(_replace, text)


def is_sensitive_key(key: str) -> bool:
    lowered = key.lower()
    return any(marker in lowered for marker in JSON_KEY_MARKERS)


def is_token_count(key: str, value: Any) -> bool:
    """A number under a ``*_tokens`` / ``tokens`` key: usage, shown (a string there is not)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and key.lower().endswith("tokens")
    )


def hides(key: str, value: Any) -> bool:
    """Whether the value under ``key`` is hidden whole: a sensitive key, unless a token count."""
    return is_sensitive_key(key) and not is_token_count(key, value)


def redact_json_value(
    value: Any,
    *,
    text: Callable[[str], str] = redact_text,
    sensitive: Callable[[str, Any], bool] = hides,
) -> Any:
    """Values under sensitive keys hidden at any depth; every other string (keys too) redacted
    by ``text``."""
    if isinstance(value, dict):
        return {
            text(str(key)): REDACTED
            if sensitive(str(key), item)
            else redact_json_value(item, text=text, sensitive=sensitive)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_json_value(item, text=text, sensitive=sensitive) for item in value]
    if isinstance(value, str):
        return text(value)
    return value


def redact_json_text(text: str | None) -> str | None:
    """JSON text redacted and dumped compactly; text that is not JSON is redacted as text."""
    if text is None:
        return None
    try:
        decoded = json.loads(text)
    except (json.JSONDecodeError, TypeError, ValueError, RecursionError):
        return redact_text(text)
    return json.dumps(redact_json_value(decoded), separators=(",", ":"), ensure_ascii=False)
