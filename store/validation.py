"""Input checks shared by the operations: required strings, statuses, metadata, limits."""

from __future__ import annotations

import json
import unicodedata

from roundtable_console.store.errors import InvalidLimit, InvalidSession, InvalidSessionStatus

# typing is not imported at run time: every hook's process would pay ~3 ms for it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_STATUS_LENGTH = 64
MAX_WAITING_LENGTH = 500
DEFAULT_LIMIT = 50
MAX_LIMIT = 200


# Not printable: controls, format characters (bidi overrides), line and paragraph separators,
# and lone surrogates (bytes that were not UTF-8). The same set store.safety.display escapes.
_UNPRINTABLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def has_control_characters(value: str) -> bool:
    return any(unicodedata.category(char) in _UNPRINTABLE_CATEGORIES for char in value)


def required(name: str, value: str | None) -> str:
    cleaned = (value or "").strip()
    if not cleaned:
        raise InvalidSession(f"{name} is required and must not be blank.")
    return cleaned


def optional(value: str | None) -> str | None:
    """Omitted or blank optional values are stored as NULL."""
    if value is None:
        return None
    cleaned = value.strip()
    return cleaned or None


MAX_HOST_LENGTH = 255


def host(value: str | None) -> str | None:
    """A machine's name (ours): printable, at most ``MAX_HOST_LENGTH`` characters; blank or
    omitted: none."""
    cleaned = optional(value)
    if cleaned is None:
        return None
    if len(cleaned) > MAX_HOST_LENGTH or has_control_characters(cleaned):
        raise InvalidSession(
            f"A host is a machine's name: printable, at most {MAX_HOST_LENGTH} characters."
        )
    return cleaned


def status(value: str) -> str:
    """Any printable string up to 64 characters (ref: a free string)."""
    cleaned = value.strip()
    if not cleaned:
        raise InvalidSessionStatus("A status must not be blank.")
    if len(cleaned) > MAX_STATUS_LENGTH:
        raise InvalidSessionStatus(
            f"A status is at most {MAX_STATUS_LENGTH} characters; this one has {len(cleaned)}."
        )
    if has_control_characters(cleaned):
        raise InvalidSessionStatus("A status must not contain control characters.")
    return cleaned


def waiting_reason(value: str, what: str = "A waiting reason") -> str:
    """Why an agent waits for a human (or, ``what``, the words its turn ended with):
    printable, 1 to 500 characters, stored redacted."""
    cleaned = value.strip()
    if not cleaned:
        raise InvalidSession(f"{what} must not be blank: say what the human should know.")
    if len(cleaned) > MAX_WAITING_LENGTH:
        raise InvalidSession(
            f"{what} is at most {MAX_WAITING_LENGTH} characters; this one has {len(cleaned)}."
        )
    if has_control_characters(cleaned):
        raise InvalidSession(f"{what} must not contain control characters.")
    from roundtable_console.store.safety.redaction import (  # here: most heartbeats carry no reason
        redact_text,
    )

    return redact_text(cleaned)


def metadata(value: str | dict[str, Any] | None) -> str | None:
    """A JSON object, stored as text; ``{}`` and nothing are stored as NULL."""
    if value is None:
        return None
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError as error:
            raise InvalidSession(
                f"Metadata is not valid JSON: {error.msg} at character {error.pos}."
            ) from None
        except RecursionError:
            raise InvalidSession("Metadata is nested too deeply to store.") from None
    else:
        decoded = value
    if not isinstance(decoded, dict):
        raise InvalidSession(f"Metadata must be a JSON object, not {type(decoded).__name__}.")
    if not decoded:
        return None
    try:
        return json.dumps(decoded, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as error:
        raise InvalidSession(f"Metadata cannot be stored as JSON: {error}.") from None
    except RecursionError:
        raise InvalidSession("Metadata is nested too deeply to store.") from None


def limit(value: int | None) -> int:
    if value is None:
        return DEFAULT_LIMIT
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LIMIT:
        raise InvalidLimit(f"A page limit must be a whole number from 1 to {MAX_LIMIT}.")
    return value


def decode_metadata(text: str | None) -> dict[str, Any] | None:
    """Stored metadata as an object, or None when absent or unreadable."""
    if not text:
        return None
    try:
        decoded = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return None
    return decoded if isinstance(decoded, dict) else None


# An id or count written as text: ASCII digits, few enough to be a 64-bit integer (Python's
# int() takes other scripts' digits, and refuses over 4,300 of them with an error of its own).
MOST_DIGITS = 18


def whole_number(text: str) -> int | None:
    """``text`` as a whole number of at most ``MOST_DIGITS`` ASCII digits; else None."""
    if not 0 < len(text) <= MOST_DIGITS or not text.isascii() or not text.isdigit():
        return None
    return int(text)
