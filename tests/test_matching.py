"""A filter decided in Python (store.reads.matching) and in SQL
(store.reads.keyset.filter_conditions) gives the same answer on SQLite and on PostgreSQL, for any
row a writer may have left; Python says "only the store can say" (None) only for values the store
never writes itself."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, insert, select

from roundtable_console.store.clock import format_ts
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.session_rows import SESSIONS
from roundtable_console.store.reads.listing import FilterSelection, Selection, SessionFilter
from roundtable_console.store.reads.matching import filter_admits, selection_admits
from roundtable_console.store.reads.sessions import (
    admitted_ids,
    count_selected,
    selection_condition,
)
from roundtable_console.store.records import SessionRecord
from roundtable_console.store.rules import ACTIVE_STATES
from tests.test_sessions import FILTER_CASES, _seed_for_filters

BASE = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
# Letters whose case the dialects could fold differently (Kelvin sign, dotted and dotless i,
# sharp s), LIKE's wildcards and escape, and plain ASCII in both cases.
ALPHABET = "aAbBiIzZ09_%/\\ -.éÉİıKßẞあ"
WORDS = st.text(alphabet=ALPHABET, min_size=1, max_size=6)
POOL = st.sampled_from(["a", "A", "ws-1", "WS-1", "é"])
STATUSES = st.one_of(st.sampled_from([*ACTIVE_STATES, "stopped", "ended", "Active"]), WORDS)
# Offsets from BASE, some a hair apart: SQLite orders to the millisecond.
OFFSETS = st.one_of(
    st.integers(-7200, 7200).map(lambda seconds: timedelta(seconds=seconds)),
    st.integers(-3000, 3000).map(lambda micro: timedelta(microseconds=micro)),
)


@st.composite
def timestamps(draw: st.DrawFn) -> str:
    """Every form a writer may have left: ours, the reference's, RFC 3339 with offsets and
    nanoseconds, forms only some readers take, and garbage."""
    moment = BASE + draw(OFFSETS)
    form = draw(st.integers(0, 9))
    if form == 0:
        return moment.strftime("%Y-%m-%d %H:%M:%S")  # CURRENT_TIMESTAMP
    if form == 1:
        offset = timedelta(hours=draw(st.integers(-14, 14)), minutes=draw(st.sampled_from([0, 30])))
        local = moment.astimezone(timezone(offset))
        return local.isoformat()
    if form == 2:
        nanos = draw(st.integers(0, 999))
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + f"{nanos:03d}Z"
    if form == 3:
        return moment.strftime("%Y-%m-%dT%H:%M:%S+0000")  # no colon: SQLite reads none
    if form == 4:
        # ("now" cannot be stored on SQLite: the index on julianday() refuses it.)
        return draw(st.sampled_from(["", "garbage", "2026-02-30 10:00:00",
                                     "2026-03-01T24:00:00Z", "2460000.5", "2026-03-01",
                                     "2026-03-01T12:00:00z", " 2026-03-01 12:00:00"]))  # fmt: skip
    return format_ts(moment)


def metadata_texts() -> st.SearchStrategy[str | None]:
    value = st.one_of(POOL, st.integers(), st.booleans(), st.none(), st.just({"x": 1}))
    as_json = st.dictionaries(st.sampled_from(["workspace_id", "branch"]), value).map(json.dumps)
    raw = st.sampled_from(
        [
            '{"workspace_id": "ws-1", "workspace_id": "a"}',
            '{"workspace\\u005fid": "ws-1"}',
            '{"workspace_id": "ws\\u002d1"}',
            '{"workspace_id": "ws-1", "n": 1e999999}',
            '{"workspace_id": "ws-1", "n": NaN}',
            '["workspace_id", "ws-1"]',
            '"workspace_id"',
            "workspace_id = ws-1",
            '{"workspace_id": "ws-1"',
            '{"workspace_id":\t"ws-1"}',
            '{"workspace_id": "ws-1\t"}',
            '{"workspaceXid": "ws-1"}',
        ]
    )
    return st.one_of(st.none(), as_json, raw)


@st.composite
def rows(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "agent_id": draw(POOL),
        "run_id": draw(POOL),
        "adapter": draw(WORDS),
        "provider": draw(st.one_of(st.none(), WORDS)),
        "model": draw(st.one_of(st.none(), WORDS)),
        "working_directory": "/w",
        "status": draw(STATUSES),
        "started_at": draw(timestamps()),
        "last_seen_at": draw(st.one_of(st.none(), timestamps())),
        "metadata_json": draw(metadata_texts()),
        "workspace_id": draw(st.one_of(st.none(), st.just(""), POOL)),
        "waiting_since": draw(st.one_of(st.none(), timestamps())),
        "host": draw(st.one_of(st.none(), POOL)),
    }


@st.composite
def filters(draw: st.DrawFn) -> SessionFilter:
    statuses = draw(st.lists(STATUSES, max_size=2))
    stale = draw(st.one_of(st.none(), OFFSETS.map(lambda offset: BASE + offset)))
    return SessionFilter(
        statuses=tuple(statuses),
        agent_id=draw(st.one_of(st.none(), POOL)),
        run_id=draw(st.one_of(st.none(), POOL)),
        workspace_id=draw(st.one_of(st.none(), POOL)),
        host=draw(st.one_of(st.none(), POOL)),
        active_only=draw(st.booleans()),
        stale_before=stale,
        text=draw(st.one_of(st.none(), st.just("  "), WORDS)),
        waiting=draw(st.booleans()),
    )


# Filters with one field each, so most rows pass some and fail others.
ONE_FIELD = st.one_of(
    st.builds(SessionFilter, text=WORDS),
    st.builds(SessionFilter, stale_before=OFFSETS.map(lambda offset: BASE + offset)),
    st.builds(SessionFilter, workspace_id=POOL),
    st.builds(SessionFilter, host=POOL),
    st.builds(SessionFilter, statuses=st.lists(STATUSES, max_size=2).map(tuple)),
    st.builds(SessionFilter, waiting=st.just(True)),
)
ANY_FILTER = st.one_of(filters(), ONE_FIELD)


def write_rows(store: Store, values: list[dict[str, Any]]) -> list[SessionRecord]:
    """The rows, written raw (as any writer may), read back as the store returns them."""
    with store.write() as db:
        db.execute(delete(SESSIONS))
        for number, row in enumerate(values):
            db.execute(insert(SESSIONS).values(id=f"s{number}", **row))
    with store.read() as db:
        return [SessionRecord(row._mapping) for row in db.execute(select(SESSIONS)).all()]


def sql_ids(store: Store, condition: Any) -> set[str]:
    with store.read() as db:
        return {
            str(found) for found in db.execute(select(SESSIONS.c.id).where(condition)).scalars()
        }


def filter_ids(store: Store, chosen: SessionFilter) -> set[str]:
    return sql_ids(store, selection_condition(Selection(by_filter=(FilterSelection(chosen),))))


HYPOTHESIS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@HYPOTHESIS
@given(values=st.lists(rows(), min_size=1, max_size=8), chosen=st.lists(ANY_FILTER, max_size=4))
def test_python_and_sql_never_disagree(
    store: Store, values: list[dict[str, Any]], chosen: list[SessionFilter]
) -> None:
    records = write_rows(store, values)
    for each in chosen:
        admitted = filter_ids(store, each)
        for record in records:
            verdict = filter_admits(each, record)
            if verdict is not None:
                assert verdict == (record.id in admitted), (each, record.column_values())
        # What Python leaves open, the store decides, row by row as in bulk.
        open_ids = [r.id for r in records if filter_admits(each, r) is None]
        with store.read() as db:
            assert admitted_ids(db=db, filters=each, ids=open_ids) == admitted & set(open_ids)


@st.composite
def ordinary_rows(draw: st.DrawFn) -> dict[str, Any]:
    """Rows as the store writes them: its own timestamps, metadata written by validation."""
    row = draw(rows())
    row["started_at"] = format_ts(BASE + draw(OFFSETS))
    row["last_seen_at"] = draw(st.one_of(st.none(), OFFSETS.map(lambda o: format_ts(BASE + o))))
    workspace = draw(st.one_of(st.none(), POOL))
    row["metadata_json"] = json.dumps({"workspace_id": workspace}) if workspace else None
    row["workspace_id"] = draw(st.one_of(st.none(), POOL))
    return row


@HYPOTHESIS
@given(values=st.lists(ordinary_rows(), min_size=1, max_size=8), chosen=ANY_FILTER)
def test_rows_the_store_writes_are_decided_in_python(
    store: Store, values: list[dict[str, Any]], chosen: SessionFilter
) -> None:
    records = write_rows(store, values)
    if chosen.stale_before is not None:
        seen = [r.last_seen_at or r.started_at for r in records]
        cutoff = chosen.stale_before
        assume(all(abs(parse(text) - cutoff) > timedelta(milliseconds=2) for text in seen))
    admitted = filter_ids(store, chosen)
    for record in records:
        assert filter_admits(chosen, record) == (record.id in admitted), record.column_values()


def parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@HYPOTHESIS
@given(
    values=st.lists(rows(), min_size=1, max_size=8),
    chosen=st.lists(ANY_FILTER, max_size=3),
    picked=st.sets(st.integers(0, 9)),
    excluded=st.sets(st.integers(0, 9)),
)
def test_a_selection_is_decided_and_counted_as_sql_does(
    store: Store,
    values: list[dict[str, Any]],
    chosen: list[SessionFilter],
    picked: set[int],
    excluded: set[int],
) -> None:
    records = write_rows(store, values)
    selection = Selection(
        ids=frozenset(f"s{n}" for n in picked),
        by_filter=tuple(
            FilterSelection(each, frozenset(f"s{n}" for n in excluded)) for each in chosen
        ),
    )
    held = sql_ids(store, selection_condition(selection))
    for record in records:
        verdict = selection_admits(selection, record)
        if verdict is not None:
            assert verdict == (record.id in held)
    with store.read() as db:
        assert count_selected(db=db, selection=selection) == len(held)


@pytest.mark.parametrize(("chosen", "expected"), FILTER_CASES)
def test_the_listing_cases_are_decided_in_python_as_listed(
    store: Store, clock: Any, chosen: SessionFilter, expected: list[str]
) -> None:
    _seed_for_filters(store, clock)
    with store.read() as db:
        records = [SessionRecord(row._mapping) for row in db.execute(select(SESSIONS)).all()]
    assert sorted(r.id for r in records if filter_admits(chosen, r)) == sorted(expected)


def record(**values: Any) -> SessionRecord:
    row = {name: None for name in SESSIONS.c.keys()}  # noqa: C420 - a row of NULLs first
    row.update(id="s", agent_id="a", run_id="r", adapter="codex", working_directory="/w")
    row.update(status="active", started_at=format_ts(BASE), version=0)
    row.update(values)
    return SessionRecord(row)


def test_only_values_the_store_never_writes_are_left_to_it() -> None:
    stale = SessionFilter(stale_before=BASE)
    assert filter_admits(stale, record(last_seen_at=format_ts(BASE - timedelta(hours=1))))
    assert filter_admits(stale, record(last_seen_at="2026-03-01 11:00:00")) is True
    assert filter_admits(stale, record(last_seen_at="2026-03-01T13:00:00+02:00")) is True
    assert filter_admits(stale, record(last_seen_at="2026-03-01T13:00:00+0200")) is None
    assert filter_admits(stale, record(last_seen_at=format_ts(BASE))) is None  # a tie
    assert filter_admits(stale, record(last_seen_at=None, started_at="garbage")) is None
    assert filter_admits(stale, record(status="ended", last_seen_at="garbage")) is False
    workspace = SessionFilter(workspace_id="w")
    assert filter_admits(workspace, record(metadata_json='{"workspace_id": "w"}')) is True
    assert filter_admits(workspace, record(metadata_json='{"workspace_id": 5}')) is None
    assert filter_admits(workspace, record(metadata_json='{"branch": "w"}')) is False
    # The column wins even when empty, as COALESCE has it (the detail screen shows the metadata's).
    empty_column = record(workspace_id="", metadata_json='{"workspace_id": "w"}')
    assert filter_admits(workspace, empty_column) is False
    text = SessionFilter(text="ÉA")
    assert filter_admits(text, record(model="ÉAx")) is True
    assert filter_admits(text, record(model="éa")) is False  # ASCII letters fold, others not
    assert filter_admits(SessionFilter(text="zz"), record(id="\x00zz")) is None


def test_the_text_filter_folds_ascii_only_whatever_the_servers_locale(pg_server: Any) -> None:
    """A database whose locale folds every letter (C.UTF-8) still folds only ASCII letters in
    the text filter, as SQLite and store.reads.matching do."""
    from sqlalchemy import create_engine, text

    from roundtable_console.store.db.database import open_store

    admin = create_engine(pg_server.url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(
            text(
                "CREATE DATABASE rt_unicode_ctype TEMPLATE template0 ENCODING 'UTF8' "
                "LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8'"
            )
        )
    admin.dispose()
    store = open_store(pg_server.url("rt_unicode_ctype"))
    try:
        records = write_rows(store, [{**ROW, "model": "Élan"}, {**ROW, "model": "ALPHA"}])
        for needle, expected in (("élan", set()), ("Élan", {"s0"}), ("alpha", {"s1"})):
            chosen = SessionFilter(text=needle)
            assert filter_ids(store, chosen) == expected, needle
            assert {r.id for r in records if filter_admits(chosen, r)} == expected, needle
    finally:
        store.dispose()


ROW: dict[str, Any] = {
    "agent_id": "a",
    "run_id": "r",
    "adapter": "codex",
    "working_directory": "/w",
    "status": "active",
    "started_at": format_ts(BASE),
}


def test_a_time_a_hair_from_the_cutoff_is_left_to_the_store(store: Store) -> None:
    """SQLite rounds both to the millisecond (the same one here): not before; PostgreSQL keeps
    the microseconds: before. Python cannot speak for both."""
    seen = format_ts(BASE + timedelta(microseconds=100))
    records = write_rows(store, [{**ROW, "last_seen_at": seen}])
    chosen = SessionFilter(stale_before=BASE + timedelta(microseconds=400))
    assert filter_admits(chosen, records[0]) is None
    with store.read() as db:
        decided = admitted_ids(db=db, filters=chosen, ids=["s0"])
    assert decided == (set() if store.dialect == "sqlite" else {"s0"})
