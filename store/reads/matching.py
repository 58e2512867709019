"""A ``SessionFilter`` decided in Python for a session in hand, as ``store.reads.keyset`` decides it
in SQL (``filter_conditions``), on SQLite and on PostgreSQL alike.

The console shows which rows a selection held as a filter covers (``store.reads.listing.Selection``)
without asking the store. The answer is True or False wherever both dialects and Python read the
row's values alike, and None where only the store can say (``store.reads.sessions.admitted_ids``).
That happens only for values the store never writes itself:

- a timestamp in another form than ``YYYY-MM-DD[T ]HH:MM:SS[.fraction][Z|±HH:MM]``: SQLite's
  ``julianday`` reads more forms than PostgreSQL's ``rt_ts_key`` and Python's ``parse_ts`` do;
  or one within a few milliseconds of the stale cutoff (SQLite orders to the millisecond, and
  rounds; PostgreSQL to the microsecond, and rounds; Python truncates);
- a workspace from metadata that is not plain JSON: the key spelt with escapes, ``\\u0000`` or
  half a surrogate pair, a ``workspace_id`` given twice (SQLite reads the first, PostgreSQL the
  last), a value that is not a string, numbers or nesting one side reads and the other refuses;
- a NUL character in a text field (SQLite's LIKE stops at it; PostgreSQL cannot hold one).

The text filter folds ASCII letters only, on every backend (``store.reads.sqlfuncs.ascii_case``).

tests/test_matching.py holds both sides to the same answers on both backends (Hypothesis).
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import Any

from roundtable_console.store.clock import format_ts, parse_ts
from roundtable_console.store.reads.listing import TEXT_COLUMNS, Selection, SessionFilter
from roundtable_console.store.records import SessionFields
from roundtable_console.store.rules import ACTIVE_STATES

# Timestamps that SQLite, PostgreSQL and parse_ts all read as one instant (SQLite reads offsets
# up to 14 hours, and only with a colon).
_PLAIN_TS = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-](?:0\d|1[0-4]):[0-5]\d)?"
)
# Closer than this to the stale cutoff, the sides' roundings may order a time differently.
_TIE = timedelta(milliseconds=2)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# Metadata nested deeper than this may be refused by one side (SQLite: 1000 levels).
_MAX_BRACKETS = 500
# rt_metadata_workspace looks only in text LIKE '%workspace_id%' ("_" stands for any character).
_WORKSPACE_LIKE = re.compile("workspace.id", re.DOTALL)
# The key as written, unescaped: each object key "workspace_id" must be spelt so.
_WORKSPACE_KEY = re.compile(r'"workspace_id"\s*:')
_SURROGATE_ESCAPE = re.compile(r"\\u([dD][89a-fA-F][0-9a-fA-F]{2})")
# A JSON number longer than this, or with a larger exponent, may be refused by PostgreSQL.
_MAX_NUMBER_LENGTH = 40
_MAX_EXPONENT = 300


class _Unknown(Exception):
    """Only the store can say."""


class _Null:
    """SQL's NULL: a value no comparison lets through."""


NULL = _Null()


def filter_admits(filters: SessionFilter, session: SessionFields) -> bool | None:
    """Whether ``filters`` lets ``session`` through, as ``store.reads.keyset.filter_conditions``
    says in SQL; None when only the store can say (see the module's docstring)."""
    if filters.statuses and session.status not in filters.statuses:
        return False
    if filters.agent_id is not None and session.agent_id != filters.agent_id:
        return False
    if filters.run_id is not None and session.run_id != filters.run_id:
        return False
    if filters.host is not None and session.host != filters.host:
        return False
    active_only = filters.active_only or filters.stale_before is not None or filters.waiting
    if active_only and session.status not in ACTIVE_STATES:
        return False
    if filters.waiting and session.waiting_since is None:
        return False
    verdicts = []
    if filters.workspace_id is not None:
        verdicts.append(_workspace_is(session, filters.workspace_id))
    if filters.without_workspace:
        verdicts.append(_without_workspace(session))
    if filters.stale_before is not None:
        verdicts.append(_seen_before(session, filters.stale_before))
    if filters.text and filters.text.strip():
        verdicts.append(_text_in(session, filters.text.strip()))
    if False in verdicts:
        return False
    return None if None in verdicts else True


def selection_admits(selection: Selection, session: SessionFields) -> bool | None:
    """Whether ``selection`` holds ``session``; None when only the store can say."""
    if session.id in selection.ids:
        return True
    verdict: bool | None = False
    for chosen in selection.by_filter:
        if session.id in chosen.excluded:
            continue
        admits = filter_admits(chosen.filters, session)
        if admits:
            return True
        if admits is None:
            verdict = None
    return verdict


def ascii_lower(text: str) -> str:
    """``text`` with the ASCII letters in lower case, every other character as it is (SQLite's
    ``lower()``; PostgreSQL's under the "C" collation)."""
    return text.translate(_ASCII_LOWER)


def _text_in(session: SessionFields, needle: str) -> bool | None:
    """SQL: ``lower(column) LIKE '%' || lower(needle) || '%'`` (wildcards escaped), in any of
    the text columns; a NULL column matches nothing."""
    if "\x00" in needle:
        return None
    folded = ascii_lower(needle)
    verdict: bool | None = False
    for name in TEXT_COLUMNS:
        value = getattr(session, name)
        if value is None:
            continue
        if "\x00" in value:
            verdict = None
        elif folded in ascii_lower(value):
            return True
    return verdict


def _seen_before(session: SessionFields, cutoff: datetime) -> bool | None:
    """SQL: ``coalesce(ts_key(last_seen_at), ts_key(started_at)) < ts_key(cutoff)``."""
    try:
        seen = instant(session.last_seen_at)
        if seen is NULL:
            seen = instant(session.started_at)
    except _Unknown:
        return None
    if not isinstance(seen, datetime):
        return False
    # The cutoff as SQL sees it: written as text by format_ts, then read.
    bound = parse_ts(format_ts(cutoff))
    if bound is None or abs(seen - bound) <= _TIE:
        return None
    return seen < bound


def instant(text: str | None) -> datetime | _Null:
    """A timestamp's instant as every side reads it, or NULL when every side reads none;
    ``_Unknown`` when the sides may disagree."""
    if not text:
        return NULL
    if not _PLAIN_TS.fullmatch(text):
        raise _Unknown
    try:
        moment = parse_ts(text)
    except (OverflowError, ValueError):
        moment = None
    if moment is None:
        raise _Unknown  # a day or an hour out of range: SQLite reads some of those
    return moment


def _workspace_is(session: SessionFields, wanted: str) -> bool | None:
    """SQL: ``coalesce(workspace_id, <workspace_id in the metadata>) = wanted``."""
    if session.workspace_id is not None:
        return session.workspace_id == wanted
    try:
        found = metadata_workspace(session.metadata_json)
    except _Unknown:
        return None
    return found == wanted if isinstance(found, str) else False


def _without_workspace(session: SessionFields) -> bool | None:
    """SQL: ``coalesce(workspace_id, <workspace_id in the metadata>) IS NULL``."""
    if session.workspace_id is not None:
        return False
    try:
        return metadata_workspace(session.metadata_json) is NULL
    except _Unknown:
        return None


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as its pairs, in order, duplicates kept."""


def _refuse(_literal: str) -> Any:
    raise _Unknown  # NaN, Infinity: Python reads them, SQLite and PostgreSQL do not


class _Number(str):
    """A JSON number, as written (never taken for a string value)."""


def _number(literal: str) -> _Number:
    """A JSON number, refused when PostgreSQL might not hold it."""
    _mantissa, _, exponent = literal.lower().partition("e")
    if len(literal) > _MAX_NUMBER_LENGTH or (exponent and abs(int(exponent)) > _MAX_EXPONENT):
        raise _Unknown
    return _Number(literal)


def _lone_surrogate(text: str) -> bool:
    """Whether the JSON text escapes half a surrogate pair (PostgreSQL refuses it; SQLite
    writes bytes that are not UTF-8)."""
    escapes = [(m.start(), m.end(), int(m[1], 16)) for m in _SURROGATE_ESCAPE.finditer(text)]
    index = 0
    while index < len(escapes):
        _start, end, code = escapes[index]
        after = escapes[index + 1] if index + 1 < len(escapes) else None
        if code < 0xDC00 and after is not None and after[0] == end and after[2] >= 0xDC00:
            index += 2
            continue
        return True
    return False


def metadata_workspace(text: str | None) -> str | _Null:
    """The ``workspace_id`` string of a session's metadata as both dialects read it (SQLite:
    ``json_extract`` when ``json_valid``; PostgreSQL: ``rt_metadata_workspace``), or NULL;
    ``_Unknown`` when they may disagree."""
    if text is None:
        return NULL
    if not _WORKSPACE_LIKE.search(text):
        if "\\" in text:
            raise _Unknown  # the key may be spelt with escapes: SQLite finds none, PG looks
        return NULL  # PostgreSQL does not look further; SQLite finds no such key
    if "\\u0000" in text or _lone_surrogate(text):
        raise _Unknown  # PostgreSQL refuses the whole text; SQLite reads on
    if text.count("[") + text.count("{") > _MAX_BRACKETS:
        raise _Unknown
    keys = 0

    def pairs(found: list[tuple[str, Any]]) -> _Pairs:
        nonlocal keys
        keys += sum(key == "workspace_id" for key, _value in found)
        return _Pairs(found)

    try:
        decoded = json.loads(
            text,
            object_pairs_hook=pairs,
            parse_constant=_refuse,
            parse_int=_number,
            parse_float=_number,
        )
    except (ValueError, RecursionError):
        raise _Unknown from None  # not JSON to Python: SQLite's reader is not Python's
    if keys != len(_WORKSPACE_KEY.findall(text)):
        raise _Unknown  # a key spelt with escapes: SQLite (3.40) compares keys as written
    if not isinstance(decoded, _Pairs):
        return NULL  # an array or a scalar has no such key
    values = [value for key, value in decoded if key == "workspace_id"]
    if not values:
        return NULL
    if len(values) > 1:
        raise _Unknown  # SQLite reads the first, PostgreSQL the last
    value = values[0]
    if value is None:
        return NULL
    if not isinstance(value, str) or isinstance(value, _Number):
        raise _Unknown  # a number, a boolean, an object: each side writes it as other text
    return value
