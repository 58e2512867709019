"""Ours, for people's own clients (the command line through a server, and the terminal console
next): the sessions across the workspaces a caller reaches, each as a record with the store's
column names (``SessionFields.to_json``, what ``roundtable sessions … --json`` prints), and the
lifecycle actions answered with their whole outcome (``ActionOutcome.to_json``: the session, the
agent's active claims, the notes, whether it was a replay).

The reference's routes (``sessions.py``, ``actions.py``) keep the reference's shapes, by
workspace; these answer exactly what the command line prints against a store, read and written
by the same service functions, so a client of either gives one answer. They are a person's: an
agent's token is refused (its routes are the reference's), a host's is refused everywhere."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.edge.identity import Caller
from roundtable_console.api.problems import Problem
from roundtable_console.api.routes import actions, wire
from roundtable_console.api.routes.sessions import listing
from roundtable_console.store import service
from roundtable_console.store.errors import InvalidCursor
from roundtable_console.store.hosts.registry import get_host
from roundtable_console.store.reads.listing import SessionFilter
from roundtable_console.store.reads.overview import overview_json, read_overview, session_heartbeats
from roundtable_console.store.reads.projections import PAGED, PROJECTIONS
from roundtable_console.store.reads.sessions import get_session
from roundtable_console.store.safety.credentials import redact_output_value
from roundtable_console.store.validation import whole_number
from roundtable_console.store.writes.lifecycle_outcomes import ActionOutcome
from roundtable_console.store.writes.lifecycle_outcomes import termination_impact as impact_of


def person(ctx: ServerContext, call: Call) -> Caller:
    """The caller, when it is a person's token (a viewer's or an operator's)."""
    caller = ctx.caller(call)
    if caller.role == "agent":
        raise Problem(
            "forbidden",
            f"The token {caller.name!r} is an agent's: it reports its sessions through the "
            "workspace routes. These are for people's clients (the console, the command line).",
        )
    return caller


def within_reach(caller: Caller, filters: SessionFilter) -> SessionFilter:
    """``filters`` as the caller may read them: behind a wall, narrowed to the workspace they
    name (one the caller reaches), else to the caller's first, as the web console's list is."""
    if caller.workspaces is None:
        return filters
    chosen = filters.workspace_id or caller.workspaces[0]
    if filters.without_workspace or not caller.reaches(chosen):
        raise Problem("workspace_not_found", f"No workspace has the id {chosen!r}.")
    return replace(filters, workspace_id=chosen)


# The list's text filters, as its document says them: at most this long, no NUL (this route is
# ours: it holds to its schema where the reference's list is lenient).
TEXT_FILTERS = ("status", "agent_id", "run_id", "host", "q", "workspace_id")
MAX_FILTER = 1024


def _check_filters(call: Call) -> None:
    for name in ("sort", "order"):  # one of the document's values: an empty one is none of them
        if "" in call.query.get(name, []):
            raise Problem("invalid_request", f"{name} is one of its values, not empty.")
    for name in ("stale", "waiting"):
        if any(value not in ("true", "false") for value in call.query.get(name, [])):
            raise Problem("invalid_request", f"{name} is true or false.")
    for name in TEXT_FILTERS:
        for value in call.query.get(name, []):
            if len(value) > MAX_FILTER or "\x00" in value:
                raise Problem(
                    "invalid_request", f"{name} is text of at most {MAX_FILTER} characters."
                )


def list_records(ctx: ServerContext, call: Call) -> Answer:
    """A keyset page of the sessions the caller reaches, as records; the filters and orders of
    the workspace's list (``sessions.listing``), and ``workspace_id``."""
    caller = person(ctx, call)
    _check_filters(call)
    if call.arg("limit") == "":  # ours: the reference's empty limit= is not carried over
        raise Problem("invalid_limit", "limit must be between 1 and 200")
    asked = listing(ctx, call, (call.arg("workspace_id") or "").strip() or None)
    asked = asked._replace(filters=within_reach(caller, asked.filters))
    workspace = asked.filters.workspace_id
    with ctx.store.read() as db:
        if workspace is not None:
            ctx.workspace(db, caller, workspace)
        page = asked.page(db)
    items = [redact_output_value(session.to_json()) for session in page.items]
    return Answer(200, wire.page(items, page.next_cursor))


def read_record(ctx: ServerContext, call: Call, session_id: str) -> Answer:
    caller = person(ctx, call)
    with ctx.store.read() as db:
        session = caller.wall.checked(get_session(db=db, session_id=session_id))
    return Answer(200, redact_output_value(session.to_json()))


def _outcome(outcome: ActionOutcome) -> Answer:
    return Answer(200, redact_output_value(outcome.to_json()))


def act_on_record(action: str) -> Callable[[ServerContext, Call, str], Answer]:
    """The lifecycle ``action`` (an operator's), on a session the caller reaches, with the
    reference's idempotency key and ``If-Match``; answered with its whole outcome."""

    def run(ctx: ServerContext, call: Call, session_id: str) -> Answer:
        caller = person(ctx, call)
        caller.require_human()
        return actions.act(
            ctx, call, caller, action, session_id,
            found=lambda db: caller.wall.checked(get_session(db=db, session_id=session_id)),
            answer=_outcome,
        )  # fmt: skip

    return run


# -- what the console shows of one session: of a session the caller reaches, and of the rows
# around it those of its workspace (a caller bound to workspaces: ``Wall.around``) ----------


def _reached(ctx: ServerContext, call: Call, session_id: str) -> Caller:
    """The caller, once it is seen to reach the session (one it may not reach: not found)."""
    caller = person(ctx, call)
    with ctx.store.read() as db:
        caller.wall.checked(get_session(db=db, session_id=session_id))
    return caller


def termination_impact(ctx: ServerContext, call: Call, session_id: str) -> Answer:
    """What terminating the session affects: its agent's active claims, where its agent runs."""
    caller = person(ctx, call)
    with ctx.store.read() as db:
        impact = impact_of(db=db, session_id=session_id, clock=ctx.clock, wall=caller.wall)
    return Answer(200, redact_output_value(impact.to_json()))


def projection(ctx: ServerContext, call: Call, session_id: str, name: str) -> Answer:
    """A page of one of the session's projections (logs, tool calls, claims, proposals), or
    its one record (metrics, environment), in the store's shape."""
    caller = person(ctx, call)
    if name not in PROJECTIONS:
        raise Problem("not_found", f"No projection is called {name!r}.")
    read = PROJECTIONS[name]
    with ctx.store.read() as db:
        caller.wall.checked(get_session(db=db, session_id=session_id))
        if name not in PAGED:
            record = read(db=db, session_id=session_id, wall=caller.wall)
            return Answer(200, redact_output_value(record))
        try:
            page = read(db=db, session_id=session_id, limit=wire.limit(call.arg("limit")),
                        cursor=wire.cursor(call.arg("cursor")), wall=caller.wall)  # fmt: skip
        except InvalidCursor:
            raise Problem("invalid_cursor", "cursor is malformed") from None
    return Answer(200, wire.page(redact_output_value(page.items), page.next_cursor))


def history_after(ctx: ServerContext, call: Call, session_id: str) -> Answer:
    """The session's history rows after ``after`` (from its start when not given)."""
    raw = call.arg("after")
    after = None if raw in (None, "") else whole_number(raw)
    if raw not in (None, "") and after is None:
        raise Problem("invalid_request", "after is a history row's id, a whole number.")
    _reached(ctx, call, session_id)
    batch = service.read_log_after(store=ctx.store, session_id=session_id, last_id=after)
    return Answer(200, {"items": redact_output_value(batch.items), "last_id": batch.last_id,
                        "more_waiting": batch.more_waiting})  # fmt: skip


def heartbeats(ctx: ServerContext, call: Call, session_id: str) -> Answer:
    """How many heartbeats the session sent in each of the last hours, oldest first."""
    _reached(ctx, call, session_id)
    hours = session_heartbeats(store=ctx.store, session_id=session_id, now=ctx.clock())
    return Answer(200, {"hours": hours})


def me(ctx: ServerContext, call: Call) -> Answer:
    """Who the caller is: its name (what the audit records), its role and its workspaces (null:
    every one). A client shows it, and offers what the role may do."""
    caller = ctx.caller(call)
    workspaces = None if caller.workspaces is None else list(caller.workspaces)
    return Answer(200, {"name": caller.name, "role": caller.role, "workspaces": workspaces})


def briefing(ctx: ServerContext, call: Call, session_id: str) -> Answer:
    """The session's resume briefing and the plan that resumes it (the server's adapters),
    as ``roundtable resume --json`` reads them, with the briefing's parts, and the host that
    would start it (``host``: null when the store knows none for its machine)."""
    caller = person(ctx, call)
    view = service.read_briefing(store=ctx.store, adapters=ctx.adapters, session_id=session_id,
                                 clock=ctx.clock, wall=caller.wall)  # fmt: skip
    parts = {**view.briefing.to_json(), "session": view.session.to_json()}
    return Answer(200, {"briefing": redact_output_value(parts), "plan": view.plan.to_json(),
                        "host": launch_host(ctx, caller, view.session.host)})  # fmt: skip


def launch_host(ctx: ServerContext, caller: Caller, name: str | None) -> dict[str, Any] | None:
    """Where a launch would go: the host of the session's machine, when this store knows it
    (its name, whether it is online, when last seen). The hosts are the whole team's: a caller
    bound to workspaces is told the name its session already holds and nothing of the host
    (null: not told), or it would learn of any host by naming it in a session of its own."""
    if not name:
        return None
    if caller.workspaces is not None:
        return {"name": name, "online": None, "last_seen_at": None}
    with ctx.store.read() as db:
        host = get_host(db, name, clock=ctx.clock)
    if host is None:
        return None
    return {"name": host.name, "online": host.online, "last_seen_at": host.last_seen_at}


def overview(ctx: ServerContext, call: Call) -> Answer:
    """The fleet's overview (the console's O, the web's page): it counts every workspace."""
    person(ctx, call).require_every_workspace("the overview counts every workspace")
    now = ctx.clock()
    with ctx.store.read() as db:
        found = read_overview(
            db=db, now=now, stale_after=timedelta(seconds=ctx.stale_after_seconds),
            budgets=ctx.budgets,
        )  # fmt: skip
    return Answer(200, redact_output_value(overview_json(found)))
