"""A host's row: written as it connects (``connect``), while it stays (``seen``, one statement
for every host a server holds) and as it goes (``disconnect``); read by every surface
(``list_hosts``). Each write is one transaction of the caller's.

Several servers may share a store: each connection has an id of its own, and a write names it,
so a server never marks gone a host another connection holds. The connection that holds a host
keeps it while it is seen: another of the same name (a second process, a stolen token) waits,
``connect`` saying False, until the holder goes or is not seen for ``ONLINE_SECONDS``.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import Connection, bindparam, text

from roundtable_console.store.clock import Clock, format_ts, parse_ts, system_clock
from roundtable_console.store.hosts.facts import AgentFound, HostFacts
from roundtable_console.store.rules import ACTIVE_STATES

# How often a server (or a host on the store itself) says its hosts are still there, and how
# long a host stays online after it was last seen: a server that stopped without a word leaves
# its hosts offline within ONLINE_SECONDS.
SEEN_EVERY_SECONDS = 30
ONLINE_SECONDS = 90
# The connection id of a host on the store itself (``host run --db``) begins so.
ON_STORE = "store-"

# A host is taken only when no live connection holds it: none does, or the one that did was
# not seen for ONLINE_SECONDS (its server stopped without a word). A second process of the
# same name, or a stolen token, waits; it never pushes the holder out.
_CONNECT = text(
    "INSERT INTO hosts (name, connection_id, connected_at, last_seen_at, first_seen_at,"
    " agents_json, projects_json, tmux, version, platform) VALUES (:name, :connection_id, :now,"
    " :now, :now, :agents_json, :projects_json, :tmux, :version, :platform)"
    " ON CONFLICT (name) DO UPDATE SET connection_id = excluded.connection_id,"
    " connected_at = excluded.connected_at, last_seen_at = excluded.last_seen_at,"
    " agents_json = excluded.agents_json, projects_json = excluded.projects_json,"
    " tmux = excluded.tmux, version = excluded.version, platform = excluded.platform"
    " WHERE hosts.connection_id IS NULL OR hosts.last_seen_at IS NULL"
    " OR hosts.last_seen_at < :stale_before"
)
_HOLDER = text("SELECT connection_id FROM hosts WHERE name = :name")
_SEEN = text("UPDATE hosts SET last_seen_at = :now WHERE connection_id IN :ids").bindparams(
    bindparam("ids", expanding=True)
)
_HELD = text("SELECT connection_id FROM hosts WHERE connection_id IN :ids").bindparams(
    bindparam("ids", expanding=True)
)
_GONE = text(
    "UPDATE hosts SET connection_id = NULL, last_seen_at = :now"
    " WHERE name = :name AND connection_id = :connection_id"
)
_ALL = text("SELECT * FROM hosts ORDER BY name")
_ONE = text("SELECT * FROM hosts WHERE name = :name")
_COUNTS = text(
    "SELECT host, COUNT(*) AS sessions,"
    " SUM(CASE WHEN status IN :active THEN 1 ELSE 0 END) AS active"
    " FROM agent_sessions WHERE host IN :names GROUP BY host"
).bindparams(bindparam("names", expanding=True), bindparam("active", expanding=True))


@dataclass(frozen=True)
class HostRow:
    """A host as the surfaces show it: what it found, whether it is online, when it was last
    seen, and how many sessions name it (``active``: in an active state)."""

    facts: HostFacts
    online: bool
    connected_at: str | None
    last_seen_at: str | None
    first_seen_at: str
    sessions: int = 0
    active: int = 0
    on_store: bool = False  # held by ``host run --db`` itself: no server can ask it

    @property
    def name(self) -> str:
        return self.facts.name

    def to_json(self) -> dict[str, Any]:
        return {
            **self.facts.to_json(),
            "online": self.online,
            "connected_at": self.connected_at,
            "last_seen_at": self.last_seen_at,
            "first_seen_at": self.first_seen_at,
            "sessions": self.sessions,
            "active_sessions": self.active,
        }


def connect(
    db: Connection, facts: HostFacts, *, connection_id: str, clock: Clock = system_clock
) -> bool:
    """Whether the host is held by ``connection_id`` from now: False while another live
    connection holds it (nothing written)."""
    now = clock()
    db.execute(
        _CONNECT,
        {
            "name": facts.name,
            "connection_id": connection_id,
            "now": format_ts(now),
            "stale_before": format_ts(now - timedelta(seconds=ONLINE_SECONDS)),
            "agents_json": json.dumps([agent.to_json() for agent in facts.agents]),
            "projects_json": json.dumps(list(facts.projects)),
            "tmux": facts.tmux,
            "version": facts.version,
            "platform": facts.platform,
        },
    )
    return db.execute(_HOLDER, {"name": facts.name}).scalar() == connection_id


def seen(
    db: Connection, connection_ids: Collection[str], *, clock: Clock = system_clock
) -> set[str]:
    """Mark the hosts these connections hold as seen now; returns the ids that still hold their
    host (one missing was replaced by a newer connection, or let go)."""
    if not connection_ids:
        return set()
    ids = list(connection_ids)
    db.execute(_SEEN, {"now": format_ts(clock()), "ids": ids})
    return {row[0] for row in db.execute(_HELD, {"ids": ids})}


def disconnect(
    db: Connection, name: str, *, connection_id: str, clock: Clock = system_clock
) -> bool:
    """The host's connection ended; False when a newer connection holds it (left alone)."""
    done = db.execute(
        _GONE, {"name": name, "connection_id": connection_id, "now": format_ts(clock())}
    )
    return bool(done.rowcount)


def list_hosts(db: Connection, *, clock: Clock = system_clock) -> list[HostRow]:
    """Every host the store knows, by name, with its sessions counted."""
    rows = [dict(row._mapping) for row in db.execute(_ALL)]
    return _with_counts(db, rows, clock)


def get_host(db: Connection, name: str, *, clock: Clock = system_clock) -> HostRow | None:
    row = db.execute(_ONE, {"name": name}).first()
    if row is None:
        return None
    return _with_counts(db, [dict(row._mapping)], clock)[0]


def _with_counts(db: Connection, rows: list[dict[str, Any]], clock: Clock) -> list[HostRow]:
    counts: dict[str, tuple[int, int]] = {}
    if rows:
        for host, sessions, active in db.execute(
            _COUNTS, {"names": [row["name"] for row in rows], "active": list(ACTIVE_STATES)}
        ):
            counts[host] = (int(sessions), int(active or 0))
    now = clock()
    return [_row(row, counts.get(row["name"], (0, 0)), now) for row in rows]


def _row(row: dict[str, Any], counts: tuple[int, int], now: Any) -> HostRow:
    last_seen = parse_ts(row["last_seen_at"])
    online = (
        row["connection_id"] is not None
        and last_seen is not None
        and now - last_seen <= timedelta(seconds=ONLINE_SECONDS)
    )
    return HostRow(
        facts=HostFacts(
            name=row["name"],
            agents=tuple(
                AgentFound(name=agent["name"], version=agent.get("version"))
                for agent in _json_list(row["agents_json"])
                if isinstance(agent, dict) and isinstance(agent.get("name"), str)
            ),
            tmux=row["tmux"],
            projects=tuple(p for p in _json_list(row["projects_json"]) if isinstance(p, str)),
            version=row["version"],
            platform=row["platform"],
        ),
        online=online,
        on_store=online and str(row["connection_id"]).startswith(ON_STORE),
        connected_at=row["connected_at"] if online else None,
        last_seen_at=row["last_seen_at"],
        first_seen_at=row["first_seen_at"],
        sessions=counts[0],
        active=counts[1],
    )


def _json_list(text_value: str | None) -> list[Any]:
    try:
        value = json.loads(text_value or "[]")
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def runs_elsewhere(
    db: Connection, session: Any, here: str | None, *, clock: Clock = system_clock
) -> HostRow | None:
    """The host of the session's machine, when that is another machine than ``here`` (this
    one's name, as its hooks record it) and the store knows its host: the session's agent, its
    transcript and its pane are reached through that host, not on this machine."""
    if not session.host or session.host == here:
        return None
    return get_host(db, session.host, clock=clock)


def elsewhere_words(session_id: str, host: HostRow) -> str:
    """Why this machine does not reach the session: where it runs, and how it is reached."""
    from roundtable_console.store.safety.display import one_line, printable

    state = "online" if host.online else f"offline, last seen {host.last_seen_at or 'never'}"
    return (
        f"Session {one_line(session_id, 60)!r} runs on {printable(host.name)} (its host is "
        f"{state}): its agent, transcript and pane are reached through that host, from the web "
        "console of roundtable serve or its API."
    )
