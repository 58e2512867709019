"""The schema revision this code brings a store to, and the revisions it can upgrade from.

Plain data (no Alembic, no SQLAlchemy): ``store.db.schema`` migrates with them, and the console's
quick first read (``store.reads.first_window``) checks a store is current with ``sqlite3`` alone.
"""

from __future__ import annotations

from pathlib import Path

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
HEAD_REVISION = "0024_budgets"


def known_revisions() -> frozenset[str]:
    """Every revision this code knows: each migration file is named after its revision id
    (tests/test_database.py checks this). Listed when asked, not at import: the hooks' quick
    writes need only ``HEAD_REVISION``."""
    return frozenset(path.stem for path in (MIGRATIONS_DIR / "versions").glob("0*.py"))
