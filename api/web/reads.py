"""The web console's reads, each a blocking call for a worker thread, each in one snapshot: a
page of the sessions list (keyset, in the attention order, with the counts by status and the
groups), rows again by id (live updates), and what a session's page shows. What a caller may
not reach (a token bound to workspaces) is never read for it: it answers as not found."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy import Connection

from roundtable_console.api.context import Call, ServerContext
from roundtable_console.api.edge.identity import Caller
from roundtable_console.api.problems import Problem
from roundtable_console.api.web.reply_views import ReplyView, reply_view
from roundtable_console.api.web.request_views import RequestView, session_requests
from roundtable_console.api.web.views import Field, SessionRow, moment, session_fields, session_row
from roundtable_console.store.access.walls import Wall
from roundtable_console.store.db.models import AgentSession
from roundtable_console.store.errors import InvalidCursor
from roundtable_console.store.reads.claims import claim_counts
from roundtable_console.store.reads.groups import read_group_sizes, read_status_by_group
from roundtable_console.store.reads.keyset import count_by_status
from roundtable_console.store.reads.listing import SessionFilter, SessionOrder
from roundtable_console.store.reads.projections import (
    logs_cursor,
    newest_logs,
    session_claims,
    session_environment,
    session_logs,
    session_metrics,
    session_proposals,
    tool_calls,
)
from roundtable_console.store.reads.sessions import (
    count_needing_attention,
    get_session,
    get_sessions,
    list_sessions,
)
from roundtable_console.store.records import ClaimCount
from roundtable_console.store.validation import has_control_characters

# The list's first page holds a few screens' worth (at 1280x800 a screen shows four or five rows,
# on a phone three cards), so it comes as fast whatever the store's size; the pages after it,
# which the page asks for as the reader scrolls towards the end, hold PAGE_SIZE.
FIRST_PAGE_SIZE = 15
PAGE_SIZE = 50
MAX_IDS = 200
GROUPINGS = ("workspace", "agent", "run")
GROUPS_SHOWN = 30
HISTORY_SHOWN = 200
_TRUE = ("1", "true", "on", "yes")
# A filter's text: at most this long.
MAX_FILTER = 200


@dataclass(frozen=True)
class SessionsQuery:
    """The list's filters, as the page's URL carries them (``?status=…&agent=…``)."""

    status: str = ""
    agent: str = ""
    run: str = ""
    workspace: str = ""
    host: str = ""
    stale: bool = False
    waiting: bool = False
    text: str = ""
    group: str = "workspace"
    cursor: str = ""

    @classmethod
    def from_call(cls, call: Call) -> SessionsQuery:
        return cls.from_args(call.arg)

    @classmethod
    def from_args(cls, arg: Callable[[str], str | None]) -> SessionsQuery:
        """The filters from a URL's query (``arg``: a name's last value, or None)."""

        def value(name: str) -> str:
            raw = (arg(name) or "").strip()
            if len(raw) > MAX_FILTER or has_control_characters(raw):
                raise Problem("invalid_request", f"The filter {name} is not a short line of text.")
            return raw

        group = value("group") or "workspace"
        if group not in GROUPINGS:
            raise Problem("invalid_request", f"group is one of {', '.join(GROUPINGS)}.")
        return cls(
            status=value("status"),
            agent=value("agent"),
            run=value("run"),
            workspace=value("workspace"),
            host=value("host"),
            stale=value("stale").lower() in _TRUE,
            waiting=value("waiting").lower() in _TRUE,
            text=value("q"),
            group=group,
            cursor=value("cursor"),
        )

    def query(self, **changed: Any) -> dict[str, Any]:
        """The URL's query for these filters (with ``changed``), without the cursor."""
        chosen = replace(self, cursor="", **changed)
        return {
            "status": chosen.status,
            "agent": chosen.agent,
            "run": chosen.run,
            "workspace": chosen.workspace,
            "host": chosen.host,
            "stale": chosen.stale,
            "waiting": chosen.waiting,
            "q": chosen.text,
            "group": "" if chosen.group == "workspace" else chosen.group,
        }

    @property
    def filtering(self) -> bool:
        return any((self.status, self.agent, self.run, self.workspace, self.host, self.stale,
                    self.waiting, self.text))  # fmt: skip

    def filters(self, caller: Caller, stale_before: datetime) -> SessionFilter:
        workspace = self.workspace or None
        if caller.workspaces is not None and workspace is None:
            # A token bound to workspaces sees one at a time (its first, unless it chose).
            workspace = caller.workspaces[0]
        return SessionFilter(
            statuses=(self.status,) if self.status else (),
            agent_id=self.agent or None,
            run_id=self.run or None,
            workspace_id=workspace,
            host=self.host or None,
            stale_before=stale_before if self.stale else None,
            text=self.text or None,
            waiting=self.waiting,
        )


@dataclass(frozen=True)
class Group:
    key: str | None
    count: int


@dataclass
class SessionsPage:
    rows: list[SessionRow]
    next_cursor: str | None
    counts: list[tuple[str, int]]
    total: int
    attention: int
    groups: list[Group]
    more_groups: int
    workspace: str | None
    workspaces: tuple[str, ...] | None
    now: datetime
    notes: list[str] = field(default_factory=list)


def stale_cutoff(ctx: ServerContext, now: datetime) -> datetime:
    """Sessions last seen before this instant are stale."""
    return now - timedelta(seconds=ctx.stale_after_seconds)


def _rows(
    ctx: ServerContext,
    db: Connection,
    sessions: list[AgentSession],
    now: datetime,
    wall: Wall,
) -> list[SessionRow]:
    """The sessions' rows, each with its agent's claims as the caller sees them (behind a wall,
    those of the session's workspace: counted once for each workspace shown)."""
    by_workspace: dict[str | None, list[str]] = {}
    for session in sessions:
        by_workspace.setdefault(wall.around(session), []).append(session.agent_id)
    counts: dict[tuple[str, str | None], ClaimCount] = {}
    for workspace, agents in by_workspace.items():
        found = claim_counts(db=db, agent_ids=agents, now=now, workspace_id=workspace)
        counts.update({(agent, workspace): count for agent, count in found.items()})
    stale_after = timedelta(seconds=ctx.stale_after_seconds)
    return [
        session_row(
            session,
            counts.get((session.agent_id, wall.around(session))),
            now,
            stale_after,
            ctx.adapters,
        )
        for session in sessions
    ]


def read_sessions(ctx: ServerContext, caller: Caller, query: SessionsQuery) -> SessionsPage:
    """A page of the list in the attention order, its counts by status and its groups."""
    now = ctx.clock()
    stale_before = stale_cutoff(ctx, now)
    filters = query.filters(caller, stale_before)
    if filters.workspace_id is not None and not caller.reaches(filters.workspace_id):
        raise Problem("not_found", f"No workspace has the id {filters.workspace_id!r}.")
    order = SessionOrder("attention").at(stale_before)
    with ctx.store.read() as db:
        try:
            page = list_sessions(
                db=db,
                filters=filters,
                limit=PAGE_SIZE if query.cursor else FIRST_PAGE_SIZE,
                cursor=query.cursor or None,
                order=order,
            )
        except InvalidCursor:
            raise Problem("invalid_cursor", "That page's place in the list is not one.") from None
        rows = _rows(ctx, db, page.items, now, caller.wall)
        if caller.workspaces is None:
            by_status = count_by_status(db=db)
            attention = count_needing_attention(db=db, stale_before=stale_before)
        else:
            by_status = read_status_by_group(
                db=db, grouping="workspace", keys=[filters.workspace_id]
            ).get(filters.workspace_id, {})
            attention = -1
        groups, more = _groups(db, caller, query.group)
    return SessionsPage(
        rows=rows,
        next_cursor=page.next_cursor,
        counts=sorted(by_status.items()),
        total=sum(by_status.values()),
        attention=attention,
        groups=groups,
        more_groups=more,
        workspace=filters.workspace_id,
        workspaces=caller.workspaces,
        now=now,
    )


def _groups(db: Connection, caller: Caller, grouping: str) -> tuple[list[Group], int]:
    sizes = read_group_sizes(db=db, grouping=grouping)
    if caller.workspaces is not None:
        if grouping != "workspace":
            return [], 0  # counted over every workspace: not for a token bound to some
        sizes = [(key, count) for key, count in sizes if key in caller.workspaces]
    shown = sorted(sizes, key=lambda item: (-item[1], item[0] or ""))[:GROUPS_SHOWN]
    return [Group(key, count) for key, count in shown], max(len(sizes) - GROUPS_SHOWN, 0)


def reached(db: Connection, caller: Caller, session_id: str) -> AgentSession:
    """The session, when the caller may reach it; not found otherwise."""
    return caller.wall.checked(get_session(db=db, session_id=session_id))


def may_reach(caller: Caller, session: AgentSession) -> bool:
    """Whether the caller reaches the session's workspace (a token bound to some, only those)."""
    return caller.wall.admits(session)


def read_rows(ctx: ServerContext, caller: Caller, ids: list[str]) -> dict[str, SessionRow | None]:
    """The rows of ``ids`` as they are now (None: gone, or out of the caller's reach)."""
    now = ctx.clock()
    wanted = list(dict.fromkeys(ids))[:MAX_IDS]
    with ctx.store.read() as db:
        found = get_sessions(db=db, session_ids=wanted)
        shown = [found[one] for one in wanted if one in found and may_reach(caller, found[one])]
        rows = _rows(ctx, db, shown, now, caller.wall)
    by_id: dict[str, SessionRow | None] = dict.fromkeys(wanted)
    by_id.update({row.id: row for row in rows})
    return by_id


@dataclass
class HistoryRow:
    id: int
    event: str
    at: Any
    summary: str


@dataclass
class SessionPage:
    row: SessionRow
    fields: list[Field]
    projections: dict[str, Any]
    history: list[HistoryRow]
    last_event_id: int | None
    heartbeats: list[int]
    now: datetime
    # Its pending permission requests, the oldest first.
    requests: list[RequestView] = field(default_factory=list)
    # While its agent waits for a prompt: what can carry a reply to it.
    reply: ReplyView | None = None
    # Its agent was started in a tmux pane Roundtable knows (R, a host): it can be stopped.
    agent_pane: bool = False


def agent_reachable(ctx: ServerContext, launch: dict[str, Any] | None) -> bool:
    """Its agent runs in a pane Roundtable started, reachable now: here, or by a host this
    server holds (a button that cannot act is not offered)."""
    if not launch or not launch.get("tmux_pane"):
        return False
    host = launch.get("via_host")
    return host is None or host in ctx.hosts.links


def history_rows(items: list[dict[str, Any]], now: datetime) -> list[HistoryRow]:
    return [
        HistoryRow(
            id=int(item["id"]),
            event=str(item.get("event_type") or ""),
            at=moment(item.get("created_at"), now),
            summary=str(item.get("payload") or ""),
        )
        for item in items
    ]


def read_history_after(
    ctx: ServerContext, caller: Caller, session_id: str, after: int
) -> tuple[list[HistoryRow], int]:
    """The session's history rows after event ``after`` (at most a page), and the last id."""
    now = ctx.clock()
    with ctx.store.read() as db:
        reached(db, caller, session_id)
        page = session_logs(
            db=db, session_id=session_id, limit=HISTORY_SHOWN, cursor=logs_cursor(session_id, after)
        )
    rows = history_rows(page.items, now)
    return rows, rows[-1].id if rows else after


def read_session_page(ctx: ServerContext, caller: Caller, session_id: str) -> SessionPage:
    from roundtable_console.store.reads.launches import last_launch
    from roundtable_console.store.reads.overview import heartbeats_per_hour

    now = ctx.clock()
    wall = caller.wall
    with ctx.store.read() as db:
        session = reached(db, caller, session_id)
        row = _rows(ctx, db, [session], now, wall)[0]
        one = {"db": db, "session_id": session_id, "wall": wall}
        projections = {
            "claims": session_claims(**one, limit=50).items,
            "proposals": session_proposals(**one, limit=50).items,
            "tool_calls": tool_calls(**one, limit=50).items,
            "metrics": session_metrics(**one),
            "environment": session_environment(**one),
        }
        logs = newest_logs(**one, limit=HISTORY_SHOWN)
        heartbeats = heartbeats_per_hour(db=db, session_id=session_id, now=now)
        launch = last_launch(db, session_id)
    requests = session_requests(ctx, caller, session_id)
    reply = reply_view(ctx, caller, session) if not requests else None
    return SessionPage(
        row=row,
        fields=session_fields(session, now),
        projections=projections,
        history=history_rows(logs, now),
        last_event_id=int(logs[-1]["id"]) if logs else None,
        heartbeats=heartbeats,
        now=now,
        requests=requests,
        reply=reply,
        agent_pane=agent_reachable(ctx, launch) and session.is_active,
    )


class TranscriptView(NamedTuple):
    """A page of a session's transcript for the web console, or why there is none."""

    session_id: str
    entries: list[Any]
    before: int | None
    size: int | None
    reason: str | None


async def read_transcript(
    ctx: ServerContext, caller: Caller, session_id: str, before: int | None
) -> TranscriptView:
    """The session (when the caller reaches it, read in a worker), then its transcript's
    page: read here, or asked of its machine's host (``api.hosts.activity``)."""
    from roundtable_console.agents.transcripts import TranscriptUnavailable
    from roundtable_console.api.hosts import activity

    def source() -> activity.Source:
        with ctx.store.read() as db:
            return activity.Source(db, reached(db, caller, session_id))

    found = await ctx.in_worker(source)
    try:
        page = await activity.read(ctx, found, before=before, limit=TRANSCRIPT_ENTRIES)
    except TranscriptUnavailable as unavailable:
        return TranscriptView(session_id, [], None, None, str(unavailable))
    return TranscriptView(session_id, page.entries, page.before, page.size, None)


TRANSCRIPT_ENTRIES = 100
