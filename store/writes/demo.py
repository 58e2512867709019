"""A realistic demo store, so a newcomer sees a populated console at once
(``roundtable tui --demo``, ``roundtable demo``): the rows made from the demo's cast
(``store.writes.demo_data``) and written.

Everything is placed relative to the given clock and drawn from a seeded ``random.Random``, so the
same clock gives the same store. Seeding again replaces the demo's own rows (same ids) and the
history of its sessions and runs; nothing else in the store is touched. With ``agent_home``, the
Claude Code sessions' transcripts are written under it (``store.writes.demo_agents``).
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, delete, literal, select
from sqlalchemy.dialects import postgresql, sqlite

from roundtable_console.store.clock import Clock, format_ts, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.models import HISTORY_KINDS, RECORD_TABLES
from roundtable_console.store.writes import demo_agents
from roundtable_console.store.writes.agent_writes import bulk_session_writes
from roundtable_console.store.writes.demo_data import (
    ACTIVITY,
    AGENT_BY_ID,
    AGENTS,
    ASKS,
    BRANCH,
    CLAIMS,
    DAY,
    DECISIONS,
    DEMO_ROOT,
    DONE,
    FEATURED,
    HOUR,
    MINUTE,
    OPERATORS,
    PROPOSALS,
    RESUME_COMMANDS,
    RUN_WORKSPACE,
    RUNS,
    STATUS_WEIGHTS,
    TASKS,
    TERMINAL,
    TOOLS,
    WORKSPACES,
    SessionSpec,
)

SEED = 20260917
BATCH = 1000


def seed_demo(
    *,
    db: Connection,
    clock: Clock = system_clock,
    sessions: int = 24,
    agent_home: Path | None = None,
) -> dict[str, int]:
    """Write the demo store in the caller's write transaction (and, with ``agent_home``, its
    transcripts there). Returns the rows written per kind (the kinds of
    ``store.db.models.RECORD_TABLES``)."""
    if sessions < 0:
        raise ValueError("sessions must not be negative")
    with bulk_session_writes(db=db):
        writer = _Writer(db)
        builder = _Builder(clock(), random.Random(SEED), db, agent_home)
        session_ids = [_session_id(index) for index in range(1, sessions + 1)]
        _forget_history(db, session_ids, [run[0] for run in RUNS])
        writer.add_all("workspace", builder.workspaces())
        writer.add_all("agent", builder.agents())
        writer.add_all("run", builder.runs())
        writer.add_all("task", builder.tasks())
        writer.add_all("claim", builder.claims())
        writer.add_all("proposal", builder.proposals())
        writer.add_all("decision", builder.decisions())
        writer.add_all("event", builder.activity())
        for index in range(1, sessions + 1):
            session, history, run_events = builder.session(index)
            writer.add("session", session)
            writer.add_all("session_event", history)
            writer.add_all("event", run_events)
        writer.flush()
    return writer.counts


def seed_if_empty(store: Store, *, clock: Clock, agent_home: Path | None) -> int:
    """Seed the demo once: a store that already has sessions is left as it is. Returns the
    sessions written."""
    with store.read() as db:
        if has_sessions(db=db):
            return 0
    with store.write() as db:
        written = seed_demo(db=db, clock=clock, agent_home=agent_home)
    return int(written.get("session", 0))


def has_sessions(*, db: Connection) -> bool:
    """Whether the store holds any session (one indexed row read)."""
    table = RECORD_TABLES["session"]
    return db.execute(select(literal(1)).select_from(table).limit(1)).first() is not None


def _session_id(index: int) -> str:
    return f"sess-{index:05d}"


def _forget_history(db: Connection, session_ids: list[str], run_ids: list[str]) -> None:
    """History is appended, not keyed, so a re-seed drops the demo's old history first."""
    session_events = RECORD_TABLES["session_event"]
    for start in range(0, len(session_ids), BATCH):
        chunk = session_ids[start : start + BATCH]
        db.execute(delete(session_events).where(session_events.c.session_id.in_(chunk)))
    events = RECORD_TABLES["event"]
    db.execute(delete(events).where(events.c.run_id.in_(run_ids)))


class _Writer:
    """Buffers rows per kind and writes them with executemany; keyed rows are upserted."""

    def __init__(self, db: Connection) -> None:
        self.db = db
        self.buffers: dict[str, list[dict[str, Any]]] = {kind: [] for kind in RECORD_TABLES}
        self.counts: dict[str, int] = dict.fromkeys(RECORD_TABLES, 0)

    def add(self, kind: str, row: dict[str, Any]) -> None:
        buffer = self.buffers[kind]
        buffer.append(row)
        self.counts[kind] += 1
        if len(buffer) >= BATCH:
            self._write(kind)

    def add_all(self, kind: str, rows: Iterable[dict[str, Any]]) -> None:
        for row in rows:
            self.add(kind, row)

    def flush(self) -> None:
        for kind in RECORD_TABLES:
            self._write(kind)

    def _write(self, kind: str) -> None:
        rows, self.buffers[kind] = self.buffers[kind], []
        if not rows:
            return
        table = RECORD_TABLES[kind]
        dialect_insert = (
            postgresql.insert if self.db.dialect.name == "postgresql" else sqlite.insert
        )
        statement = dialect_insert(table)
        if kind not in HISTORY_KINDS:
            statement = statement.on_conflict_do_update(
                index_elements=["id"],
                set_={name: statement.excluded[name] for name in rows[0] if name != "id"},
            )
        self.db.execute(statement, rows)


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


class _Builder:
    """Makes the rows. Every timestamp is ``now`` minus a number of seconds."""

    def __init__(
        self, now: datetime, rng: random.Random, db: Connection, agent_home: Path | None
    ) -> None:
        self.now = now
        self.rng = rng
        self.db = db
        self.agent_home = agent_home

    def ago(self, seconds: float) -> str:
        return format_ts(self.now - timedelta(seconds=seconds))

    def reference_form(self, seconds: float) -> str:
        """The reference's CURRENT_TIMESTAMP form, so readers meet it in the demo too."""
        return (self.now - timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S")

    # -- the fixed cast

    def workspaces(self) -> Iterable[dict[str, Any]]:
        for number, (ws_id, name, display, branch) in enumerate(WORKSPACES):
            yield {
                "id": ws_id,
                "name": name,
                "root_path": f"{DEMO_ROOT}/{name}",
                "status": "active",
                "created_at": self.reference_form(30 * DAY + number * HOUR),
                "updated_at": self.ago(DAY + number * HOUR),
                "display_name": display,
                "root_alias": name,
                "canonical_repository_identity": f"github.com/example/{name}",
                "default_branch": branch,
                "last_opened_at": self.ago(2 * HOUR + number * MINUTE),
                "revision": 3 + number,
            }

    def agents(self) -> Iterable[dict[str, Any]]:
        for number, agent in enumerate(AGENTS):
            yield {
                "id": agent.id,
                "role": agent.role,
                "name": agent.name,
                "adapter": agent.adapter,
                "command": agent.adapter,
                "status": "working" if agent.enabled else "disabled",
                "is_enabled": 1 if agent.enabled else 0,
                "created_at": self.reference_form(20 * DAY + number * HOUR),
            }

    def runs(self) -> Iterable[dict[str, Any]]:
        for run_id, ws_id, goal, status, started, ended in RUNS:
            yield {
                "id": run_id,
                "goal": goal,
                "status": status,
                "started_at": self.ago(started),
                "ended_at": self.ago(ended) if ended is not None else None,
                "metadata_json": _json({"workspace_id": ws_id, "requested_by": "maria"}),
                "workspace_id": ws_id,
            }

    def tasks(self) -> Iterable[dict[str, Any]]:
        for task_id, title, status, priority, agent, risk, created in TASKS:
            yield {
                "id": task_id,
                "title": title,
                "body_md": f"## {title}\n\nAcceptance: tests pass on SQLite and PostgreSQL.",
                "status": status,
                "priority": priority,
                "risk": risk,
                "assigned_agent_id": agent,
                "created_at": self.ago(created),
                "updated_at": self.ago(created / 3),
            }

    def claims(self) -> Iterable[dict[str, Any]]:
        for claim_id, resource, agent, task, status, expires, ws_id in CLAIMS:
            yield {
                "id": claim_id,
                "resource_id": resource,
                "agent_id": agent,
                "task_id": task,
                "claim_type": "file",
                "base_hash": f"{self.rng.getrandbits(160):040x}",
                "status": status,
                "expires_at": format_ts(self.now + timedelta(seconds=expires)),
                "heartbeat_at": self.ago(max(60, -expires) if expires < 0 else 60),
                "renewable": 1,
                "resume_policy": "hold",
                "rationale_md": f"Editing `{resource}` for {task}.",
                "created_at": self.ago(abs(expires) + 2 * HOUR),
                "workspace_id": ws_id,
            }

    def proposals(self) -> Iterable[dict[str, Any]]:
        for prop_id, task, agent, title, status, risk, created, session in PROPOSALS:
            yield {
                "id": prop_id,
                "task_id": task,
                "agent_id": agent,
                "title": title,
                "summary_md": f"{title}.\n\nSee the patch for details.",
                "patch_path": f".roundtable/patches/{prop_id}.diff",
                "status": status,
                "risk": risk,
                "created_at": self.ago(created),
                "workspace_id": RUN_WORKSPACE[AGENT_BY_ID[agent].run_id],
                "proposer_session_id": _session_id(session),
                "updated_at": self.ago(created / 2),
            }

    def decisions(self) -> Iterable[dict[str, Any]]:
        for dec_id, proposal, task, decision, rationale, created in DECISIONS:
            yield {
                "id": dec_id,
                "proposal_id": proposal,
                "task_id": task,
                "decision": decision,
                "rationale_md": rationale,
                "decided_by": "maria",
                "created_at": self.ago(created),
            }

    def activity(self) -> Iterable[dict[str, Any]]:
        """The general stream: tool events with {tool, action, status}, and other activity."""
        rows: list[tuple[float, dict[str, Any]]] = []
        for run_id, _ws, goal, _status, started, ended in RUNS:
            members = [agent.id for agent in AGENTS if agent.run_id == run_id] or ["ada"]
            rows.append((started, self._event(run_id, "run.started", members[0], {"goal": goal})))
            last = ended if ended is not None else 30
            for _ in range(12):
                tool, action = self.rng.choice(TOOLS)
                status = self.rng.choices(("ok", "error", "running"), (8, 2, 1))[0]
                at = self.rng.uniform(last, started)
                payload = {"tool": tool, "action": action, "status": status}
                agent = self.rng.choice(members)
                rows.append((at, self._event(run_id, f"tool.{tool}", agent, payload)))
        rows += [
            (at, self._event(run_id, kind, actor, payload, task=task))
            for at, run_id, kind, actor, payload, task in ACTIVITY
        ]
        for at, row in sorted(rows, key=lambda pair: -pair[0]):
            row["created_at"] = self.ago(at)
            yield row

    @staticmethod
    def _event(
        run_id: str, kind: str, actor: str, payload: dict[str, Any], task: str | None = None
    ) -> dict[str, Any]:
        return {
            "run_id": run_id,
            "type": kind,
            "actor_id": actor,
            "task_id": task,
            "payload_json": _json(payload),
            "created_at": "",
        }

    # -- sessions

    def session(
        self, index: int
    ) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
        spec = FEATURED[index - 1] if index <= len(FEATURED) else self._random_spec()
        agent = AGENT_BY_ID[spec.agent]
        session_id = _session_id(index)
        run_id = agent.run_id
        if spec.started > 10 * DAY:
            run_id = "run-atlas-spike"
        ws_id = RUN_WORKSPACE[run_id]
        ws_name = ws_id.removeprefix("ws-")
        external = f"{agent.adapter}-{self.rng.getrandbits(64):016x}" if spec.external else None
        resume = (
            RESUME_COMMANDS.get(agent.adapter) if external and self.rng.random() < 0.7 else None
        )
        if spec.loop:  # as Claude Code's hooks report it: its own id, its resume command
            external = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
            resume = RESUME_COMMANDS[agent.adapter]
        ended = spec.status in TERMINAL
        row: dict[str, Any] = {
            "id": session_id,
            "agent_id": agent.id,
            "run_id": run_id,
            "adapter": agent.adapter,
            "provider": agent.provider,
            "model": agent.model,
            "external_session_id": external,
            "external_resume_command": resume.format(external) if resume and external else None,
            "working_directory": f"{DEMO_ROOT}/{ws_name}",
            "mcp_socket": (
                f"{DEMO_ROOT}/{ws_name}/.roundtable/mcp-{index}.sock"
                if self.rng.random() < 0.3
                else None
            ),
            "status": spec.status,
            "started_at": self.ago(spec.started),
            "last_seen_at": self.ago(spec.seen),
            "ended_at": self.ago(spec.seen) if ended else None,
            "metadata_json": self._metadata(spec, ws_id),
            # Some sessions name their workspace only in metadata (the reference's fallback).
            "workspace_id": ws_id if self.rng.random() < 0.75 else None,
            "waiting_reason": (
                spec.waiting[1]
                if spec.waiting
                else demo_agents.TURN_DONE
                if spec.loop == DONE
                else None
            ),
            "waiting_since": self.ago(spec.waiting[0]) if spec.waiting else None,
        }
        if spec.loop:
            row["workspace_id"] = ws_id
            asks = spec.loop == ASKS
            ago = spec.waiting[0] if asks else spec.seen  # type: ignore[index]
            metadata = json.loads(row["metadata_json"] or "{}")
            row["metadata_json"] = _json(
                demo_agents.as_hooks_report(
                    row,
                    metadata,
                    asks=asks,
                    last=self.now - timedelta(seconds=ago),
                    home=self.agent_home,
                )
            )
        history = self._history(row, spec)
        if spec.loop == ASKS:
            asked = self.now - timedelta(seconds=spec.waiting[0])  # type: ignore[index]
            history.append(
                demo_agents.ask(
                    self.db, session_id=session_id, request=demo_agents.RELEASE_CLEANUP, asked=asked
                )
            )
        row["version"] = len(history) - 1
        run_events = [
            {
                "run_id": run_id,
                "type": f"session.{event['event_type']}",
                "actor_id": json.loads(event["payload_json"])["actor"],
                "task_id": None,
                "payload_json": _json(
                    {"session_id": session_id, **json.loads(event["payload_json"])}
                ),
                "created_at": event["created_at"],
            }
            for event in history
            if event["event_type"] in ("paused", "stopped", "resuming", "terminated")
        ]
        return row, history, run_events

    def _random_spec(self) -> SessionSpec:
        statuses, weights = zip(*STATUS_WEIGHTS, strict=True)
        status = self.rng.choices(statuses, weights)[0]
        agent = self.rng.choice(AGENTS).id
        started = self.rng.randint(5 * MINUTE, 14 * DAY)
        if status in TERMINAL:
            seen = self.rng.randint(max(1, started - 6 * HOUR), started)
        elif self.rng.random() < 0.7:
            seen = self.rng.randint(1, min(240, started))  # fresh
        else:
            seen = self.rng.randint(min(started, 6 * MINUTE), started)  # stale
        return SessionSpec(agent, status, started, seen, external=self.rng.random() < 0.6)

    def _metadata(self, spec: SessionSpec, ws_id: str) -> str | None:
        if not spec.loop and spec.status != "starting" and self.rng.random() < 0.08:
            return None
        metadata: dict[str, Any] = {"branch": BRANCH[ws_id], "workspace_id": ws_id}
        if spec.status != "starting":
            tokens_in = self.rng.randint(2_000, 900_000)
            tokens_out = self.rng.randint(500, tokens_in // 3 + 500)
            metadata["usage"] = {
                "input_tokens": tokens_in,
                "output_tokens": tokens_out,
                "cost_usd": round((tokens_in * 3 + tokens_out * 15) / 1_000_000, 4),
            }
        return _json(metadata)

    def _history(self, row: dict[str, Any], spec: SessionSpec) -> list[dict[str, Any]]:
        session_id, status = row["id"], spec.status
        actor = self.rng.choice(OPERATORS)
        first = "starting" if status == "starting" else "active"
        steps: list[tuple[float, str, dict[str, Any]]] = [
            (spec.started, "registered", {"status": first, "adapter": row["adapter"]})
        ]
        beats = 0 if status == "starting" else self.rng.randint(1, 3)
        for number in range(beats):
            at = spec.started - (spec.started - spec.seen) * (number + 1) / (beats + 1)
            steps.append((at, "heartbeat", {"status": "active", "last_seen_at": self.ago(at)}))
        seen, last_seen = spec.seen, row["last_seen_at"]
        if status in ("active", "running", "starting"):
            payload: dict[str, Any] = {"status": status, "last_seen_at": last_seen}
            if spec.loop == DONE:
                payload["waiting_reason"] = demo_agents.TURN_DONE
            steps.append((seen, "heartbeat", payload))
        elif status == "paused":
            steps.append((seen, "paused", self._action("paused", "active", actor)))
        elif status == "resuming":
            paused_at = seen + (spec.started - seen) / 5
            steps.append((paused_at, "paused", self._action("paused", "active", actor)))
            resumed = self._action("resuming", "paused", actor, last_seen_at=last_seen)
            steps.append((seen, "resuming", {**resumed, "ended_at": None}))
        elif status in ("stopped", "terminated"):
            payload = self._action(status, "active", actor, last_seen_at=last_seen)
            payload["ended_at"] = last_seen
            if status == "terminated":
                payload["impact_details"] = "Claims stay held; reassign task-107 by hand."
                payload["active_claims"] = []
            steps.append((seen, status, payload))
        else:  # ended, failed
            steps.append((seen, "ended", {"status": status, "ended_at": last_seen}))
        return [
            {
                "session_id": session_id,
                "event_type": event_type,
                "payload_json": _json(payload),
                "created_at": self.ago(at),
            }
            for at, event_type, payload in steps
        ]

    @staticmethod
    def _action(status: str, previous: str, actor: str, **extra: Any) -> dict[str, Any]:
        return {"status": status, "previous_status": previous, "actor": actor, **extra}
