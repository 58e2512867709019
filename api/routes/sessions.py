"""The session routes' work: list, create, read, and the agents' register and end (ours).

Each function takes the server's context and a ``Call`` and gives an ``Answer``; it runs in a
worker thread. Refusals are raised (``Problem``, or the store's ``StoreError``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import NamedTuple

from sqlalchemy import Connection

from roundtable_console.api.context import Answer, Call, ServerContext, not_found
from roundtable_console.api.problems import Problem
from roundtable_console.api.routes import bodies, wire
from roundtable_console.store.db.models import AgentSession
from roundtable_console.store.errors import InvalidCursor, SessionNotFound
from roundtable_console.store.reads.listing import SessionFilter, SessionOrder
from roundtable_console.store.reads.paging import Page
from roundtable_console.store.reads.sessions import get_session, list_sessions
from roundtable_console.store.rules import SORT_COLUMNS
from roundtable_console.store.writes import agent_writes
from roundtable_console.store.writes.session_create import create_session

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


def _flag(call: Call, name: str) -> bool:
    raw = (call.arg(name) or "").strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise Problem("invalid_request", f"{name} is true or false, not {raw!r}.")


def _order(call: Call, ctx: ServerContext) -> SessionOrder:
    sort = (call.arg("sort") or "started").strip()
    direction = (call.arg("order") or "asc").strip().lower()
    if sort not in SORT_COLUMNS:
        raise Problem("invalid_request", f"sort is one of {', '.join(SORT_COLUMNS)}.")
    if direction not in ("asc", "desc"):
        raise Problem("invalid_request", "order is asc or desc.")
    order = SessionOrder(sort, descending=direction == "desc")
    return order.at(ctx.clock() - timedelta(seconds=ctx.stale_after_seconds))


def listing(ctx: ServerContext, call: Call, workspace_id: str | None) -> Listing:
    """A list's page size, place, order and filters, from the query: the reference's order
    (start, then id) or ours (``sort``, ``order``), filtered (ours: ``status``, ``agent_id``,
    ``run_id``, ``host``, ``stale``, ``waiting``, ``q``)."""
    size = wire.limit(call.arg("limit"))
    after = wire.cursor(call.arg("cursor"))
    order = _order(call, ctx)
    stale = _flag(call, "stale")
    filters = SessionFilter(
        statuses=tuple(value for value in call.query.get("status", []) if value.strip()),
        agent_id=(call.arg("agent_id") or "").strip() or None,
        run_id=(call.arg("run_id") or "").strip() or None,
        host=(call.arg("host") or "").strip() or None,
        workspace_id=workspace_id,
        stale_before=order.stale_before if stale else None,
        text=(call.arg("q") or "").strip() or None,
        waiting=_flag(call, "waiting"),
    )
    return Listing(size, after, order, filters)


class Listing(NamedTuple):
    size: int
    after: str | None
    order: SessionOrder
    filters: SessionFilter

    def page(self, db: Connection) -> Page[AgentSession]:
        try:
            return list_sessions(
                db=db, filters=self.filters, limit=self.size, cursor=self.after, order=self.order
            )
        except InvalidCursor:
            raise Problem("invalid_cursor", "cursor is malformed") from None


def list_page(ctx: ServerContext, call: Call, workspace_id: str) -> Answer:
    """A keyset page of the workspace's sessions (``listing``)."""
    caller = ctx.caller(call)
    asked = listing(ctx, call, workspace_id)
    with ctx.store.read() as db:
        ctx.workspace(db, caller, workspace_id)
        page = asked.page(db)
    return Answer(200, wire.page([wire.session(s) for s in page.items], page.next_cursor))


def read_one(ctx: ServerContext, call: Call, workspace_id: str, session_id: str) -> Answer:
    caller = ctx.caller(call)
    with ctx.store.read() as db:
        session = ctx.session_in(db, caller, workspace_id, session_id)
    return Answer(200, wire.session(session))


def create(ctx: ServerContext, call: Call, workspace_id: str) -> Answer:
    """The reference's create: a human's, under a required idempotency key; 201."""
    caller = ctx.caller(call)
    caller.require_human()
    key = ctx.request_key(call, caller, required=True)
    body = bodies.read_object(
        call.body, fields=bodies.CREATE_FIELDS, code="invalid_session", optional=False
    )

    def write(within: object) -> AgentSession:
        with ctx.store.write(durable=True) as db:
            ctx.workspace(db, caller, workspace_id)
            session = create_session(
                db=db,
                workspace_id=workspace_id,
                agent_id=body.get("agent_id") or "",
                run_id=body.get("run_id") or "",
                adapter=body.get("adapter") or "",
                provider=body.get("provider"),
                model=body.get("model"),
                external_session_id=body.get("external_session_id"),
                clock=ctx.clock,
            )
            if callable(within):
                within(db, session)
            return session

    return ctx.write_once(
        call,
        key,
        write=write,
        answer=lambda session: Answer(201, wire.session(session)),
        session_of=lambda session: session.id,
    )


def register(ctx: ServerContext, call: Call, workspace_id: str, session_id: str) -> Answer:
    """Ours: the CLI's register over HTTP, the session's workspace being the path's; 201 for a
    new session, 200 for one replaced."""
    caller = ctx.caller(call)
    body = bodies.read_object(
        call.body, fields=bodies.REGISTER_FIELDS, code="invalid_session", optional=False
    )
    agent_id = (body.get("agent_id") or "").strip()
    caller.require_writer_of(agent_id)
    key = ctx.request_key(call, caller, required=False)

    def write(within: object) -> tuple[AgentSession, bool]:
        with ctx.store.write() as db:
            ctx.workspace(db, caller, workspace_id)
            existing = _existing(db, session_id)
            if existing is not None:
                # The workspace first: a session of another workspace is not this one's to
                # replace, and answers as not found whoever its agent is; one of no workspace
                # is out of a bound caller's reach (an unbound one registers it into this one).
                found = existing.effective_workspace_id
                if found != workspace_id and (found is not None or caller.wall.bound):
                    raise not_found(session_id)
                caller.require_writer_of(existing.agent_id)  # never another agent's session
            session = agent_writes.register(
                db=db,
                session_id=session_id,
                agent_id=agent_id,
                run_id=body.get("run_id") or "",
                adapter=body.get("adapter") or "",
                working_directory=body.get("working_directory") or "",
                provider=body.get("provider"),
                model=body.get("model"),
                external_session_id=body.get("external_session_id"),
                resume_command=body.get("resume_command"),
                mcp_socket=body.get("mcp_socket"),
                status=body.get("status"),
                metadata=body.get("metadata"),
                workspace_id=workspace_id,
                clock=ctx.clock,
                host=body.get("host"),
            )
            result = (session, existing is None)
            if callable(within):
                within(db, result)
            return result

    return ctx.write_once(
        call,
        key,
        write=write,
        answer=lambda done: Answer(201 if done[1] else 200, wire.session(done[0])),
        session_of=lambda done: done[0].id,
    )


def end(ctx: ServerContext, call: Call, workspace_id: str, session_id: str) -> Answer:
    """Ours: the CLI's end over HTTP, with an optional ``{"status"}``."""
    caller = ctx.caller(call)
    body = bodies.read_object(
        call.body, fields=bodies.END_FIELDS, code="invalid_request_body", optional=True
    )
    key = ctx.request_key(call, caller, required=False)
    if caller.role == "operator" and body.get("usage") is not None:
        raise Problem("forbidden", "usage is an agent's to send.")  # as a heartbeat's

    def write(within: object) -> AgentSession:
        with ctx.store.write() as db:
            current = ctx.session_in(db, caller, workspace_id, session_id)
            caller.require_writer_of(current.agent_id)
            session = agent_writes.end(
                db=db,
                session_id=session_id,
                status=body.get("status"),
                clock=ctx.clock,
                usage=body.get("usage"),  # type: ignore[arg-type]
                prices=ctx.prices,
            )
            if callable(within):
                within(db, session)
            return session

    return ctx.write_once(
        call,
        key,
        write=write,
        answer=lambda session: Answer(200, wire.session(session)),
        session_of=lambda session: session.id,
    )


def _existing(db: Connection, session_id: str) -> AgentSession | None:
    try:
        return get_session(db=db, session_id=session_id)
    except SessionNotFound:
        return None
