"""Pages and opaque cursors. A cursor names the list it belongs to and the last row's sort key."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from roundtable_console.store.errors import InvalidCursor

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def encode_cursor(kind: str, *key: Any) -> str:
    raw = json.dumps([kind, *key], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(kind: str, cursor: str, arity: int) -> list[Any]:
    """The key a cursor carries; ``invalid_cursor`` if it is not one of ours for this list."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        decoded = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise InvalidCursor("That cursor is not one this store issued.") from None
    if not isinstance(decoded, list) or len(decoded) != arity + 1 or decoded[0] != kind:
        raise InvalidCursor(f"That cursor does not belong to the {kind} list.")
    return decoded[1:]
