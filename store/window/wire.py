"""The list's questions and answers as JSON, for a console that reads through ``roundtable serve``:
the console sends what it asks (``RowsAsked``, a filter to count, a selection), the server
answers with the same reads a console on the store makes (``store.window.rows``), and each side
turns the other's JSON back into the same values. Sessions travel as their records
(``SessionFields.to_json``); a group's key may be null (sessions of no workspace), so the counts
by group travel as pairs; the store's change token as opaque text.

What comes in is untrusted: ``WireError`` says what is wrong with it, in words."""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from roundtable_console.store.clock import format_ts, parse_ts
from roundtable_console.store.reads.listing import (
    FilterSelection,
    Selection,
    SessionFilter,
    SessionOrder,
)
from roundtable_console.store.records import ClaimCount, SessionFields, SessionRecord
from roundtable_console.store.validation import MAX_LIMIT
from roundtable_console.store.window.layout import GroupKey, Groups
from roundtable_console.store.window.questions import (
    ClockMoved,
    GroupedRows,
    Read,
    ReadResult,
    RowsAsked,
)

READ_KINDS = ("at", "after", "before")
# The most a question may carry: rows asked at once (the store's page), ids (marked one by one,
# excluded from marked filters, or the agents whose claims are read again), filters marked, and
# groups folded. Each costs the server a read: a question stays a few reads, whoever sends it.
MAX_IDS = 2000
MAX_FILTERS = 16
MAX_FOLDED = 256


class WireError(ValueError):
    """What a question's JSON gets wrong, in words."""


# -- small values ---------------------------------------------------------------------------


def _time(value: datetime | None) -> str | None:
    return None if value is None else format_ts(value)


def _parse_time(value: Any, name: str) -> datetime | None:
    if value is None:
        return None
    parsed = parse_ts(value) if isinstance(value, str) else None
    if parsed is None:
        raise WireError(f"{name} is a UTC time (2026-12-07T10:00:00Z).")
    return parsed


def _text(value: Any, name: str, *, optional: bool = True) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or len(value) > 1024 or "\x00" in value:
        raise WireError(f"{name} is text of at most 1024 characters.")
    return value


def _whole(value: Any, name: str, *, most: int = 2**53) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= most:
        raise WireError(f"{name} is a whole number from 0 to {most}.")
    return value


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise WireError(f"{name} is true or false.")
    return value


def _texts(value: Any, name: str, most: int = MAX_IDS) -> list[str]:
    if not isinstance(value, list) or len(value) > most:
        raise WireError(f"{name} is a list of at most {most} texts.")
    return [str(_text(item, name, optional=False)) for item in value]


def _object(value: Any, name: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise WireError(f"{name} is an object.")
    return value


def token_text(token: object | None) -> str | None:
    """The store's change token as opaque text: equal tokens give equal text, and nothing of
    the server's memory shows through it. A token is a process's own (a connection's count):
    another server, or this one restarted, could count to the same from another start, so the
    text holds which process made it, and a console that comes back to another reads again."""
    if token is None:
        return None
    return hashlib.sha256(f"{_process()}:{token!r}".encode()).hexdigest()[:24]


_made_by: tuple[int, str] | None = None


def _process() -> str:
    """This process's own random name, made in it (a forked child is another process, with
    the memory of its parent: another name)."""
    global _made_by
    pid = os.getpid()
    if _made_by is None or _made_by[0] != pid:
        _made_by = (pid, secrets.token_hex(16))
    return _made_by[1]


# -- what the console asks ------------------------------------------------------------------


def filter_json(filters: SessionFilter) -> dict[str, Any]:
    return {
        "statuses": list(filters.statuses),
        "agent_id": filters.agent_id,
        "run_id": filters.run_id,
        "workspace_id": filters.workspace_id,
        "active_only": filters.active_only,
        "stale_before": _time(filters.stale_before),
        "text": filters.text,
        "waiting": filters.waiting,
        "without_workspace": filters.without_workspace,
        "host": filters.host,
    }


def filter_from(body: Any) -> SessionFilter:
    body = _object(body, "filters")
    return SessionFilter(
        statuses=tuple(_texts(body.get("statuses", []), "statuses", 64)),
        agent_id=_text(body.get("agent_id"), "agent_id"),
        run_id=_text(body.get("run_id"), "run_id"),
        workspace_id=_text(body.get("workspace_id"), "workspace_id"),
        active_only=_flag(body.get("active_only", False), "active_only"),
        stale_before=_parse_time(body.get("stale_before"), "stale_before"),
        text=_text(body.get("text"), "text"),
        waiting=_flag(body.get("waiting", False), "waiting"),
        without_workspace=_flag(body.get("without_workspace", False), "without_workspace"),
        host=_text(body.get("host"), "host"),
    )


def order_json(order: SessionOrder) -> dict[str, Any]:
    return {
        "column": order.column,
        "descending": order.descending,
        "stale_before": _time(order.stale_before),
    }


def order_from(body: Any) -> SessionOrder:
    body = _object(body, "order")
    try:
        order = SessionOrder(
            str(_text(body.get("column"), "column", optional=False)),
            _flag(body.get("descending", False), "descending"),
            _parse_time(body.get("stale_before"), "stale_before"),
        )
    except ValueError as error:
        raise WireError(str(error)) from None
    if order.column == "attention" and order.stale_before is None:
        raise WireError("The attention order is read at a time: stale_before says when.")
    return order


def selection_json(selection: Selection) -> dict[str, Any]:
    return {
        "ids": sorted(selection.ids),
        "by_filter": [
            {"filters": filter_json(chosen.filters), "excluded": sorted(chosen.excluded)}
            for chosen in selection.by_filter
        ],
    }


def selection_from(body: Any) -> Selection:
    body = _object(body, "selection")
    chosen = body.get("by_filter", [])
    if not isinstance(chosen, list) or len(chosen) > MAX_FILTERS:
        raise WireError(f"by_filter is a list of at most {MAX_FILTERS} filters.")
    selection = Selection(
        ids=frozenset(_texts(body.get("ids", []), "ids")),
        by_filter=tuple(
            FilterSelection(
                filter_from(_object(item, "by_filter").get("filters")),
                frozenset(_texts(item.get("excluded", []), "excluded")),
            )
            for item in chosen
        ),
    )
    if len(selection.ids) + sum(len(one.excluded) for one in selection.by_filter) > MAX_IDS:
        raise WireError(f"A selection names at most {MAX_IDS} sessions by id.")
    return selection


def _session(body: Any) -> SessionFields:
    return SessionRecord.from_json(_object(body, "session"))


def _groups_json(groups: Groups | None) -> dict[str, Any] | None:
    if groups is None:
        return None
    return {
        "keys": list(groups.keys),
        "sizes": list(groups.sizes),
        "counts": [[key, dict(counts)] for key, counts in groups.counts.items()],
    }


def _key(value: Any) -> GroupKey:
    return _text(value, "a group's key")


def _counts_from(value: Any) -> dict[str, int]:
    counts = _object(value, "counts")
    return {str(_text(k, "a status")): _whole(n, "a count") for k, n in counts.items()}


def _pair(value: Any) -> tuple[GroupKey, dict[str, int]]:
    """A group's counts by status, as the pair ``[key, {status: count}]``."""
    if not isinstance(value, list) or len(value) != 2:
        raise WireError("A group's counts are the pair [key, counts].")
    return _key(value[0]), _counts_from(value[1])


def _groups_from(body: Any) -> Groups | None:
    if body is None:
        return None
    body = _object(body, "groups")
    keys = body.get("keys", [])
    sizes = body.get("sizes", [])
    if not isinstance(keys, list) or not isinstance(sizes, list) or len(keys) != len(sizes):
        raise WireError("groups has as many keys as sizes.")
    pairs = body.get("counts", [])
    if not isinstance(pairs, list):
        raise WireError("groups' counts are pairs of a key and its counts.")
    counts = dict(_pair(pair) for pair in pairs)
    return Groups(
        tuple(_key(key) for key in keys), tuple(_whole(size, "a size") for size in sizes), counts
    )


def read_json(read: Read) -> dict[str, Any]:
    return {
        "kind": read.kind,
        "offset": read.offset,
        "limit": read.limit,
        "generation": read.generation,
        "serial": read.serial,
        "edge": None if read.edge is None else read.edge.to_json(),
        "refresh": read.refresh,
        "ahead": read.ahead,
        "stream": read.stream,
        "header_first": read.header_first,
    }


def read_from(body: Any) -> Read:
    body = _object(body, "read")
    kind = body.get("kind")
    if kind not in READ_KINDS:
        raise WireError(f"kind is one of {', '.join(READ_KINDS)}.")
    edge = body.get("edge")
    if kind != "at" and edge is None:
        raise WireError("A read after or before a row names that row (edge).")
    return Read(
        kind=kind,
        offset=_whole(body.get("offset"), "offset"),
        limit=_whole(body.get("limit"), "limit", most=MAX_LIMIT),
        generation=_whole(body.get("generation"), "generation"),
        serial=_whole(body.get("serial"), "serial"),
        edge=None if edge is None else _session(edge),
        refresh=_flag(body.get("refresh", False), "refresh"),
        ahead=_flag(body.get("ahead", False), "ahead"),
        stream=_whole(body.get("stream", 0), "stream"),
        header_first=_flag(body.get("header_first", False), "header_first"),
    )


def asked_json(asked: RowsAsked) -> dict[str, Any]:
    return {
        "read": read_json(asked.read),
        "filters": filter_json(asked.filters),
        "order": order_json(asked.order),
        "now": _time(asked.now),
        "known_total": asked.known_total,
        "unless_token": asked.unless_token,
        "live_claims": list(asked.live_claims),
        "grouping": asked.grouping,
        "folded": list(asked.folded),
        "groups": _groups_json(asked.groups),
    }


def asked_from(body: Any) -> RowsAsked:
    """A read the console asks for. ``unless_token`` is the text ``token_text`` gave."""
    body = _object(body, "the question")
    now = _parse_time(body.get("now"), "now")
    if now is None:
        raise WireError("now is the console's time.")
    grouping = body.get("grouping")
    if grouping not in (None, "workspace", "run", "agent"):
        raise WireError("grouping is workspace, run, agent or null.")
    known = body.get("known_total")
    folded = body.get("folded", [])
    if not isinstance(folded, list) or len(folded) > MAX_FOLDED:
        raise WireError(f"folded is a list of at most {MAX_FOLDED} group keys.")
    return RowsAsked(
        read=read_from(body.get("read")),
        filters=filter_from(body.get("filters")),
        order=order_from(body.get("order")),
        now=now,
        known_total=None if known is None else _whole(known, "known_total"),
        unless_token=_text(body.get("unless_token"), "unless_token"),
        live_claims=tuple(_texts(body.get("live_claims", []), "live_claims")),
        grouping=grouping,
        folded=frozenset(_key(key) for key in folded),
        groups=_groups_from(body.get("groups")),
    )


# -- what the store answers -----------------------------------------------------------------


def _claims_json(claims: Mapping[str, ClaimCount]) -> dict[str, list[int]]:
    return {agent: list(count) for agent, count in claims.items()}


def _claims_from(body: Any) -> dict[str, ClaimCount]:
    found = _object(body, "claims")
    return {str(agent): ClaimCount(*(int(n) for n in count)) for agent, count in found.items()}


def answer_json(answer: ReadResult | ClockMoved) -> dict[str, Any]:
    """A read's answer, as the server sends it (the store's change token as text)."""
    if isinstance(answer, ClockMoved):
        return {"clock_moved": True, "read": read_json(answer.read),
                "claims": _claims_json(answer.claims)}  # fmt: skip
    grouped = answer.grouped
    return {
        "clock_moved": False,
        "read": read_json(answer.read),
        "rows": [row.to_json() for row in answer.rows],
        "total": answer.total,
        "claims": _claims_json(answer.claims),
        "counts": answer.counts,
        "token": token_text(answer.token),
        "attention": answer.attention,
        "moves_at": _time(answer.moves_at),
        "grouped": None
        if grouped is None
        else {
            "keys": list(grouped.keys),
            "first_starts": grouped.first_starts,
            "edge_key": grouped.edge_key,
            "edge_starts": grouped.edge_starts,
            "header_first": grouped.header_first,
            "stream": grouped.stream,
            "groups": _groups_json(grouped.groups),
            "counts": None
            if grouped.counts is None
            else [[key, dict(counts)] for key, counts in grouped.counts.items()],
        },
    }


def answer_from(body: Any, read: Read) -> ReadResult | ClockMoved:
    """The server's answer to ``read`` (the console's own, which it keeps: its edge row is the
    very object the model holds)."""
    body = _object(body, "the answer")
    claims = _claims_from(body.get("claims", {}))
    if body.get("clock_moved"):
        return ClockMoved(read, claims)
    grouped = body.get("grouped")
    return ReadResult(
        read=read,
        rows=[_session(row) for row in body.get("rows", [])],
        total=body.get("total"),
        claims=claims,
        counts=None if body.get("counts") is None else _counts_from(body["counts"]),
        token=body.get("token"),
        attention=body.get("attention"),
        moves_at=_parse_time(body.get("moves_at"), "moves_at"),
        grouped=None
        if grouped is None
        else GroupedRows(
            keys=tuple(_key(key) for key in grouped.get("keys", [])),
            first_starts=bool(grouped.get("first_starts")),
            edge_key=_key(grouped.get("edge_key")),
            edge_starts=bool(grouped.get("edge_starts")),
            header_first=grouped.get("header_first"),
            stream=grouped.get("stream"),
            groups=_groups_from(grouped.get("groups")),
            counts=None
            if grouped.get("counts") is None
            else dict(_pair(pair) for pair in grouped["counts"]),
        ),
    )


ASKED_FIELDS = ("read", "filters", "order", "now", "known_total", "unless_token", "live_claims",
                "grouping", "folded", "groups")  # fmt: skip


def ids_from(body: Any) -> list[str]:
    return _texts(body, "ids")


def groups_json(groups: Groups) -> dict[str, Any] | None:
    return _groups_json(groups)


def groups_from(body: Any) -> Groups:
    found = _groups_from(body)
    if found is None:
        raise WireError("groups is an object.")
    return found
