"""Reading the reference's timestamps: what cannot be a moment is unreadable (None), never an
exception that would take a list or a briefing down."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from roundtable_console.store.clock import parse_ts


@pytest.mark.parametrize(
    "text",
    [
        "2026-01-01T00:00:00+24:00",  # an offset of a day: timezone() refuses it
        "2026-01-01T00:00:00-99:99",
        "0001-01-01T00:00:00+01:00",  # before year 1 in UTC
        "9999-12-31T23:59:59-01:00",  # after year 9999 in UTC
        "2026-02-30T00:00:00Z",
        "not a time",
    ],
)
def test_a_timestamp_that_is_no_moment_reads_as_unreadable(text: str) -> None:
    assert parse_ts(text) is None


def test_an_offset_is_applied_and_the_result_is_utc() -> None:
    assert parse_ts("2026-01-01T10:00:00+02:00") == datetime(2026, 1, 1, 8, tzinfo=UTC)
    assert parse_ts("2026-01-01T10:00:00-23:59") == datetime(2026, 1, 2, 9, 59, tzinfo=UTC)
