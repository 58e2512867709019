"""SQL expressions that differ by dialect, compiled per dialect and backed by indexes.

``ts_key``: a sortable key for timestamp text, whatever form the reference wrote it in.

The reference store mixes ``CURRENT_TIMESTAMP`` text with RFC 3339 (with and without nanoseconds);
as text those do not sort chronologically. ``ts_key(column)`` compiles to an expression that does:
``julianday(x)`` on SQLite and the immutable ``rt_ts_key(x)`` function on PostgreSQL (created by
migration 0002, as are ``rt_metadata_workspace`` and the indexes; 0006 stores the session list's
two keys as columns, 0008 the workspace). Indexes are built on the same expressions, so ordering
and keyset pages use them: each migration keeps its own copy of the text, and
tests/test_database.py checks they agree.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Column
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import Float, Integer, String

from roundtable_console.store.reads.attention_sql import (
    PG_ATTENTION_COLUMNS,
    attention_key_sql,
    attention_tier_sql,
)
from roundtable_console.store.reads.listing import PG_STORED_KEYS


class ts_key(FunctionElement[Any]):  # noqa: N801 - reads like the SQL function it stands for
    type = Float()
    name = "ts_key"
    inherit_cache = True


@compiles(ts_key, "sqlite")
def _ts_key_sqlite(element: ts_key, compiler: Any, **kw: Any) -> str:
    return f"julianday({compiler.process(element.clauses, **kw)})"


@compiles(ts_key, "postgresql")
def _ts_key_postgresql(element: ts_key, compiler: Any, **kw: Any) -> str:
    (argument,) = element.clauses.clauses
    table = getattr(argument, "table", None)
    if isinstance(argument, Column) and getattr(table, "name", None) == "agent_sessions":
        stored = PG_STORED_KEYS.get(argument.name)
        if stored is not None:
            return f"{compiler.preparer.format_table(table)}.{stored}"
    return f"rt_ts_key({compiler.process(element.clauses, **kw)})"


@compiles(ts_key)
def _ts_key_default(element: ts_key, compiler: Any, **kw: Any) -> str:
    return compiler.process(element.clauses, **kw)  # type: ignore[no-any-return]


class effective_workspace(FunctionElement[Any]):  # noqa: N801
    """The session's workspace: its ``workspace_id`` column, else ``workspace_id`` in its metadata
    (ref). Malformed metadata gives NULL rather than an error.

    Without arguments: the row's, as the workspace index holds it (on PostgreSQL the stored
    column of migration 0008). With two, ``(workspace_id, metadata_json)``: the same computed
    from those values (a cursor's), or from the row's columns when they are the table's."""

    type = String()
    name = "effective_workspace"
    inherit_cache = True


SQLITE_EFFECTIVE_WORKSPACE = (
    "COALESCE(workspace_id, CASE WHEN json_valid(metadata_json) "
    "THEN json_extract(metadata_json, '$.workspace_id') END)"
)
PG_EFFECTIVE_WORKSPACE = "COALESCE(workspace_id, rt_metadata_workspace(metadata_json))"
# On PostgreSQL the key is a stored generated column (migration 0008): an index on an
# expression allows no index-only scan, and a place in the grouped list is an index walk.
PG_STORED_WORKSPACE = "rt_workspace"


def _sqlite_workspace(workspace: str, metadata: str) -> str:
    return (
        f"COALESCE({workspace}, CASE WHEN json_valid({metadata}) "
        f"THEN json_extract({metadata}, '$.workspace_id') END)"
    )


def _session_columns(element: FunctionElement[Any]) -> Any:
    """The agent_sessions table when every argument is one of its columns, else None."""
    arguments = element.clauses.clauses
    tables = {getattr(getattr(argument, "table", None), "name", None) for argument in arguments}
    if tables != {"agent_sessions"} or not all(isinstance(a, Column) for a in arguments):
        return None
    return arguments[0].table


@compiles(effective_workspace, "sqlite")
def _workspace_sqlite(element: effective_workspace, compiler: Any, **kw: Any) -> str:
    if not element.clauses.clauses:
        return SQLITE_EFFECTIVE_WORKSPACE
    return _sqlite_workspace(*_arguments(element, compiler, **kw))


@compiles(effective_workspace, "postgresql")
def _workspace_postgresql(element: effective_workspace, compiler: Any, **kw: Any) -> str:
    if not element.clauses.clauses:
        return PG_STORED_WORKSPACE
    table = _session_columns(element)
    if table is not None:
        return f"{compiler.preparer.format_table(table)}.{PG_STORED_WORKSPACE}"
    workspace, metadata = _arguments(element, compiler, **kw)
    return f"COALESCE({workspace}, rt_metadata_workspace({metadata}))"


class attention_tier(FunctionElement[Any]):  # noqa: N801
    type = Float()
    name = "attention_tier"
    inherit_cache = True


class attention_key(FunctionElement[Any]):  # noqa: N801
    type = Float()
    name = "attention_key"
    inherit_cache = True


def _stored_attention(element: FunctionElement[Any], compiler: Any) -> str | None:
    """On PostgreSQL, the generated column that holds the key of an agent_sessions row."""
    table = _session_columns(element)
    if table is None:
        return None
    return f"{compiler.preparer.format_table(table)}.{PG_ATTENTION_COLUMNS[element.name]}"


def _arguments(element: FunctionElement[Any], compiler: Any, **kw: Any) -> list[str]:
    return [compiler.process(argument, **kw) for argument in element.clauses.clauses]


@compiles(attention_tier)
def _attention_tier(element: attention_tier, compiler: Any, **kw: Any) -> str:
    if compiler.dialect.name == "postgresql":
        stored = _stored_attention(element, compiler)
        if stored is not None:
            return stored
    return attention_tier_sql(*_arguments(element, compiler, **kw))


@compiles(attention_key, "sqlite")
def _attention_key_sqlite(element: attention_key, compiler: Any, **kw: Any) -> str:
    return attention_key_sql(
        lambda sql: f"julianday({sql})", "0", *_arguments(element, compiler, **kw)
    )


@compiles(attention_key, "postgresql")
def _attention_key_postgresql(element: attention_key, compiler: Any, **kw: Any) -> str:
    stored = _stored_attention(element, compiler)
    if stored is not None:
        return stored
    return attention_key_sql(
        lambda sql: f"rt_ts_key({sql})",
        "'-infinity'::timestamp",
        *_arguments(element, compiler, **kw),
    )


# The keys store.reads.listing names that SQL computes from their source columns.
COMPUTED_KEYS: dict[str, type[FunctionElement[Any]]] = {
    "attention_tier": attention_tier,
    "attention_key": attention_key,
    "effective_workspace": effective_workspace,
}


class ascii_case(FunctionElement[str]):  # noqa: N801
    """A text column whose case is folded for ASCII letters only, as SQLite's LIKE and
    ``lower()`` fold it: PostgreSQL's ILIKE under the "C" collation, whatever the database's
    locale. The text filter then finds the same rows on both, and ``store.reads.matching``
    decides it in Python."""

    type = String()
    name = "ascii_case"
    inherit_cache = True


@compiles(ascii_case, "postgresql")
def _ascii_case_postgresql(element: ascii_case, compiler: Any, **kw: Any) -> str:
    return f'({compiler.process(element.clauses, **kw)} COLLATE "C")'


@compiles(ascii_case)
def _ascii_case_default(element: ascii_case, compiler: Any, **kw: Any) -> str:
    return compiler.process(element.clauses, **kw)  # type: ignore[no-any-return]


class not_indexed(FunctionElement[str]):  # noqa: N801
    """A text column SQLite is not to look rows up by through an index (a unary plus): a list
    whose order has an index of its own walks that one, filtering as it goes, rather than
    gathering a status's rows by the status index and sorting them all."""

    type = String()
    name = "not_indexed"
    inherit_cache = True


@compiles(not_indexed, "sqlite")
def _not_indexed_sqlite(element: not_indexed, compiler: Any, **kw: Any) -> str:
    return f"+{compiler.process(element.clauses, **kw)}"


@compiles(not_indexed)
def _not_indexed_default(element: not_indexed, compiler: Any, **kw: Any) -> str:
    return compiler.process(element.clauses, **kw)  # type: ignore[no-any-return]


class hours_after(FunctionElement[int]):  # noqa: N801
    """Whole hours from the second ``ts_key`` to the first (both the database's timestamp
    keys): the hour a time falls in, counted from the start of a range."""

    type = Integer()
    name = "hours_after"
    inherit_cache = True


@compiles(hours_after, "sqlite")
def _hours_after_sqlite(element: hours_after, compiler: Any, **kw: Any) -> str:
    later, earlier = _arguments(element, compiler, **kw)
    # julianday() counts days in a double: rounded to whole milliseconds first, so a time an
    # exact number of hours after the start is not put in the hour before.
    return f"(CAST(round((({later}) - ({earlier})) * 86400000) AS INTEGER) / 3600000)"


@compiles(hours_after, "postgresql")
def _hours_after_postgresql(element: hours_after, compiler: Any, **kw: Any) -> str:
    later, earlier = _arguments(element, compiler, **kw)
    return f"CAST(floor(extract(epoch FROM ({later}) - ({earlier})) / 3600) AS INTEGER)"
