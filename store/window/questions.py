"""What the session list's model asks of the store, and what its read workers bring back: plain
data, no Textual (tests/test_list_model.py).

``ListModel`` (screens.list.model) wants a ``Read``: rows at a place, or a page after or before
the row at an end of its run, under a ``generation`` and a ``serial`` (an answer to an older
question is dropped). A worker (store.window.rows) makes it a ``RowsAsked``, with the filters,
the order and the clock of the moment, and answers with a ``ReadResult`` (in a grouped list
with its ``GroupedRows``), or, to a refresh of a store that has not changed, ``ClockMoved``.
Before the store is open, ``first_result`` makes the quick first read's page such an answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from roundtable_console.store.reads.listing import SessionFilter, SessionOrder
from roundtable_console.store.records import ClaimCount, SessionFields
from roundtable_console.store.window.layout import GroupKey, Groups, session_key

if TYPE_CHECKING:
    from roundtable_console.store.reads.first_window import FirstWindow

ReadKind = Literal["at", "after", "before"]


@dataclass(frozen=True)
class Read:
    """One read the model wants. ``at``: ``limit`` rows from position ``offset``; ``after`` /
    ``before``: ``limit`` rows just past ``edge`` (the row at ``offset``) in that direction."""

    kind: ReadKind
    offset: int
    limit: int
    generation: int
    serial: int
    edge: SessionFields | None = None
    refresh: bool = False
    # A page read ahead of need (the view has its rows): it may wait for the next frame.
    ahead: bool = False
    # A grouped list's ``at``: the stream place (sessions only) of the first session to read,
    # and whether the place asked for is that session's group's header, as the model holds
    # them (the worker places them itself from the groups when it has them).
    stream: int = 0
    header_first: bool = False

    @property
    def slot(self) -> str:
        """One read of each slot is in flight at a time: a newer one replaces the older (whose
        answer is then dropped)."""
        return "view" if self.kind == "at" else self.kind


@dataclass(frozen=True)
class GroupedRows:
    """What a read of a grouped list says beside its rows: each row's group as the store reads
    it; whether the first row starts its group (the session before it is in another, or there
    is none); for a page before a row, whether that row (``edge``) starts its group; for a read
    at a place, where the worker placed it (from the groups); the groups, when read with the
    rows."""

    keys: tuple[GroupKey, ...]
    first_starts: bool
    edge_key: GroupKey = None
    edge_starts: bool = False
    header_first: bool | None = None
    stream: int | None = None
    groups: Groups | None = None
    # The sessions by status of the groups these rows are in (their headers' counts).
    counts: Mapping[GroupKey, Mapping[str, int]] | None = None


@dataclass(frozen=True)
class ReadResult:
    """What a read found, from one snapshot: the rows, the list's length when known, the claim
    counts of those rows' agents and the counts by status (None when not read)."""

    read: Read
    rows: list[SessionFields]
    total: int | None
    claims: dict[str, ClaimCount] = field(default_factory=dict)
    counts: dict[str, int] | None = None
    token: object | None = None
    # How many sessions need a human (store.reads.listing.ATTENTION_CAP at most), when read.
    attention: int | None = None
    # In the attention order: when the clock next moves a session (one goes stale), when read.
    moves_at: datetime | None = None
    grouped: GroupedRows | None = None


@dataclass(frozen=True)
class RowsAsked:
    """A read as a worker makes it: the model's ``read`` of the list the filters and the order
    give, at ``now``. ``known_total``: the list's length when counted apart. With
    ``unless_token``, a store still at that change token is not read: only the claims of the
    agents in ``live_claims``, which may have expired by the clock alone."""

    read: Read
    filters: SessionFilter
    order: SessionOrder
    now: datetime
    known_total: int | None = None
    unless_token: object | None = None
    live_claims: tuple[str, ...] = ()
    # A grouped list: its grouping, the groups folded, and the groups as the model has them
    # (counted apart, for a filter the counts by group cannot answer).
    grouping: str | None = None
    folded: frozenset[GroupKey] = frozenset()
    groups: Groups | None = None


@dataclass(frozen=True)
class ClockMoved:
    """The answer to a refresh when the store has not changed since the held rows were read: the
    clock alone moved, and the claims that may have expired by it, read again."""

    read: Read
    claims: dict[str, ClaimCount]


def first_result(
    read: Read, first: FirstWindow | None, grouping: str | None = None
) -> ReadResult | None:
    """The quick first read's page (``store.reads.first_window``) as the answer to ``read``: the
    list's top (in a grouped list, its first group's header first)."""
    if first is None:
        return None
    rows: list[SessionFields] = list(first.sessions)
    total = None if first.has_more or grouping is not None else len(rows)
    grouped = None
    if grouping is not None:
        keys = tuple(session_key(grouping, session) for session in rows)
        grouped = GroupedRows(keys, first_starts=True, header_first=True, stream=0)
    return ReadResult(read, rows, total, dict(first.claims), grouped=grouped)
