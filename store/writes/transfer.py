"""Import and export (``docs/operations.md#backups``): JSON Lines, one record a line, the table's
column names as fields, ``kind`` naming the table.

Export streams each table in id order, so a store of any size costs a batch of memory. Import runs
in the caller's write transaction: entity kinds are upserted by id (a record replaces the row; an
omitted column takes its default), history kinds are appended without ever duplicating a row an
earlier import of the same export wrote. The first bad line raises ``InvalidImport`` naming it, and
the caller's transaction rolls back, so nothing is written.
"""

from __future__ import annotations

import json
import json.scanner
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Table, exc, func, select, text

from roundtable_console.store import validation
from roundtable_console.store.clock import Clock, format_ts, system_clock
from roundtable_console.store.db.models import HISTORY_KINDS, RECORD_TABLES
from roundtable_console.store.errors import InvalidImport, StoreError
from roundtable_console.store.writes.agent_writes import bulk_session_writes
from roundtable_console.store.writes.history import Prepared, prepared_insert

# kind → table, in export order (store.db.models.RECORD_TABLES); idempotency_keys are not exported.
TABLES: dict[str, Table] = RECORD_TABLES
# kind → table name.
KINDS: dict[str, str] = {kind: table.name for kind, table in TABLES.items()}

# Reference columns whose default is CURRENT_TIMESTAMP; the others' defaults are on the models.
_NOW_DEFAULTS = frozenset(
    {
        ("runs", "started_at"),
        ("events", "created_at"),
        ("agent_sessions", "started_at"),
        ("agent_session_events", "created_at"),
    }
)
EXPORT_BATCH = 1000
IMPORT_BATCH = 500
_INT_RANGE = {"postgresql": (-(2**31), 2**31 - 1), "sqlite": (-(2**63), 2**63 - 1)}


# ---------------------------------------------------------------------------------------- export


def export_records(*, db: Connection, write: Callable[[str], None]) -> dict[str, int]:
    """Write every record as one JSON line, table by table in ``KINDS`` order, rows in id order.
    Returns how many records of each kind were written."""
    counts: dict[str, int] = {}
    for kind, table in TABLES.items():
        counts[kind] = 0
        for row in _stream(db, table):
            write(encode_record(kind, row))
            counts[kind] += 1
    return counts


def _stream(db: Connection, table: Table) -> Iterator[dict[str, Any]]:
    statement = select(table).order_by(*table.primary_key.columns)
    result = db.execute(statement, execution_options={"yield_per": EXPORT_BATCH})
    for row in result:
        yield dict(row._mapping)


def encode_record(kind: str, values: dict[str, Any]) -> str:
    """One JSON line: ``kind`` first, then the columns in table order. ASCII only, so no line
    separator splits a record and no control or bidi character reaches a terminal."""
    return json.dumps({"kind": kind, **values}, separators=(",", ":")) + "\n"


# ---------------------------------------------------------------------------------------- import

_MISSING = object()
_NOW = object()  # the default is the import's own time (CURRENT_TIMESTAMP in the reference)


@dataclass(frozen=True)
class _Column:
    """What validating one column of a record needs, worked out once per table."""

    name: str
    nullable: bool
    integer: bool
    default: Any  # a value, _NOW, or _MISSING when the column has none

    @classmethod
    def of(cls, column: Any) -> _Column:
        if (column.table.name, column.name) in _NOW_DEFAULTS:
            default = _NOW
        elif column.default is not None:
            default = column.default.arg
        else:
            default = None if column.nullable else _MISSING
        return cls(column.name, column.nullable, column.type.python_type is int, default)


_COLUMNS: dict[str, tuple[_Column, ...]] = {
    kind: tuple(_Column.of(column) for column in table.columns) for kind, table in TABLES.items()
}
_COLUMN_NAMES: dict[str, frozenset[str]] = {
    kind: frozenset(column.name for column in columns) for kind, columns in _COLUMNS.items()
}
# History rows go straight to the DBAPI in one executemany per batch
# (store.writes.history.Prepared): with their ids when those are free, without them (a new id)
# otherwise.
_APPENDS: dict[str, tuple[Prepared, Prepared]] = {
    kind: (
        prepared_insert(TABLES[kind], [column.name for column in _COLUMNS[kind]]),
        prepared_insert(TABLES[kind], [c.name for c in _COLUMNS[kind] if c.name != "id"]),
    )
    for kind in HISTORY_KINDS
}
_SCAN = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[no-untyped-call]


def _decode(line: str) -> Any:
    """``json.loads(line)`` without its per-call overhead; anything unusual (leading
    whitespace, trailing data, an error) goes through ``json.loads`` itself, so the result and
    every error message are exactly its own."""
    try:
        value, end = _SCAN(line, 0)
    except (StopIteration, ValueError, RecursionError):
        return json.loads(line)
    rest = len(line) - end
    if rest and not (rest == 1 and line[end] == "\n") and not line[end:].isspace():
        return json.loads(line)
    return value


@dataclass
class _Batch:
    """Consecutive records that can go to the database in one executemany."""

    kind: str
    variant: bool
    rows: list[dict[str, Any]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)


def import_records(
    *, db: Connection, lines: Iterable[str], clock: Clock = system_clock
) -> dict[str, int]:
    """Apply an export in the caller's write transaction. Returns the records read per kind.

    Raises ``InvalidImport`` naming the first bad line; the caller's transaction must then roll
    back (``Store.write()`` does), so nothing is written."""
    with bulk_session_writes(db=db):
        importer = _Importer(db, format_ts(clock()))
        parse, add = importer.parse, importer.add  # this loop runs once per line
        for number, line in enumerate(lines, start=1):
            if number == 1:
                line = line.removeprefix("\ufeff")
            if not line or line.isspace():
                continue
            kind, row = parse(number, line)
            add(number, kind, row)
        importer.flush()
        importer.sync_sequences()
    return importer.counts


class _Importer:
    def __init__(self, db: Connection, now: str) -> None:
        self.db = db
        self.now = now
        self.dialect = db.dialect.name
        self.int_range = _INT_RANGE.get(self.dialect, _INT_RANGE["sqlite"])
        self.refuses_nul = self.dialect == "postgresql"
        self.counts: dict[str, int] = dict.fromkeys(KINDS, 0)
        self.batch: _Batch | None = None
        self.unsynced: set[str] = set()
        # Per history table, an id no stored row exceeds (None: ask the database): records
        # with larger ids need no lookup to be known free.
        self.largest_ids: dict[str, int | None] = {}

    # -- validation

    def parse(self, number: int, line: str) -> tuple[str, dict[str, Any]]:
        try:
            record = _decode(line)
        except json.JSONDecodeError as error:
            raise _bad(number, f"not JSON: {error.msg} at character {error.pos}") from None
        except RecursionError:
            raise _bad(number, "the record is nested too deeply") from None
        if not isinstance(record, dict):
            raise _bad(number, f"a record must be a JSON object, not {_type_name(record)}")
        kind = record.pop("kind", _MISSING)
        if kind is _MISSING:
            raise _bad(number, 'the record has no "kind"')
        if not isinstance(kind, str) or kind not in KINDS:
            raise _bad(number, f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
        return kind, self._row(number, kind, record)

    def _row(self, number: int, kind: str, record: dict[str, Any]) -> dict[str, Any]:
        if not _COLUMN_NAMES[kind].issuperset(record):
            unknown = sorted(set(record) - _COLUMN_NAMES[kind])
            raise _bad(number, f"unknown column {unknown[0]!r} for kind {kind}")
        low, high = self.int_range
        # The record becomes the row in place. The usual value is checked inline: a string for
        # a text column, an integer in range for an integer one (this loop runs for every
        # column of every record); anything else is validated, defaulted or refused by _fill.
        for column in _COLUMNS[kind]:
            value = record.get(column.name, _MISSING)
            found = type(value)
            if found is str and not column.integer and not self.refuses_nul:
                continue
            if found is int and column.integer and low <= value <= high:
                continue
            self._fill(number, kind, column, value, record)
        if kind == "session":
            self._check_session(number, record)
        return record

    def _fill(
        self, number: int, kind: str, column: _Column, value: Any, row: dict[str, Any]
    ) -> None:
        """Any other value of a column, or its absence: validated, defaulted or refused."""
        name = column.name
        history = kind in HISTORY_KINDS
        if history and name == "id" and value in (None, _MISSING):
            row.pop("id", None)  # no id: the row is appended with a new one
            return
        if value is not _MISSING:
            row[name] = self._value(number, kind, column, value)
        elif kind == "session" and name == "version":
            return  # decided at write time: 0 when new, one more when replacing
        elif column.default is _NOW:
            row[name] = self.now
        elif column.default is _MISSING:
            raise _bad(number, f"missing required column {name!r} for kind {kind}")
        else:
            row[name] = column.default

    def _value(self, number: int, kind: str, column: _Column, value: Any) -> Any:
        name = column.name
        if type(value) is str and not column.integer:
            if self.refuses_nul and "\x00" in value:
                raise _bad(
                    number, f"column {name!r} contains a NUL character, which PostgreSQL refuses"
                )
            return value
        if value is None:
            if not column.nullable:
                raise _bad(number, f"column {name!r} of kind {kind} must not be null")
            return None
        if column.integer:
            if isinstance(value, bool) or not isinstance(value, int):
                raise _bad(number, f"column {name!r} must be an integer, not {_type_name(value)}")
            low, high = self.int_range
            if not low <= value <= high:
                raise _bad(number, f"column {name!r} must be an integer from {low} to {high}")
            return value
        raise _bad(number, f"column {name!r} must be a string or null, not {_type_name(value)}")

    def _check_session(self, number: int, row: dict[str, Any]) -> None:
        metadata = row.get("metadata_json")
        if metadata is not None:
            try:
                decoded = json.loads(metadata)
            except json.JSONDecodeError as error:
                raise _bad(
                    number, f"metadata_json is not JSON: {error.msg} at character {error.pos}"
                ) from None
            except RecursionError:
                raise _bad(number, "metadata_json is nested too deeply") from None
            if not isinstance(decoded, dict):
                raise _bad(
                    number, f"metadata_json must be a JSON object, not {_type_name(decoded)}"
                )
        try:
            validation.status(row["status"])
        except StoreError as error:
            raise _bad(number, f"status: {error.message}") from None

    # -- batching

    def add(self, number: int, kind: str, row: dict[str, Any]) -> None:
        variant = kind == "session" and "version" in row
        batch = self.batch
        if (
            batch is None
            or batch.kind != kind
            or batch.variant != variant
            or len(batch.rows) >= IMPORT_BATCH
        ):
            self.flush()
            batch = self.batch = _Batch(kind=kind, variant=variant)
        batch.rows.append(row)
        batch.lines.append(number)
        self.counts[kind] += 1

    def flush(self) -> None:
        batch, self.batch = self.batch, None
        if batch is None:
            return
        if batch.kind in HISTORY_KINDS:
            self._append(batch)
        else:
            self._upsert(batch)

    def _upsert(self, batch: _Batch) -> None:
        table = TABLES[batch.kind]
        statement = _dialect_insert(self.dialect)(table)
        replaced: dict[str, Any] = {
            name: statement.excluded[name] for name in batch.rows[0] if name != "id"
        }
        if batch.kind == "session" and not batch.variant:
            # No version given: a new row starts at 0, a replaced one moves on, so an operator
            # holding the old version learns the row changed.
            replaced["version"] = table.c.version + 1
            for row in batch.rows:
                row["version"] = 0
        statement = statement.on_conflict_do_update(index_elements=["id"], set_=replaced)
        self._execute(statement, batch.rows, batch.lines)

    def _append(self, batch: _Batch) -> None:
        """History rows keep their id when it is free, are skipped when that id already holds the
        same content (a re-import), and get a new id when it holds something else."""
        table = TABLES[batch.kind]
        largest = self._largest_id(table)
        with_ids, without_ids = _APPENDS[batch.kind]
        ids = [row.get("id") for row in batch.rows]
        if None not in ids and ids[0] > largest and all(map(int.__lt__, ids, ids[1:])):
            # An export's own shape: ascending ids beyond every stored one, so all are free.
            self._keep(table, with_ids, batch.rows, batch.lines, ids[-1])
            return
        # Only ids up to the largest stored one can be taken: look those up, nothing else.
        suspects = {row["id"] for row in batch.rows if "id" in row and row["id"] <= largest}
        stored: dict[int, dict[str, Any]] = {}
        if suspects:
            found = self.db.execute(select(table).where(table.c.id.in_(suspects)))
            stored = {row.id: dict(row._mapping) for row in found}
        keep: list[tuple[dict[str, Any], int]] = []
        fresh: list[tuple[dict[str, Any], int]] = []
        for row, number in zip(batch.rows, batch.lines, strict=True):
            if "id" not in row:
                fresh.append((row, number))
                continue
            existing = stored.get(row["id"])
            if existing is None:
                stored[row["id"]] = row
                keep.append((row, number))
            elif _content(existing) != _content(row):
                fresh.append(({k: v for k, v in row.items() if k != "id"}, number))
        if keep:
            rows, lines = _unzip(keep)
            self._keep(table, with_ids, rows, lines, max(largest, *(row["id"] for row in rows)))
        if fresh:
            self._execute(without_ids, *_unzip(fresh))
            self.largest_ids[table.name] = None  # the database chose the new ids

    def _keep(
        self,
        table: Table,
        statement: Prepared,
        rows: list[dict[str, Any]],
        lines: list[int],
        largest: int,
    ) -> None:
        """Insert rows with their own (free) ids; ``largest`` is now the largest stored id."""
        self._execute(statement, rows, lines)
        self.largest_ids[table.name] = largest
        self.unsynced.add(table.name)
        self.sync_sequences()

    def _largest_id(self, table: Table) -> int:
        largest = self.largest_ids.get(table.name)
        if largest is None:
            largest = self.db.execute(select(func.max(table.c.id))).scalar() or 0
            self.largest_ids[table.name] = largest
        return largest

    def _execute(self, statement: Any, rows: list[dict[str, Any]], lines: list[int]) -> None:
        try:
            with self.db.begin_nested():
                self._send(statement, rows)
        except (exc.IntegrityError, exc.DataError):
            self._replay_one_by_one(statement, rows, lines)

    def _send(self, statement: Any, rows: list[dict[str, Any]]) -> None:
        if isinstance(statement, Prepared):
            statement.executemany(self.db, rows)
        else:
            self.db.execute(statement, rows)

    def _replay_one_by_one(
        self, statement: Any, rows: list[dict[str, Any]], lines: list[int]
    ) -> None:
        """The batch was refused as a whole; replay it row by row to name the line."""
        for row, number in zip(rows, lines, strict=True):
            try:
                with self.db.begin_nested():
                    self._send(statement, [row])
            except (exc.IntegrityError, exc.DataError) as error:
                reason = str(error.orig).strip().splitlines()[0] if error.orig else str(error)
                raise _bad(number, f"the database refused the record: {reason}") from None

    def sync_sequences(self) -> None:
        """After explicit ids on PostgreSQL, move each serial past the largest id, so rows
        appended later (by this import or anyone) get free ids. SQLite's AUTOINCREMENT does
        this by itself."""
        if self.dialect == "postgresql":
            for name in sorted(self.unsynced):
                self.db.execute(
                    text(
                        "SELECT setval(pg_get_serial_sequence(:table, 'id'), max_id) "
                        f"FROM (SELECT max(id) AS max_id FROM {name}) AS largest "
                        "WHERE max_id IS NOT NULL"
                    ),
                    {"table": name},
                )
        self.unsynced.clear()


def _dialect_insert(dialect: str) -> Any:
    """The dialect's INSERT with ON CONFLICT, imported when an import upserts (the PostgreSQL
    dialect is costly to import and the agent-facing commands never need it)."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert


def _unzip(pairs: list[tuple[dict[str, Any], int]]) -> tuple[list[dict[str, Any]], list[int]]:
    return [row for row, _ in pairs], [number for _, number in pairs]


def _type_name(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", float: "number"}
    if value is None:
        return "null"
    return names.get(type(value), "integer" if isinstance(value, int) else type(value).__name__)


def _bad(number: int, reason: str) -> InvalidImport:
    return InvalidImport(f"line {number}: {reason.rstrip('.')}.", details={"line": number})


__all__ = ["KINDS", "HISTORY_KINDS", "TABLES", "export_records", "import_records", "encode_record"]


# Set by the database itself (migration 0009: the role that wrote a history row): a re-imported
# row is the same row whoever imports it.
_SET_BY_DATABASE = frozenset({"db_user"})


def _content(row: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in row.items() if name not in _SET_BY_DATABASE}
