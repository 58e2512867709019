"""``GET /api/v1/budgets``: the configured budgets the caller may see, where each stands now, and
(``since``) the crossings claimed since a time, each budget's highest: what the terminal console
through a server and ``roundtable budgets --server`` read (``store.budgets``)."""

from __future__ import annotations

import re

from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.problems import Problem
from roundtable_console.api.routes.session_records import person
from roundtable_console.store.budgets.standing import (
    budget_states,
    crossing_json,
    crossings_since,
    state_json,
)
from roundtable_console.store.clock import format_ts

SINCE_PATTERN = "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{1,20}Z"
SINCE = {"type": "string", "maxLength": 40, "pattern": f"^{SINCE_PATTERN}$"}


def budgets(ctx: ServerContext, call: Call) -> Answer:
    caller = person(ctx, call)
    raw = call.arg("since")
    if raw is not None and not re.fullmatch(SINCE_PATTERN, raw):
        raise Problem("invalid_request", "since is a UTC time, as 2026-12-07T09:00:00.000000Z.")
    now = ctx.clock()
    with ctx.store.read() as db:
        states = budget_states(db, ctx.budgets, now, caller.wall)
        crossings = [] if raw is None else crossings_since(db, stored_time(raw), caller.wall)
    return Answer(
        200,
        {
            "at": format_ts(now),
            "budgets": [state_json(state) for state in states],
            "crossings": [crossing_json(crossing) for crossing in crossings],
        },
    )


def stored_time(since: str) -> str:
    """``since`` as the store's times are written (a fraction before the Z), so that it sorts
    with them as text: what it compares with needs no calendar (a 30th of February sorts too)."""
    whole = since[:-1]
    return whole + ("Z" if "." in whole else ".000000Z")
