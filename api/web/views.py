"""What the web console's pages show, as plain values built from the store's records: a row of
the sessions list, a time relative with its exact value at hand, a session's fields with the
sensitive ones masked. Templates only print these (``api.web.render`` escapes and makes every
text printable); the rules behind them are the store's, the same the console shows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from roundtable_console.store.clock import parse_ts
from roundtable_console.store.reads.listing import (
    FINISHED_TIER,
    HELD_TIER,
    LIVE_TIER,
    UNKNOWN_TIER,
    WAITING_TIER,
    attention_reason,
    attention_tier,
)
from roundtable_console.store.records import ClaimCount, SessionFields
from roundtable_console.store.resume.adapters import AdapterConfig
from roundtable_console.store.resume.plan import resume_blocker
from roundtable_console.store.safety.display import NONE_SHOWN, exact, relative

TIER_NAMES = {
    WAITING_TIER: "waiting",
    UNKNOWN_TIER: "unknown",
    LIVE_TIER: "live",
    HELD_TIER: "held",
    FINISHED_TIER: "finished",
}
# What a session's state is called beside its status (never by colour alone).
FLAGS = {"waiting": "⚑ waiting", "turn_done": "✓ turn done", "stale": "⚠ stale"}
MASKED = "••••••"
# The fields shown masked until revealed (the reference calls them sensitive).


@dataclass(frozen=True)
class Moment:
    """A stored time: relative (``5m ago``), exact (UTC, to the second) and machine-readable."""

    relative: str
    exact: str
    iso: str

    @property
    def known(self) -> bool:
        return bool(self.iso)


def moment(text: str | None, now: datetime) -> Moment:
    parsed = parse_ts(text)
    if parsed is None:
        return Moment(text or NONE_SHOWN, exact(text), "")
    return Moment(relative(parsed, now), exact(text), parsed.isoformat())


@dataclass(frozen=True)
class SessionRow:
    """One row of the sessions list: the reference's columns, and the attention reason."""

    id: str
    workspace: str | None
    adapter: str
    agent: str
    host: str | None
    model: str
    status: str
    # The attention tier's name (the row's class), and what the status is flagged with.
    tier: str
    flag: str | None
    claims_live: int
    claims_expired: int
    seen: Moment
    resumable: bool
    resume_reason: str
    started: Moment
    attention: str
    version: int

    @property
    def claims(self) -> int:
        return self.claims_live + self.claims_expired


def session_row(
    session: SessionFields,
    counts: ClaimCount | None,
    now: datetime,
    stale_after: timedelta,
    adapters: Mapping[str, AdapterConfig],
) -> SessionRow:
    waiting = session.waiting is not None
    stale = session.is_stale(now, stale_after)
    tier = attention_tier(session.status, waiting)
    done = session.turn_done is not None
    flag = "waiting" if waiting else "turn_done" if done else "stale" if stale else None
    blocker = resume_blocker(session=session, adapters=adapters)
    model = " / ".join(part for part in (session.provider, session.model) if part)
    return SessionRow(
        id=session.id,
        workspace=session.effective_workspace_id,
        adapter=session.adapter,
        agent=session.agent_id,
        host=session.host,
        model=model,
        status=session.status,
        tier="stale" if stale and tier == LIVE_TIER else TIER_NAMES[tier],
        flag=FLAGS[flag] if flag else None,
        claims_live=counts.live if counts else 0,
        claims_expired=counts.expired if counts else 0,
        seen=moment(session.last_seen_at, now),
        resumable=blocker is None,
        resume_reason=blocker or "A resume plan can be made.",
        started=moment(session.started_at, now),
        attention=attention_reason(session, counts, now, stale_after),
        version=int(session.version or 0),
    )


@dataclass(frozen=True)
class Field:
    label: str
    value: str
    # Masked until revealed (``SENSITIVE_FIELDS``): the value is not in the page until asked.
    sensitive: bool = False
    name: str = ""
    moment: Moment | None = None


def session_fields(session: SessionFields, now: datetime) -> list[Field]:
    """Every field of the session, as the console's detail shows them."""

    def text(label: str, value: object) -> Field:
        return Field(label, NONE_SHOWN if value in (None, "") else str(value))

    def secret(label: str, name: str) -> Field:
        held = getattr(session, name)
        return Field(label, MASKED if held else NONE_SHOWN, sensitive=bool(held), name=name)

    def when(label: str, value: str | None) -> Field:
        shown = moment(value, now)
        return Field(label, shown.relative, moment=shown if value else None)

    waiting = session.waiting
    return [
        text("Session", session.id),
        text("Agent", session.agent_id),
        text("Host", session.host),
        text("Run", session.run_id),
        text("Workspace", session.effective_workspace_id),
        text("Adapter", session.adapter),
        text("Provider", session.provider),
        text("Model", session.model),
        text("Status", session.status),
        text("Waiting for", waiting.reason if waiting else None),
        when("Waiting since", waiting.since if waiting else None),
        text("Working directory", session.working_directory),
        secret("External session id", "external_session_id"),
        secret("Resume command", "external_resume_command"),
        secret("MCP socket", "mcp_socket"),
        when("Started", session.started_at),
        when("Last heartbeat", session.last_seen_at),
        when("Ended", session.ended_at),
        text("Version", session.version),
    ]
