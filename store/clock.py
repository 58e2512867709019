"""Time: the injectable clock, and the timestamp forms the reference store holds."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from functools import lru_cache

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    return datetime.now(UTC)


def fixed_clock(moment: datetime) -> Clock:
    """A clock that always answers ``moment`` (tests, snapshots, the demo)."""
    return lambda: moment


_TS = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?\s*(Z|z|[+-]\d{2}:?\d{2})?$"
)


# Remembered: a row's times are read several times over (its staleness, its attention reason,
# its relative and exact forms), and a page's rows are read again on every live change.
@lru_cache(maxsize=8192)
def parse_ts(text: str | None) -> datetime | None:
    """Read every form the reference writes: ``CURRENT_TIMESTAMP`` text (UTC, no zone),
    RFC 3339, and RFC 3339 with nanoseconds. Unreadable text gives ``None``."""
    if not text:
        return None
    match = _TS.match(text.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    micro = int((fraction or "0")[:6].ljust(6, "0"))
    try:
        tz = UTC
        if zone and zone not in ("Z", "z"):
            sign = 1 if zone[0] == "+" else -1
            digits = zone[1:].replace(":", "")
            # An offset of a day or more is refused by timezone(): unreadable, like a bad date.
            tz = timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))
        moment = datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second), micro, tzinfo=tz
        )
        # Year 1 or 9999 moved by its offset may leave datetime's range.
        return moment.astimezone(UTC)
    except (ValueError, OverflowError):
        return None


def format_ts(moment: datetime) -> str:
    """UTC RFC 3339 with a fixed six-digit fraction, so our own timestamps sort as text."""
    utc = moment.astimezone(UTC)
    # The year by hand: strftime("%Y") does not pad years before 1000 on every platform.
    return f"{utc.year:04d}-{utc:%m-%dT%H:%M:%S.%f}Z"
