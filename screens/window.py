"""The run of the session list a screen holds, and where it was read from.

Plain data: the list screen starts without the store's database layer, and fills a window from
the quick first read (``store.first_window``) or from ``screens.data.read_list_window``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from store.records import ClaimCount, SessionFields


@dataclass(frozen=True)
class WindowSpec:
    """Which run of the list to read: ``pages`` pages after ``cursor`` (from the start when
    None), or, when ``backwards``, the ``pages`` pages that end just before it (the very end
    when None)."""

    cursor: str | None = None
    pages: int = 1
    backwards: bool = False


@dataclass(frozen=True)
class ListWindow:
    """A run of consecutive rows of the session list, read in one snapshot. ``counts`` (by
    status) is None when the read did not count them (the quick first read)."""

    sessions: list[SessionFields]
    has_before: bool
    has_after: bool
    claims: dict[str, ClaimCount] = field(default_factory=dict)
    counts: dict[str, int] | None = None
    now: datetime | None = None
