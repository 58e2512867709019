"""Telling a write the database refuses to this connection from any other failure: a store
opened read-only, or a database role without the privilege (``store.db.grants``)."""

from __future__ import annotations

import sqlite3

from sqlalchemy import exc

# PostgreSQL's "insufficient privilege" and "read-only SQL transaction".
_READ_ONLY_SQLSTATES = frozenset({"42501", "25006"})


def refused_write(error: exc.DBAPIError) -> str | None:
    """The database's own reason, when ``error`` is a write it refuses to this connection: a
    read-only open, or a role without the privilege. None for any other error."""
    original = error.orig
    lines = str(original or error).strip().splitlines()
    reason = lines[0] if lines else type(original or error).__name__
    if getattr(original, "sqlstate", None) in _READ_ONLY_SQLSTATES:
        return reason
    if isinstance(original, sqlite3.OperationalError) and "readonly database" in reason:
        return reason
    return None
